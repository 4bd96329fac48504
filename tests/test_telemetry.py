"""OpenTelemetry (session/telemetry.py, server/telemetry.py, Client(telemetry=...)): the
spans of a client -> server call chain are one trace (client span parent of the server
span, and the server's elicitation request a child of the server span, answered in a
span on the client), attributes and names after the semantic conventions for MCP,
errors recorded, the duration and in-flight metrics; both eras, in memory and over
Streamable HTTP. The SDK's in-memory exporter and metric reader collect them."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcpkit import Server
from mcpkit.protocol.errors import RemoteError
from mcpkit.server import Context
from mcpkit.server.middleware import Request
from mcpkit.server.telemetry import OpenTelemetry
from mcpkit.session import Telemetry
from mcpkit.testing import ERAS, connect
from tests.support.http import LiveServer
from tests.test_middleware import make_server as server_with

pytestmark = pytest.mark.anyio

LIMIT = 10


class Collected:
    """A tracer and a meter provider writing to memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def providers(self) -> dict[str, Any]:
        return {"tracer_provider": self.tracer_provider,
                "meter_provider": self.meter_provider}

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans()
                if name is None or s.name == name]

    def metrics(self) -> dict[str, list[Any]]:
        data = self.reader.get_metrics_data()
        out: dict[str, list[Any]] = {}
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    out.setdefault(metric.name, []).extend(metric.data.data_points)
        return out


def make_server(collected: Collected) -> Server:
    """The middleware tests' server (tools add, fail), traced, with a tool that elicits."""
    server = server_with(OpenTelemetry(**collected.providers()))

    @server.tool
    async def confirm(ctx: Context) -> str:
        """Asks the user."""
        answer = await ctx.elicit("Sure?", {"type": "object", "properties": {
            "ok": {"type": "boolean"}}})
        return str(answer.action)

    return server


