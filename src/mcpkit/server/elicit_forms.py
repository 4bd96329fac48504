"""Elicitation forms from Python types: ``ctx.elicit("Delete it?", bool)``.

An elicitation's ``requestedSchema`` is a flat object whose fields are primitives: a
string (length bounds; format email, uri, date or date-time), a number or integer
(bounds), a boolean, a single-select string enum, or (from 2025-11-25) a multi-select
array of string enums. :func:`form_for` builds that schema from

* a pydantic model, a dataclass or a ``TypedDict`` (one field per attribute;
  ``Optional`` fields are not required; defaults become the form's defaults), or
* a lone primitive (``bool``, ``str``, ``int``, ``float``, a ``Literal`` of strings, a
  string ``Enum``, ``list`` of one of those two), asked as one field named ``value``,

and turns the user's accepted content back into that type. A type that cannot be a flat
form (a nested model, a list of numbers) is refused with a ``TypeError`` naming the
field, before anything is sent. :func:`shorthand_form` reads FastMCP's ``response_type``
spellings too (``None`` for a plain confirmation, ``["a", "b"]`` for a choice,
``[["a", "b"]]`` for several, ``{"low": {"title": "Low"}}`` for titled choices), so
handlers port as they are. The content is checked against the schema first (the
client's word is not trusted), then converted: a model by pydantic, a primitive as is.
"""

from __future__ import annotations

import enum
import functools
from typing import Any, Literal, get_args, get_origin

from ..protocol.errors import ToolError
from .arg_errors import Problem, pydantic_problems, resolve_ref, schema_problems, where
from .schema import type_schema
from .validation import SchemaValidator

JSON = dict[str, Any]
VALUE = "value"  # the one field of a primitive's form

_FORMATS = frozenset({"email", "uri", "date", "date-time"})
_KEEP = {
    "string": ("title", "description", "default", "minLength", "maxLength", "format"),
    "number": ("title", "description", "default", "minimum", "maximum"),
    "integer": ("title", "description", "default", "minimum", "maximum"),
    "boolean": ("title", "description", "default"),
}


class Form:
    """A ``requestedSchema`` and the conversion of an accepted answer to ``tp``."""

    __slots__ = ("_adapter", "_validator", "schema", "tp", "wrapped")

    def __init__(self, tp: Any, schema: JSON, adapter: Any, wrapped: bool) -> None:
        self.tp, self.schema, self._adapter, self.wrapped = tp, schema, adapter, wrapped
        self._validator = SchemaValidator(schema)

    def parse(self, content: JSON | None) -> Any:
        """The accepted ``content`` as ``tp``; ``ToolError`` when it does not fit the
        form (the tool then tells the model, which can ask again)."""
        content = content or {}
        if not self._validator.is_valid(content):
            raise _misfit(schema_problems(self.schema, self._validator.iter_errors(content),
                                          limit=5))
        value = content.get(VALUE) if self.wrapped else content
        if self._adapter is not None:
            try:
                return self._adapter.validate_python(value)
            except ValueError as exc:  # pydantic's ValidationError is a ValueError
                if not callable(getattr(exc, "errors", None)):
                    raise _misfit([Problem((), str(exc).splitlines()[0])]) from exc
                raise _misfit(pydantic_problems(self.schema, (VALUE,) if self.wrapped
                                                else (), exc, limit=1)) from exc
        if isinstance(self.tp, type) and issubclass(self.tp, enum.Enum):
            return self.tp(value)
        if get_origin(self.tp) is list:
            item = get_args(self.tp)[0] if get_args(self.tp) else None
            if isinstance(item, type) and issubclass(item, enum.Enum):
                return [item(v) for v in value or ()]
        if self.tp is float and isinstance(value, int):
            return float(value)
        return value


def form_for(tp: Any) -> Form:
    """The form for ``tp``; ``TypeError`` when ``tp`` cannot be a flat form. Built once
    per type (a handler asks with the same type on every call; building means a pydantic
    ``TypeAdapter`` and a compiled validator)."""
    try:
        hash(tp)
    except TypeError:  # an unhashable annotation: built each time
        return _build(tp)
    return _form_cached(tp)


@functools.lru_cache(maxsize=256)
def _form_cached(tp: Any) -> Form:
    return _build(tp)


def _build(tp: Any) -> Form:
    schema, adapter = type_schema(tp)
    root = schema
    schema = resolve_ref(root, schema)
    if schema.get("type") == "object" and isinstance(schema.get("properties"), dict):
        props: JSON = {}
        required = set(schema.get("required") or ())
        needed = []
        for name, sub in schema["properties"].items():
            field, optional = _field(root, sub, name)
            props[name] = field
            if name in required and not optional:
                needed.append(name)
        form: JSON = {"type": "object", "properties": props}
        if needed:
            form["required"] = needed
        return Form(tp, form, adapter, wrapped=False)
    field, optional = _field(root, schema, VALUE)
    form = {"type": "object", "properties": {VALUE: field}}
    if not optional:
        form["required"] = [VALUE]
    return Form(tp, form, adapter, wrapped=True)


