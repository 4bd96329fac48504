"""Design lint: judges how well a server's tools suit the model that uses them.

The protocol rules say whether a server is *legal*. These rules (the ``LINT.*`` ids of
:mod:`mcpkit.check.rules`, taken from the server design guide) say whether an LLM can use it
*well*: names it can tell apart, descriptions that say when to call a tool and what comes
back, flat parameters with enums instead of guessable strings, bounded results, and errors
it can recover from. A server can pass every MUST and still fail all of these.

:func:`lint` works only on what the probes already saw (:class:`LintInput`): it sends
nothing. It returns exactly one :class:`~mcpkit.check.model.Finding` per ``LINT.*`` rule,
``pass``, ``fail`` or ``n/a`` (nothing to judge), and each failure names the offending tools,
parameters or messages and says how to fix them.

Servers are foreign and may be broken, so every field is checked for its type before use:
a tool that is not an object, a name that is not a string or an ``inputSchema`` that is a
list is skipped (other rules, ``WIRE.schema`` and ``M067``, blame those), never a crash.

This module runs the rules; they live by subject, each documenting its heuristic:
:mod:`~mcpkit.check.lint.names` (the listing), :mod:`~mcpkit.check.lint.texts`
(descriptions, instructions), :mod:`~mcpkit.check.lint.params` (inputSchema),
:mod:`~mcpkit.check.lint.patterns` (what a ``pattern`` costs a validator),
:mod:`~mcpkit.check.lint.contracts` (outputSchema, annotations) and
:mod:`~mcpkit.check.lint.calls` (results and errors).
"""

from __future__ import annotations

from ..model import Era, Finding
from . import calls, contracts, names, params, patterns, texts
from .common import Check, rule_findings
from .input import LintInput, ProvokedError, ToolCall

__all__ = ["LintInput", "ProvokedError", "ToolCall", "lint"]

_CHECKS: dict[str, Check] = {
    **names.CHECKS,
    **texts.CHECKS,
    **params.CHECKS,
    **patterns.CHECKS,
    **contracts.CHECKS,
    **calls.CHECKS,
}
"""``LINT.*`` rule id -> its check, gathered from the rule modules."""


def lint(data: LintInput, era: Era) -> list[Finding]:
    """One finding per ``LINT.*`` rule of the catalogue, in catalogue order."""
    return rule_findings("LINT.", _CHECKS, data, era, "This checker has no lint for this rule.")
