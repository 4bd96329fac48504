"""Design lint of the prose the model reads: tool descriptions and the server's instructions.

``LINT.description`` (long enough, and says when to use the tool and what it returns),
``LINT.instructions`` (present and more than a few words) and ``LINT.static-descriptions``
(no dates or clock times that change from one session to the next, and the same definitions
in a second listing, so hosts can cache the prompt prefix). Each rule's function documents
its heuristic; they are lenient on purpose, to catch the terse and the dynamic, not odd
wording.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .common import (
    EXAMPLE_MARKERS,
    Check,
    Outcome,
    is_example,
    name_list,
    offenders,
    parameters,
    pick,
    quantity,
    shorten,
    text_field,
    to_json,
    tool_views,
)
from .input import LintInput

MIN_DESCRIPTION = 40
"""A tool description shorter than this cannot say when to use the tool and what it returns."""

MIN_INSTRUCTIONS = 20
"""Instructions shorter than this cannot give the model any real guidance."""

_WHEN_RE = re.compile(
    r"\b(use[sd]?|using|useful|when(?:ever)?|call(?:s|ed|ing)?|for|helps?|lets? you"
    r"|allows? you|enables? you|if you|to)\b",
    re.IGNORECASE,
)
_RETURNS_RE = re.compile(
    r"\b(return(?:s|ed|ing)?|give[sn]?|yield(?:s|ed)?|lists?|outputs?|respond(?:s|ed)?"
    r"|response|results?|produc(?:e|es|ed)|shows?|reports?|provides?)\b",
    re.IGNORECASE,
)


def _description_problems(text: str) -> list[str]:
    problems = []
    if len(text) < MIN_DESCRIPTION:
        problems.append(f"only {len(text)} characters")
    if not _WHEN_RE.search(text):
        problems.append("does not say when to use it")
    if not _RETURNS_RE.search(text):
        problems.append("does not say what it returns")
    return problems


def _check_description(data: LintInput) -> Outcome:
    """Each non-empty tool description (a missing one is ``M067``'s business) must

    * be at least :data:`MIN_DESCRIPTION` characters long,
    * say when to use the tool: a word such as *use, when, call, for, helps, lets you, allows
      you, if you, to*, and
    * say what it returns: a word such as *return(s), gives, yields, lists, outputs, responds,
      response, result(s), produces, shows, reports, provides*.

    The word tests are deliberately lenient: they catch the terse one-liner (``"Searches."``),
    not a description that is merely worded differently.
    """
    described = [(t, d.strip()) for t in tool_views(data.tools)
                 if (d := text_field(t.raw, "description")) is not None and d.strip()]
    if not described:
        return "n/a", "No tool has a description to judge.", ""
    bad = [(t, p) for t, d in described if (p := _description_problems(d))]
    if not bad:
        return ("pass", f"All {quantity(len(described), 'description')} say when to use the tool "
                "and what it returns.", "")
    shown = [f"{t.label} ({'; '.join(p)})" for t, p in bad]
    return (
        "fail",
        f"Weak descriptions in {offenders(shown, len(described), 'described tool')}. A "
        "description is a prompt for the model: say when to use the tool (\"Use this to …\"), "
        "what it returns (\"Returns …\") and how to format arguments, in at least "
        f"{MIN_DESCRIPTION} characters.",
        [pick(t, "description") for t, _ in bad],
    )


def _check_instructions(data: LintInput) -> Outcome:
    """Instructions are present and at least :data:`MIN_INSTRUCTIONS` characters (stripped)."""
    text = data.instructions
    fix = ("Send instructions: a short system-prompt section telling the model what the server "
           "is for, which tool to use when, and any conventions (units, coordinates, limits).")
    if not isinstance(text, str) or not text.strip():
        return "fail", f"The server sends no instructions. {fix}", to_json(text)
    if len(text.strip()) < MIN_INSTRUCTIONS:
        return ("fail", f"The instructions are only {len(text.strip())} characters. {fix}",
                to_json(text))
    return "pass", f"The server sends {len(text.strip())} characters of instructions.", ""


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DYNAMIC: tuple[tuple[str, re.Pattern[str], bool], ...] = (
    # (what it is, pattern, whether an example marker before it ("e.g.") cancels it)
    ("a date-time", re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}"), True),
    ("a clock time", re.compile(r"(?<![\d:])\d{1,2}:\d{2}:\d{2}(?![\d:])"), True),
    ("a date phrase", re.compile(r"\btoday is\b", re.IGNORECASE), False),
    ("a date phrase", re.compile(
        rf"\bas of (?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}[/.]\d{{1,2}}[/.]\d{{2,4}}|{_MONTH} \d"
        rf"|\d{{1,2}} {_MONTH}|today|now|yesterday)", re.IGNORECASE), False),
    ("the current time", re.compile(r"\b(?:current|local) (?:date|time)(?: is\b|:)"
                                    r"|\bthe time is now\b", re.IGNORECASE), False),
)

_FORMAT_MARKERS = (*EXAMPLE_MARKERS, "format", "iso 8601", "iso-8601")


def _dynamic(text: str) -> str | None:
    """What dynamic-looking data ``text`` holds (``a date-time "2025-…"``), or None."""
    for what, pattern, cancelled_by_example in _DYNAMIC:
        for m in pattern.finditer(text):
            if not (cancelled_by_example and is_example(text, m.start(), _FORMAT_MARKERS)):
                return f"{what} {shorten(m.group(0), 30)!r}"
    return None


def _texts(data: LintInput) -> Iterator[tuple[str, str]]:
    """(where, text) of every description and the instructions."""
    if isinstance(data.instructions, str):
        yield "instructions", data.instructions
    for t in tool_views(data.tools):
        if (desc := text_field(t.raw, "description")) is not None:
            yield f"{t.label} description", desc
        for n, s in parameters(t):
            if (desc := text_field(s, "description")) is not None:
                yield f"{t.label}.{n} description", desc


_Change = tuple[str, list[str], dict[str, Any], dict[str, Any]]
"""A tool changed between listings: label, keys that differ, first and second definition."""


def _listing_changes(data: LintInput) -> tuple[int, list[_Change]]:
    """How many tools (by name, first occurrence) both listings hold, and those whose
    description or inputSchema differs between them."""
    second = {t.name: t for t in reversed(tool_views(data.second_listing)) if t.name is not None}
    changes: list[_Change] = []
    seen: set[str] = set()
    for t in tool_views(data.tools):
        if t.name is None or t.name in seen or t.name not in second:
            continue
        seen.add(t.name)
        other = second[t.name].raw
        keys = [k for k in ("description", "inputSchema")
                if to_json(t.raw.get(k), canonical=True) != to_json(other.get(k), canonical=True)]
        if keys:
            changes.append((t.label, keys, t.raw, other))
    return len(seen), changes


def _check_static_descriptions(data: LintInput) -> Outcome:
    """Descriptions (tool and top-level parameter) and instructions hold no dynamic-looking
    data: an ISO date-time (``2025-01-02T03:04``), a clock time (``12:34:56``), ``today is``,
    ``as of <date>``, ``current time is``/``current date:`` (a clock tool's "returns the
    current time" is fine; timestamps after ``e.g.``/``such as``/``like``/``format`` are
    taken for format examples). With a second listing from another session, each tool (by
    name) must have the same description and inputSchema in both."""
    texts = list(_texts(data))
    compared, changes = _listing_changes(data)
    if not texts and not compared:
        return "n/a", "No descriptions or instructions to judge.", ""
    dynamic = [(where, text, what) for where, text in texts if (what := _dynamic(text))]
    if not dynamic and not changes:
        agree = (f"; {quantity(compared, 'tool')} identical in a second listing" if compared
                 else "")
        return ("pass", f"No dynamic data in {len(texts)} descriptions and instructions"
                f"{agree}.", "")
    parts = []
    if dynamic:
        shown = [f"{where} ({what})" for where, _, what in dynamic]
        parts.append(f"Dynamic data in {len(dynamic)} of {len(texts)} descriptions and "
                     f"instructions: {name_list(shown)}.")
    if changes:
        shown = [f"{label} ({', '.join(keys)})" for label, keys, _, _ in changes]
        parts.append(f"{quantity(len(changes), 'tool')} changed between two listings: "
                     f"{name_list(shown)}.")
    parts.append("Keep tool definitions and instructions static (put live data in tool "
                  "results), so hosts can cache the prompt prefix and the model sees the "
                  "same tools every session.")
    evidence: dict[str, Any] = {}
    if dynamic:
        evidence["dynamic"] = {where: text for where, text, _ in dynamic}
    if changes:
        evidence["changed"] = {
            label: {"first": {k: old.get(k) for k in keys}, "second": {k: new.get(k) for k in keys}}
            for label, keys, old, new in changes
        }
    return "fail", " ".join(parts), evidence


CHECKS: dict[str, Check] = {
    "LINT.description": _check_description,
    "LINT.instructions": _check_instructions,
    "LINT.static-descriptions": _check_static_descriptions,
}
"""The ``LINT.*`` rules of this module -> their checks."""