def _field(root: JSON, sub: Any, name: str) -> tuple[JSON, bool]:
    """A property's form field and whether it may be left out (``Optional``)."""
    if isinstance(sub, dict) and "$ref" in sub:  # keep the property's own words (default)
        sub = {**resolve_ref(root, {"$ref": sub["$ref"]}),
               **{k: v for k, v in sub.items() if k != "$ref"}}
    if not isinstance(sub, dict):
        raise TypeError(f"elicitation field {name!r} has no usable schema")
    optional = False
    for key in ("anyOf", "oneOf"):
        branches = sub.get(key)
        if isinstance(branches, list):
            kept = [resolve_ref(root, b) for b in branches if b != {"type": "null"}]
            if len(kept) != 1:
                raise TypeError(f"elicitation field {name!r} is a union; a form field "
                                "has one type")
            optional = len(kept) < len(branches)
            outer = {k: v for k, v in sub.items() if k != key}
            sub = {**kept[0], **outer}
    if isinstance(sub.get("enum"), list) or "const" in sub:
        values = sub.get("enum") if "enum" in sub else [sub["const"]]
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"elicitation field {name!r}: choices must be strings")
        field: JSON = {"type": "string", "enum": list(values)}
        for key in ("title", "description", "default"):
            if key in sub and sub[key] is not None:
                field[key] = sub[key]
        return field, optional
    kind = sub.get("type")
    if kind == "array":
        items = resolve_ref(root, sub.get("items"))
        if not (isinstance(items, dict) and isinstance(items.get("enum"), list)
                and all(isinstance(v, str) for v in items["enum"])):
            raise TypeError(f"elicitation field {name!r}: a list must be of string "
                            "choices (a Literal or a string Enum), a multi-select")
        field = {"type": "array", "items": {"type": "string", "enum": list(items["enum"])}}
        for key in ("title", "description", "default", "minItems", "maxItems"):
            if key in sub and sub[key] is not None:
                field[key] = sub[key]
        return field, optional
    if kind not in _KEEP:
        raise TypeError(f"elicitation field {name!r} is {kind or 'untyped'}; a form field "
                        "is a string, number, integer, boolean or a choice of strings")
    field = {"type": kind}
    for key in _KEEP[kind]:
        if key in sub and sub[key] is not None:
            field[key] = sub[key]
    if field.get("format") not in _FORMATS:
        field.pop("format", None)
    return field, optional


def shorthand_form(spec: Any, title: str | None = None,
                   description: str | None = None) -> Form:
    """The form for FastMCP's ``response_type`` ``spec``: ``None`` (a confirmation with
    no fields; the answer is ``{}``), a list of strings (one choice), a list holding one
    list of strings (several choices), a dict of ``{value: {"title": ...}}`` (one titled
    choice) or a list holding one such dict (several), else a type as :func:`form_for`
    reads it. ``title`` and ``description`` label the one field of a wrapped form (a
    choice, a primitive); with a model or dataclass, which labels its own fields, or a
    confirmation, which has none, they are a ``TypeError``."""
    if spec is None:
        if title is not None or description is not None:
            raise TypeError("response_title/response_description label a form's one "
                            "field; a confirmation (response_type=None) has none")
        return Form(None, {"type": "object", "properties": {}}, None, wrapped=False)
    form = _shorthand(spec)
    if title is None and description is None:
        return form
    if not form.wrapped:
        raise TypeError("response_title/response_description label the one field mcpkit "
                        "wraps a choice or a primitive in; a model or dataclass labels its "
                        "own fields (Field(title=..., description=...))")
    field = dict(form.schema["properties"][VALUE])
    if title is not None:
        field["title"] = title
    if description is not None:
        field["description"] = description
    schema = {**form.schema, "properties": {VALUE: field}}
    return Form(form.tp, schema, form._adapter, wrapped=True)


def _shorthand(spec: Any) -> Form:
    if isinstance(spec, dict):
        return _titled(spec, several=False)
    if isinstance(spec, list | tuple):
        if len(spec) == 1 and isinstance(spec[0], dict):
            return _titled(spec[0], several=True)
        if len(spec) == 1 and isinstance(spec[0], list | tuple):
            return form_for(list[Literal[_choices(spec[0])]])  # type: ignore[misc]
        return form_for(Literal[_choices(spec)])
    return form_for(spec)


def _choices(values: Any) -> tuple[str, ...]:
    if not values or not all(isinstance(v, str) for v in values):
        raise TypeError(f"elicitation choices must be a non-empty list of strings, got "
                        f"{values!r}")
    return tuple(values)


def _titled(spec: dict[Any, Any], *, several: bool) -> Form:
    """A choice among ``spec``'s keys, each shown by its ``title`` (``oneOf`` of consts;
    for several, an array whose items are ``anyOf`` them: the 2025-11-25 shapes)."""
    options = []
    for value, about in spec.items():
        if not isinstance(value, str) or not (about is None or isinstance(about, dict)):
            raise TypeError("titled elicitation choices are {value: {'title': ...}} with "
                            f"string values, got {spec!r}")
        label = (about or {}).get("title", value)
        options.append({"const": value, "title": str(label)})
    if not options:
        raise TypeError("titled elicitation choices need at least one value")
    field: JSON = ({"type": "array", "items": {"anyOf": options}} if several
                   else {"type": "string", "oneOf": options})
    schema = {"type": "object", "properties": {VALUE: field}, "required": [VALUE]}
    return Form(list[str] if several else str, schema, None, wrapped=True)


def before_choices(schema: JSON) -> JSON:
    """``schema`` as a revision before 2025-11-25 spells it: a titled single choice
    (``oneOf`` of consts) becomes ``enum`` with ``enumNames``; unchanged otherwise."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return schema
    out = {}
    for name, field in props.items():
        options = field.get("oneOf") if isinstance(field, dict) else None
        if field.get("type") == "string" and isinstance(options, list):
            rest = {k: v for k, v in field.items() if k != "oneOf"}
            field = {**rest, "enum": [o["const"] for o in options],
                     "enumNames": [o["title"] for o in options]}
        out[name] = field
    return {**schema, "properties": out}


def _misfit(problems: list[Problem]) -> ToolError:
    """The error a tool's model reads when the user's answer does not fit the form."""
    said = "; ".join(f"{where(p.path, 'answer')}: {p.message}" for p in problems)
    return ToolError(f"The user's answer did not fit the requested form ({said}). Ask "
                     "again, or go on without it.")
