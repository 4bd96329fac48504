"""Slow and absent readers of SSE responses (issue #25, item 2).

A client that opens a GET stream and never reads it made today's main hold every
notification the server produced for it: 50 unread streams and 59,100 list-changed
triggers took a server from 85 MB to 6.59 GB. Here each SSE response holds at most
``max_stream_buffer`` bytes for its reader; past it the response ends (the client
resumes with ``Last-Event-ID`` and misses nothing), and a write blocked for
``stall_timeout`` cuts the connection.

The readers are raw sockets with a small receive buffer that stop reading, against
uvicorn on loopback; the server's own structures are looked at on its event loop.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from mcpkit.protocol.sse import SSEParser
from mcpkit.storage.events import MemoryEventStore
from mcpkit.transports.http_server import StreamableHTTPApp
from tests.support.http import LiveServer, McpHttp, everything_server

pytestmark = pytest.mark.anyio

LIMIT = 64 * 1024


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Served:
    def __init__(self, server: Any, app: StreamableHTTPApp, live: LiveServer) -> None:
        self.server, self.app, self.live = server, app, live

    def notify(self, count: int) -> None:
        """``count`` tools/list_changed notifications to every session, in batches on
        the server's loop (each its own notification: nothing coalesces them)."""
        for _ in range(0, count, 250):
            self.live.call(lambda: [self.server.notify_list_changed("tools")
                                    for _ in range(250)])


@pytest.fixture
def served() -> Iterator[Served]:
    server = everything_server()
    app = server.asgi_app(max_stream_buffer=LIMIT, stall_timeout=1.5,
                          event_store=MemoryEventStore(max_events=20_000))
    assert isinstance(app, StreamableHTTPApp)
    live = LiveServer(app)
    # Small kernel buffers on the accepted connections (inherited from the listening
    # socket; autotuning would give a reader that never reads megabytes first).
    live._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)
    with live:
        yield Served(server, app, live)


def raw_get(port: int, session_id: str, version: str, last_event_id: str | None = None
            ) -> socket.socket:
    """A GET stream on a socket with a 4 KiB receive buffer, not read until asked."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    last = f"Last-Event-ID: {last_event_id}\r\n" if last_event_id else ""
    sock.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  f"Accept: text/event-stream\r\nMcp-Session-Id: {session_id}\r\n"
                  f"Mcp-Protocol-Version: {version}\r\n{last}\r\n").encode())
    return sock


def read_all(sock: socket.socket, timeout: float = 10.0) -> bytes:
    """Everything the server sends until it closes the response (chunked end) or the
    connection (bounded)."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\r\n0\r\n\r\n") and time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        data += chunk
    return data


def events_of(raw: bytes) -> list[tuple[str, Any]]:
    """The (id, message) of every SSE event with data in a raw chunked HTTP response."""
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    payload = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        payload += rest[:size]
        body = rest[size + 2:]
    return [(ev.id or "", orjson.loads(ev.data)) for ev in SSEParser().feed(payload)
            if ev.data]


def wait_until(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


async def open_session(served: Served, http: httpx.AsyncClient) -> McpHttp:
    c = McpHttp(http, served.live.url)
    await c.initialize()
    return c


async def test_an_unread_get_stream_is_bounded_then_cut(served: Served) -> None:
    async with httpx.AsyncClient() as http:
        c = await open_session(served, http)
        assert c.session_id is not None and c.version is not None
        sock = raw_get(served.live.port, c.session_id, c.version)
        try:
            wait_until(lambda: served.live.call(
                lambda: served.app.sessions[c.session_id].standalone is not None))
            served.notify(5_000)  # ~450 KB of events for a reader that reads nothing
            session = served.app.sessions[c.session_id]

            def held() -> int:
                stream = session.standalone
                return 0 if stream is None else stream.unsent()

            assert served.live.call(held) <= LIMIT
            # Blocked on the full socket past stall_timeout: cut by the housekeeping.
            wait_until(lambda: served.live.call(lambda: not served.app.stalls.writers), 8)
            wait_until(lambda: served.live.call(lambda: session.standalone is None), 5)
            assert served.live.call(lambda: (session.backlog_bytes <= 1024 * 1024
                                             and len(session.backlog) <= 1000))
        finally:
            sock.close()
        # The session goes on.
        reply = await c.call_tool("echo", {"text": "after"})
        assert reply.json["result"]["content"][0]["text"] == "after"


async def test_a_slow_get_reader_resumes_without_gap_or_duplicate(served: Served) -> None:
    """The reader falls behind by more than the bound: its response is completed after
    what was taken, and a resumption from its last event id delivers the rest."""
    total = 3_000
    async with httpx.AsyncClient() as http:
        c = await open_session(served, http)
        assert c.session_id is not None and c.version is not None
        sock = raw_get(served.live.port, c.session_id, c.version)
        try:
            wait_until(lambda: served.live.call(
                lambda: served.app.sessions[c.session_id].standalone is not None))
            served.notify(total)
            first = events_of(read_all(sock))
        finally:
            sock.close()
        assert 0 < len(first) < total  # it overflowed, and ended complete
        sock = raw_get(served.live.port, c.session_id, c.version, first[-1][0])
        try:
            served.live.call(lambda: None)  # (the server is still there)
            rest: list[tuple[str, Any]] = []
            deadline = time.monotonic() + 10
            sock.settimeout(0.5)
            raw = b""
            while len(first) + len(rest) < total and time.monotonic() < deadline:
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:
                    chunk = b""
                raw += chunk
                if raw.count(b"\r\n\r\n") and b"list_changed" in raw:
                    try:
                        rest = events_of(raw)
                    except ValueError:
                        continue  # a chunk cut in its middle: read on
        finally:
            sock.close()
        ids = [int(i.rpartition("_")[2]) for i, _ in first + rest]
        assert len(ids) == total and len(set(ids)) == total
        assert ids == sorted(ids) and ids[-1] - ids[0] == total - 1  # no gap
        assert {m["method"] for _, m in first + rest} == {"notifications/tools/list_changed"}


async def test_an_unread_listen_stream_is_bounded(served: Served) -> None:
    """2026-07-28: a listen stream has no event ids; a reader that stops reading holds at
    most the bound, and its stream is cut after stall_timeout."""
    port = served.live.port
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                         "params": {"_meta": {
                             "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}},
                             "notifications": {"toolsListChanged": True}}})
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    try:
        sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                      "Accept: application/json, text/event-stream\r\n"
                      "Content-Type: application/json\r\n"
                      "MCP-Protocol-Version: 2026-07-28\r\n"
                      "Mcp-Method: subscriptions/listen\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        wait_until(lambda: served.live.call(lambda: served.app.in_flight == 1))
        served.notify(5_000)
        wait_until(lambda: served.live.call(lambda: served.app.in_flight == 0), 8)
        assert served.live.call(lambda: not served.app.stalls.writers)
    finally:
        sock.close()


