"""What probing one era of a server observed, for the judges to rule on.

Probes (``stateful.py``, ``stateless.py``, ``features.py``) fill a :class:`Facts`; judges
(``matrix/``, ``lint/``, ``sec/``) read it. Keeping observation and judgement
apart lets one observation serve several rules and keeps each rule's logic in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .authprobe import AuthFacts
from .lint.input import ProvokedError, ToolCall
from .model import Era, Finding
from .wire import Reply, WireLog

LIST_KEYS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}
CAPABILITY_OF = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "prompts/list": "prompts",
}


@dataclass(slots=True)
class ListOutcome:
    """Every page of one list method, or the error that ended it."""

    method: str
    items: list[Any] = field(default_factory=list)
    pages: list[Reply] = field(default_factory=list)
    error: Reply | None = None
    problem: str | None = None  # a pagination defect, described

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.pages)

    @property
    def evidence(self) -> str:
        replies = [*self.pages, *([self.error] if self.error else [])]
        return "\n".join(r.evidence for r in replies[:3])


@dataclass(slots=True)
class Facts:
    era: Era
    transport: str
    log: WireLog
    served: bool = False
    revision: str | None = None
    note: str = ""
    init: Reply | None = None
    capabilities: dict[str, Any] = field(default_factory=dict)
    server_info: dict[str, Any] | None = None
    instructions: str | None = None
    lists: dict[str, ListOutcome] = field(default_factory=dict)
    second_tools: ListOutcome | None = None
    reads: list[Reply] = field(default_factory=list)
    prompt_gets: list[Reply] = field(default_factory=list)
    completions: list[Reply] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    call_replies: list[Reply] = field(default_factory=list)
    provoked: list[ProvokedError] = field(default_factory=list)
    probes: dict[str, Reply] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    session_ids: list[str] = field(default_factory=list)
    versions_echoed: dict[str, str | None] = field(default_factory=dict)
    auth: AuthFacts | None = None  # the authorization probes, shared by both eras

    def blame(self, msg: Any) -> None:
        """Mark the received message ``msg`` (that very object) as failed by a rule, so
        that ``WIRE.schema`` does not report it again: one defect, one finding, under its
        most specific rule."""
        for rec in self.log.received:
            if rec.msg is msg:
                rec.blamed = True

    def blame_answers(self, method: str) -> None:
        """Mark every result answering ``method`` as failed by a specific rule: a defect in
        a listing recurs in every listing (tools/list is listed twice), so ``WIRE.schema``
        must not report any of them again."""
        for rec in self.log.received:
            if rec.answered == method and isinstance(rec.msg, dict) and "result" in rec.msg:
                rec.blamed = True

    def declared(self, capability: str) -> bool:
        return isinstance(self.capabilities.get(capability), dict)

    @property
    def tools(self) -> list[Any]:
        outcome = self.lists.get("tools/list")
        return outcome.items if outcome else []

    def items(self, method: str) -> list[Any]:
        outcome = self.lists.get(method)
        return outcome.items if outcome else []
