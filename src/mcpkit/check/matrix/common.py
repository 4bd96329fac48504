"""What every judge of a compliance-matrix row is: a function from the probes' facts to a
verdict, a message and the evidence, and :func:`na`, the verdict of a row that does not
apply.

A message a row fails is marked blamed (:meth:`~mcpkit.check.facts.Facts.blame`) so that
``WIRE.schema`` does not report it again: one defect, one finding, under its most specific
rule.
"""

from __future__ import annotations

from collections.abc import Callable

from ..facts import Facts
from ..model import Verdict

Judgement = tuple[Verdict, str, str]  # verdict, message, evidence
Judge = Callable[[Facts], Judgement]


def na(message: str) -> Judgement:
    """The row does not apply to this server, for the reason ``message``."""
    return ("n/a", message, "")


def capability_probes(facts: Facts, method: str, capability: str,
                      probe: str | None = None) -> Judgement | None:
    """The verdict of a capability's probes: ``method`` called although ``capability`` was
    not declared must fail (probe ``undeclared:<method>``); called where it was declared
    (probe ``probe``), it must work. None when neither probe ran."""
    reply = facts.probes.get(f"undeclared:{method}")
    if reply is not None and reply.result is not None:
        return ("fail", f"{method} succeeded without {capability} declared.", reply.evidence)
    reply = None if probe is None else facts.probes.get(probe)
    if reply is None:
        return None
    if reply.result is not None:
        return ("pass", f"{capability} declared and {method} works.", reply.evidence)
    return ("fail", f"{capability} is declared but {method} failed.", reply.evidence)
