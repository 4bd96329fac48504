"""OpenTelemetry for MCP messages, after the semantic conventions for MCP (both roles).

What: ``Telemetry`` makes one span per request and notification, and records two
metrics, for the side that sends (``outgoing``: a ``CLIENT`` span, the metric
``mcp.client.operation.duration``) and the side that answers (``incoming``: a ``SERVER``
span, ``mcp.server.operation.duration``); a server's requests to its client (sampling,
elicitation, roots) are outgoing on the server and incoming on the client. In-flight
requests are counted by the up-down counters ``mcp.client.active_requests`` and
``mcp.server.active_requests`` (the conventions define no such metric; the names follow
HTTP's ``http.server.active_requests``).

Attributes: ``mcp.method.name``; ``jsonrpc.request.id`` (requests); ``mcp.session.id``
(in a Streamable HTTP session); ``mcp.protocol.version``; ``gen_ai.tool.name`` and
``gen_ai.operation.name = execute_tool`` (``tools/call``); ``gen_ai.prompt.name``
(``prompts/get``); ``mcp.resource.uri`` (resource requests, spans only);
``network.transport`` (``tcp`` over HTTP, ``pipe`` over stdio, when known). The span is
named ``{method} {tool or prompt name}`` (just the method otherwise). A JSON-RPC error
sets ``error.type`` and ``rpc.response.status_code`` to its code and the span status to
ERROR with its message; an ``isError`` tool result sets ``error.type = tool_error``; a
timeout ``timeout``, a cancellation ``cancelled``, another exception its class name.

Trace context travels in ``params._meta`` (``traceparent``, ``tracestate``,
``baggage``), written by the configured propagators (W3C by default) and read as the
parent of the answering span; an ambient span of the transport (an instrumented HTTP
server), when there is one, is linked.

Why here: the server and the client both use it and may not import each other.
``opentelemetry`` is imported only when a ``Telemetry`` is made (the ``mcpkit[otel]``
extra); ``import mcpkit`` never loads it. Failure modes: without the package,
``Telemetry()`` raises ``ImportError`` saying which extra to install.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from ..protocol.errors import InternalError, MCPError, ProtocolError, RemoteError, RequestTimeout
from ..protocol.jsonrpc import JSONObject, RequestId

if TYPE_CHECKING:
    from ..protocol.connection import RequestReceived
    from .dispatch import Session
    from .interfaces import HandlerResult

INSTRUMENTATION: Final = "mcpkit"
_TARGETS: Final = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_URI_METHODS: Final = frozenset(
    {"resources/read", "resources/subscribe", "resources/unsubscribe",
     "notifications/resources/updated"})
DURATION_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0,
                           2.5, 5.0, 7.5, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Histogram boundaries in seconds (the conventions' advice for operation durations)."""