async def accept(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": True}}


def one(spans: list[ReadableSpan], kind: SpanKind) -> ReadableSpan:
    found = [s for s in spans if s.kind is kind]
    assert len(found) == 1, [(s.name, s.kind) for s in spans]
    return found[0]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_tool_call_is_one_trace_from_client_to_server(mode: str) -> None:
    collected = Collected()
    telemetry = Telemetry(**collected.providers())
    with anyio.fail_after(LIMIT):
        async with connect(make_server(collected), mode=mode, telemetry=telemetry,
                           elicitation=accept) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"
    calls = collected.spans("tools/call add")
    sent, answered = one(calls, SpanKind.CLIENT), one(calls, SpanKind.SERVER)
    assert answered.parent is not None and answered.parent.is_remote
    assert answered.parent.span_id == sent.context.span_id
    assert answered.context.trace_id == sent.context.trace_id
    version = "2026-07-28" if mode == "stateless" else "2025-11-25"
    for span in (sent, answered):
        attrs = dict(span.attributes or {})
        assert attrs["mcp.method.name"] == "tools/call"
        assert attrs["gen_ai.tool.name"] == "add"
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert attrs["mcp.protocol.version"] == version
        assert "error.type" not in attrs and span.status.status_code is StatusCode.UNSET
    assert dict(sent.attributes or {})["jsonrpc.request.id"] == dict(
        answered.attributes or {})["jsonrpc.request.id"]
    listed = collected.spans("tools/list")  # the client's schema fetch: named by method
    assert {s.kind for s in listed} == {SpanKind.CLIENT, SpanKind.SERVER}


async def test_a_servers_request_to_the_client_continues_the_trace() -> None:
    collected = Collected()
    telemetry = Telemetry(**collected.providers())
    with anyio.fail_after(LIMIT):
        async with connect(make_server(collected), telemetry=telemetry,
                           elicitation=accept) as client:
            assert (await client.call_tool("confirm", {})).text == "accept"
    call = one(collected.spans("tools/call confirm"), SpanKind.SERVER)
    elicit = collected.spans("elicitation/create")
    asked, answered = one(elicit, SpanKind.CLIENT), one(elicit, SpanKind.SERVER)
    # client span -> server span -> the server's elicitation (CLIENT) -> the client's
    # handler (SERVER): one trace, each the parent of the next
    assert asked.parent is not None and asked.parent.span_id == call.context.span_id
    assert answered.parent is not None and answered.parent.span_id == asked.context.span_id
    assert len({s.context.trace_id for s in (call, asked, answered)}) == 1
    assert dict(asked.attributes or {})["jsonrpc.request.id"] == dict(
        answered.attributes or {})["jsonrpc.request.id"]


@pytest.mark.parametrize("mode", ERAS)
async def test_errors_are_recorded_as_the_conventions_say(mode: str) -> None:
    collected = Collected()
    telemetry = Telemetry(**collected.providers())
    with anyio.fail_after(LIMIT):
        async with connect(make_server(collected), mode=mode, telemetry=telemetry) as client:
            failed = await client.call_tool("fail", {})
            with pytest.raises(RemoteError):
                await client.request("tools/call", {"name": "nope"})
    assert failed.is_error
    for span in collected.spans("tools/call fail"):
        assert dict(span.attributes or {})["error.type"] == "tool_error"
        assert span.status.status_code is StatusCode.ERROR
    unknown = collected.spans("tools/call nope")
    assert {s.kind for s in unknown} == {SpanKind.CLIENT, SpanKind.SERVER}
    for span in unknown:
        attrs = dict(span.attributes or {})
        assert attrs["error.type"] == attrs["rpc.response.status_code"] == "-32602"
        assert span.status.status_code is StatusCode.ERROR
        assert "Unknown tool" in (span.status.description or "")
    points = collected.metrics()
    server_calls = [p for p in points["mcp.server.operation.duration"]
                    if p.attributes["mcp.method.name"] == "tools/call"]
    assert sum(p.count for p in server_calls) == 2
    assert {p.attributes.get("error.type") for p in server_calls} == {"tool_error", "-32602"}
    assert all("jsonrpc.request.id" not in p.attributes for p in server_calls)
    assert sum(p.count for p in points["mcp.client.operation.duration"]) >= 2
    for name in ("mcp.server.active_requests", "mcp.client.active_requests"):
        assert sum(p.value for p in points[name]) == 0  # every request ended


class Probe(OpenTelemetry):
    """Notes how many requests are in flight while a tool call is answered."""

    def __init__(self, collected: Collected) -> None:
        super().__init__(**collected.providers())
        self.reader = collected.reader
        self.seen: list[int] = []

    async def on_call_tool(self, request: Request, call_next: Any) -> dict[str, Any]:
        data = self.reader.get_metrics_data()
        assert data is not None
        self.seen.extend(p.value for r in data.resource_metrics for s in r.scope_metrics
                         for m in s.metrics if m.name == "mcp.server.active_requests"
                         for p in m.data.data_points)
        result: dict[str, Any] = await call_next(request)
        return result


async def test_requests_in_flight_are_counted() -> None:
    collected = Collected()
    probe = Probe(collected)
    server = Server("probe", middleware=[probe])
    server.add_tool(lambda: "x", name="x")
    with anyio.fail_after(LIMIT):
        async with connect(server) as client:
            await client.call_tool("x", {})
    assert probe.seen == [1]


async def test_over_streamable_http_with_the_session_id_and_transport() -> None:
    collected = Collected()
    telemetry = Telemetry(transport="tcp", **collected.providers())
    server = make_server(collected)
    with LiveServer(server.asgi_app()) as live:
        from mcpkit.client import Client

        with anyio.fail_after(LIMIT):
            async with Client(live.url, telemetry=telemetry, elicitation=accept) as client:
                assert (await client.call_tool("confirm", {})).text == "accept"
                session_id = client.http_transport.session_id  # type: ignore[union-attr]
    assert session_id
    spans = collected.spans()
    call = collected.spans("tools/call confirm")
    sent, answered = one(call, SpanKind.CLIENT), one(call, SpanKind.SERVER)
    assert answered.parent is not None and answered.parent.span_id == sent.context.span_id
    for span in (sent, answered):
        attrs = dict(span.attributes or {})
        assert attrs["mcp.session.id"] == session_id
        assert attrs["network.transport"] == "tcp"
    elicit = one(collected.spans("elicitation/create"), SpanKind.SERVER)
    assert elicit.context.trace_id == sent.context.trace_id
    assert len({s.context.trace_id for s in spans if s.name != "tools/list"}) == 1


def test_server_telemetry_flag_puts_the_middleware_first() -> None:
    from mcpkit.server.builtin_middleware import RequestLog

    server = Server("flag", telemetry=True, middleware=[RequestLog()])
    assert [type(m) for m in server.middleware] == [OpenTelemetry, RequestLog]


async def test_hostile_trace_context_starts_a_new_trace_and_notifications_get_spans() -> None:
    from tests.support.raw_peer import raw_peer

    collected = Collected()
    server = make_server(collected)
    server.on_roots_changed = lambda ctx: None
    call = {"name": "add", "arguments": {"a": 1, "b": 2}}
    with anyio.fail_after(LIMIT):
        async with raw_peer(server) as peer:
            await peer.initialize(capabilities={"roots": {"listChanged": True}})
            for meta in ({"traceparent": "00-zz-not-a-trace-01", "tracestate": 5},
                         "not an object", {"traceparent": ["00"] * 3}):
                result = await peer.result("tools/call", {**call, "_meta": meta})
                assert result["content"][0]["text"] == "3"
            await peer.notify("notifications/roots/list_changed")
            for _ in range(500):  # bounded: at most 5 s
                if collected.spans("notifications/roots/list_changed"):
                    break
                await anyio.sleep(0.01)
    calls = collected.spans("tools/call add")
    assert len(calls) == 3
    for span in calls:  # an unreadable parent is ignored: each is the root of its trace
        assert span.parent is None and span.kind is SpanKind.SERVER
        assert span.status.status_code is StatusCode.UNSET
    note = one(collected.spans("notifications/roots/list_changed"), SpanKind.SERVER)
    assert "jsonrpc.request.id" not in dict(note.attributes or {})
    points = collected.metrics()
    # a notification is timed, not counted as a request in flight
    assert sum(p.value for p in points["mcp.server.active_requests"]) == 0


def test_without_the_extra_asking_for_telemetry_says_what_to_install() -> None:
    import subprocess
    import sys

    code = ("import sys; sys.modules['opentelemetry'] = None\n"
            "from mcpkit import Server\n"
            "from mcpkit.client import Client\n"
            "Server('plain')  # no telemetry asked: fine\n"
            "for make in (lambda: Server('x', telemetry=True),\n"
            "             lambda: Client('http://127.0.0.1:1/mcp', telemetry=True)):\n"
            "    try:\n"
            "        make()\n"
            "    except ImportError as exc:\n"
            "        print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("pip install 'mcpkit[otel]'") == 2


async def test_the_ambient_span_is_the_parent_without_a_trace_context_else_a_link() -> None:
    from tests.support.raw_peer import raw_peer

    collected = Collected()
    server = make_server(collected)
    tracer = collected.tracer_provider.get_tracer("transport")
    remote = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    call = {"name": "add", "arguments": {"a": 1, "b": 2}}
    with anyio.fail_after(LIMIT), tracer.start_as_current_span("transport") as transport:
        async with raw_peer(server) as peer:
            await peer.initialize()
            await peer.result("tools/call", call)
            await peer.result("tools/call", {**call, "_meta": {"traceparent": remote}})
    plain, traced = collected.spans("tools/call add")
    ambient = transport.get_span_context()
    assert plain.parent is not None and plain.parent.span_id == ambient.span_id
    assert not plain.links
    assert traced.parent is not None and traced.parent.is_remote
    assert f"{traced.parent.trace_id:032x}" == remote.split("-")[1]
    assert [link.context.span_id for link in traced.links] == [ambient.span_id]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_call_through_the_proxy_is_one_trace(mode: str) -> None:
    """client -> proxy (traced) -> remote (traced): the proxy's server span is the child
    of the client's, its request to the remote a child of that, the remote's server span
    a child of the proxy's request: one trace, four spans, in that order."""
    from mcpkit.bridge import proxy

    collected = Collected()
    remote = make_server(collected)
    front = proxy(remote, telemetry=False, middleware=[OpenTelemetry(**collected.providers())])
    with anyio.fail_after(LIMIT):
        async with front.lifespan_scope(), connect(
                front, mode=mode, telemetry=Telemetry(**collected.providers())) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"
    calls = collected.spans("tools/call add")
    assert len(calls) == 4, [(s.name, s.kind) for s in calls]
    by_parent = {s.parent.span_id if s.parent else None: s for s in calls}
    chain = [by_parent[None]] if None in by_parent else []
    while chain and chain[-1].context.span_id in by_parent:
        chain.append(by_parent[chain[-1].context.span_id])
    kinds = [s.kind for s in chain]
    assert kinds == [SpanKind.CLIENT, SpanKind.SERVER, SpanKind.CLIENT, SpanKind.SERVER]
    assert len({s.context.trace_id for s in calls}) == 1
