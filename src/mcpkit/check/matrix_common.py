"""What every judge of a compliance-matrix row is: a function from the probes' facts to a
verdict, a message and the evidence, and the two helpers all of them use.

A message a row fails is marked blamed (:func:`blame`) so that ``WIRE.schema`` does not
report it again: one defect, one finding, under its most specific rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .facts import Facts
from .model import Verdict

Judgement = tuple[Verdict, str, str]  # verdict, message, evidence
Judge = Callable[[Facts], Judgement]


def blame(facts: Facts, msg: Any) -> None:
    """Mark the received message ``msg`` (that very object) as failed by a row."""
    for rec in facts.log.received:
        if rec.msg is msg:
            rec.blamed = True


def na(message: str) -> Judgement:
    """The row does not apply to this server, for the reason ``message``."""
    return ("n/a", message, "")
