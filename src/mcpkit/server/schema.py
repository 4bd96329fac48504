"""JSON Schema 2020-12 from Python type hints, and argument conversion.

Plain types (``str``, ``int``, ``float``, ``bool``, ``None``, ``list[...]``,
``dict[str, ...]``, ``Optional``/unions, ``Literal``, ``Enum``) are mapped here directly so
a simple server never imports pydantic; anything richer (pydantic models, dataclasses,
TypedDicts, ``Annotated[..., Field(...)]``) goes through pydantic's ``TypeAdapter``.
``Annotated[T, Schema(...)]`` adds JSON Schema keywords to ``T``'s schema (a pattern, a
length, a range, a description) without pydantic: importing pydantic alone costs a
process ~16 MB, which a server that needs no model should not pay (issue #28).

Every object derived from a model, a dataclass or a TypedDict is closed
(``additionalProperties: false``), at any depth, as the top level of an ``inputSchema``
is: a field the model invents inside ``issue: Issue`` is refused with a message naming
it, not silently dropped by pydantic. Unless the type keeps extra fields, which pydantic's
schema then says: ``extra="allow"`` on a model, a dataclass or a TypedDict's
``__pydantic_config__`` (``additionalProperties: true``), a TypedDict's PEP 728
``extra_items=X`` (their schema). A TypedDict with only ``closed=False`` is closed: pydantic
drops its extra keys, so the schema says what reaches the function. ``dict[str, X]``
and a ``RootModel`` of one stay maps.
The same schemas describe what a tool returns (``outputSchema``), which mcpkit builds by
dumping the returned value with the same type: only the declared fields come out, so a
closed ``outputSchema`` is exactly what is sent.
"""

from __future__ import annotations

import enum
import functools
import inspect
import re
import types
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

if TYPE_CHECKING:
    from .handler import HandlerSpec

JSON = dict[str, Any]

_PRIMITIVES: dict[Any, JSON] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    Any: {},
}


