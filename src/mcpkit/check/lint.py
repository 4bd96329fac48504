"""Design lint: judges how well a server's tools suit the model that uses them.

The protocol rules say whether a server is *legal*. These rules (the ``LINT.*`` ids of
:mod:`mcpkit.check.rules`, taken from the server design guide) say whether an LLM can use it
*well*: names it can tell apart, descriptions that say when to call a tool and what comes
back, flat parameters with enums instead of guessable strings, bounded results, and errors
it can recover from. A server can pass every MUST and still fail all of these.

:func:`lint` works only on what the probes already saw (:class:`LintInput`): it sends
nothing. It returns exactly one :class:`~mcpkit.check.model.Finding` per ``LINT.*`` rule,
``pass``, ``fail`` or ``n/a`` (nothing to judge), and each failure names the offending tools,
parameters or messages and says how to fix them.

Servers are foreign and may be broken, so every field is checked for its type before use:
a tool that is not an object, a name that is not a string or an ``inputSchema`` that is a
list is skipped (other rules, ``WIRE.schema`` and ``M067``, blame those), never a crash.
The heuristics are documented on each rule's function below.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .model import Era, Finding, Verdict
from .rules import RULES, finding

__all__ = ["LintInput", "ProvokedError", "ToolCall", "lint"]

MAX_TOOLS = 15
"""More tools than this and tool selection becomes unreliable (design guide: 5-15 tools)."""

MAX_RESULT_CHARS = 20_000
"""Text content above this many characters floods the model's context window."""

MIN_DESCRIPTION = 40
"""A tool description shorter than this cannot say when to use the tool and what it returns."""

MIN_INSTRUCTIONS = 20
"""Instructions shorter than this cannot give the model any real guidance."""

MIN_ERROR_WORDS = 4
"""An actionable error message needs at least this many words."""

_SHOW = 8
"""Offenders named in a message; the rest are counted."""

_HINT_SCAN = 2000
"""Characters of a parameter description searched for finite-set hints (bounds regex work)."""

_MAX_VARIANTS = 64
"""Schemas looked at per parameter when following ``$ref`` and anyOf/oneOf/allOf."""


@dataclass(slots=True)
class ToolCall:
    """One ``tools/call`` the checker made and its outcome."""

    tool: str
    arguments: dict[str, Any]
    result: dict[str, Any] | None
    """The CallToolResult, if a result came back."""
    error: dict[str, Any] | None
    """The JSON-RPC error object, if an error came back."""
    evidence: str
    """Request and response text, already trimmed."""


@dataclass(slots=True)
class ProvokedError:
    """An error the probes provoked on purpose (unknown tool, bad arguments, bad cursor, …)."""

    probe: str
    """What was provoked, e.g. ``"unknown tool"``, ``"invalid arguments for search_docs"``."""
    message: str
    """The JSON-RPC error message, or the text of an ``isError`` result."""
    expected_words: tuple[str, ...]
    """Names the message ought to mention (the unknown tool, the bad parameter); may be empty."""
    evidence: str


@dataclass(slots=True)
class LintInput:
    """Everything the lint judges, as the probes saw it."""

    tools: list[dict[str, Any]]
    """Every Tool object from ``tools/list`` (all pages), raw JSON (may hold garbage)."""
    instructions: str | None
    """The ``initialize`` / ``server/discover`` instructions."""
    calls: list[ToolCall]
    """Calls made; empty when the user forbade calls."""
    provoked: list[ProvokedError]
    second_listing: list[dict[str, Any]] | None
    """Tools from a second, independent listing (another session), or None."""


Outcome = tuple[Verdict, str, Any]
"""What a rule check returns: verdict, message, evidence (a string, or JSON-able data)."""


# ---------------------------------------------------------------------------------------------
# helpers


@dataclass(frozen=True, slots=True)
class _Tool:
    label: str  # the name, or "tools[i]" when the name is not a string
    name: str | None
    raw: dict[str, Any]


def _tools(items: Iterable[Any] | None) -> list[_Tool]:
    """The tool objects of a listing, skipping anything that is not an object."""
    out = []
    for i, item in enumerate(items or ()):
        if isinstance(item, dict):
            name = item.get("name")
            if isinstance(name, str):
                out.append(_Tool(_short(name), name, item))
            else:
                out.append(_Tool(f"tools[{i}]", None, item))
    return out


