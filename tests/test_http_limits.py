"""Streamable HTTP under hostile or careless clients (the load findings of issue #11).

A GET stream dropped and reopened in a loop frees what it held; idle sessions expire on a
timer, with no new traffic and bounded work per sweep; a client that stalls in its
headers or its body is cut off (the connection closed, or 408) while every other client
is served. A real uvicorn on 127.0.0.1; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import anyio
import httpx
import orjson
import pytest

from mcpkit.server.running import protocol_class
from mcpkit.transports.http_streams import ResponseStream
from tests.support.http import LATEST, LiveServer, McpHttp, everything_server

pytestmark = pytest.mark.anyio
T = TypeVar("T")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


def in_loop(live: LiveServer, fn: Callable[[], T]) -> T:
    """``fn()`` run on the server's event loop thread, its result returned (bounded)."""

    async def call() -> T:
        return fn()

    assert live.loop is not None
    return asyncio.run_coroutine_threadsafe(call(), live.loop).result(timeout=5)


def stream_tasks() -> int:
    """Tasks of the running loop that serve SSE streams (pumps and disconnect watchers)."""
    names = ("_run_pump", "watch")
    return sum(1 for t in asyncio.all_tasks()
               if t.get_coro().__qualname__.rsplit(".", 1)[-1] in names)  # type: ignore[union-attr]


def live_streams(app: Any) -> int:
    """ResponseStream objects still alive that belong to a session of ``app``."""
    gc.collect()
    ours = {id(s) for s in app.sessions.values()}
    return sum(1 for o in gc.get_objects()
               if isinstance(o, ResponseStream) and id(o.session) in ours)


