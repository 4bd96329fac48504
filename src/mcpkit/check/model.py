"""What the checker reports: findings, their levels and verdicts, and the whole report.

A :class:`Finding` is one verdict on one rule for one era of the target server. Rules are
named by stable ids: a compliance-matrix row (``M009``), or a probe or lint rule of the
checker's own catalogue (``TOOLS.unknown-tool``, ``LINT.additional-properties``); see
:mod:`mcpkit.check.rules`. The report is plain data so that every renderer (text, JSON,
Markdown, HTML, CSV) works from the same object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Level = Literal["MUST", "SHOULD", "MAY", "LINT"]
Verdict = Literal["pass", "fail", "n/a", "untestable"]
Era = Literal["stateful", "stateless"]

LEVELS: tuple[Level, ...] = ("MUST", "SHOULD", "MAY", "LINT")
VERDICTS: tuple[Verdict, ...] = ("fail", "pass", "n/a", "untestable")

EVIDENCE_LIMIT = 1200
"""Characters of evidence kept per finding; the rest is cut with a marker."""


def trim(text: str, limit: int = EVIDENCE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


@dataclass(slots=True)
class Finding:
    """One verdict: ``rule`` judged ``verdict`` for the ``era`` probed.

    ``message`` says in one or two sentences what was seen and, for a failure, what the
    server should do instead. ``evidence`` is the exchange that shows it (requests and
    responses, trimmed). ``section`` groups findings in reports; ``spec`` names the rule
    of ``../spec/REVISIONS.md`` (or the design guide) a probe rule comes from.
    """

    rule: str
    level: Level
    verdict: Verdict
    message: str
    evidence: str = ""
    section: str = ""
    title: str = ""
    era: Era | None = None
    spec: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "level": self.level,
            "verdict": self.verdict,
            "message": self.message,
            "evidence": self.evidence,
            "section": self.section,
            "title": self.title,
            "era": self.era,
            "spec": self.spec,
        }


@dataclass(slots=True)
class EraSummary:
    """What one era's probing learned about the server (shown at the top of reports)."""

    era: Era
    served: bool
    revision: str | None = None
    server_info: dict[str, Any] | None = None
    capabilities: dict[str, Any] | None = None
    note: str = ""
    messages_checked: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "era": self.era,
            "served": self.served,
            "revision": self.revision,
            "serverInfo": self.server_info,
            "capabilities": self.capabilities,
            "note": self.note,
            "messagesChecked": self.messages_checked,
        }


FailOn = Literal["must", "should", "lint", "never"]

_FAIL_LEVELS: dict[str, frozenset[str]] = {
    "must": frozenset({"MUST"}),
    "should": frozenset({"MUST", "SHOULD"}),
    "lint": frozenset({"MUST", "SHOULD", "MAY", "LINT"}),
    "never": frozenset(),
}


def fail_levels(fail_on: FailOn) -> frozenset[str]:
    """The levels whose failures ``--fail-on fail_on`` counts."""
    return _FAIL_LEVELS[fail_on]


@dataclass(slots=True)
class Report:
    """Everything one ``mcpkit check`` run found."""

    target: str
    transport: Literal["stdio", "http"]
    call_tools: str
    eras: list[EraSummary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    duration_s: float = 0.0
    checker_version: str = ""
    server: str = ""  # the server's name in a host configuration (--config), else ""
    definitions: dict[str, list[Any]] = field(default_factory=dict)
    """Tools, prompts, resources and templates as listed (first era served); for the
    cross-server rules and pinning, not part of the JSON report."""

    def failures(self, levels: frozenset[str] | None = None) -> list[Finding]:
        """Failed findings, worst level first (MUST, SHOULD, MAY, LINT), then by rule."""
        failed = [
            f for f in self.findings
            if f.verdict == "fail" and (levels is None or f.level in levels)
        ]
        return sorted(failed, key=lambda f: (LEVELS.index(f.level), f.rule))

    def counts(self) -> dict[str, dict[str, int]]:
        """``{level: {verdict: n}}`` for every level and verdict (zeros included)."""
        table: dict[str, dict[str, int]] = {lv: dict.fromkeys(VERDICTS, 0) for lv in LEVELS}
        for f in self.findings:
            table[f.level][f.verdict] += 1
        return table

    def exit_status(self, fail_on: FailOn) -> int:
        """0 when no finding at the ``fail_on`` threshold failed, else 1."""
        return 1 if self.failures(_FAIL_LEVELS[fail_on]) else 0

    def to_json(self) -> dict[str, Any]:
        return {
            **({"server": self.server} if self.server else {}),
            "target": self.target,
            "transport": self.transport,
            "callTools": self.call_tools,
            "checker": {"name": "mcpkit check", "version": self.checker_version},
            "durationSeconds": round(self.duration_s, 3),
            "eras": [e.to_json() for e in self.eras],
            "counts": self.counts(),
            "findings": [f.to_json() for f in self.findings],
        }
