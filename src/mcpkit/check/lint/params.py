"""Design lint of tool parameters, as each tool's ``inputSchema`` declares them.

``LINT.additional-properties`` (invented parameters are rejected), ``LINT.enum-like-string``
(a free string that looks like a choice from a fixed set), ``LINT.nested-object`` (flat
parameters) and ``LINT.sibling-parameters`` (a parameter several tools take is defined alike
in each). Parameter schemas are followed through local ``$ref`` and anyOf/oneOf/allOf within
fixed bounds (:data:`_MAX_VARIANTS`), so a cyclic or huge schema stays cheap.
"""

from __future__ import annotations

import re
from typing import Any

from ...protocol import pointer
from .common import (
    SHOW,
    Check,
    Outcome,
    ToolView,
    input_schema,
    is_example,
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

_HINT_SCAN = 2000
"""Characters of a parameter description searched for finite-set hints (bounds regex work)."""

_MAX_VARIANTS = 64
"""Schemas looked at per parameter when following ``$ref`` and anyOf/oneOf/allOf."""


def _types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    return set()


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
            todo.append((pointer.resolve(root, ref[1:]), depth + 1))
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


_MAX_NODES = 256
"""Subschemas looked at per tool for open nested objects (cyclic or huge schemas stay cheap)."""


def _open_records(schema: dict[str, Any], root: dict[str, Any]) -> list[str]:
    """Where, below the root of an ``inputSchema``, an object with ``properties`` says
    nothing of other fields (no ``additionalProperties``, no ``unevaluatedProperties``):
    a field the model invents there is silently dropped. A map (``additionalProperties``
    a schema) and an object that says ``true`` are deliberate and pass."""
    found: list[str] = []
    seen: set[int] = set()
    props = schema.get("properties")
    todo: list[tuple[Any, str]] = [(sub, str(name)) for name, sub in (
        props.items() if isinstance(props, dict) else ())][::-1]
    while todo and len(seen) < _MAX_NODES:
        node, at = todo.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            todo.append((pointer.resolve(root, ref[1:]), at))
        props = node.get("properties")
        if isinstance(props, dict) and props and "additionalProperties" not in node and (
                "unevaluatedProperties" not in node) and at not in found:
            found.append(at)
        nested: list[tuple[Any, str]] = []
        if isinstance(props, dict):
            nested += [(sub, f"{at}/{name}") for name, sub in props.items()]
        if isinstance(node.get("additionalProperties"), dict):
            nested.append((node["additionalProperties"], f"{at}/*"))
        nested.append((node.get("items"), f"{at}[]"))
        prefix = node.get("prefixItems")
        if isinstance(prefix, list):
            nested += [(sub, f"{at}[{i}]") for i, sub in enumerate(prefix[:_MAX_VARIANTS])]
        for key in ("anyOf", "oneOf", "allOf"):
            if isinstance(node.get(key), list):
                nested += [(sub, at) for sub in node[key][:_MAX_VARIANTS]]
        todo += nested[::-1]
    return found


def _check_additional_properties(data: LintInput) -> Outcome:
    """The root of every ``inputSchema`` (that is an object) sets ``additionalProperties:
    false``; ``unevaluatedProperties: false`` is accepted too, since it forbids the same
    thing for composed schemas. Below the root, every object with ``properties`` (a
    record, not a map) says what other fields get: ``false`` (mcpkit closes every object
    of a model, dataclass or TypedDict that does not allow extra fields), or ``true`` / a
    schema when extra fields are meant."""
    with_schema = [t for t in tool_views(data.tools) if input_schema(t) is not None]
    if not with_schema:
        return "n/a", "No tool has an inputSchema object to judge.", ""
    bad = [t for t in with_schema
           if (s := input_schema(t)) is not None and s.get("additionalProperties") is not False
           and s.get("unevaluatedProperties") is not False]
    nested = {t.label: where for t in with_schema if (s := input_schema(t)) is not None
              and (where := _open_records(s, s))}
    if not bad and not nested:
        return ("pass", f"All {quantity(len(with_schema), 'inputSchema')} set "
                "additionalProperties: false, nested objects included.", "")
    said = []
    if bad:
        said.append("No \"additionalProperties\": false at the root of the inputSchema in "
                    f"{offenders([t.label for t in bad], len(with_schema), 'tool')}. Add it, "
                    "so that a parameter the model invents is rejected instead of silently "
                    "ignored.")
    if nested:
        labels = list(nested)
        places = [f"{label} ({shorten(', '.join(nested[label]), 120)})" for label in labels]
        rest = f" (+{len(labels) - SHOW} more)" if len(labels) > SHOW else ""
        said.append(f"Open nested objects (no additionalProperties) in {len(labels)} of "
                    f"{quantity(len(with_schema), 'tool')}: {'; '.join(places[:SHOW])}{rest}. "
                    "Close each with \"additionalProperties\": false (or true, or a schema, "
                    "when extra fields are meant), so that a field the model invents inside "
                    "them is rejected instead of silently dropped.")
    evidence = [pick(t, "inputSchema") for t in with_schema if t in bad or t.label in nested]
    return "fail", " ".join(said), evidence


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
    desc = (text_field(schema, "description") or "")[:_HINT_SCAN]
    for pattern, cancelled_by_example in _FINITE_HINTS:
        for m in pattern.finditer(desc):
            if not (cancelled_by_example and is_example(desc, m.start())):
                return f"its description says {shorten(m.group(0), 40)!r}"
    return None


def _check_enum_like_string(data: LintInput) -> Outcome:
    """A top-level string parameter with no ``enum``, ``const``, ``format``, ``pattern`` (or
    composition/``$ref``) whose name is mode-like (``mode``, ``format``, ``type``, ``sort_by``,
    ``color_space``, … or a snake/camel name ending in ``_mode``, ``_type``, ``_level``,
    ``_status``, …) or whose description lists a finite set (``one of``, ``either``,
    ``allowed values``, quoted alternatives ``'a', 'b' or 'c'``, ``a|b|c``; quoted and piped
    alternatives after ``e.g.``/``such as``/``like`` are taken for examples, not a set)."""
    strings = [(t, n, s) for t in tool_views(data.tools) for n, s in parameters(t)
               if _is_free_string(s)]
    if not strings:
        return "n/a", "No free-form string parameter to judge.", ""
    bad = [(t, n, s, h) for t, n, s in strings if (h := _finite_hint(n, s)) is not None]
    if not bad:
        return ("pass", f"None of the {quantity(len(strings), 'free string parameter')} looks "
                "like a choice from a fixed set.", "")
    shown = [f"{t.label}.{n} ({h})" for t, n, _, h in bad]
    return (
        "fail",
        "Parameters that look like a choice from a fixed set but have no enum, in "
        f"{offenders(shown, len(strings), 'free string parameter')}. List the valid values in "
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


def _inner_key(schema: dict[str, Any], root: dict[str, Any]) -> str | None:
    """A property name of the nested object ``schema`` is (or its array items nest), taken
    from the server's own schema so that the suggested fix names a real field; None when
    the object declares no properties."""
    objects = [v for v in _variants(schema, root) if isinstance(v.get("properties"), dict)]
    for item in _item_objects(schema, root):
        props = item.get("properties")
        if isinstance(props, dict):
            objects += [p for p in props.values()
                        if isinstance(p, dict) and (_is_object(p, root) or _item_objects(p, root))]
    for obj in objects:
        for v in _variants(obj, root):
            props = v.get("properties")
            if isinstance(props, dict):
                key = next((k for k in props if isinstance(k, str)), None)
                if key is not None:
                    return key
    return None


def _fix_example(bad: list[tuple[ToolView, str, dict[str, Any], str]]) -> str:
    """How to flatten, illustrated with the first offender's own field when it has one."""
    for t, n, s, _ in bad:
        key = _inner_key(s, input_schema(t) or {})
        if key is not None:
            return f"({t.label}: {n}.{key} → a top-level {key} parameter)"
    t, n, _, _ = bad[0]
    return f"({t.label}: give each key {n} takes its own top-level parameter)"


def _check_nested_object(data: LintInput) -> Outcome:
    """No top-level parameter is an object (``type: object``, ``properties``, also through a
    local ``$ref`` or an ``anyOf``/``oneOf``/``allOf`` member). An array of objects is allowed
    when each item object is flat: none of its properties is an object or array of objects."""
    params = [(t, n, s) for t in tool_views(data.tools) for n, s in parameters(t)]
    if not params:
        return "n/a", "No tool parameter to judge.", ""
    bad = []
    for t, n, s in params:
        root = input_schema(t) or {}
        if (why := _nesting(s, root)) is not None:
            bad.append((t, n, s, why))
    if not bad:
        return "pass", f"All {quantity(len(params), 'parameter')} are flat.", ""
    shown = [f"{t.label}.{n} ({why})" for t, n, _, why in bad]
    return (
        "fail",
        f"Nested objects in {offenders(shown, len(params), 'parameter')}. Flatten them into "
        f"top-level primitive parameters {_fix_example(bad)}; the model "
        "invents keys of nested objects. An array of items is fine when each item is a flat "
        "object.",
        [{"tool": t.raw.get("name"), "parameter": n, "schema": s} for t, n, s, _ in bad],
    )


_SIBLING_KEYS = ("type", "enum", "default", "description")
_ABSENT = "<absent>"


def _sibling_value(schema: dict[str, Any], key: str) -> str:
    if key not in schema:
        return _ABSENT
    value = schema[key]
    if key in ("enum", "type") and isinstance(value, list):  # order does not matter
        return to_json(sorted(to_json(v, canonical=True) for v in value))
    return to_json(value, canonical=True)


def _check_sibling_parameters(data: LintInput) -> Outcome:
    """A parameter name used by two or more tools has the same ``type``, ``enum`` (in any
    order), ``default`` and ``description`` in each (a key present in one and absent in another
    is a difference)."""
    uses: dict[str, list[tuple[ToolView, dict[str, Any]]]] = {}
    for t in tool_views(data.tools):
        for n, s in parameters(t):
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
        return ("pass", f"All {quantity(len(shared), 'shared parameter')} agree across tools.",
                "")
    shown = [f"{shorten(n)} in {', '.join(t.label for t, _ in u[:4])}"
             f"{', …' if len(u) > 4 else ''} (differs in {', '.join(keys)})" for n, u, keys in bad]
    return (
        "fail",
        f"Definitions differ between tools in {offenders(shown, len(shared), 'shared parameter')}. "
        "Give a parameter the same type, enum, default and description in every tool that "
        "takes it: the model carries what it learned from one tool to the next.",
        {n: {t.label: {k: s.get(k) for k in keys} for t, s in u} for n, u, keys in bad},
    )


CHECKS: dict[str, Check] = {
    "LINT.additional-properties": _check_additional_properties,
    "LINT.enum-like-string": _check_enum_like_string,
    "LINT.nested-object": _check_nested_object,
    "LINT.sibling-parameters": _check_sibling_parameters,
}
"""The ``LINT.*`` rules of this module -> their checks."""
