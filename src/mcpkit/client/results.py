"""Checking what a server answers before the client hands it on.

A result becomes a typed object (``InvalidResult`` when it lacks the protocol's
shape); a listing is followed through its pages (``PaginationError`` when the cursors
go round in circles); a tool's ``x-mcp-header`` declarations are checked before the
client routes calls by them (2026-07-28); a tool's
``structuredContent`` is checked against the ``outputSchema`` it advertised
(``OutputSchemaError``) and then read as the type the caller asked for (``read_data``).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol.errors import (
    InvalidResult,
    MCPError,
    OutputSchemaError,
    PaginationError,
    ToolError,
)
from ..protocol.jsonrpc import JSONObject
from ..protocol.nesting import MAX_DEPTH, too_deep
from . import types as t
from .model import Wire, WireError

if TYPE_CHECKING:  # pydantic is loaded by the first call with a result_type
    from pydantic import TypeAdapter, ValidationError

M = TypeVar("M", bound=Wire)
log = logging.getLogger("mcpkit.client")
MAX_PAGES = 10_000

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


def parse(model: type[M], value: Any, method: str) -> M:
    """``model`` from a server's result; ``InvalidResult`` naming the first value that
    does not fit if it is malformed."""
    try:
        return model.from_wire(value)
    except WireError as exc:
        raise InvalidResult(f"the server's answer to {method} is malformed: {exc}") from exc


def _problems(exc: ValidationError, whole: str) -> str:
    """The first three of pydantic's complaints, each after the path it is about."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or whole}: {e['msg']}"
                     for e in exc.errors()[:3])


def parse_list(model: type[M], value: Any, method: str, key: str) -> list[M]:
    """Each item of the array ``value`` (a result's ``key``) as ``model``."""
    if not isinstance(value, list):
        raise InvalidResult(f"the server's answer to {method} is malformed: {key!r} must be "
                            f"an array, got {type(value).__name__}")
    return [parse(model, item, method) for item in value]


async def all_pages(request: Callable[[str, JSONObject | None], Awaitable[JSONObject]],
                    method: str, key: str, model: type[M]) -> list[M]:
    """Every item of the listing ``method`` (its result's ``key``), page after page.

    Raises ``PaginationError`` when a cursor comes back (or is not a string) or after
    ``MAX_PAGES`` pages, ``InvalidResult`` for a malformed page, and what ``request``
    raises."""
    items: list[M] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        res = await request(method, {"cursor": cursor} if cursor else None)
        items.extend(parse_list(model, res.get(key, []), method, key))
        nxt = res.get("nextCursor")
        if not nxt:
            return items
        if not isinstance(nxt, str) or nxt in seen:
            raise PaginationError(
                f"the server repeated cursor {str(nxt)[:40]!r} for {method}; stopping"
            )
        seen.add(nxt)
        cursor = nxt
    raise PaginationError(f"{method} did not end after {MAX_PAGES} pages")


def routable(tools: list[t.ToolInfo]) -> tuple[list[t.ToolInfo], dict[str, dict[str, str]]]:
    """The tools whose ``x-mcp-header`` declarations are valid, and those declarations
    (``{tool: {parameter: header}}``). A tool with an invalid one is left out with a
    warning: a call to it could not be routed correctly over HTTP."""
    kept: list[t.ToolInfo] = []
    headers: dict[str, dict[str, str]] = {}
    for tool in tools:
        try:
            declared = param_headers(tool.input_schema)
        except ValueError as exc:
            log.warning("ignoring tool %r: %s", tool.name, exc)
            continue
        if declared:
            headers[tool.name] = declared
        kept.append(tool)
    return kept, headers