KEYWORDS: frozenset[str] = frozenset({
    # annotations
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
    "$comment",
    # any instance
    "const", "enum",
    # strings
    "minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType",
    # numbers
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    # arrays
    "minItems", "maxItems", "uniqueItems",
    # objects
    "minProperties", "maxProperties",
})
"""The keywords ``Schema`` takes: JSON Schema 2020-12's annotations and the validation
keywords that constrain one value (not those that shape its type: that is the hint's)."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


class Schema:
    """JSON Schema keywords for a parameter or a return value, in JSON Schema's own
    spelling, merged into the schema of the type they annotate::

        async def delete(filename: Annotated[str, Schema(
                pattern=r"^[A-Za-z0-9_.-]+$", maxLength=100,
                description="A file name in the workspace, no directory.")]) -> str:

    The input schema says it and every call is validated against it (a violation is the
    tool error that names the parameter); no pydantic is loaded for it. For a pattern,
    prefer an ASCII class with ``maxLength`` to a bounded repetition of a Unicode one
    (docs/server.md). A keyword outside ``KEYWORDS`` is refused with a ``TypeError``
    (``max_length`` suggests ``maxLength``)."""

    __slots__ = ("keywords",)

    def __init__(self, **keywords: Any) -> None:
        unknown = sorted(k for k in keywords if k not in KEYWORDS)
        if unknown:
            hints = [f"{k} (did you mean {_camel(k)}?)" if _camel(k) in KEYWORDS else k
                     for k in unknown]
            raise TypeError(f"Schema() got keywords JSON Schema does not have here: "
                            f"{', '.join(hints)}; use JSON Schema's spelling, one of "
                            f"{', '.join(sorted(KEYWORDS))}.")
        self.keywords: JSON = keywords

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.keywords.items())
        return f"Schema({args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and other.keywords == self.keywords

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, repr(v)) for k, v in self.keywords.items())))

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> JSON:
        """Inside a type pydantic builds (a model's field, a union's member), the same
        keywords, merged into the schema pydantic makes for the annotated type."""
        out: JSON = handler(core_schema)
        out.update(self.keywords)
        return out


def _split_schema(tp: Any) -> tuple[Any, JSON | None]:
    """``Annotated[T, ..., Schema(...), ...]`` -> (``T`` with the other metadata kept, the
    ``Schema`` keywords merged in order); any other type -> (it, None)."""
    if get_origin(tp) is not Annotated:
        return tp, None
    base, *meta = get_args(tp)
    marks = [m for m in meta if isinstance(m, Schema)]
    if not marks:
        return tp, None
    keywords: JSON = {}
    for mark in marks:
        keywords.update(mark.keywords)
    rest = tuple(m for m in meta if not isinstance(m, Schema))
    return (Annotated[(base, *rest)] if rest else base), keywords


class NeedsPydantic(Exception):
    """The type is not a plain one; pydantic must build its schema and convert values."""


class ConversionFailed(Exception):
    """The parameter ``param``'s value passed the input schema but pydantic refused to
    convert it (``cause``: usually its ``ValidationError``)."""

    def __init__(self, param: str, cause: Exception) -> None:
        super().__init__(f"{param}: {cause}")
        self.param = param
        self.cause = cause


def plain_schema(tp: Any) -> JSON:
    """Schema of a plain type; raises ``NeedsPydantic`` for anything else."""
    if tp in _PRIMITIVES:
        return dict(_PRIMITIVES[tp])
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is Annotated:
        base, keywords = _split_schema(tp)
        if keywords is None or get_origin(base) is Annotated:
            raise NeedsPydantic  # metadata of pydantic's (Field, ...)
        return {**plain_schema(base), **keywords}
    if origin in (list, tuple, set, frozenset) or tp in (list, tuple, set, frozenset):
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            raise NeedsPydantic
        schema: JSON = {"type": "array"}
        if args:
            schema["items"] = plain_schema(args[0])
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin is dict or tp is dict:
        schema = {"type": "object"}
        if args:
            if args[0] is not str:
                raise NeedsPydantic
            schema["additionalProperties"] = plain_schema(args[1])
        return schema
    if origin is Union or origin is types.UnionType:
        return {"anyOf": [plain_schema(a) for a in args]}
    if origin is Literal:
        if all(isinstance(a, str | int | bool) or a is None for a in args):
            return {"enum": list(args)}
        raise NeedsPydantic
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        if all(isinstance(v, str | int) for v in values):
            return {"enum": values}
    raise NeedsPydantic


def type_schema(tp: Any) -> tuple[JSON, Any]:
    """Schema of any type, and a pydantic ``TypeAdapter`` when values need converting;
    ``Schema`` keywords on it (``Annotated``) are merged into the schema."""
    tp, keywords = _split_schema(tp)
    try:
        schema, adapter = plain_schema(tp), None
    except NeedsPydantic:
        from pydantic import TypeAdapter

        adapter = TypeAdapter(tp)
        schema = adapter.json_schema(schema_generator=_closed_objects())
    if keywords:
        schema.update(keywords)
    return schema, adapter


@functools.cache
def _closed_objects() -> type:
    """pydantic's schema generator, closing the objects of models, dataclasses and
    TypedDicts that do not allow extra fields (built on first use: pydantic is loaded
    only for rich types)."""
    from pydantic.json_schema import GenerateJsonSchema

    def close(out: Any) -> Any:
        if isinstance(out, dict) and out.get("type") == "object" and (
                "additionalProperties" not in out):
            out["additionalProperties"] = False
        return out

    class ClosedObjects(GenerateJsonSchema):
        def model_schema(self, schema: Any) -> Any:
            out = super().model_schema(schema)
            if getattr(schema["cls"], "__pydantic_root_model__", False):
                return out  # a RootModel is its root's schema (a map stays a map)
            return close(out)

        def dataclass_schema(self, schema: Any) -> Any:
            return close(super().dataclass_schema(schema))

        def typed_dict_schema(self, schema: Any) -> Any:
            return close(super().typed_dict_schema(schema))

    return ClosedObjects


def _hoist_defs(schema: JSON, defs: JSON) -> JSON:
    sub_defs = schema.pop("$defs", None)
    if sub_defs:
        defs.update(sub_defs)
    return schema


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s+(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SECTION = re.compile(r"^\s*(Returns|Raises|Yields|Examples?|Notes?)\s*:\s*$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {param: description})."""
    if not doc:
        return "", {}
    doc = inspect.cleandoc(doc)
    lines = doc.splitlines()
    desc: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    mode = "desc"
    for line in lines:
        if _ARGS_HEADER.match(line):
            mode = "args"
            continue
        if _SECTION.match(line):
            mode = "other"
            continue
        if mode == "desc":
            desc.append(line)
        elif mode == "args":
            m = _ARG_LINE.match(line)
            if m:
                current = m.group(1).lstrip("*")
                params[current] = m.group(3).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
    return "\n".join(desc).strip(), params


