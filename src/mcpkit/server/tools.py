"""Tools: a function, its advertised schemas, argument validation and result building.

The ``inputSchema`` advertised in ``tools/list`` is the very schema arguments are checked
against (``validation.py``: compiled on the first call, by ``fastjsonschema`` when it uses
only plain keywords, with ``jsonschema_rs`` as the authority). Failures of the tool itself
(bad arguments included, from 2025-11-25 on) are results with ``isError: true`` whose text
tells the model what went wrong and what to do; unknown tools are protocol errors.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from ..protocol.errors import (
    CapabilityNotSupported,
    ProtocolError,
    RemoteError,
    RequestTimeout,
    ToolError,
)
from ..protocol.scopes import check_scopes
from ..protocol.tasks import TASK_SUPPORT, TaskSupport
from ..session import HandlerResult, Ready
from . import declared
from .content import is_content, summarise, to_blocks, to_json_text
from .context import Context
from .declared import ObjectLike
from .handler import HandlerSpec
from .limits import INHERIT, Inherit, RateLimit, as_limit
from .mrtr import InputRequired
from .schema import ConversionFailed, Signature, parse_docstring
from .schema import output_schema as derived_output_schema
from .validation import SchemaValidator
from .visibility import check_tags

log = logging.getLogger("mcpkit.server")
JSON = dict[str, Any]
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class Tool:
    """One registered tool."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: ObjectLike | None = None,
        output_schema: ObjectLike | None = None,
        annotations: ObjectLike | None = None,
        icons: list[ObjectLike] | None = None,
        meta: ObjectLike | None = None,
        structured_output: bool | None = None,
        scopes: Iterable[str] = (),
        rate_limit: RateLimit | str | Inherit | None = INHERIT,
        task: TaskSupport = "forbidden",
        task_start: str = "call",
        tags: Iterable[str] = (),
    ) -> None:
        """``scopes``: the OAuth scopes a call needs over a protected HTTP endpoint (see
        ``Server.add_tool``); ``ValueError`` for a name that is not a scope-token.
        ``rate_limit``: the tool's own limit per caller (a ``RateLimit`` or its string),
        None to exempt it, ``INHERIT`` (default) for the server's; ``ValueError`` for an
        invalid one. ``task``: whether a call may (``"optional"``) or must
        (``"required"``) run as a task, or never does (``"forbidden"``, default);
        ``task_start``: ``"call"`` (the task is created when the call arrives) or
        ``"explicit"`` (the handler runs as a plain request, asking for input the plain
        way, until it awaits ``ctx.start_task()``). ``annotations``, ``icons``, ``meta``
        and the schemas take mappings, pydantic models (the official SDK's
        ``ToolAnnotations``, ``Icon``) or dataclass instances, converted to JSON here
        (``declared.py``); anything else is a ``TypeError``."""
        if task not in TASK_SUPPORT:
            raise ValueError(f"task must be one of {', '.join(TASK_SUPPORT)}, got {task!r}")
        if task_start not in ("call", "explicit"):
            raise ValueError(f"task_start must be 'call' or 'explicit', got {task_start!r}")
        #: How calls run as tasks; None when they never do (the plain call's fast path).
        self.task: TaskSupport | None = None if task == "forbidden" else task
        self.task_start = task_start
        self.fn = fn
        self.scopes = check_scopes(scopes)
        self.tags = check_tags(tags)
        self.spec = HandlerSpec(fn)
        self.name = name or self.spec.name
        if not TOOL_NAME.match(self.name):
            raise ValueError(
                f"invalid tool name {self.name!r}: use 1-128 characters of A-Z a-z 0-9 _ - ."
            )
        #: The tool's own rate limit, None (exempt) or ``INHERIT`` (the server's).
        self.rate_limit: RateLimit | Inherit | None = (
            rate_limit if isinstance(rate_limit, Inherit)
            else as_limit(rate_limit, f"tool {self.name!r}"))
        doc_desc, param_docs = parse_docstring(inspect.getdoc(fn))
        self.description = description if description is not None else doc_desc
        self.signature = Signature(self.spec, param_docs=param_docs)
        # plain JSON parameters (str, int, list[str], ...) need no conversion: a copy of
        # the validated arguments is the call's keyword arguments
        self._convert: Callable[[JSON], dict[str, Any]] = (
            self.signature.convert if self.signature.adapters else dict)
        input_schema = declared.schema(input_schema, "input_schema")
        declared_output = declared.schema(output_schema, "output_schema")
        self.input_schema = input_schema if input_schema is not None else self.signature.schema
        if self.input_schema.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: inputSchema must have type 'object'")
        self.validator = SchemaValidator(self.input_schema)
        self.wrapped = False
        self._out_adapter: Any = None
        if declared_output is not None:
            self.output_schema: JSON | None = declared_output
        elif structured_output is False:
            self.output_schema = None
        else:
            self.output_schema, self.wrapped, self._out_adapter = derived_output_schema(
                self.spec.return_hint)
        self.output_validator = (
            SchemaValidator(self.output_schema, peer=False)
            if self.output_schema is not None else None
        )
        self.title = title
        self.annotations = declared.annotations_object(annotations, tool=True)
        self.icons = declared.icons(icons)
        self.meta = declared.meta(meta)
        self.param_headers: dict[str, str] | None = None  # x-mcp-header map, on first use
        self.definition = self._definition()

    def _definition(self) -> JSON:
        d: JSON = {"name": self.name}
        if self.title:
            d["title"] = self.title
        d["description"] = self.description or self.name
        d["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            d["outputSchema"] = self.output_schema
        if self.annotations:
            d["annotations"] = self.annotations
        if self.icons:
            d["icons"] = self.icons
        if self.meta:
            d["_meta"] = self.meta
        if self.task is not None:  # 2025-11-25 Tool.execution (compat drops it elsewhere)
            d["execution"] = {"taskSupport": self.task}
        return d

    # ------------------------------------------------------------------ calling

    def invalid_arguments(self, arguments: Any) -> JSON | None:
        """An ``isError`` result if ``arguments`` fail the input schema, else None."""
        if self.validator.is_valid(arguments):
            return None
        from .arg_errors import invalid_arguments_text, schema_problems  # (refusals only)

        problems = schema_problems(self.input_schema, self.validator.iter_errors(arguments))
        return error_result(invalid_arguments_text(self.name, problems, self.input_schema))

    def call(self, arguments: JSON, ctx: Context) -> HandlerResult:
        """Run the tool on validated ``arguments``: an awaitable of its
        ``CallToolResult``, ``Ready`` when its function cannot wait
        (``HandlerSpec.never_waits``: run now, answered without a task), otherwise a
        coroutine that produces it."""
        try:
            kwargs = self._convert(arguments)
        except ConversionFailed as exc:
            return Ready(self._unconvertible(exc))
        if not self.spec.never_waits:
            return self._call(kwargs, ctx)
        try:
            value = self.spec.invoke_now(kwargs, ctx)
        except (InputRequired, ProtocolError):
            raise  # MRTR input request / a protocol error such as -32021: not tool failures
        except Exception as exc:
            return Ready(self._failure(exc))
        return Ready(self.build_result(value))

    async def _call(self, kwargs: dict[str, Any], ctx: Context) -> JSON:
        try:
            value = await self.spec.invoke(kwargs, ctx)
        except (InputRequired, ProtocolError):
            raise
        except Exception as exc:
            return self._failure(exc)
        return self.build_result(value)

    def _unconvertible(self, exc: ConversionFailed) -> JSON:
        """The ``isError`` result for arguments that passed the schema but not pydantic
        (an ``HttpUrl``, a custom validator), in the same words as a schema failure."""
        from .arg_errors import Problem, at_instance_path, invalid_arguments_text, pydantic_problems

        cause = exc.cause
        if callable(getattr(cause, "errors", None)):
            problems = pydantic_problems(self.input_schema, (exc.param,), cause)
        else:
            problems = [Problem((exc.param,), _short(cause),
                                at_instance_path(self.input_schema, (exc.param,)))]
        return error_result(invalid_arguments_text(self.name, problems, self.input_schema))

    def _failure(self, exc: Exception) -> JSON:
        """The ``isError`` result for an exception the tool's function raised."""
        if isinstance(exc, ToolError):
            return error_result(str(exc) or f"The tool '{self.name}' failed.")
        if isinstance(exc, CapabilityNotSupported):  # mcpkit's own words about this session
            log.info("tool %r needs what this session lacks: %s", self.name, exc)
            return error_result(
                f"The tool '{self.name}' cannot run in this session: {exc}. Retrying will not "
                "help; it needs a client that supports this feature."
            )
        if isinstance(exc, RemoteError):  # the client refused a request the tool made
            return error_result(
                f"The tool '{self.name}' could not finish: the client answered its request "
                f"with an error ({exc.message}). Ask the user before retrying."
            )
        if isinstance(exc, RequestTimeout):
            return error_result(
                f"The tool '{self.name}' could not finish: the client did not answer its "
                "request in time. Try again when the user is available."
            )
        log.error("tool %r raised %s: %s", self.name, type(exc).__name__, exc, exc_info=exc)
        return error_result(
            f"The tool '{self.name}' failed unexpectedly ({type(exc).__name__}). The "
            "details were logged on the server; try different arguments or try again later."
        )

    def wire_size(self) -> int:
        """The bytes of this tool's JSON in a listing (worked out once, then kept)."""
        size: int | None = getattr(self, "_wire_size", None)
        if size is None:
            size = self._wire_size = len(orjson.dumps(self.definition))
        return size

    def result_reader(self) -> Callable[[Any, str], Any] | None:
        """How an in-process client reads a result of this tool back into the declared
        return type, from ``(structuredContent, text)``: the model, the dataclass, the
        unwrapped value of a ``{"result": ...}``, or the text of a tool declared to
        return ``str``; None when the structure is plain JSON or the schema was given by
        hand."""
        adapter, wrapped = self._out_adapter, self.wrapped
        if self.output_schema is None:
            return _text if self.spec.return_hint is str else None
        if adapter is None:
            return _unwrapped if wrapped else None
        read = adapter.validate_python

        def typed(content: Any, text: str) -> Any:
            if content is None:
                return None
            return read(content["result"] if wrapped else content)
        return typed

    def build_result(self, value: Any) -> JSON:
        """``CallToolResult`` for a return value: structured when an outputSchema exists."""
        if isinstance(value, dict) and "content" in value and (
            "isError" in value or "structuredContent" in value
        ):
            return value  # already a CallToolResult
        if self.output_schema is None or is_content(value):
            return {"content": to_blocks(value), "isError": False}
        if self._out_adapter is not None:
            value = self._out_adapter.dump_python(value, mode="json")
        structured = {"result": value} if self.wrapped else value
        if self.output_validator is not None and not self.output_validator.is_valid(structured):
            log.error("tool %r returned a value that does not match its outputSchema", self.name)
            return error_result(
                f"The tool '{self.name}' produced output that does not match its declared "
                "outputSchema; this is a server bug, report it to the server's operator."
            )
        text = to_json_text(value)
        return {
            "content": [{"type": "text", "text": summarise(text)}],
            "structuredContent": structured,
            "isError": False,
        }


def _text(content: Any, text: str) -> str:
    return text


def _unwrapped(content: Any, text: str) -> Any:
    return None if content is None else content["result"]


def error_result(text: str) -> JSON:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()
    return "; ".join(line.strip() for line in text[:6] if line.strip())