class Telemetry:
    """Spans and metrics of MCP messages (see the module docstring).

    ``tracer_provider``/``meter_provider``: where they go (default: the global ones
    the application configured; with none, OpenTelemetry's no-op). ``transport``:
    the ``network.transport`` value, when the owner knows it."""

    def __init__(self, *, tracer_provider: Any = None, meter_provider: Any = None,
                 transport: str | None = None) -> None:
        try:
            from opentelemetry import metrics, propagate, trace
        except ImportError:
            raise ImportError("OpenTelemetry support needs the 'opentelemetry-api' "
                              "package: pip install 'mcpkit[otel]'") from None
        self._trace = trace
        self._propagate = propagate
        release = _release()
        self.tracer = trace.get_tracer(INSTRUMENTATION, release,
                                       tracer_provider=tracer_provider)
        meter = metrics.get_meter(INSTRUMENTATION, release or "",
                                  meter_provider=meter_provider)
        self.transport = transport
        self._durations = {
            side: meter.create_histogram(
                f"mcp.{side}.operation.duration", unit="s",
                description=f"MCP request or notification duration as observed on the "
                            f"{side}",
                explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS))
            for side in ("client", "server")}
        self._active = {
            side: meter.create_up_down_counter(
                f"mcp.{side}.active_requests", unit="{request}",
                description=f"MCP requests in flight on the {side}")
            for side in ("client", "server")}

    # ------------------------------------------------------------------ attributes

    def attributes(self, method: str, params: JSONObject, rid: RequestId | None,
                   session_id: str | None, version: str | None,
                   transport: str | None = None) -> dict[str, Any]:
        """The span attributes of one message (see the module docstring); ``transport``
        instead of the one given at construction."""
        attrs: dict[str, Any] = {"mcp.method.name": method}
        if rid is not None:
            attrs["jsonrpc.request.id"] = str(rid)
        if session_id is not None:
            attrs["mcp.session.id"] = session_id
        if version is not None:
            attrs["mcp.protocol.version"] = version
        transport = transport or self.transport
        if transport is not None:
            attrs["network.transport"] = transport
        target = _TARGETS.get(method)
        if target is not None:
            name = params.get("name")
            if isinstance(name, str):
                attrs[target] = name
            if method == "tools/call":
                attrs["gen_ai.operation.name"] = "execute_tool"
        if method in _URI_METHODS:
            uri = params.get("uri")
            if isinstance(uri, str):
                attrs["mcp.resource.uri"] = uri
        return attrs

    # ------------------------------------------------------------------ the answering side

    async def incoming(self, method: str, params: JSONObject, rid: RequestId | None,
                       session_id: str | None, version: str | None,
                       run: Callable[[], Awaitable[Any]], *,
                       transport: str | None = None) -> Any:
        """Run ``run()`` (the answer to a received message) in a ``SERVER`` span whose
        parent is the trace context in ``params._meta``; what it returns or raises
        passes through."""
        trace = self._trace
        meta = params.get("_meta")
        parent = self._propagate.extract(meta) if isinstance(meta, dict) else None
        links = []
        if parent is not None and not trace.get_current_span(parent).get_span_context(
                ).is_valid:
            parent = None  # nothing readable in _meta: the ambient span (if any) is parent
        ambient = trace.get_current_span().get_span_context()
        if ambient.is_valid and parent is not None:
            links.append(trace.Link(ambient))
        attrs = self.attributes(method, params, rid, session_id, version, transport)
        with self.tracer.start_as_current_span(
                _name(method, attrs), context=parent, kind=trace.SpanKind.SERVER,
                attributes=attrs, links=links, record_exception=False,
                set_status_on_exception=False) as span:
            return await self._measured("server", span, attrs, rid is not None, run)

    async def answering(self, session: Session, event: RequestReceived,
                        answer: Callable[[Session, RequestReceived], HandlerResult]
                        ) -> JSONObject:
        """``answer(session, event)`` (a request handler) run in a ``SERVER`` span."""
        rev = event.revision

        async def run() -> JSONObject:
            return await answer(session, event)

        result: JSONObject = await self.incoming(
            event.method, event.params, event.id, session.session_id,
            None if rev is None else rev.version, run)
        return result

    # ------------------------------------------------------------------ the sending side

    def outgoing(self, session: Session, method: str, params: JSONObject | None,
                 session_id: str | None) -> Outgoing:
        """Start the ``CLIENT`` span of a request about to be sent (child of the current
        span); its ``params`` carry the trace context. End it with ``done``."""
        rev = session.revision
        sent = dict(params or {})
        attrs = self.attributes(method, sent, None, session_id,
                                None if rev is None else rev.version)
        span = self.tracer.start_span(_name(method, attrs), kind=self._trace.SpanKind.CLIENT,
                                      attributes=attrs)
        given = sent.get("_meta")
        meta = dict(given) if isinstance(given, dict) else {}
        self._propagate.inject(meta, context=self._trace.set_span_in_context(span))
        sent["_meta"] = meta
        self._active["client"].add(1, _metric_attrs(attrs))
        return Outgoing(self, span, attrs, sent)

    # ------------------------------------------------------------------ shared

    async def _measured(self, side: str, span: Any, attrs: dict[str, Any], counted: bool,
                        run: Callable[[], Awaitable[Any]]) -> Any:
        metric = _metric_attrs(attrs)
        if counted:
            self._active[side].add(1, metric)
        started = time.perf_counter()
        error: BaseException | None = None
        result = None
        try:
            result = await run()
            return result
        except BaseException as exc:
            error = exc
            raise
        finally:
            self.finish(side, span, metric, started, result, error)
            if counted:
                self._active[side].add(-1, metric)

    def finish(self, side: str, span: Any, metric: dict[str, Any], started: float,
               result: Any, error: BaseException | None) -> None:
        """Record how an operation ended on its span and in its duration metric."""
        kind = _error_type(side, result, error)
        if kind is not None:
            span.set_attribute("error.type", kind)
            metric["error.type"] = kind
            if kind.lstrip("-").isdigit():
                span.set_attribute("rpc.response.status_code", kind)
                metric["rpc.response.status_code"] = kind
            message = getattr(error, "message", None) or (str(error) if error else kind)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, message))
            if error is not None and isinstance(error, Exception):
                span.record_exception(error)
        self._durations[side].record(time.perf_counter() - started, metric)