def param_headers(schema: Any) -> dict[str, str]:
    """``{parameter: header name}`` from ``x-mcp-header`` annotations of an input schema
    (2026-07-28); ``ValueError`` naming the first invalid declaration."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    out: dict[str, str] = {}
    seen: set[str] = set()
    for param, sub in (props.items() if isinstance(props, dict) else ()):
        if not isinstance(sub, dict) or "x-mcp-header" not in sub:
            continue
        name = sub["x-mcp-header"]
        if not isinstance(name, str) or not name:
            raise ValueError(f"parameter {param!r}: x-mcp-header must be a non-empty string")
        if not _TOKEN.match(name):
            raise ValueError(f"parameter {param!r}: x-mcp-header {name!r} is not a header token")
        if name.lower() in seen:
            raise ValueError(f"x-mcp-header {name!r} is declared twice")
        kind = sub.get("type")
        if kind not in ("string", "integer", "boolean"):
            raise ValueError(f"parameter {param!r}: x-mcp-header needs a string, integer or "
                             f"boolean parameter (got {kind!r})")
        seen.add(name.lower())
        out[param] = name
    return out


class OutputSchemas:
    """Each listed tool's ``outputSchema`` (and its validator, compiled on first use) and
    ``execution.taskSupport``, kept until the tool list changes."""

    __slots__ = ("_schemas", "_support", "_validators")

    def __init__(self) -> None:
        self._schemas: dict[str, Any] = {}
        self._validators: dict[str, Any] = {}
        self._support: dict[str, str] = {}  # execution.taskSupport (2025-11-25)

    def knows(self, name: str) -> bool:
        """Whether tool ``name`` was in the last tool list."""
        return name in self._schemas

    def task_support(self, name: str) -> str | None:
        """Tool ``name``'s ``execution.taskSupport`` in the last tool list (None: not
        listed)."""
        return self._support.get(name)

    def replace(self, tools: list[t.ToolInfo]) -> None:
        """The tools of a new ``tools/list``."""
        self._schemas = {tool.name: tool.output_schema for tool in tools}
        self._support = {tool.name: tool.task_support for tool in tools}
        self._validators.clear()

    def forget(self) -> None:
        """The server's tool list changed: nothing known is current."""
        self._schemas.clear()
        self._support.clear()
        self._validators.clear()

    async def verify(self, name: str, result: t.CallToolResult[Any],
                     relist: Callable[[], Awaitable[Any]]) -> None:
        """``check``, after listing the tools (``relist``) when ``name`` is not known; if
        that listing fails, a warning and no check: the call itself succeeded."""
        if not self.knows(name):
            try:
                await relist()
            except MCPError as exc:
                log.warning("cannot check the structuredContent of tool %r against its "
                            "outputSchema: tools/list failed: %s", name, exc)
                return
        self.check(name, result)

    def check(self, name: str, result: t.CallToolResult[Any]) -> None:
        """Raise ``OutputSchemaError`` unless ``result`` of tool ``name`` has the
        ``structuredContent`` its ``outputSchema`` asks for (no schema: nothing to check)."""
        schema = self._schemas.get(name)
        if not schema:
            return
        if result.structured_content is None:
            raise OutputSchemaError(
                f"tool {name!r} declares an outputSchema but returned no structuredContent"
            )
        validator = self._validators.get(name)
        if validator is None:
            import jsonschema_rs  # loaded with the first tool that declares a schema

            validator = self._validators[name] = jsonschema_rs.validator_for(schema)
        content = result.structured_content
        if too_deep(content):  # the limit on what a peer sends (jsonschema_rs cannot
            raise OutputSchemaError(  # describe what is wrong that deep)
                f"tool {name!r} returned structuredContent nested more than {MAX_DEPTH} "
                "levels deep, more than this client reads (mcpkit.protocol.nesting)")
        errors = [e.message[:300] for e in validator.iter_errors(content)]
        if errors:
            raise OutputSchemaError(
                f"tool {name!r} returned structuredContent that does not match its "
                f"outputSchema: {'; '.join(errors[:3])}"
            )


@functools.lru_cache(maxsize=256)
def _reader(result_type: Any) -> tuple[TypeAdapter[Any], bool]:
    """A validator for ``result_type`` and whether a server wraps its values in
    ``{"result": ...}``: as the spec's ``structuredContent`` is an object, a value whose
    JSON Schema is not ``"type": "object"`` travels wrapped (mcpkit's and other servers'
    convention)."""
    from pydantic import PydanticUserError, TypeAdapter

    try:
        adapter: TypeAdapter[Any] = TypeAdapter(result_type)
    except PydanticUserError as exc:  # a type pydantic cannot validate into
        raise TypeError(f"result_type {_type_name(result_type)} cannot be read: {exc}"
                        ) from None
    try:
        schema = adapter.json_schema()
        wrapped = bool(schema) and schema.get("type") != "object"  # {}: Any, as is
    except Exception:  # no JSON Schema for this type (pydantic's errors vary): as is
        wrapped = False
    return adapter, wrapped


