"""mcpkit's Streamable HTTP client against mcpkit's server on real uvicorn (loopback).

The client behaviours the spec asks for: headers on every request, automatic new session
after a 404, DELETE on close, fallback to HTTP+SSE (2024-11-05), per-session and global
limits, and the session cap (10,000 sessions open, the 10,001st refused).
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
import uvicorn

from mcpkit.client import Client, Http
from mcpkit.protocol.errors import RemoteError
from mcpkit.transports.http_client import credentials_digest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from everything import server as everything

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Recorder:
    """ASGI middleware keeping the method, path and MCP headers of every request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, str, dict[str, str]]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            hdrs = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            keep = {k: v for k, v in hdrs.items() if k.startswith("mcp-") or k in (
                "accept", "last-event-id")}
            self.seen.append((scope["method"], scope["path"], keep))
        await self.app(scope, receive, send)


class LiveServer:
    def __init__(self, app: Any) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error",
                                lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise AssertionError("uvicorn did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def live() -> Iterator[tuple[LiveServer, Any, Recorder]]:
    app = everything.asgi_app(max_sessions=10_000)
    recorder = Recorder(app)
    srv = LiveServer(recorder)
    try:
        yield srv, app, recorder
    finally:
        app.close_all()
        srv.stop()


@pytest.mark.anyio
async def test_headers_new_session_after_404_and_delete_on_close(
    live: tuple[LiveServer, Any, Recorder],
) -> None:
    srv, app, rec = live
    with anyio.fail_after(30):
        async with Client(Http(srv.url, headers={"x-trace": "t1"})) as client:
            assert client.protocol_version == "2025-11-25"
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {
                "result": 3}
            first = next(iter(app.sessions))
            posts = [h for m, _, h in rec.seen if m == "POST"]
            assert all("application/json" in h["accept"] and "text/event-stream" in h["accept"]
                       for h in posts)
            assert all(h.get("mcp-session-id") == first for h in posts[1:])
            assert all(h.get("mcp-protocol-version") == "2025-11-25" for h in posts[1:])
            # The server forgets the session: the next call gets 404, the client starts a
            # new session by itself and the call still succeeds.
            app.close_all()
            assert (await client.call_tool("echo", {"text": "again"})).text == "again"
            assert len(app.sessions) == 1 and first not in app.sessions
            second = next(iter(app.sessions))
        deletes = [h for m, _, h in rec.seen if m == "DELETE"]
        assert deletes and deletes[-1].get("mcp-session-id") == second
        assert app.sessions == {}


@pytest.mark.anyio
async def test_fallback_to_http_sse_for_2024_11_05(
    live: tuple[LiveServer, Any, Recorder],
) -> None:
    srv, _app, rec = live
    url = srv.url.replace("/mcp", "/sse")
    progress: list[float] = []
    with anyio.fail_after(30):
        async with Client(url, protocol_version="2024-11-05") as client:
            assert client.protocol_version == "2024-11-05"
            result = await client.call_tool(
                "test_tool_with_progress", on_progress=lambda p, t, m: progress.append(p))
            assert progress == [0, 50, 100]
            assert result.text
            with pytest.raises(RemoteError) as err:
                await client.read_resource("test://nope")
            assert err.value.code == -32002
    methods = [(m, p) for m, p, _ in rec.seen]
    assert ("POST", "/sse") in methods  # the Streamable HTTP attempt, refused
    assert ("GET", "/sse") in methods  # then the old transport's event stream
    assert any(p == "/messages" for m, p in methods if m == "POST")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])
@pytest.mark.parametrize("mode", ["stateful", "stateless"])
async def test_client_on_trio(live: tuple[LiveServer, Any, Recorder], mode: str) -> None:
    """The HTTP client runs on anyio, so on trio too; a progress notification reaches
    its callback before the caller gets the answer that followed it on the stream."""
    srv, _app, _rec = live
    with anyio.fail_after(30):
        async with Client(srv.url, mode=mode) as client:
            assert (await client.call_tool("echo", {"text": "trio"})).text == "trio"
            progress: list[float] = []
            await client.call_tool("sleep", {"seconds": 1},
                                   on_progress=lambda p, t, m: progress.append(p))
            assert progress == [1.0]


