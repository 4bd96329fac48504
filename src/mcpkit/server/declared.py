"""What a declaration takes as a JSON object, converted once, when it is declared.

``annotations``, ``icons``, ``meta``, ``input_schema``/``output_schema`` of a tool, a
resource, a template, a prompt or the server are sent in every listing. Code ported from
the official SDK passes its pydantic models there (``mcp.types.ToolAnnotations(
readOnlyHint=True)``, ``mcp.types.Icon(...)``); others pass dataclasses or mappings. Each
is turned into plain JSON here, at declaration: a pydantic model as its
``model_dump(mode="json", by_alias=True, exclude_none=True)`` (the wire's camelCase
names), a dataclass field by field (fields that are None left out, as pydantic's
``exclude_none``), a mapping key by key, nested values alike. Anything else, anywhere
inside, is a ``TypeError`` naming the argument, where in it, and what it takes, so that
nothing a declaration accepted can make a listing fail later (a value orjson cannot
encode would fail every ``tools/list``, for every tool).

The fields the specification types (a tool's hints are booleans, an icon's ``src`` a
string, a resource's ``priority`` a number from 0 to 1...) are checked here too: a
listing that breaks the schema is refused by strict clients, again for every tool.

Nothing here imports pydantic: a model is recognised by its ``model_dump`` method.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Mapping
from typing import Any

import orjson

JSON = dict[str, Any]
ObjectLike = Any
"""What a declaration takes for a JSON object: a mapping, a pydantic model or a dataclass
instance (checked and converted by the functions below)."""

OBJECT = ("a JSON object: a dict (or other mapping), a pydantic model or a dataclass "
          "instance")
_SCALARS = (str, int, float, bool, type(None))


def _is_model(value: Any) -> bool:
    return not isinstance(value, type) and callable(getattr(value, "model_dump", None))


_MAX_DEPTH = 64  # a declaration nested deeper is a mistake (or a cycle)


def _plain(value: Any, where: str, takes: str, depth: int = 0) -> Any:
    """``value`` as JSON (dicts, lists, scalars), or ``TypeError`` naming ``where``."""
    if depth > _MAX_DEPTH:
        raise TypeError(f"{where[:80]}… nests deeper than {_MAX_DEPTH} levels (a cycle?); "
                        f"{takes}")
    if isinstance(value, _SCALARS):
        if isinstance(value, float) and not math.isfinite(value):
            raise TypeError(f"{where} is {value!r}, which JSON cannot carry; {takes}")
        return value
    deeper = depth + 1
    if isinstance(value, enum.Enum):
        return _plain(value.value, where, takes, deeper)
    if _is_model(value):
        try:
            dumped = value.model_dump(mode="json", by_alias=True, exclude_none=True)
        except Exception as exc:  # a field pydantic cannot serialize
            raise TypeError(f"{where}: the {type(value).__name__} model does not turn into "
                            f"JSON ({exc}); {takes}") from exc
        return _plain(dumped, where, takes, deeper)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(v, f"{where}[{f.name!r}]", takes, deeper)
                for f in dataclasses.fields(value)
                if (v := getattr(value, f.name)) is not None}
    if isinstance(value, Mapping):
        out: JSON = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has the key {key!r}; JSON object keys are strings. "
                                f"{takes}")
            out[key] = _plain(item, f"{where}[{key!r}]", takes, deeper)
        return out
    if isinstance(value, list | tuple):
        return [_plain(item, f"{where}[{i}]", takes, deeper) for i, item in enumerate(value)]
    raise TypeError(f"{where} is a {type(value).__name__}, which is not JSON; {takes}")


def json_object(value: Any, argument: str, takes: str = OBJECT) -> JSON:
    """``value`` (a mapping, pydantic model or dataclass instance) as a plain JSON
    object; ``TypeError`` naming ``argument`` for anything else."""
    if type(value) is dict:  # plain JSON already, the common case: copied in C
        try:
            copied: JSON = orjson.loads(orjson.dumps(value))
        except orjson.JSONEncodeError:  # not JSON as it is: the long way says where
            pass
        else:  # what orjson turns into JSON on its own (NaN, dataclasses, enums,
            if copied == value:  # tuples) differs from the value: the long way too
                return copied
    if not (isinstance(value, Mapping) or _is_model(value) or (
            dataclasses.is_dataclass(value) and not isinstance(value, type))):
        raise TypeError(f"{argument} takes {takes}; got {_kind(value)}")
    out = _plain(value, argument, f"{argument} takes {takes}")
    if not isinstance(out, dict):  # a model whose dump is not an object
        raise TypeError(f"{argument} takes {takes}; {_kind(value)} is not an object")
    return out


def _kind(value: Any) -> str:
    if isinstance(value, type):
        return f"the class {value.__name__} (pass an instance)"
    return f"a {type(value).__name__}"


# ---------------------------------------------------------------- what the spec types

def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_priority(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1


def _is_roles(v: Any) -> bool:
    return isinstance(v, list) and all(r in ("user", "assistant") for r in v)


def _is_sizes(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(s, str) for s in v)


def _is_theme(v: Any) -> bool:
    return v in ("light", "dark")


Fields = dict[str, tuple[Callable[[Any], bool], str]]

TOOL_ANNOTATIONS: Fields = {
    "title": (_is_str, "a string"),
    "readOnlyHint": (_is_bool, "true or false"),
    "destructiveHint": (_is_bool, "true or false"),
    "idempotentHint": (_is_bool, "true or false"),
    "openWorldHint": (_is_bool, "true or false"),
}
"""``ToolAnnotations`` (every hint is a boolean)."""

ANNOTATIONS: Fields = {
    "audience": (_is_roles, "a list of \"user\" / \"assistant\""),
    "priority": (_is_priority, "a number from 0 to 1"),
    "lastModified": (_is_str, "an ISO 8601 date-time string"),
}
"""``Annotations`` of a resource or template."""

ICON: Fields = {
    "src": (_is_str, "a URI string"),
    "mimeType": (_is_str, "a string"),
    "sizes": (_is_sizes, "a list of strings such as \"48x48\""),
    "theme": (_is_theme, "\"light\" or \"dark\""),
}


def _checked(obj: JSON, fields: Fields, argument: str) -> JSON:
    for name, value in obj.items():
        rule = fields.get(name)
        if rule is not None and not rule[0](value):
            raise TypeError(f"{argument}[{name!r}] must be {rule[1]}, got {value!r:.80}")
    return obj


def annotations_object(value: Any, *, tool: bool) -> JSON | None:
    """A tool's (``ToolAnnotations``) or a resource's (``Annotations``) annotations."""
    if value is None:
        return None
    example = ("{'readOnlyHint': True} or mcp.types.ToolAnnotations(readOnlyHint=True)"
               if tool else "{'audience': ['user'], 'priority': 0.5}")
    obj = json_object(value, "annotations", f"{OBJECT}, such as {example}")
    return _checked(obj, TOOL_ANNOTATIONS if tool else ANNOTATIONS, "annotations")


def icons(value: Any) -> list[JSON] | None:
    """A list of icons, each a JSON object with a ``src`` string."""
    if value is None:
        return None
    takes = ("a list of icons, each " + OBJECT + " with a 'src', such as "
             "[{'src': 'https://example.com/icon.png', 'mimeType': 'image/png'}]")
    if isinstance(value, str | bytes | Mapping) or _is_model(value) or not isinstance(
            value, list | tuple):
        raise TypeError(f"icons takes {takes}; got {_kind(value)}")
    out = []
    for i, item in enumerate(value):
        icon = _checked(json_object(item, f"icons[{i}]", takes), ICON, f"icons[{i}]")
        if "src" not in icon:
            raise TypeError(f"icons[{i}] has no 'src' (the icon's URI); icons takes {takes}")
        out.append(icon)
    return out


def meta(value: Any) -> JSON | None:
    """A ``_meta`` object."""
    return None if value is None else json_object(value, "meta")


def schema(value: Any, argument: str) -> JSON | None:
    """A JSON Schema given as ``input_schema`` / ``output_schema``."""
    if value is None:
        return None
    if isinstance(value, type) and callable(getattr(value, "model_json_schema", None)):
        raise TypeError(f"{argument} takes a JSON Schema object (a dict); for a pydantic "
                        f"model's schema pass {value.__name__}.model_json_schema(), or "
                        "annotate the function's parameters / return with the model")
    return json_object(value, argument, "a JSON Schema object (a dict or other mapping)")