def flood_server() -> Any:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent / "servers" / "flood.py"
    spec = importlib.util.spec_from_file_location("_flood_http", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server


def test_a_handler_streaming_to_a_slow_reader_is_paced() -> None:
    """A tool sending 2,000 progress notifications of 1 KB to a client that reads nothing
    for 2 s: the handler waits (``await ctx.report_progress``) instead of piling them up;
    what the stream holds stays within the bound; once the client reads, every
    notification arrives, in order, then the result."""
    server = flood_server()
    app = server.asgi_app(max_stream_buffer=LIMIT, stall_timeout=20,
                          event_store=MemoryEventStore(max_events=20_000,
                                                       max_bytes=8 * 1024 * 1024))
    assert isinstance(app, StreamableHTTPApp)
    live = LiveServer(app)
    live._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)
    with live:
        init = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "slow", "version": "1"}}})
        reply = httpx.post(live.url, content=init, headers={
            "accept": "application/json, text/event-stream",
            "content-type": "application/json"})
        sid = reply.headers["mcp-session-id"]
        headers = {"accept": "application/json, text/event-stream",
                   "content-type": "application/json", "mcp-session-id": sid,
                   "mcp-protocol-version": "2025-11-25"}
        httpx.post(live.url, headers=headers, content=orjson.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}))
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "flood", "arguments": {"count": 2000, "size": 1000},
            "_meta": {"progressToken": "f"}}})
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", live.port))
        try:
            head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{live.port}\r\n{head}"
                          f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
            session = next(iter(app.sessions.values()))
            peak = 0
            for _ in range(20):  # 2 s without reading
                time.sleep(0.1)
                peak = max(peak, live.call(lambda: sum(
                    s.unsent() for s in session.streams.values())))
            assert peak <= LIMIT + 2048, peak  # the bound, plus the message over it
            assert live.call(lambda: bool(session.streams)), "the handler ran to the end"
            raw = read_all(sock, timeout=30)
        finally:
            sock.close()
    messages = [m for _, m in events_of(raw)]
    progress = [m["params"]["progress"] for m in messages if m.get("method")]
    assert progress == list(range(1, 2001))
    assert messages[-1]["id"] == 1 and messages[-1]["result"]["content"][0]["text"] == (
        "sent 2000")


async def test_a_resumption_whose_answer_was_replayed_ends() -> None:
    """The answer was stored between the resumption's attach and its replay: it is in the
    replay and also handed to the new connection, which skips it as replayed. The
    response must still end after it (the soak saw 115 SSE answers left open after their
    answer on a deployment)."""
    import asyncio

    from mcpkit.protocol.connection import Connection
    from mcpkit.protocol.lifecycle import Role
    from mcpkit.transports.http_resume import write_sse
    from mcpkit.transports.http_session import HttpSession
    from mcpkit.transports.http_streams import Listener, ResponseStream

    session = HttpSession(Connection(Role.SERVER, info={"name": "t", "version": "1"}),
                          "sid", MemoryEventStore(), on_request=None, on_notification=None)
    stream = ResponseStream(session, "s1")
    listener = Listener()
    answer = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    listener.put("s1_3", answer, True)  # handed on after the attach ...
    stream.done = True
    stream.finished.set()
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(30)
        return {"type": "http.disconnect"}

    await asyncio.wait_for(write_sse(stream, listener, send, receive, 1000, skip_through=3,
                                     replay=[("s1_3", answer)]), 5)  # ... and replayed
    bodies = [m.get("body", b"") for m in sent if m["type"] == "http.response.body"]
    assert sum(body.count(b"data: {") for body in bodies) == 1  # the answer, once
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    session.close()
