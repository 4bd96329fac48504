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