def _type_name(result_type: Any) -> str:
    return getattr(result_type, "__name__", None) or repr(result_type)


class Structured:
    """A tool's structured result read without a ``result_type``: a JSON object whose
    fields read as attributes (``result.data.items[0].id``), nested objects too (each
    wrapped as it is read).

    Attributes are the object's fields and nothing else (a field may be called
    ``items``, ``keys`` or ``get``), so the object is not a dict: it is equal to the dict
    it was read from, indexes (``data["first-name"]``), iterates over its keys and has a
    length; the JSON itself is ``result.structured_content``."""

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        object.__setattr__(self, "_fields", fields)

    def __getattr__(self, name: str) -> Any:
        fields = object.__getattribute__(self, "_fields")
        try:
            return structured(fields[name])
        except KeyError:
            raise AttributeError(f"the result has no field {name!r}; it has "
                                 f"{', '.join(map(repr, list(fields)[:20])) or 'none'}"
                                 ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a tool's result is read-only")

    def __getitem__(self, key: str) -> Any:
        return structured(self._fields[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Structured):
            return bool(self._fields == other._fields)
        if isinstance(other, dict):
            return bool(self._fields == other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Structured({self._fields!r})"

    def __dir__(self) -> list[str]:
        return [k for k in self._fields if k.isidentifier()]


def structured(value: Any) -> Any:
    """``value`` as ``.data`` shows it: an object as a ``Structured`` over it (no copy:
    what is inside is wrapped when it is read, so a result nobody reads costs nothing),
    an array as a list of such values, anything else as it is."""
    if type(value) is dict:
        return Structured(value)
    if type(value) is list:
        return [structured(v) for v in value]
    return value


def read_data(name: str, result: t.CallToolResult[Any], result_type: Any,
              raise_on_error: bool, declared: Callable[[Any, str], Any] | None = None
              ) -> None:
    """Fill ``result.data`` for tool ``name``'s result: its ``structuredContent`` (already
    checked against the tool's ``outputSchema``), as ``result_type`` when one is given;
    else through ``declared`` (an in-process server's reader back into the tool's
    declared return type, given the structured content and the text), else as
    ``Structured`` objects.

    Raises ``ToolError`` for an ``is_error`` result when ``raise_on_error``, and
    ``OutputSchemaError`` when the content is missing or is not a ``result_type``."""
    if result.is_error:
        if raise_on_error:
            raise ToolError(result.text or f"tool {name!r} failed without saying why", result)
        return
    content = result.structured_content
    if result_type is None:
        if declared is not None:
            try:
                result._data = declared(content, result.text)
                return
            except Exception as exc:  # what the server sent is not what it declares
                raise OutputSchemaError(
                    f"tool {name!r} returned structuredContent that its declared return "
                    f"type does not read: {str(exc)[:300]}") from None
        result._data = structured(content)
        return
    if content is None:
        raise OutputSchemaError(
            f"tool {name!r} returned no structuredContent, so there is no "
            f"{_type_name(result_type)} to read; call it without result_type and read "
            "its content")
    from pydantic import ValidationError

    try:
        adapter, wrapped = _reader(result_type)
    except TypeError:  # an unhashable type (Annotated with a dict, say): not cached
        adapter, wrapped = _reader.__wrapped__(result_type)
    value: Any = content
    if wrapped:
        if set(content) != {"result"}:
            raise OutputSchemaError(
                f"tool {name!r} returned structuredContent with keys {sorted(content)[:5]}; "
                f"a {_type_name(result_type)} travels as {{\"result\": value}}: ask for "
                "a type that matches the tool's outputSchema")
        value = content["result"]
    try:
        result._data = adapter.validate_python(value)
    except ValidationError as exc:
        raise OutputSchemaError(
            f"tool {name!r} returned structuredContent that is not a "
            f"{_type_name(result_type)}: {_problems(exc, '<value>')}") from None