class Signature:
    """A function's parameters as a JSON Schema object, and how to call it with JSON args."""

    def __init__(self, spec: HandlerSpec, *, param_docs: dict[str, str] | None = None) -> None:
        self.adapters: dict[str, Any] = {}
        self.names: list[str] = []
        properties: JSON = {}
        required: list[str] = []
        defs: JSON = {}
        docs = param_docs or {}
        for param, tp in spec.parameters:
            name = param.name
            if tp is inspect.Parameter.empty:
                tp = Any
            schema, adapter = type_schema(tp)
            schema = _hoist_defs(schema, defs)
            if adapter is not None:
                self.adapters[name] = adapter
            if docs.get(name) and "description" not in schema:
                schema["description"] = docs[name]
            if param.default is inspect.Parameter.empty:
                required.append(name)
            else:
                default = param.default
                if isinstance(default, enum.Enum):
                    default = default.value
                if default is None or isinstance(default, str | int | float | bool):
                    schema["default"] = default
            properties[name] = schema
            self.names.append(name)
        schema_obj: JSON = {"type": "object", "properties": properties}
        if required:
            schema_obj["required"] = required
        schema_obj["additionalProperties"] = False
        if defs:
            schema_obj["$defs"] = defs
        self.schema = schema_obj

    def convert(self, arguments: JSON) -> JSON:
        """Turn validated JSON arguments into the Python values the function expects."""
        out = dict(arguments)  # never the caller's dict: the context is added to it
        if not self.adapters:
            return out
        for name, adapter in self.adapters.items():
            if name in out:
                try:
                    out[name] = adapter.validate_python(out[name])
                except Exception as exc:
                    raise ConversionFailed(name, exc) from exc
        return out


def _mentions_content(tp: Any, content_types: tuple[type, ...]) -> bool:
    """Whether a return annotation is (or contains) content blocks, or an untyped list."""
    if tp in content_types:
        return True
    origin = get_origin(tp)
    args = get_args(tp)
    if origin in (list, tuple, Union, types.UnionType):
        if origin in (list, tuple) and (not args or args[0] is Any):
            return True  # list[Any]: may hold content; never advertise a schema for it
        return any(_mentions_content(a, content_types) for a in args)
    return False


def output_schema(annotation: Any) -> tuple[JSON | None, bool, Any]:
    """(outputSchema, wrapped, adapter) for a return annotation.

    ``wrapped`` means the schema is ``{"result": <value schema>}`` because the value is not
    an object. ``None`` when the return is text or content (no structured output).
    """
    from .content import CONTENT_TYPES

    if annotation in (inspect.Signature.empty, None, type(None), str, Any):
        return None, False, None
    if _mentions_content(annotation, CONTENT_TYPES):
        return None, False, None
    schema, adapter = type_schema(annotation)
    if schema.get("type") == "object":
        return schema, False, adapter
    defs = schema.pop("$defs", None)
    wrapped: JSON = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if defs:
        wrapped["$defs"] = defs
    return wrapped, True, adapter
