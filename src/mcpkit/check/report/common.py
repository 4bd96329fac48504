"""What the report renderers share: findings grouped by section and rule, tallies, the
lines that describe an era, and cutting server text to fit (:mod:`mcpkit.check.report`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..model import LEVELS, VERDICTS, EraSummary, Finding, Report
from ..rules import SECTIONS

ERA_ORDER = {"stateful": 0, "stateless": 1, None: 2}


def sections(report: Report) -> list[tuple[str, list[Finding]]]:
    """Non-empty sections in report order, findings grouped by rule (in order of first
    appearance) and, within a rule, by era. Unknown sections follow the known ones."""
    first: dict[str, int] = {}
    for i, f in enumerate(report.findings):
        first.setdefault(f.rule, i)
    ordered = sorted(report.findings, key=lambda f: (first[f.rule], ERA_ORDER.get(f.era, 3)))
    names = list(SECTIONS)
    for f in ordered:
        if f.section not in names:
            names.append(f.section)
    out = []
    for name in names:
        found = [f for f in ordered if f.section == name]
        if found:
            out.append((name or "Other", found))
    return out


def tally(findings: Iterable[Finding]) -> dict[str, int]:
    tally: dict[str, int] = dict.fromkeys(VERDICTS, 0)
    for f in findings:
        tally[f.verdict] += 1
    return tally


def tally_text(tally: dict[str, int]) -> str:
    return ", ".join(f"{n} {v}" for v, n in tally.items() if n)


def era_label(era: str | None) -> str:
    return era or "-"


def server_name(e: EraSummary) -> str:
    info = e.server_info or {}
    parts = [str(info[k]) for k in ("name", "version") if info.get(k) not in (None, "")]
    return " ".join(parts)


def era_line(e: EraSummary) -> str:
    """``served, revision 2025-11-25, name 1.0, 25 messages checked - note``."""
    parts = ["served" if e.served else "not served"]
    if e.revision:
        parts.append(f"revision {e.revision}")
    if name := server_name(e):
        parts.append(name)
    if e.messages_checked:
        parts.append(f"{e.messages_checked} messages checked")
    line = ", ".join(parts)
    return f"{line} - {e.note}" if e.note else line


def duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def cut(text: str, limit: int, marker: str = "…") -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(marker))] + marker


def one_line(text: str) -> str:
    return " ".join(text.split())


def tally_levels(report: Report) -> dict[str, int]:
    counts = report.counts()
    return {lv: counts[lv]["fail"] for lv in LEVELS}


def merged(found: Sequence[Finding]) -> list[tuple[Finding, str]]:
    """``(finding, era label)`` rows where the two eras of a rule that agree on verdict and
    message share one row, era ``both`` (for the tables that show no evidence)."""
    rows: list[tuple[Finding, str]] = []
    i = 0
    while i < len(found):
        f = found[i]
        nxt = found[i + 1] if i + 1 < len(found) else None
        same = nxt is not None and (nxt.rule, nxt.verdict, nxt.level, nxt.message) == (
            f.rule, f.verdict, f.level, f.message)
        if nxt is not None and same and {f.era, nxt.era} == {"stateful", "stateless"}:
            rows.append((f, "both"))
            i += 2
        else:
            rows.append((f, era_label(f.era)))
            i += 1
    return rows