async def until(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(0.02)
    return True


async def test_get_streams_dropped_in_a_loop_free_their_tasks_and_streams(http) -> None:
    srv = everything_server()
    app = srv.asgi_app()
    with LiveServer(app) as live:
        c = McpHttp(http, live.url)
        await c.initialize(LATEST)
        before = in_loop(live, stream_tasks)
        cycles = 0
        for _ in range(400):  # 40 streams opened and dropped; a 409 means "not noticed yet"
            async with c.open_get() as get:
                if get.status == 409:
                    await get.body()
                    await anyio.sleep(0.02)
                    continue
                assert get.status == 200
                assert (await get.next_event()).data == ""  # the priming event
            cycles += 1
            if cycles == 40:
                break
        assert cycles == 40
        assert await until(lambda: in_loop(live, stream_tasks) <= before), (
            in_loop(live, stream_tasks), before)
        # Only the latest GET stream is kept (it can still be resumed).
        assert in_loop(live, lambda: live_streams(app)) == 1
        # And the session still works: a notification reaches a new GET stream.
        async with c.open_get() as get:  # the server noticed every close (tasks ended)
            assert get.status == 200
            await get.next_event()
            srv.notify_list_changed("tools")
            event = await get.next_event()
            assert orjson.loads(event.data)["method"] == "notifications/tools/list_changed"


async def test_idle_sessions_expire_on_the_timer_without_new_traffic(http) -> None:
    srv = everything_server()
    app = srv.asgi_app(session_idle_timeout=0.3, sweep_interval=0.05)
    with LiveServer(app) as live:
        clients = [McpHttp(http, live.url) for _ in range(5)]
        for c in clients:
            await c.initialize(LATEST)
        assert len(app.sessions) == 5
        # No initialize, no request: the sweep alone ends them.
        assert await until(lambda: not app.sessions)
        reply = await clients[0].request("ping")
        assert reply.status == 404, reply.body


async def test_a_sweep_ends_at_most_its_batch_and_spares_busy_sessions(http) -> None:
    srv = everything_server()
    app = srv.asgi_app(session_idle_timeout=5, sweep_interval=3600)
    with LiveServer(app) as live:
        for _ in range(5):
            await McpHttp(http, live.url).initialize(LATEST)
        later = time.monotonic() + 60
        assert in_loop(live, lambda: app._expire_idle(later, limit=2)) == 2
        assert len(app.sessions) == 3
        assert in_loop(live, lambda: app._expire_idle(later)) == 3
        assert not app.sessions


def _raw_exchange(sock: socket.socket, request: bytes) -> tuple[int, bytes]:
    """Send one HTTP/1.1 request; read one response with a Content-Length body."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = next(int(v) for k, _, v in (h.partition(b":") for h in lines[1:])
                  if k.strip().lower() == b"content-length")
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    return status, body


def _post(body: bytes, length: int | None = None) -> bytes:
    return (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n"
            b"Content-Length: " + str(len(body) if length is None else length).encode()
            + b"\r\n\r\n" + body)


def _initialize() -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LATEST, "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})


def _read_to_close(sock: socket.socket) -> bytes:
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


async def test_a_stalled_body_gets_408_and_everyone_else_is_served(http) -> None:
    srv = everything_server()
    app = srv.asgi_app(body_timeout=0.3, sweep_interval=0.05)
    with LiveServer(app) as live:
        with socket.create_connection(("127.0.0.1", live.port), timeout=10) as stalled:
            stalled.sendall(_post(b'{"jsonrpc": "2.0", ', length=200))  # then nothing
            c = McpHttp(http, live.url)
            await c.initialize(LATEST)
            assert (await c.request("ping")).status == 200
            answer = await anyio.to_thread.run_sync(_read_to_close, stalled)
        status_line, _, rest = answer.partition(b"\r\n")
        assert status_line.split()[1] == b"408", answer
        body = orjson.loads(rest.partition(b"\r\n\r\n")[2])
        assert body["error"]["code"] == -32600
        assert "did not arrive within 0.3 seconds" in body["error"]["message"]
        assert (await c.request("ping")).status == 200  # nothing else disturbed


@pytest.mark.parametrize("parser", ["httptools", "h11"])
async def test_stalled_headers_close_the_connection_only(http, parser: str) -> None:
    srv = everything_server()
    with LiveServer(srv.asgi_app(), http=protocol_class(parser, 0.3)) as live:
        partial = socket.create_connection(("127.0.0.1", live.port), timeout=10)
        silent = socket.create_connection(("127.0.0.1", live.port), timeout=10)
        kept = socket.create_connection(("127.0.0.1", live.port), timeout=10)
        try:
            partial.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")
            # A connection that finished a request is not cut off while it idles.
            status, _ = _raw_exchange(kept, _post(_initialize()))
            assert status == 200
            c = McpHttp(http, live.url)
            await c.initialize(LATEST)
            assert await anyio.to_thread.run_sync(_read_to_close, partial) == b""
            assert await anyio.to_thread.run_sync(_read_to_close, silent) == b""
            await anyio.sleep(0.5)  # past the header deadline, inside the keep-alive
            status, _ = _raw_exchange(kept, _post(_initialize()))
            assert status == 200
            assert (await c.request("ping")).status == 200
        finally:
            for sock in (partial, silent, kept):
                sock.close()


def test_protocol_class_keeps_uvicorns_behaviour() -> None:
    """The deadline subclass is a real subclass of uvicorn's class for each parser."""
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert issubclass(protocol_class("httptools", 1.0), HttpToolsProtocol)
    assert issubclass(protocol_class("h11", 1.0), H11Protocol)



def test_the_http_app_says_it_needs_asyncio_when_run_under_trio() -> None:
    """HTTP is asyncio-only (docs/architecture.md says why); under trio the app fails at
    its first request with that explanation instead of an obscure asyncio error."""
    app = everything_server().asgi_app()
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def call() -> None:
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": []}
        await app(scope, receive, send)

    with pytest.raises(RuntimeError, match="asyncio only"):
        anyio.run(call, backend="trio")
    assert sent == []
