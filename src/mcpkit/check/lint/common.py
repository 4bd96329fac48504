"""What every ``LINT.*`` rule is written with: a safe view of the raw tool listing, and the
wording of messages and evidence.

Servers are foreign and may be broken, so a listing item that is not an object is skipped, a
tool whose name is not a string is shown by its position (``tools[3]``), and each accessor
answers None (or nothing) for a field of the wrong type, never a crash. Messages name at most
:data:`SHOW` offenders and count the rest, so even a huge broken listing reads in a line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from ..model import Era, Finding, Verdict
from ..rules import RULES, finding
from .input import LintInput

Outcome = tuple[Verdict, str, Any]
"""What a rule check returns: verdict, message, evidence (a string, or JSON-able data)."""

Check = Callable[[LintInput], Outcome]
"""A rule's check: what the probes saw in, its outcome out."""

_In = TypeVar("_In")

SHOW = 8
"""Offenders named in a message; the rest are counted."""


@dataclass(frozen=True, slots=True)
class ToolView:
    """One item of a tool listing that is an object, as the rules see it."""

    label: str  # the name, or "tools[i]" when the name is not a string
    name: str | None
    raw: dict[str, Any]


def tool_views(items: Iterable[Any] | None) -> list[ToolView]:
    """The tool objects of a listing, skipping anything that is not an object."""
    out = []
    for i, item in enumerate(items or ()):
        if isinstance(item, dict):
            name = item.get("name")
            if isinstance(name, str):
                out.append(ToolView(shorten(name), name, item))
            else:
                out.append(ToolView(f"tools[{i}]", None, item))
    return out


def shorten(text: str, limit: int = 48) -> str:
    """``text`` cut to ``limit`` characters, ending in an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def to_json(value: Any, *, canonical: bool = False) -> str:
    """Compact JSON (keys sorted when ``canonical``); ``repr`` for what JSON can't hold."""
    option = orjson.OPT_SORT_KEYS if canonical else 0
    try:
        return orjson.dumps(value, default=repr, option=option).decode()
    except TypeError:  # orjson.JSONEncodeError: non-string keys, huge integers, deep nesting
        return repr(value)


def quantity(n: int, word: str, plural: str | None = None) -> str:
    """``1 tool``, ``3 tools`` (``plural`` for a noun that does not just take an s)."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


def name_list(labels: Sequence[str]) -> str:
    """``a, b, c`` with at most :data:`SHOW` items, the rest counted."""
    shown = ", ".join(labels[:SHOW])
    rest = len(labels) - SHOW
    return f"{shown} (+{rest} more)" if rest > 0 else shown


def offenders(labels: Sequence[str], total: int, noun: str) -> str:
    """``2 of 7 tools: a, b``."""
    return f"{len(labels)} of {quantity(total, noun)}: {name_list(labels)}"


def text_field(obj: dict[str, Any], key: str) -> str | None:
    """``obj[key]`` if it is a string, else None."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def input_schema(tool: ToolView) -> dict[str, Any] | None:
    """The tool's ``inputSchema`` if it is an object, else None."""
    schema = tool.raw.get("inputSchema")
    return schema if isinstance(schema, dict) else None


def parameters(tool: ToolView) -> list[tuple[str, dict[str, Any]]]:
    """The top-level parameters of a tool whose schema and property schemas are objects."""
    schema = input_schema(tool)
    props = schema.get("properties") if schema is not None else None
    if not isinstance(props, dict):
        return []
    return [(k, v) for k, v in props.items() if isinstance(k, str) and isinstance(v, dict)]


def pick(tool: ToolView, *keys: str) -> dict[str, Any]:
    """The name and ``keys`` of a tool definition, for evidence."""
    out: dict[str, Any] = {"name": tool.raw.get("name")}
    out.update({k: tool.raw[k] for k in keys if k in tool.raw})
    return out


def with_exchanges(summary: Any, exchanges: Iterable[str]) -> str:
    """Evidence: a compact summary of all offenders, then the first offender's exchange."""
    first = next((e for e in exchanges if isinstance(e, str) and e), "")
    return to_json(summary) + (f"\n{first}" if first else "")


EXAMPLE_MARKERS = ("e.g", "eg.", "for example", "for instance", "such as", "like ", "example")


def is_example(text: str, start: int, markers: Sequence[str] = EXAMPLE_MARKERS) -> bool:
    """Whether the match at ``start`` follows an example marker (``e.g. 'a', 'b'``)."""
    before = text[max(0, start - 24): start].lower()
    return any(m in before for m in markers)


def rule_findings(prefix: str, checks: Mapping[str, Callable[[_In], Outcome]], data: _In,
                  era: Era, unchecked: str) -> list[Finding]:
    """One finding per catalogue rule whose id starts with ``prefix``, in catalogue order:
    its check's outcome on ``data``, or ``untestable`` with ``unchecked`` when it has none."""
    out = []
    for rule in RULES:
        if not rule.startswith(prefix):
            continue
        check = checks.get(rule)
        outcome: Outcome = (check(data) if check is not None else
                            ("untestable", unchecked, ""))
        verdict, message, evidence = outcome
        text = evidence if isinstance(evidence, str) else to_json(evidence)
        out.append(finding(rule, verdict, message, text, era))
    return out
