"""The ``text`` report: for a terminal, cut to :data:`WIDTH` columns, optional ANSI colour.

By default one screen (:func:`brief`): the header, the counts, what failed grouped by
level (MUST, SHOULD, MAY, LINT; a rule that fails alike in both eras on one row, its
message in at most two lines) and one tally line per section. :func:`full` (``--verbose``)
is the whole report: every failure with an evidence excerpt, then one line per finding
(passes, n/a and untestable too), section by section.

Server text is shown with control characters (ANSI escapes, bidi overrides) as visible
``\\xNN`` sequences instead of letting them act on the terminal.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

from ...protocol.text import visible as _safe
from ..model import LEVELS, Finding, Report
from .common import (
    ERA_ORDER,
    cut,
    duration,
    era_label,
    era_line,
    merged,
    one_line,
    sections,
    tally,
    tally_text,
)

WIDTH = 100
"""Columns of the text report."""

EVIDENCE_LINES = 6
"""Lines of evidence the verbose text report shows per failure."""

_ANSI = {"fail": "31", "pass": "32", "n/a": "2", "untestable": "2", "bold": "1",
         "MUST": "1;31", "SHOULD": "33", "MAY": "36", "LINT": "36"}


def _painter(color: bool) -> Callable[[str, str], str]:
    def paint(text: str, key: str) -> str:
        return f"\x1b[{_ANSI[key]}m{text}\x1b[0m" if color and key in _ANSI else text
    return paint


def _head(report: Report, paint: Callable[[str, str], str]) -> list[str]:
    """The checker and target, the run's facts, one line per era, the counts."""
    out: list[str] = []
    checker = f"mcpkit check {report.checker_version}".rstrip()
    title = _wrap(f"{checker}: {_safe(one_line(report.target))}", "", "    ")
    out += [paint(line, "bold") for line in title.split("\n")]
    rows = [("transport", report.transport), ("call tools", report.call_tools),
            ("duration", duration(report.duration_s))]
    rows += [(e.era, era_line(e)) for e in report.eras]
    for key, value in rows:
        out.append(_wrap(_safe(one_line(value)), f"  {key:<11} ", " " * 14))

    # Summary.
    counts = report.counts()
    failed = {lv: counts[lv]["fail"] for lv in LEVELS}
    total = tally(report.findings)
    verdict = (paint(f"{failed['MUST']} MUST", "MUST" if failed["MUST"] else "pass") + ", "
               + paint(f"{failed['SHOULD']} SHOULD", "SHOULD" if failed["SHOULD"] else "pass"))
    others = ", ".join(f"{failed[lv]} {lv}" for lv in ("MAY", "LINT"))
    out += ["", f"Failed: {verdict} (and {others}).",
            f"Verdicts: {tally_text(total) or 'none'} ({len(report.findings)} findings)."]
    return out


def full(report: Report, color: bool) -> str:
    paint = _painter(color)
    out = _head(report, paint)
    failures = report.failures()
    if failures:
        out += ["", paint("Failures, worst first", "bold")]
        for f in failures:
            head = f"  {paint(f'{f.level:<6}', f.level)} {_safe(f.rule)}"
            out.append(f"{head} [{era_label(f.era)}]" if f.era else head)
            out.append(_wrap(_safe(cut(one_line(f.message), 1000, "...")), "      ", "      "))
            out += _evidence_excerpt(f.evidence)
    else:
        out += ["", paint("No failures.", "pass")]

    for name, found in sections(report):
        out += ["", paint(f"== {name} ({tally_text(tally(found))})", "bold")]
        out += _text_table(found, paint)
    return "\n".join(out) + "\n"


BRIEF_MESSAGE_LINES = 2
"""Lines of a failure's message in the default text report."""

BRIEF_WRAP_UNDER = 20
"""Past this many failures the default text report gives each one line, not two."""


def brief(report: Report, color: bool) -> str:
    """The default text report: one screen for a typical server. What failed, grouped by
    level, each failure's message in at most two lines without evidence; one tally line
    per section; the way to the rest (``--verbose``)."""
    paint = _painter(color)
    out = _head(report, paint)
    failures = report.failures()
    by_level: dict[str, list[Finding]] = {}
    for f in failures:
        by_level.setdefault(f.level, []).append(f)
    rows = {lv: merged(sorted(found, key=lambda f: (f.rule, ERA_ORDER.get(f.era, 3))))
            for lv, found in by_level.items()}
    lines = BRIEF_MESSAGE_LINES if sum(map(len, rows.values())) <= BRIEF_WRAP_UNDER else 1
    if not failures:
        out += ["", paint("No failures.", "pass")]
    for level in LEVELS:
        if level not in rows:
            continue
        out += ["", paint(f"{level} ({len(by_level[level])} failed)", level)]
        rule_w = min(32, max(len(f.rule) for f, _ in rows[level]))
        for f, era in rows[level]:
            left = f"  {_safe(cut(f.rule, rule_w, '...')):<{rule_w}}  {era:<9}  "
            out += _clipped(_safe(one_line(f.message)), left, lines)
    grouped = sections(report)
    if grouped:
        out += ["", paint("Sections", "bold")]
        name_w = max(len(name) for name, _ in grouped)
        for name, found in grouped:
            out.append(f"  {_safe(name):<{name_w}}  {tally_text(tally(found))}")
    out += ["", "--verbose: every finding (passes, n/a and untestable too) and the evidence "
            "of each failure."]
    return "\n".join(out) + "\n"


def _clipped(text: str, first: str, lines: int) -> list[str]:
    """``text`` wrapped after ``first`` (continued under its end) in at most ``lines``
    lines, the last cut with ``...`` when more would follow."""
    rest = " " * len(first)
    wrapped = textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest,
                            break_long_words=True, break_on_hyphens=False) or [first.rstrip()]
    if len(wrapped) <= lines:
        return wrapped
    kept = wrapped[:lines]
    kept[-1] = cut(kept[-1], WIDTH - 3, "") + "..."
    return kept


def _wrap(text: str, first: str, rest: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=first, subsequent_indent=rest,
                         break_long_words=True, break_on_hyphens=False) or first.rstrip()


def _evidence_excerpt(evidence: str) -> list[str]:
    """At most :data:`EVIDENCE_LINES` lines of evidence, long lines folded at the width."""
    if not evidence.strip():
        return []
    prefix = "      | "
    room = WIDTH - len(prefix)
    lines: list[str] = []
    for raw in _safe(evidence.strip("\n")).split("\n"):
        raw = raw.rstrip()
        lines += [raw[i:i + room] for i in range(0, len(raw), room)] or [""]
    if len(lines) > EVIDENCE_LINES:
        more = len(lines) - (EVIDENCE_LINES - 1)
        lines = [*lines[: EVIDENCE_LINES - 1], f"... ({more} more lines)"]
    return [prefix + line for line in lines]


def _text_table(found: Sequence[Finding], paint: Callable[[str, str], str]) -> list[str]:
    """One line per finding: rule, era, verdict, message."""
    rows = merged(found)
    rule_w = min(32, max(len(f.rule) for f, _ in rows))
    out = []
    for f, era in rows:
        left = f"  {_safe(cut(f.rule, rule_w, '...')):<{rule_w}}  {era:<9}  "
        room = max(20, WIDTH - len(left) - 12)
        msg = _safe(cut(one_line(f.message), room, "..."))
        verdict = f"{f.verdict:<10}  " if msg else f.verdict
        out.append(f"{left}{paint(verdict, f.verdict)}{msg}")
    return out
