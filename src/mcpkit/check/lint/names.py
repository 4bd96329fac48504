"""Design lint of the tool listing as a whole: names the model can tell apart, and not too
many tools to choose from.

``LINT.tool-name`` (allowed characters and length), ``LINT.tool-name-unique``,
``LINT.service-prefix`` (one first segment shared by every name, so the model can tell this
server's tools from another's) and ``LINT.tool-count`` (at most :data:`MAX_TOOLS`).
"""

from __future__ import annotations

import re
from collections import Counter

from .common import (
    Check,
    Outcome,
    name_list,
    offenders,
    pick,
    quantity,
    shorten,
    to_json,
    tool_views,
)
from .input import LintInput

MAX_TOOLS = 15
"""More tools than this and tool selection becomes unreliable (design guide: 5-15 tools)."""

_NAME_RE = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_SEGMENT_SPLIT = re.compile(r"[_.\-]")


def _check_tool_name(data: LintInput) -> Outcome:
    """Names are 1-128 characters of ``A-Z a-z 0-9 _ - .``; tools without a string name are
    skipped."""
    named = [t for t in tool_views(data.tools) if t.name is not None]
    if not named:
        return "n/a", "No tool with a name to judge.", ""
    bad = [t for t in named if t.name is not None and not _NAME_RE.fullmatch(t.name)]
    if not bad:
        return ("pass", f"All {quantity(len(named), 'tool name')} use only the allowed "
                "characters.", "")
    labels = [to_json(t.label) for t in bad]
    example = bad[0].name or ""
    fixed = re.sub(r"[^A-Za-z0-9_.\-]+", "_", example)[:128] or "tool"
    return (
        "fail",
        f"Malformed names in {offenders(labels, len(named), 'tool')}. Use 1-128 characters "
        f"of A-Z a-z 0-9 _ - . only (no spaces, slashes or other symbols), e.g. "
        f"{to_json(shorten(fixed))} instead of {labels[0]}.",
        [{"name": t.name} for t in bad],
    )


def _check_tool_name_unique(data: LintInput) -> Outcome:
    """No two tools (of the first listing) share a name."""
    names = [t.name for t in tool_views(data.tools) if t.name is not None]
    if not names:
        return "n/a", "No tool with a name to judge.", ""
    counts = Counter(names)
    dups = [n for n, c in counts.items() if c > 1]
    if not dups:
        return "pass", f"All {quantity(len(names), 'tool name')} are distinct.", ""
    shown = [f"{shorten(n)} ({counts[n]} times)" for n in dups]
    return (
        "fail",
        f"{quantity(len(dups), 'name')} used by more than one tool: {name_list(shown)}. Give every "
        "tool its own name: clients call tools by name, so only one of each can be reached.",
        [pick(t, "description") for t in tool_views(data.tools) if t.name in dups],
    )


def _first_segment(name: str) -> str:
    parts = [p for p in _SEGMENT_SPLIT.split(name) if p]
    return (parts[0] if parts else name).lower()


def _check_service_prefix(data: LintInput) -> Outcome:
    """With two or more tools, every name starts with the same first segment (names split on
    ``_``, ``-`` and ``.``, compared case-insensitively, empty segments ignored)."""
    names = list(dict.fromkeys(t.name for t in tool_views(data.tools) if t.name is not None))
    if len(names) < 2:
        return "n/a", "Fewer than two tools: no prefix to share.", ""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(_first_segment(name), []).append(name)
    if len(groups) == 1:
        prefix = next(iter(groups))
        return "pass", f"All {len(names)} tool names start with the prefix {prefix!r}.", ""
    shown = [shorten(group[0]) if len(group) == 1 else
             f"{seg} ({', '.join(shorten(n) for n in group[:4])}{', …' if len(group) > 4 else ''})"
             for seg, group in groups.items()]
    return (
        "fail",
        f"The {len(names)} tool names start with {len(groups)} different prefixes: "
        f"{name_list(shown)}. Name every tool {{service}}_{{action}}_{{resource}} with one service "
        f"prefix (e.g. {{service}}_{shorten(names[0])}) so the model can tell your tools from "
        "another server's.",
        {"prefixes": groups},
    )


def _check_tool_count(data: LintInput) -> Outcome:
    """At most :data:`MAX_TOOLS` tools."""
    tools = tool_views(data.tools)
    if not tools:
        return "n/a", "No tools to judge.", ""
    if len(tools) <= MAX_TOOLS:
        return "pass", f"The server lists {quantity(len(tools), 'tool')}.", ""
    return (
        "fail",
        f"The server lists {len(tools)} tools; models choose unreliably among more than "
        f"{MAX_TOOLS}. Merge tools around user goals, drop tools nobody uses, or split the "
        "server by domain.",
        [t.raw.get("name") for t in tools],
    )


CHECKS: dict[str, Check] = {
    "LINT.tool-name": _check_tool_name,
    "LINT.tool-name-unique": _check_tool_name_unique,
    "LINT.service-prefix": _check_service_prefix,
    "LINT.tool-count": _check_tool_count,
}
"""The ``LINT.*`` rules of this module -> their checks."""