def _short(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _dump(value: Any, *, canonical: bool = False) -> str:
    """Compact JSON (keys sorted when ``canonical``); ``repr`` for what JSON can't hold."""
    option = orjson.OPT_SORT_KEYS if canonical else 0
    try:
        return orjson.dumps(value, default=repr, option=option).decode()
    except TypeError:  # orjson.JSONEncodeError: non-string keys, huge integers, deep nesting
        return repr(value)


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def _names(labels: Sequence[str]) -> str:
    """``a, b, c`` with at most :data:`_SHOW` items, the rest counted."""
    shown = ", ".join(labels[:_SHOW])
    rest = len(labels) - _SHOW
    return f"{shown} (+{rest} more)" if rest > 0 else shown


def _count(labels: Sequence[str], total: int, noun: str) -> str:
    """``2 of 7 tools: a, b``."""
    return f"{len(labels)} of {_plural(total, noun)}: {_names(labels)}"


def _text(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _schema(tool: _Tool) -> dict[str, Any] | None:
    schema = tool.raw.get("inputSchema")
    return schema if isinstance(schema, dict) else None


def _params(tool: _Tool) -> list[tuple[str, dict[str, Any]]]:
    """The top-level parameters of a tool whose schema and property schemas are objects."""
    schema = _schema(tool)
    props = schema.get("properties") if schema is not None else None
    if not isinstance(props, dict):
        return []
    return [(k, v) for k, v in props.items() if isinstance(k, str) and isinstance(v, dict)]


def _pick(tool: _Tool, *keys: str) -> dict[str, Any]:
    """The name and ``keys`` of a tool definition, for evidence."""
    out: dict[str, Any] = {"name": tool.raw.get("name")}
    out.update({k: tool.raw[k] for k in keys if k in tool.raw})
    return out


def _with_exchanges(summary: Any, exchanges: Iterable[str]) -> str:
    """Evidence: a compact summary of all offenders, then the first offender's exchange."""
    first = next((e for e in exchanges if isinstance(e, str) and e), "")
    return _dump(summary) + (f"\n{first}" if first else "")


_EXAMPLE_MARKERS = ("e.g", "eg.", "for example", "for instance", "such as", "like ", "example")


def _is_example(text: str, start: int, markers: Sequence[str] = _EXAMPLE_MARKERS) -> bool:
    """Whether the match at ``start`` follows an example marker (``e.g. 'a', 'b'``)."""
    before = text[max(0, start - 24): start].lower()
    return any(m in before for m in markers)


def _types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    return set()


def _pointer(root: dict[str, Any], pointer: str) -> Any:
    """Resolve a local JSON pointer (``/$defs/Filter``) in ``root``; None when it can't."""
    node: Any = root
    if pointer == "":
        return node
    if not pointer.startswith("/"):
        return None
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _variants(schema: Any, root: dict[str, Any]) -> list[dict[str, Any]]:
    """``schema`` with local ``$ref`` followed, and the members of its anyOf/oneOf/allOf
    (recursively; at most :data:`_MAX_VARIANTS`, so cyclic or huge schemas stay cheap)."""
    out: list[dict[str, Any]] = []
    todo: list[tuple[Any, int]] = [(schema, 0)]
    while todo and len(out) < _MAX_VARIANTS:
        node, depth = todo.pop()
        if not isinstance(node, dict) or depth > 6:
            continue
        out.append(node)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            todo.append((_pointer(root, ref[1:]), depth + 1))
        for key in ("anyOf", "oneOf", "allOf"):
            members = node.get(key)
            if isinstance(members, list):
                todo += [(m, depth + 1) for m in members[:_MAX_VARIANTS]]
    return out


def _is_object(schema: Any, root: dict[str, Any]) -> bool:
    return any("object" in _types(v) or isinstance(v.get("properties"), dict)
               for v in _variants(schema, root))


def _item_objects(schema: Any, root: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas an array schema's ``items`` may be (empty when not an array)."""
    out = []
    for v in _variants(schema, root):
        if "array" in _types(v) or "items" in v:
            out += [i for i in _variants(v.get("items"), root)
                    if "object" in _types(i) or isinstance(i.get("properties"), dict)]
    return out


def _flat(obj: dict[str, Any], root: dict[str, Any]) -> bool:
    """Whether an item object holds no objects (nor arrays of objects) itself."""
    props = obj.get("properties")
    if not isinstance(props, dict):
        return True
    return not any(_is_object(p, root) or _item_objects(p, root) for p in props.values())


# ---------------------------------------------------------------------------------------------
# naming

_NAME_RE = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_SEGMENT_SPLIT = re.compile(r"[_.\-]")


def _check_tool_name(data: LintInput) -> Outcome:
    """Names are 1-128 characters of ``A-Z a-z 0-9 _ - .``; tools without a string name are
    skipped."""
    named = [t for t in _tools(data.tools) if t.name is not None]
    if not named:
        return "n/a", "No tool with a name to judge.", ""
    bad = [t for t in named if t.name is not None and not _NAME_RE.fullmatch(t.name)]
    if not bad:
        return ("pass", f"All {_plural(len(named), 'tool name')} use only the allowed "
                "characters.", "")
    labels = [_dump(t.label) for t in bad]
    example = bad[0].name or ""
    fixed = re.sub(r"[^A-Za-z0-9_.\-]+", "_", example)[:128] or "tool"
    return (
        "fail",
        f"Malformed names in {_count(labels, len(named), 'tool')}. Use 1-128 characters "
        f"of A-Z a-z 0-9 _ - . only (no spaces, slashes or other symbols), e.g. "
        f"{_dump(_short(fixed))} instead of {labels[0]}.",
        [{"name": t.name} for t in bad],
    )


def _check_tool_name_unique(data: LintInput) -> Outcome:
    """No two tools (of the first listing) share a name."""
    names = [t.name for t in _tools(data.tools) if t.name is not None]
    if not names:
        return "n/a", "No tool with a name to judge.", ""
    counts = Counter(names)
    dups = [n for n, c in counts.items() if c > 1]
    if not dups:
        return "pass", f"All {_plural(len(names), 'tool name')} are distinct.", ""
    shown = [f"{_short(n)} ({counts[n]} times)" for n in dups]
    return (
        "fail",
        f"{_plural(len(dups), 'name')} used by more than one tool: {_names(shown)}. Give every "
        "tool its own name: clients call tools by name, so only one of each can be reached.",
        [_pick(t, "description") for t in _tools(data.tools) if t.name in dups],
    )


def _first_segment(name: str) -> str:
    parts = [p for p in _SEGMENT_SPLIT.split(name) if p]
    return (parts[0] if parts else name).lower()


def _check_service_prefix(data: LintInput) -> Outcome:
    """With two or more tools, every name starts with the same first segment (names split on
    ``_``, ``-`` and ``.``, compared case-insensitively, empty segments ignored)."""
    names = list(dict.fromkeys(t.name for t in _tools(data.tools) if t.name is not None))
    if len(names) < 2:
        return "n/a", "Fewer than two tools: no prefix to share.", ""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(_first_segment(name), []).append(name)
    if len(groups) == 1:
        prefix = next(iter(groups))
        return "pass", f"All {len(names)} tool names start with the prefix {prefix!r}.", ""
    shown = [_short(group[0]) if len(group) == 1 else
             f"{seg} ({', '.join(_short(n) for n in group[:4])}{', …' if len(group) > 4 else ''})"
             for seg, group in groups.items()]
    return (
        "fail",
        f"The {len(names)} tool names start with {len(groups)} different prefixes: "
        f"{_names(shown)}. Name every tool {{service}}_{{action}}_{{resource}} with one service "
        f"prefix (e.g. {{service}}_{_short(names[0])}) so the model can tell your tools from "
        "another server's.",
        {"prefixes": groups},
    )


# ---------------------------------------------------------------------------------------------
# descriptions

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
    described = [(t, d.strip()) for t in _tools(data.tools)
                 if (d := _text(t.raw, "description")) is not None and d.strip()]
    if not described:
        return "n/a", "No tool has a description to judge.", ""
    bad = [(t, p) for t, d in described if (p := _description_problems(d))]
    if not bad:
        return ("pass", f"All {_plural(len(described), 'description')} say when to use the tool "
                "and what it returns.", "")
    shown = [f"{t.label} ({'; '.join(p)})" for t, p in bad]
    return (
        "fail",
        f"Weak descriptions in {_count(shown, len(described), 'described tool')}. A "
        "description is a prompt for the model: say when to use the tool (\"Use this to …\"), "
        "what it returns (\"Returns …\") and how to format arguments, in at least "
        f"{MIN_DESCRIPTION} characters.",
        [_pick(t, "description") for t, _ in bad],
    )


# ---------------------------------------------------------------------------------------------
# input schemas


def _check_additional_properties(data: LintInput) -> Outcome:
    """The root of every ``inputSchema`` (that is an object) sets ``additionalProperties:
    false``; ``unevaluatedProperties: false`` is accepted too, since it forbids the same
    thing for composed schemas."""
    with_schema = [t for t in _tools(data.tools) if _schema(t) is not None]
    if not with_schema:
        return "n/a", "No tool has an inputSchema object to judge.", ""
    bad = [t for t in with_schema
           if (s := _schema(t)) is not None and s.get("additionalProperties") is not False
           and s.get("unevaluatedProperties") is not False]
    if not bad:
        return ("pass", f"All {_plural(len(with_schema), 'inputSchema')} set "
                "additionalProperties: false.", "")
    return (
        "fail",
        "No \"additionalProperties\": false at the root of the inputSchema in "
        f"{_count([t.label for t in bad], len(with_schema), 'tool')}. Add it, so that a "
        "parameter the model invents is rejected instead of silently ignored.",
        [_pick(t, "inputSchema") for t in bad],
    )


_ENUM_NAMES = frozenset({
    "mode", "format", "type", "kind", "status", "state", "order", "sort", "sort_by", "sort_order",
    "order_by", "direction", "algorithm", "method", "strategy", "level", "unit", "units",
    "style", "category", "priority", "severity", "language", "lang", "color_space", "encoding",
    "output_format", "response_format", "result_format", "view", "scope",
})
_ENUM_SUFFIXES = frozenset({
    "mode", "type", "kind", "status", "direction", "algorithm", "strategy", "level", "unit",
    "units", "style", "category", "priority", "severity",
})
_CONSTRAINTS = ("enum", "const", "format", "pattern", "anyOf", "oneOf", "allOf", "$ref")
_QUOTE = r"(?<!\w)(['\"`])[^'\"`\s][^'\"`]{0,30}\1(?!\w)"
_FINITE_HINTS: tuple[tuple[re.Pattern[str], bool], ...] = (
    # (pattern, whether an example marker before it ("e.g.") cancels it)
    (re.compile(r"\bone of\b", re.IGNORECASE), False),
    (re.compile(r"\beither\b", re.IGNORECASE), False),
    (re.compile(r"\b(?:possible|allowed|valid|accepted|supported) (?:values|options)\b",
                re.IGNORECASE), False),
    (re.compile(_QUOTE + r"\s*(?:,|\bor\b|\||/)\s*" + _QUOTE.replace(r"\1", r"\2"),
                re.IGNORECASE), True),
    (re.compile(r"(?<![\w/])[A-Za-z][\w-]*(?:\s?\|\s?[A-Za-z][\w-]*)+\b"), True),
)


def _snake(name: str) -> str:
    """``sortBy`` / ``sort-by`` → ``sort_by``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).replace("-", "_").lower()


def _is_free_string(schema: dict[str, Any]) -> bool:
    types = _types(schema)
    return ("string" in types and types <= {"string", "null"}
            and not any(k in schema for k in _CONSTRAINTS))


def _finite_hint(name: str, schema: dict[str, Any]) -> str | None:
    """Why a free string parameter looks like a choice from a fixed set, or None."""
    snake = _snake(name)
    if snake in _ENUM_NAMES or snake.rsplit("_", 1)[-1] in _ENUM_SUFFIXES:
        return f"its name {name!r}"
    desc = (_text(schema, "description") or "")[:_HINT_SCAN]
    for pattern, cancelled_by_example in _FINITE_HINTS:
        for m in pattern.finditer(desc):
            if not (cancelled_by_example and _is_example(desc, m.start())):
                return f"its description says {_short(m.group(0), 40)!r}"
    return None


def _check_enum_like_string(data: LintInput) -> Outcome:
    """A top-level string parameter with no ``enum``, ``const``, ``format``, ``pattern`` (or
    composition/``$ref``) whose name is mode-like (``mode``, ``format``, ``type``, ``sort_by``,
    ``color_space``, … or a snake/camel name ending in ``_mode``, ``_type``, ``_level``,
    ``_status``, …) or whose description lists a finite set (``one of``, ``either``,
    ``allowed values``, quoted alternatives ``'a', 'b' or 'c'``, ``a|b|c``; quoted and piped
    alternatives after ``e.g.``/``such as``/``like`` are taken for examples, not a set)."""
    strings = [(t, n, s) for t in _tools(data.tools) for n, s in _params(t) if _is_free_string(s)]
    if not strings:
        return "n/a", "No free-form string parameter to judge.", ""
    bad = [(t, n, s, h) for t, n, s in strings if (h := _finite_hint(n, s)) is not None]
    if not bad:
        return ("pass", f"None of the {_plural(len(strings), 'free string parameter')} looks "
                "like a choice from a fixed set.", "")
    shown = [f"{t.label}.{n} ({h})" for t, n, _, h in bad]
    return (
        "fail",
        "Parameters that look like a choice from a fixed set but have no enum, in "
        f"{_count(shown, len(strings), 'free string parameter')}. List the valid values in "
        "\"enum\": from an enum the model picks a valid value, from a free string it guesses "
        "a plausible one.",
        [{"tool": t.raw.get("name"), "parameter": n, "schema": s} for t, n, s, _ in bad],
    )


def _nesting(schema: dict[str, Any], root: dict[str, Any]) -> str | None:
    if _is_object(schema, root):
        return "an object"
    items = _item_objects(schema, root)
    if items and not all(_flat(i, root) for i in items):
        return "an array of objects that nest further objects"
    return None


def _check_nested_object(data: LintInput) -> Outcome:
    """No top-level parameter is an object (``type: object``, ``properties``, also through a
    local ``$ref`` or an ``anyOf``/``oneOf``/``allOf`` member). An array of objects is allowed
    when each item object is flat: none of its properties is an object or array of objects."""
    params = [(t, n, s) for t in _tools(data.tools) for n, s in _params(t)]
    if not params:
        return "n/a", "No tool parameter to judge.", ""
    bad = []
    for t, n, s in params:
        root = _schema(t) or {}
        if (why := _nesting(s, root)) is not None:
            bad.append((t, n, s, why))
    if not bad:
        return "pass", f"All {_plural(len(params), 'parameter')} are flat.", ""
    shown = [f"{t.label}.{n} ({why})" for t, n, _, why in bad]
    return (
        "fail",
        f"Nested objects in {_count(shown, len(params), 'parameter')}. Flatten them into top-level "
        "primitive parameters (filters.status → status with an enum); the model invents keys "
        "of nested objects. An array of items is fine when each item is a flat object.",
        [{"tool": t.raw.get("name"), "parameter": n, "schema": s} for t, n, s, _ in bad],
    )


def _check_output_schema(data: LintInput) -> Outcome:
    """Every tool declares ``outputSchema`` (present and not null; a value of the wrong type is
    ``WIRE.schema``'s business and skipped here)."""
    tools = _tools(data.tools)
    if not tools:
        return "n/a", "No tools to judge.", ""
    bad = [t for t in tools if t.raw.get("outputSchema") is None]
    if not bad:
        return "pass", f"All {_plural(len(tools), 'tool')} declare outputSchema.", ""
    return (
        "fail",
        f"No outputSchema in {_count([t.label for t in bad], len(tools), 'tool')}. "
        "Declare one and return structuredContent matching it, so the model gets typed data "
        "instead of parsing text.",
        [_pick(t) for t in bad],
    )


# ---------------------------------------------------------------------------------------------
# annotations and instructions


def _check_annotations(data: LintInput) -> Outcome:
    """Every tool has ``annotations`` with ``readOnlyHint`` (annotations that are not an object
    are ``WIRE.schema``'s business and skipped here)."""
    tools = _tools(data.tools)
    if not tools:
        return "n/a", "No tools to judge.", ""
    bad = []
    for t in tools:
        ann = t.raw.get("annotations")
        if ann is None:
            bad.append((t, "no annotations"))
        elif isinstance(ann, dict) and ann.get("readOnlyHint") is None:
            bad.append((t, "no readOnlyHint"))
    if not bad:
        return "pass", f"All {_plural(len(tools), 'tool')} set readOnlyHint.", ""
    shown = [f"{t.label} ({why})" for t, why in bad]
    return (
        "fail",
        f"No readOnlyHint annotation in {_count(shown, len(tools), 'tool')}. Set at least "
        "readOnlyHint (true for tools that only read; false plus destructiveHint and "
        "idempotentHint for tools that change things) so hosts know what they may "
        "auto-approve.",
        [_pick(t, "annotations") for t, _ in bad],
    )


def _check_annotations_contradictory(data: LintInput) -> Outcome:
    """No tool has both ``readOnlyHint: true`` and ``destructiveHint: true``."""
    annotated = [t for t in _tools(data.tools) if isinstance(t.raw.get("annotations"), dict)]
    if not annotated:
        return "n/a", "No tool has annotations to judge.", ""
    bad = [t for t in annotated if t.raw["annotations"].get("readOnlyHint") is True
           and t.raw["annotations"].get("destructiveHint") is True]
    if not bad:
        return ("pass", f"No contradictory hints in {_plural(len(annotated), 'annotated tool')}.",
                "")
    return (
        "fail",
        "Both readOnlyHint: true and destructiveHint: true in "
        f"{_count([t.label for t in bad], len(annotated), 'annotated tool')}. A read-only "
        "tool destroys nothing: set destructiveHint false, or readOnlyHint false if the tool "
        "does change things (a host may auto-approve a read-only tool).",
        [_pick(t, "annotations") for t in bad],
    )


def _check_instructions(data: LintInput) -> Outcome:
    """Instructions are present and at least :data:`MIN_INSTRUCTIONS` characters (stripped)."""
    text = data.instructions
    fix = ("Send instructions: a short system-prompt section telling the model what the server "
           "is for, which tool to use when, and any conventions (units, coordinates, limits).")
    if not isinstance(text, str) or not text.strip():
        return "fail", f"The server sends no instructions. {fix}", _dump(text)
    if len(text.strip()) < MIN_INSTRUCTIONS:
        return ("fail", f"The instructions are only {len(text.strip())} characters. {fix}",
                _dump(text))
    return "pass", f"The server sends {len(text.strip())} characters of instructions.", ""


# ---------------------------------------------------------------------------------------------
# consistency

_SIBLING_KEYS = ("type", "enum", "default", "description")
_ABSENT = "<absent>"


def _sibling_value(schema: dict[str, Any], key: str) -> str:
    if key not in schema:
        return _ABSENT
    value = schema[key]
    if key in ("enum", "type") and isinstance(value, list):  # order does not matter
        return _dump(sorted(_dump(v, canonical=True) for v in value))
    return _dump(value, canonical=True)


def _check_sibling_parameters(data: LintInput) -> Outcome:
    """A parameter name used by two or more tools has the same ``type``, ``enum`` (in any
    order), ``default`` and ``description`` in each (a key present in one and absent in another
    is a difference)."""
    uses: dict[str, list[tuple[_Tool, dict[str, Any]]]] = {}
    for t in _tools(data.tools):
        for n, s in _params(t):
            uses.setdefault(n, []).append((t, s))
    shared = {n: u for n, u in uses.items() if len(u) > 1}
    if not shared:
        return "n/a", "No parameter name is shared by two tools.", ""
    bad = []
    for n, u in shared.items():
        keys = [k for k in _SIBLING_KEYS if len({_sibling_value(s, k) for _, s in u}) > 1]
        if keys:
            bad.append((n, u, keys))
    if not bad:
        return ("pass", f"All {_plural(len(shared), 'shared parameter')} agree across tools.",
                "")
    shown = [f"{_short(n)} in {', '.join(t.label for t, _ in u[:4])}"
             f"{', …' if len(u) > 4 else ''} (differs in {', '.join(keys)})" for n, u, keys in bad]
    return (
        "fail",
        f"Definitions differ between tools in {_count(shown, len(shared), 'shared parameter')}. "
        "Give a parameter the same type, enum, default and description in every tool that "
        "takes it: the model carries what it learned from one tool to the next.",
        {n: {t.label: {k: s.get(k) for k in keys} for t, s in u} for n, u, keys in bad},
    )


# ---------------------------------------------------------------------------------------------
# calls and errors


def _text_chars(result: dict[str, Any]) -> int:
    """Characters of text in a result's content: text blocks and embedded text resources."""
    content = result.get("content")
    total = 0
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        text = block.get("text")
        resource = block.get("resource")
        if isinstance(text, str):
            total += len(text)
        elif isinstance(resource, dict) and isinstance(resource.get("text"), str):
            total += len(resource["text"])
    return total


def _check_response_size(data: LintInput) -> Outcome:
    """Each successful call (a result without ``isError: true``) returns at most
    :data:`MAX_RESULT_CHARS` characters of text content."""
    ok = [c for c in data.calls or () if isinstance(c.result, dict)
          and c.result.get("isError") is not True]
    if not ok:
        return "n/a", "No successful tool call to judge.", ""
    sized = [(c, _text_chars(c.result)) for c in ok if c.result is not None]
    big = [(c, n) for c, n in sized if n > MAX_RESULT_CHARS]
    if not big:
        largest = max(n for _, n in sized)
        return ("pass", f"All {_plural(len(ok), 'successful call')} returned at most "
                f"{largest:,} characters of text.", "")
    shown = [f"{_short(str(c.tool))} ({n:,} characters)" for c, n in big]
    return (
        "fail",
        f"More than {MAX_RESULT_CHARS:,} characters of text in "
        f"{_count(shown, len(ok), 'successful call')}. Bound results: a max_results parameter with "
        "a small default, truncated/total_available fields, pagination; or put a summary in "
        "content and the full data in structuredContent.",
        _with_exchanges([{"tool": c.tool, "arguments": c.arguments, "textChars": n}
                         for c, n in big], (c.evidence for c, _ in big)),
    )


_GENERIC_ERRORS = frozenset({
    "error", "failed", "failure", "unknown error", "an error occurred", "something went wrong",
    "internal error", "internal server error", "server error", "invalid params",
    "invalid parameters", "invalid parameter", "invalid param", "invalid arguments",
    "invalid argument", "invalid input", "invalid value", "invalid request", "bad request",
    "bad arguments", "not found", "tool not found", "resource not found", "method not found",
    "unknown tool", "unknown resource", "unknown method", "validation error",
    "validation failed", "access denied", "permission denied", "forbidden", "unauthorized",
    "invalid cursor",
})


def _error_problems(err: ProvokedError) -> list[str]:
    message = err.message if isinstance(err.message, str) else ""
    words = re.findall(r"\w+", message)
    if not words:
        return ["no message"]
    problems = []
    if " ".join(w.lower() for w in words) in _GENERIC_ERRORS:
        problems.append("a generic phrase")
    elif len(words) < MIN_ERROR_WORDS:
        problems.append(f"only {_plural(len(words), 'word')}")
    expected = [w for w in err.expected_words or () if isinstance(w, str) and w]
    if expected and not any(
        re.search(rf"(?<!\w){re.escape(w)}(?!\w)", message, re.IGNORECASE) for w in expected
    ):
        problems.append(f"does not name {' or '.join(_short(w, 40) for w in expected[:3])}")
    return problems


def _check_actionable_errors(data: LintInput) -> Outcome:
    """Each provoked error message has at least :data:`MIN_ERROR_WORDS` words, is not just a
    generic phrase (``Invalid params``, ``Not found``, ``Unknown tool``, … compared in lower
    case without punctuation) and, when the probe names words it should mention (the unknown
    tool, the bad parameter), mentions at least one of them as a whole word."""
    provoked = list(data.provoked or ())
    if not provoked:
        return "n/a", "No error was provoked.", ""
    bad = [(e, p) for e in provoked if (p := _error_problems(e))]
    if not bad:
        return ("pass", f"All {_plural(len(provoked), 'provoked error')} say what went wrong "
                "in words the model can act on.", "")
    shown = [f"{e.probe} → {_short(str(e.message), 60)!r} ({'; '.join(p)})" for e, p in bad]
    return (
        "fail",
        f"Messages the model cannot act on in {_count(shown, len(provoked), 'provoked error')}. "
        "Say "
        "what went wrong, naming the tool or parameter, what a valid request looks like and "
        "what to do instead (e.g. \"Unknown tool 'serch_docs'. Available tools: search_docs, "
        "get_page.\").",
        _with_exchanges([{"probe": e.probe, "message": e.message} for e, _ in bad],
                        (e.evidence for e, _ in bad)),
    )


def _check_error_structured_content(data: LintInput) -> Outcome:
    """No call result with ``isError: true`` carries a ``structuredContent`` key."""
    errors = [c for c in data.calls or () if isinstance(c.result, dict)
              and c.result.get("isError") is True]
    if not errors:
        return "n/a", "No tool call returned an error result.", ""
    bad = [c for c in errors if c.result is not None and "structuredContent" in c.result]
    if not bad:
        return ("pass", f"None of the {_plural(len(errors), 'error result')} carries "
                "structuredContent.", "")
    return (
        "fail",
        "structuredContent in "
        f"{_count([_short(str(c.tool)) for c in bad], len(errors), 'error result')}. Report a "
        "tool error only in content text with isError: true; structuredContent must match "
        "outputSchema and is for successful results.",
        _with_exchanges([{"tool": c.tool, "arguments": c.arguments} for c in bad],
                        (c.evidence for c in bad)),
    )


# ---------------------------------------------------------------------------------------------
# static descriptions

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


_FORMAT_MARKERS = (*_EXAMPLE_MARKERS, "format", "iso 8601", "iso-8601")


def _dynamic(text: str) -> str | None:
    """What dynamic-looking data ``text`` holds (``a date-time "2025-…"``), or None."""
    for what, pattern, cancelled_by_example in _DYNAMIC:
        for m in pattern.finditer(text):
            if not (cancelled_by_example and _is_example(text, m.start(), _FORMAT_MARKERS)):
                return f"{what} {_short(m.group(0), 30)!r}"
    return None


def _texts(data: LintInput) -> Iterator[tuple[str, str]]:
    """(where, text) of every description and the instructions."""
    if isinstance(data.instructions, str):
        yield "instructions", data.instructions
    for t in _tools(data.tools):
        if (desc := _text(t.raw, "description")) is not None:
            yield f"{t.label} description", desc
        for n, s in _params(t):
            if (desc := _text(s, "description")) is not None:
                yield f"{t.label}.{n} description", desc


_Change = tuple[str, list[str], dict[str, Any], dict[str, Any]]
"""A tool changed between listings: label, keys that differ, first and second definition."""


def _listing_changes(data: LintInput) -> tuple[int, list[_Change]]:
    """How many tools (by name, first occurrence) both listings hold, and those whose
    description or inputSchema differs between them."""
    second = {t.name: t for t in reversed(_tools(data.second_listing)) if t.name is not None}
    changes: list[_Change] = []
    seen: set[str] = set()
    for t in _tools(data.tools):
        if t.name is None or t.name in seen or t.name not in second:
            continue
        seen.add(t.name)
        other = second[t.name].raw
        keys = [k for k in ("description", "inputSchema")
                if _dump(t.raw.get(k), canonical=True) != _dump(other.get(k), canonical=True)]
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
        agree = (f"; {_plural(compared, 'tool')} identical in a second listing" if compared
                 else "")
        return ("pass", f"No dynamic data in {len(texts)} descriptions and instructions"
                f"{agree}.", "")
    parts = []
    if dynamic:
        shown = [f"{where} ({what})" for where, _, what in dynamic]
        parts.append(f"Dynamic data in {len(dynamic)} of {len(texts)} descriptions and "
                     f"instructions: {_names(shown)}.")
    if changes:
        shown = [f"{label} ({', '.join(keys)})" for label, keys, _, _ in changes]
        parts.append(f"{_plural(len(changes), 'tool')} changed between two listings: "
                     f"{_names(shown)}.")
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


def _check_tool_count(data: LintInput) -> Outcome:
    """At most :data:`MAX_TOOLS` tools."""
    tools = _tools(data.tools)
    if not tools:
        return "n/a", "No tools to judge.", ""
    if len(tools) <= MAX_TOOLS:
        return "pass", f"The server lists {_plural(len(tools), 'tool')}.", ""
    return (
        "fail",
        f"The server lists {len(tools)} tools; models choose unreliably among more than "
        f"{MAX_TOOLS}. Merge tools around user goals, drop tools nobody uses, or split the "
        "server by domain.",
        [t.raw.get("name") for t in tools],
    )


# ---------------------------------------------------------------------------------------------

_CHECKS: dict[str, Callable[[LintInput], Outcome]] = {
    "LINT.tool-name": _check_tool_name,
    "LINT.tool-name-unique": _check_tool_name_unique,
    "LINT.service-prefix": _check_service_prefix,
    "LINT.description": _check_description,
    "LINT.additional-properties": _check_additional_properties,
    "LINT.enum-like-string": _check_enum_like_string,
    "LINT.nested-object": _check_nested_object,
    "LINT.output-schema": _check_output_schema,
    "LINT.annotations": _check_annotations,
    "LINT.annotations-contradictory": _check_annotations_contradictory,
    "LINT.instructions": _check_instructions,
    "LINT.sibling-parameters": _check_sibling_parameters,
    "LINT.response-size": _check_response_size,
    "LINT.tool-count": _check_tool_count,
    "LINT.actionable-errors": _check_actionable_errors,
    "LINT.error-structured-content": _check_error_structured_content,
    "LINT.static-descriptions": _check_static_descriptions,
}


def lint(data: LintInput, era: Era) -> list[Finding]:
    """One finding per ``LINT.*`` rule of the catalogue, in catalogue order."""
    out = []
    for rule in RULES:
        if not rule.startswith("LINT."):
            continue
        check = _CHECKS.get(rule)
        if check is None:
            out.append(finding(rule, "untestable", "This checker has no lint for this rule.",
                               "", era))
            continue
        verdict, message, evidence = check(data)
        text = evidence if isinstance(evidence, str) else _dump(evidence)
        out.append(finding(rule, verdict, message, text, era))
    return out