def test_session_cap_10000_then_503_existing_sessions_unaffected() -> None:
    app = everything.asgi_app(max_sessions=10_000)
    srv = LiveServer(app)
    init = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "cap", "version": "1"}}})
    try:
        with httpx.Client(timeout=10) as http:
            first = None
            deadline = time.monotonic() + 120
            for i in range(10_000):
                assert time.monotonic() < deadline
                r = http.post(srv.url, content=init, headers=HEADERS)
                assert r.status_code == 200, (i, r.status_code, r.text)
                first = first or r.headers["mcp-session-id"]
            assert len(app.sessions) == 10_000
            r = http.post(srv.url, content=init, headers=HEADERS)
            assert r.status_code == 503
            assert "retry" in r.json()["error"]["message"].lower()
            note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
            hdrs = {**HEADERS, "mcp-session-id": first}
            assert http.post(srv.url, content=note, headers=hdrs).status_code == 202
            ping = orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
            r = http.post(srv.url, content=ping, headers=hdrs)
            assert r.status_code == 200 and r.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    finally:
        app.close_all()
        srv.stop()


def test_global_in_flight_limit_503() -> None:
    app = everything.asgi_app(max_in_flight_total=2)
    srv = LiveServer(app)
    try:
        with httpx.Client(timeout=20) as http:
            init = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "lim", "version": "1"}}})
            sid = http.post(srv.url, content=init, headers=HEADERS).headers["mcp-session-id"]
            hdrs = {**HEADERS, "mcp-session-id": sid}
            http.post(srv.url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                      headers=hdrs)
            results: list[int] = []

            def slow(i: int) -> None:
                body = orjson.dumps({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                                     "params": {"name": "sleep", "arguments": {"seconds": 1}}})
                with httpx.Client(timeout=20) as h:
                    results.append(h.post(srv.url, content=body, headers=hdrs).status_code)

            threads = [threading.Thread(target=slow, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + 10
            while app.in_flight < 2:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            r = http.post(srv.url, content=orjson.dumps(
                {"jsonrpc": "2.0", "id": 7, "method": "ping"}), headers=hdrs)
            assert r.status_code == 503
            for t in threads:
                t.join(20)
            assert results == [200, 200]
            r = http.post(srv.url, content=orjson.dumps(
                {"jsonrpc": "2.0", "id": 8, "method": "ping"}), headers=hdrs)
            assert r.status_code == 200
    finally:
        app.close_all()
        srv.stop()


def test_header_value_encodes_what_is_not_plain_visible_ascii() -> None:
    """R26-07.HTTP.13: non-ASCII, controls, edge spaces, and a value that looks like the
    base64 form itself are sent as ``=?base64?...?=``; plain values as they are."""
    import base64

    from mcpkit.transports.http_routing import header_value

    assert header_value("get_weather") == "get_weather"
    for raw in ("caf\u00e9", "a\nb", " lead", "trail ", "=?base64?aGk=?="):
        encoded = header_value(raw)
        assert encoded.startswith("=?base64?") and encoded.endswith("?=")
        assert base64.b64decode(encoded[len("=?base64?"):-2]).decode() == raw


def test_the_credentials_digest_sees_who_sends_not_the_message() -> None:
    base = {"accept": "application/json", "content-type": "application/json",
            "content-length": "40", "mcp-method": "tools/list",
            "mcp-protocol-version": "2026-07-28", "dpop": "proof-1"}
    plain = credentials_digest(httpx.Headers(base))
    other = {**base, "content-length": "99", "mcp-method": "resources/read",
             "mcp-name": "note://a", "dpop": "proof-2", "user-agent": "x"}
    assert credentials_digest(httpx.Headers(other)) == plain
    for extra in ({"authorization": "Bearer a"}, {"cookie": "s=1"}, {"x-api-key": "k"}):
        assert credentials_digest(httpx.Headers({**base, **extra})) != plain
    assert credentials_digest(httpx.Headers({**base, "Authorization": "Bearer a"})) == (
        credentials_digest(httpx.Headers({**base, "authorization": "Bearer a"})))
