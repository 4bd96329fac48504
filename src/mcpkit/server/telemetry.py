"""``OpenTelemetry``: the middleware tracing and measuring every request a server answers.

A ``SERVER`` span per request and notification its handlers receive, child of the trace
context the client put in ``params._meta``, and the ``mcp.server.operation.duration``
and ``mcp.server.active_requests`` metrics (``mcpkit.session.telemetry`` has the
attributes and names, after OpenTelemetry's semantic conventions for MCP). The requests
the server sends its client while answering (sampling, elicitation, roots) get
``CLIENT`` spans, children of the request's span, with the trace context in their own
``params._meta``.

Enable it with ``Server(telemetry=True)`` (put first, so the span covers every other
middleware) or ``server.add_middleware(OpenTelemetry(...))`` with providers of your
own. Needs the ``mcpkit[otel]`` extra (``opentelemetry-api``); made without it,
``ImportError`` says so.
"""

from __future__ import annotations

from typing import Any

from ..protocol.jsonrpc import JSONObject
from ..session.telemetry import Telemetry
from .middleware import CallNext, Middleware, NotifyNext, Request


class OpenTelemetry(Middleware):
    """Trace and measure requests (see the module docstring). ``tracer_provider`` and
    ``meter_provider``: where spans and metrics go (default: the global providers)."""

    def __init__(self, *, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        self.telemetry = Telemetry(tracer_provider=tracer_provider,
                                   meter_provider=meter_provider)

    async def on_request(self, request: Request, call_next: CallNext) -> JSONObject:
        session = request.session
        if session.telemetry is None:
            session.telemetry = self.telemetry  # its requests to the client: traced too
        result: JSONObject = await self.telemetry.incoming(
            request.method, request.params, request.id, request.session_id,
            request.protocol_version, lambda: call_next(request),
            transport=None if request.peer is None else "tcp")
        return result

    async def on_notification(self, request: Request, call_next: NotifyNext) -> None:
        await self.telemetry.incoming(
            request.method, request.params, None, request.session_id,
            request.protocol_version, lambda: call_next(request),
            transport=None if request.peer is None else "tcp")