class Outgoing:
    """The span of one request being sent (``Telemetry.outgoing``); ``params`` is what
    to send (the caller's, with the trace context added to a copy of ``_meta``)."""

    __slots__ = ("attrs", "params", "span", "started", "telemetry")

    def __init__(self, telemetry: Telemetry, span: Any, attrs: dict[str, Any],
                 params: JSONObject) -> None:
        self.telemetry = telemetry
        self.span = span
        self.attrs = attrs
        self.params = params
        self.started = time.perf_counter()

    def on_sent(self, then: Callable[[RequestId], None] | None
                ) -> Callable[[RequestId], None]:
        """An ``on_sent`` callback noting the request's id on the span, then calling
        ``then`` (the caller's own, if any)."""

        def sent(rid: RequestId) -> None:
            self.span.set_attribute("jsonrpc.request.id", str(rid))
            if then is not None:
                then(rid)

        return sent

    def done(self, result: JSONObject | None, error: BaseException | None) -> None:
        """The request ended with ``result`` or ``error``: close the span."""
        metric = _metric_attrs(self.attrs)
        self.telemetry._active["client"].add(-1, dict(metric))
        self.telemetry.finish("client", self.span, metric, self.started, result, error)
        self.span.end()


def _release() -> str | None:
    """mcpkit's installed version (the instrumentation scope's), if it is installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcpkit")
    except PackageNotFoundError:
        return None


def _name(method: str, attrs: dict[str, Any]) -> str:
    target = attrs.get(_TARGETS.get(method, ""))
    return f"{method} {target}" if target else method


_METRIC_KEYS: Final = ("mcp.method.name", "mcp.protocol.version", "gen_ai.tool.name",
                       "gen_ai.prompt.name", "gen_ai.operation.name", "network.transport")


def _metric_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """The low-cardinality attributes a metric point carries (no ids, no URIs)."""
    return {k: attrs[k] for k in _METRIC_KEYS if k in attrs}


def _error_type(side: str, result: Any, error: BaseException | None) -> str | None:
    """``error.type``: the JSON-RPC error code when there is one (an exception the
    answering side sends as an internal error included), else a low-cardinality name."""
    if error is None:
        if isinstance(result, dict) and result.get("isError") is True:
            return "tool_error"
        return None
    if isinstance(error, ProtocolError | RemoteError):
        return str(error.code)
    if isinstance(error, RequestTimeout):
        return "timeout"
    if not isinstance(error, Exception):
        return "cancelled"
    if side == "server":
        return str(InternalError.code)  # what the client is answered
    if isinstance(error, MCPError):
        return type(error).__name__
    return type(error).__qualname__
