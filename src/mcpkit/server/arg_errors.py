"""The model-facing message for tool arguments that fail validation, at any depth.

Two validators can refuse a call's arguments: the input schema (``jsonschema_rs``,
which reports each problem with the instance path and the schema path that failed) and,
after it, pydantic, which converts the arguments into the function's parameter types and
enforces what a JSON schema does not (an ``HttpUrl``, a custom validator). Both feed
:func:`invalid_arguments_text` as :class:`Problem` values, so a model always reads the
same shape: for each problem, the nested field (``bookmark/title``), what was wrong with
it, and what that field expects, described from the schema at that level rather than
from the top-level parameter list. No pydantic wording (its ``[type=...]`` tags, its
documentation links) reaches the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..protocol import pointer

JSON = dict[str, Any]

MAX_PROBLEMS = 10
_MAX_LISTED = 8  # properties / enum values / branches named in one description
MAX_QUOTED = 240
"""Characters of one problem's message kept: a validator quotes the refused value whole
(a 100,000-item array made a 589 KB message), so a longer one keeps its start and its
end (what was wrong) and says how much was left out."""
_MAX_KEY = 60  # characters of one key or index named in a path


@dataclass(frozen=True, slots=True)
class Problem:
    """One refused value: where it is (``path``, instance keys and indexes), what was
    wrong (``message``) and the subschema that judged it, when known."""

    path: tuple[str | int, ...]
    message: str
    schema: Any = None


def where(path: Sequence[str | int], top: str = "arguments") -> str:
    """``bookmark/tags/0``; ``top`` for the object itself. A key longer than 60
    characters is cut (a peer chooses them)."""
    return "/".join(bounded(str(p), _MAX_KEY) for p in path) or top


def bounded(text: str, limit: int = MAX_QUOTED) -> str:
    """``text``, or its first and last characters around a note of what was left out
    when it is longer than ``limit``."""
    if len(text) <= limit:
        return text
    head, tail = limit * 3 // 5, limit // 3
    return f"{text[:head]}…({len(text) - head - tail:,} characters left out)…{text[-tail:]}"


def resolve_ref(root: JSON, schema: Any, depth: int = 0) -> Any:
    """Follow a local ``$ref`` (``#/...``, JSON Pointer) to the schema it names."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and depth < 16:
        ref = schema["$ref"]
        if not ref.startswith("#"):
            return schema
        target = pointer.resolve(root, ref[1:], pointer.MISSING)
        if target is pointer.MISSING:
            return schema
        schema, depth = target, depth + 1
    return schema


def at_schema_path(root: JSON, schema_path: Sequence[str | int]) -> Any:
    """The subschema that holds the failing keyword: ``schema_path`` without its last
    element (the keyword), walked from ``root``; None when the path leaves the document."""
    node: Any = root
    for part in list(schema_path)[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return None
    return resolve_ref(root, node)


def at_instance_path(root: JSON, path: Sequence[str | int]) -> Any:
    """The subschema that describes the value at ``path``, following ``properties``,
    ``additionalProperties``, ``items``/``prefixItems`` and local ``$ref``s; None when
    the schema does not say (an ``anyOf`` on the way, say)."""
    node: Any = resolve_ref(root, root)
    for part in path:
        if not isinstance(node, dict):
            return None
        if isinstance(part, int):
            prefix = node.get("prefixItems")
            if isinstance(prefix, list) and part < len(prefix):
                node = prefix[part]
            elif isinstance(node.get("items"), dict):
                node = node["items"]
            else:
                return None
        else:
            props = node.get("properties")
            if isinstance(props, dict) and part in props:
                node = props[part]
            elif isinstance(node.get("additionalProperties"), dict):
                node = node["additionalProperties"]
            else:
                return None
        node = resolve_ref(root, node)
    return node


def _listed(values: Iterable[str]) -> str:
    items = list(values)
    more = len(items) - _MAX_LISTED
    return ", ".join(items[:_MAX_LISTED]) + (f" and {more} more" if more > 0 else "")


def _article(kind: str) -> str:
    return {"integer": "an integer", "object": "an object", "array": "an array",
            "null": "null"}.get(kind, f"a {kind}")


def _bounds(schema: JSON, low: str, high: str, unit: str) -> str:
    """`` of 1 to 80 characters``, `` of at least 1 item``: ``unit`` is singular."""
    lo, hi = schema.get(low), schema.get(high)

    def units(n: int) -> str:
        return f"{n} {unit}" if n == 1 else f"{n} {unit}s"

    if isinstance(lo, int) and isinstance(hi, int):
        return f" of {lo} to {units(hi)}" if lo != hi else f" of exactly {units(lo)}"
    if isinstance(lo, int):
        return f" of at least {units(lo)}"
    if isinstance(hi, int):
        return f" of at most {units(hi)}"
    return ""


def _range(schema: JSON) -> str:
    parts = []
    for key, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
                      ("exclusiveMaximum", "<")):
        value = schema.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            parts.append(f"{sign} {value}")
    return f" {' and '.join(parts)}" if parts else ""


def _members(schema: JSON) -> str:
    """``title (string, required), url (string, required), tags (array)``."""
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return ""
    required = set(schema.get("required") or ())
    parts = []
    for name, sub in props.items():
        kind = sub.get("type") if isinstance(sub, dict) else None
        if isinstance(kind, list):
            kind = "|".join(map(str, kind))
        label = kind or ("enum" if isinstance(sub, dict) and "enum" in sub else "any")
        parts.append(f"{name} ({label}{', required' if name in required else ''})")
    return _listed(parts)


def describe(schema: Any, root: JSON | None = None, depth: int = 0) -> str:
    """What a value must be, in a few words: ``a string of at least 1 character``,
    ``an integer >= 0``, ``one of: "asc", "desc"``, ``an object with title (string,
    required)``; empty when the schema says nothing a model could act on."""
    if root is not None:
        schema = resolve_ref(root, schema)
    if schema is True or schema == {}:
        return "any value"
    if schema is False:
        return "no value at all (the field is not allowed)"
    if not isinstance(schema, dict) or depth > 3:
        return ""
    if "const" in schema:
        return f"exactly {_json(schema['const'])}"
    if isinstance(schema.get("enum"), list):
        return "one of: " + _listed(_json(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            said = [describe(b, root, depth + 1) for b in branches[:_MAX_LISTED]]
            said = [s for s in said if s]
            if said:
                return " or ".join(dict.fromkeys(said))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(describe({**schema, "type": k}, root, depth + 1) for k in kind)
    if kind == "string":
        text = "a string" + _bounds(schema, "minLength", "maxLength", "character")
        if isinstance(schema.get("pattern"), str):
            text += f" matching the pattern {schema['pattern']}"
        if isinstance(schema.get("format"), str):
            text += f" (format {schema['format']})"
        return text
    if kind in ("integer", "number"):
        return _article(kind) + _range(schema)
    if kind == "array":
        text = "an array" + _bounds(schema, "minItems", "maxItems", "item")
        items = describe(schema.get("items"), root, depth + 1) if "items" in schema else ""
        return f"{text} whose items are each {items}" if items else text
    if kind == "object" or "properties" in schema:
        members = _members(schema)
        return f"an object with {members}" if members else "an object"
    if isinstance(kind, str):
        return _article(kind)
    return ""


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def schema_problems(root: JSON, errors: Iterable[Any], limit: int = MAX_PROBLEMS) -> list[Problem]:
    """Problems from ``jsonschema_rs`` validation errors (``instance_path``,
    ``schema_path``, ``message``); an empty ``schema_path`` (``validation.DepthError``)
    is judged by the schema at the instance path."""
    out: list[Problem] = []
    for err in (d for e in errors for d in _decisive(e)):
        path = tuple(err.instance_path)
        schema_path = tuple(err.schema_path)
        schema = at_schema_path(root, schema_path) if schema_path else None
        if schema is None:
            schema = at_instance_path(root, path)
        out.append(Problem(path, bounded(err.message), schema))
        if len(out) >= limit:
            break
    return out


def _decisive(err: Any, depth: int = 0) -> list[Any]:
    """What says why ``err`` failed: for an ``anyOf``/``oneOf`` no branch of which
    matched, the errors of the one branch the value's type fits, when there is exactly
    one (``issue: Issue | None`` given an object with a field ``Issue`` lacks: that field,
    and what ``Issue`` accepts); ``err`` itself otherwise."""
    branches = getattr(getattr(err, "kind", None), "context", None)
    if not branches or depth > 4:
        return [err]
    here = list(err.instance_path)
    fits = [b for b in branches if not all(
        type(e.kind).__name__ == "Type" and list(e.instance_path) == here for e in b)]
    if len(fits) != 1 or not fits[0]:
        return [err]
    return [d for e in fits[0] for d in _decisive(e, depth + 1)]


def pydantic_problems(root: JSON, under: tuple[str | int, ...], exc: Any,
                      limit: int = MAX_PROBLEMS) -> list[Problem]:
    """Problems from a pydantic ``ValidationError`` raised while converting the value at
    ``under`` (a tool's parameter, or ``()`` for a whole elicitation answer): its
    ``loc`` below that, its ``msg`` (never the input echo, the error type tag or the
    documentation link)."""
    out: list[Problem] = []
    for err in exc.errors(include_url=False, include_input=False)[:limit]:
        path = (*under, *(p for p in err.get("loc", ()) if isinstance(p, (str, int))))
        out.append(Problem(path, bounded(str(err.get("msg") or "invalid value")),
                           at_instance_path(root, path)))
    return out


def invalid_arguments_text(tool: str, problems: Sequence[Problem], root: JSON) -> str:
    """The ``isError`` text for a call whose arguments were refused."""
    lines = []
    for problem in problems[:MAX_PROBLEMS]:
        place = where(problem.path)
        message = problem.message.rstrip(".")
        line = f"{place}: {message}."
        expected = describe(problem.schema, root) if problem.schema is not None else ""
        if expected:
            line += f" Expected at {place}: {expected}."
        lines.append(line)
    if not lines:
        lines.append(f"arguments: not accepted. Expected: {describe(root, root)}.")
    return (
        f"Invalid arguments for tool '{tool}': " + " ".join(lines) + " "
        "Fix these arguments to match the tool's inputSchema and call it again."
    )
