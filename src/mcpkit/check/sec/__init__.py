"""Security lint: is this server safe to give an assistant? (the ``SEC.*`` rules).

The protocol rules say whether a server is legal and the design lint whether a model can
use it well; these say whether it attacks or exposes the user. The rules live by subject:
:mod:`~mcpkit.check.sec.texts` (what the model is told: directives, credential and
conversation requests, invisible characters, look-alike letters) and
:mod:`~mcpkit.check.sec.surface` (secrets, command/path/URL parameters, open HTTP). Each
documents its heuristic; all prefer missing an attack to accusing an honest server.

:func:`security` works only on what the probes already saw, sends nothing, and returns one
finding per ``SEC.*`` rule: ``pass``, ``fail``, ``n/a`` or ``untestable``.
"""

from __future__ import annotations

from typing import Any

from ..facts import Facts
from ..lint.common import rule_findings
from ..model import Era, Finding
from . import surface, texts
from .common import SecInput

__all__ = ["SecInput", "announced", "inputs", "security"]

_CHECKS = {**texts.CHECKS, **surface.CHECKS}


def announced(facts: Facts) -> bool:
    """Whether the server sent ``notifications/tools/list_changed`` in this era."""
    return any(isinstance(rec.msg, dict)
               and rec.msg.get("method") == "notifications/tools/list_changed"
               for rec in facts.log.received)


def inputs(facts: Facts, url: str | None) -> SecInput:
    """What the ``SEC.*`` rules read, from one era's facts; ``url`` the HTTP URL (None over
    stdio)."""
    outputs: list[tuple[str, Any]] = []
    outputs += [(f"tools/call {call.tool} result", call.result) for call in facts.calls
                if call.result is not None]
    outputs += [(f"resources/read #{i} result", r.result) for i, r in enumerate(facts.reads)
                if r.result is not None]
    outputs += [(f"prompts/get #{i} result", r.result) for i, r in enumerate(facts.prompt_gets)
                if r.result is not None]
    auth = facts.auth
    second = facts.second_tools
    return SecInput(
        second_tools=second.items if second is not None and second.ok else None,
        announced=announced(facts),
        tools=list(facts.tools), prompts=facts.items("prompts/list"),
        resources=facts.items("resources/list"),
        resourceTemplates=facts.items("resources/templates/list"),
        instructions=facts.instructions, outputs=outputs, url=url,
        protected=auth.protected if auth is not None else None)


def security(data: SecInput, era: Era) -> list[Finding]:
    """One finding per ``SEC.*`` rule of the catalogue, in catalogue order."""
    return rule_findings("SEC.", _CHECKS, data, era, "This checker has no check for this rule.")
