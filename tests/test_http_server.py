"""Streamable HTTP server over real sockets: a live uvicorn server, a raw httpx client.

Every case runs ``examples/everything.py``'s server (a fresh instance) under uvicorn on
127.0.0.1 (``LiveServer``) and talks to it with ``McpHttp``, which validates every JSON-RPC
message the server sends — JSON bodies and SSE ``data:`` — against the official schema of
the negotiated revision. Status codes are asserted exactly, and so is the JSON-RPC error
body whenever one is sent. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

from mcpkit import Context
from mcpkit.protocol.jsonrpc import id_in_use
from mcpkit.protocol.versions import STATEFUL_VERSIONS
from mcpkit.storage.events import MemoryEventStore, SQLiteEventStore
from mcpkit.transports.asgi import DisconnectWatch
from tests.support.http import (
    ACCEPT_BOTH,
    EVERYTHING,
    LATEST,
    LiveServer,
    McpHttp,
    Reply,
    everything_server,
    free_port,
)

pytestmark = pytest.mark.anyio

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SESSION_NOT_FOUND = -32001
SESSION_ID = re.compile(r"^[\x21-\x7e]+$")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Any, LiveServer]]:
    """One everything server with the default configuration, for the stateless cases."""
    srv = everything_server()
    with LiveServer(srv.asgi_app()) as live:
        yield srv, live


@pytest.fixture
def live(shared: tuple[Any, LiveServer]) -> LiveServer:
    return shared[1]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


async def session(http: httpx.AsyncClient, live: LiveServer, version: str = LATEST) -> McpHttp:
    c = McpHttp(http, live.url)
    await c.initialize(version)
    return c


def error_of(reply: Reply, status: int, code: int | None = INVALID_REQUEST) -> dict[str, Any]:
    """``reply`` has exactly ``status`` and a JSON-RPC error body with ``code``."""
    assert reply.status == status, (reply.status, reply.body)
    assert reply.content_type == "application/json", reply.headers
    msg = reply.json
    assert msg["jsonrpc"] == "2.0" and "result" not in msg, msg
    if code is not None:
        assert msg["error"]["code"] == code, msg
    assert isinstance(msg["error"]["message"], str) and len(msg["error"]["message"]) > 10
    return msg


def text_of(msg: dict[str, Any]) -> str:
    assert "result" in msg, msg
    return " ".join(b["text"] for b in msg["result"]["content"] if b["type"] == "text")


def seq_of(event_id: str | None) -> int:
    assert event_id is not None
    return int(event_id.rpartition("_")[2])


def stream_of(event_id: str | None) -> str:
    assert event_id is not None
    return event_id.rpartition("_")[0]


def assert_priming(ev: Any) -> None:
    assert ev.data == "" and ev.id and ev.retry is not None and ev.retry > 0, ev


async def eventually(check: Any, timeout: float = 3.0) -> Any:
    """Retry an async ``check`` (returning a truthy value) until it passes; bounded."""
    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result or time.monotonic() > deadline:
            return result
        await anyio.sleep(0.05)


# ============================================================================ POST


async def test_initialize_mints_a_visible_ascii_random_session_id(http, live) -> None:
    ids = set()
    for _ in range(3):
        c = McpHttp(http, live.url)
        reply = await c.initialize()
        assert reply.status == 200 and reply.content_type == "application/json"
        assert reply.json["id"] == 0 and reply.json["result"]["protocolVersion"] == LATEST
        sid = reply.headers["mcp-session-id"]
        assert SESSION_ID.match(sid), sid
        assert len(sid) >= 22, sid  # >= 128 bits of randomness, URL-safe
        ids.add(sid)
    assert len(ids) == 3


async def test_notification_is_accepted_with_202_and_empty_body(http, live) -> None:
    c = await session(http, live)
    reply = await c.notify("notifications/roots/list_changed")
    assert reply.status == 202 and reply.body == b""
    # A response to nothing the server asked is a response-only body: also 202.
    reply = await c.post({"jsonrpc": "2.0", "id": "never-asked", "result": {}})
    assert reply.status == 202 and reply.body == b""


async def test_request_answered_as_json_when_nothing_precedes_the_response(http, live) -> None:
    c = await session(http, live)
    reply = await c.call_tool("echo", {"text": "héllo"}, rid="r-1")
    assert reply.status == 200 and reply.content_type == "application/json"
    assert reply.json["id"] == "r-1" and text_of(reply.json) == "héllo"
    ping = await c.request("ping", rid=42)
    assert ping.status == 200 and ping.json == {"jsonrpc": "2.0", "id": 42, "result": {}}


async def test_progress_first_switches_to_sse_with_priming_event(http, live) -> None:
    c = await session(http, live)
    reply = await c.call_tool("test_tool_with_progress", meta={"progressToken": "tok-1"},
                              rid=7)
    assert reply.status == 200 and reply.content_type == "text/event-stream"
    assert reply.headers.get("cache-control") == "no-cache"
    events = reply.events
    assert_priming(events[0])
    assert all(ev.data for ev in events[1:]), events  # one priming event only
    ids = [ev.id for ev in events]
    assert len(set(ids)) == len(ids) and [seq_of(i) for i in ids] == sorted(
        seq_of(i) for i in ids)
    assert len({stream_of(i) for i in ids}) == 1
    msgs = [orjson.loads(ev.data) for ev in events[1:]]
    assert [m["method"] for m in msgs[:-1]] == ["notifications/progress"] * 3
    assert [m["params"]["progress"] for m in msgs[:-1]] == [0, 50, 100]
    assert all(m["params"]["progressToken"] == "tok-1" for m in msgs[:-1])
    assert msgs[-1]["id"] == 7 and text_of(msgs[-1]) == "tok-1"  # the response is last


async def test_logging_first_also_streams(http, live) -> None:
    c = await session(http, live)
    level = await c.request("logging/setLevel", {"level": "info"})
    assert level.status == 200 and level.json["result"] == {}
    reply = await c.call_tool("test_tool_with_logging", rid=3)
    assert reply.content_type == "text/event-stream"
    assert_priming(reply.events[0])
    methods = [m.get("method") for m in reply.messages]
    assert methods == ["notifications/message"] * 3 + [None]
    assert reply.messages[-1]["id"] == 3


@pytest.mark.parametrize("accept", [
    "application/json", "text/event-stream", "", "text/html",
])
async def test_post_without_both_accept_types_is_406(http, live, accept) -> None:
    c = await session(http, live)
    reply = await c.call_tool("echo", {"text": "x"}, headers=c.headers(accept=accept))
    error_of(reply, 406)
    # Nothing was executed: the same id is free and the session works.
    assert (await c.request("ping", rid=1)).status == 200


async def test_post_with_wildcard_accept_is_served(http, live) -> None:
    c = await session(http, live)
    reply = await c.request("ping", headers=c.headers(accept="*/*"))
    assert reply.status == 200 and reply.json["result"] == {}


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_post_with_wrong_content_type_is_415(http, live, ctype) -> None:
    c = await session(http, live)
    reply = await c.request("ping", headers=c.headers(content_type=ctype))
    error_of(reply, 415)


async def test_post_json_with_charset_parameter_is_served(http, live) -> None:
    c = await session(http, live)
    reply = await c.request("ping", headers=c.headers(
        content_type="application/json; charset=utf-8"))
    assert reply.status == 200


async def test_body_over_max_body_is_413(http) -> None:
    srv = everything_server()
    with LiveServer(srv.asgi_app(max_body=10_000)) as live:
        c = await session(http, live)
        big = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "x" * 20_000}}})
        error_of(await c.post_raw(big), 413)  # declared by Content-Length

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as read
            for i in range(0, len(big), 4096):
                yield big[i:i + 4096]

        resp = await http.post(live.url, content=chunks(), headers=c.headers())
        assert "content-length" not in resp.request.headers
        error_of(c.check_body(resp.status_code, resp.headers, resp.content), 413)
        # Just under the limit is fine, and the session survived.
        ok = await c.call_tool("echo", {"text": "y" * 9_000})
        assert ok.status == 200 and text_of(ok.json) == "y" * 9_000


@pytest.mark.parametrize("body", [b"{bad json", b"", b"\xff\xfe{}", b'{"jsonrpc": "2.0",'])
async def test_malformed_json_is_400_parse_error(http, live, body) -> None:
    c = await session(http, live)
    error_of(await c.post_raw(body), 400, PARSE_ERROR)


async def test_bad_envelopes_are_refused_with_invalid_request(http, live) -> None:
    c = await session(http, live)
    for bad in (
        {"jsonrpc": "1.0", "id": 5, "method": "ping"},
        {"id": 6, "method": "ping"},
        {"jsonrpc": "2.0", "id": 7},
        {"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"},
        {"jsonrpc": "2.0", "id": 8, "method": 12},
        "just a string",
        42,
    ):
        reply = await c.post_raw(orjson.dumps(bad))
        assert reply.status in (200, 400), (bad, reply.status, reply.body)
        msg = error_of(reply, reply.status)
        assert msg.get("id") in (None, bad["id"] if isinstance(bad, dict) else None), msg
    # None of them broke the session; the ids are free again.
    for rid in (5, 6, 7, 8):
        assert (await c.request("ping", rid=rid)).json == {
            "jsonrpc": "2.0", "id": rid, "result": {}}


async def test_second_initialize_on_a_live_session_is_refused(http, live) -> None:
    """An initialize naming an existing session goes to that session, which refuses it; it
    does not mint a new session (found by ``mcpkit check``: LIFE.second-initialize)."""
    c = await session(http, live)
    reply = await c.request("initialize", {
        "protocolVersion": LATEST, "capabilities": {},
        "clientInfo": {"name": "again", "version": "1"}})
    msg = error_of(reply, reply.status, INVALID_REQUEST)
    assert "initialize" in msg["error"]["message"]
    assert "mcp-session-id" not in reply.headers
    assert (await c.request("ping")).status == 200


async def test_sessionless_request_with_a_non_string_method_is_invalid_request(
        http, live) -> None:
    """Without a session and without _meta, a request whose method is not a string is
    -32600 (not -32602 for the missing _meta): the envelope is judged first."""
    reply = await http.post(live.url, content=orjson.dumps(
        {"jsonrpc": "2.0", "id": "bad", "method": 42}), headers={
        "accept": "application/json, text/event-stream", "content-type": "application/json"})
    assert reply.status_code == 400
    body = reply.json()
    assert body["error"]["code"] == INVALID_REQUEST and body["id"] == "bad"
    assert "method" in body["error"]["message"]


async def test_missing_session_id_is_400(http, live) -> None:
    c = await session(http, live)
    for reply in (
        await c.request("ping", headers=c.headers(mcp_session_id=None)),
        await c.call_tool("echo", {"text": "x"}, headers=c.headers(mcp_session_id=None)),
        await c.notify("notifications/initialized", headers=c.headers(mcp_session_id=None)),
        await c.get(c.headers(accept="text/event-stream", mcp_session_id=None)),
        await c.delete(c.headers(mcp_session_id=None)),
    ):
        # -32600, or -32602 where a session-less request is judged by the stateless
        # revision's rules (no _meta); either way the message says what is missing.
        msg = error_of(reply, 400, code=None)
        assert msg["error"]["code"] in (INVALID_REQUEST, INVALID_PARAMS), msg
        assert "Mcp-Session-Id" in msg["error"]["message"], msg
    assert (await c.request("ping")).status == 200


@pytest.mark.parametrize("sid", [b"no-such-session", b"x" * 500, "\u00fcn\u00efcode".encode()])
async def test_unknown_session_id_is_404(http, live, sid) -> None:
    c = await session(http, live)
    headers: dict[str, Any] = c.headers()
    headers["mcp-session-id"] = sid
    error_of(await c.request("ping", headers=headers), 404, SESSION_NOT_FOUND)
    headers["accept"] = "text/event-stream"
    error_of(await c.get(headers), 404, SESSION_NOT_FOUND)
    assert (await c.request("ping")).status == 200


async def test_delete_ends_the_session_then_404(http, live) -> None:
    c = await session(http, live)
    other = await session(http, live)
    reply = await c.delete()
    assert reply.status == 200 and reply.body == b""
    error_of(await c.request("ping"), 404, SESSION_NOT_FOUND)
    error_of(await c.notify("notifications/initialized"), 404, SESSION_NOT_FOUND)
    error_of(await c.get(), 404, SESSION_NOT_FOUND)
    error_of(await c.delete(), 404, SESSION_NOT_FOUND)
    assert (await other.request("ping")).status == 200  # other sessions unaffected
    # The client starts over without a session id.
    fresh = McpHttp(http, live.url)
    await fresh.initialize()
    assert fresh.session_id != c.session_id


async def test_invalid_protocol_version_header_is_400(http, live) -> None:
    c = await session(http, live)
    for bad in ("garbage", "2099-01-01", "2025-06-18", ""):
        error_of(await c.request("ping", headers=c.headers(mcp_protocol_version=bad)), 400)
    error_of(await c.get(c.headers(accept="text/event-stream",
                                   mcp_protocol_version="nope")), 400)
    absent = await c.request("ping", headers=c.headers(mcp_protocol_version=None))
    assert absent.status == 200 and absent.json["result"] == {}


async def test_batch_accepted_in_2025_03_26(http, live) -> None:
    c = await session(http, live, "2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 2, "b": 3}}},
        {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"},
    ]
    reply = await c.post(batch)
    assert reply.status == 200 and reply.content_type == "application/json"
    answers = reply.json
    assert isinstance(answers, list) and len(answers) == 3, answers
    by_id = {a["id"]: a for a in answers}
    assert by_id[1]["result"] == {}
    assert text_of(by_id["two"]) == "5"
    assert by_id[3]["error"]["code"] == -32601
    # A batch of notifications only: 202.
    only = await c.post([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}])
    assert only.status == 202 and only.body == b""


@pytest.mark.parametrize("version", ["2025-06-18", LATEST])
async def test_batch_refused_after_2025_03_26(http, live, version) -> None:
    c = await session(http, live, version)
    reply = await c.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                          {"jsonrpc": "2.0", "id": 2, "method": "ping"}])
    msg = error_of(reply, 400)
    assert "batch" in msg["error"]["message"].lower()
    assert (await c.request("ping", rid=1)).status == 200


async def test_initialize_in_a_batch_is_refused(http, live) -> None:
    c = McpHttp(http, live.url)
    reply = await c.post([c.init_message("2025-03-26")])
    error_of(reply, 400)
    assert "mcp-session-id" not in reply.headers


async def test_duplicate_in_flight_request_id_is_refused_without_harming_first(
    http, live
) -> None:
    c = await session(http, live)
    results: dict[str, Reply] = {}

    async def first() -> None:
        results["first"] = await c.call_tool("sleep", {"seconds": 1.2}, rid=77)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)

            async def in_flight() -> bool:  # the server has taken the first request
                return bool(live.call(lambda: 77 in live.app.sessions[c.session_id].streams))

            assert await eventually(in_flight)
            dup = await c.call_tool("echo", {"text": "dup"}, rid=77)
            msg = error_of(dup, dup.status)
            assert dup.status in (200, 400) and msg.get("id") in (None, 77)
            assert msg["error"]["message"] == id_in_use(77).message  # the connection's words
            # Another id is served meanwhile.
            assert text_of((await c.call_tool("echo", {"text": "ok"}, rid=78)).json) == "ok"
    assert results["first"].status == 200
    assert results["first"].json["id"] == 77
    assert text_of(results["first"].json) == "Slept 1.2 seconds."
    # Once answered, the id may be used again.
    again = await c.call_tool("echo", {"text": "again"}, rid=77)
    assert again.json["id"] == 77 and text_of(again.json) == "again"


async def test_the_disconnect_watch_sees_only_a_disconnect_and_stops_with_its_block() -> None:
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    woken: list[bool] = []
    with DisconnectWatch(inbox.get, lambda: woken.append(True)) as watch:
        await inbox.put({"type": "http.request", "body": b"", "more_body": False})
        await asyncio.sleep(0.01)
        assert not watch.gone and not woken  # (anything but a disconnect is passed over)
        await inbox.put({"type": "http.disconnect"})
        await asyncio.sleep(0.01)
        assert watch.gone and woken == [True]
    with DisconnectWatch(inbox.get) as quiet:
        pass
    await inbox.put({"type": "http.disconnect"})  # after its block: no longer read
    await asyncio.sleep(0.01)
    assert not quiet.gone and inbox.qsize() == 1


async def test_wrong_path_and_method(http, live) -> None:
    c = await session(http, live)
    resp = await http.post(live.base + "/other", content=b"{}", headers=c.headers())
    error_of(c.check_body(resp.status_code, resp.headers, resp.content), 404)
    resp = await http.put(live.url, content=b"{}", headers=c.headers())
    error_of(c.check_body(resp.status_code, resp.headers, resp.content), 405)
    assert "POST" in resp.headers["allow"]


# ============================================================================ security


@pytest.mark.parametrize("origin", [
    "http://evil.example", "https://localhost.evil.example", "null", "file://",
    "http://127.0.0.1.nip.io",
])
async def test_foreign_origin_is_403(http, live, origin) -> None:
    c = McpHttp(http, live.url)
    reply = await c.post(c.init_message(), headers=c.headers(origin=origin))
    error_of(reply, 403)
    assert "mcp-session-id" not in reply.headers
    c = await session(http, live)
    error_of(await c.request("ping", headers=c.headers(origin=origin)), 403)
    error_of(await c.get(c.headers(accept="text/event-stream", origin=origin)), 403)
    error_of(await c.delete(c.headers(origin=origin)), 403)
    assert (await c.request("ping")).status == 200  # the refused DELETE did nothing


async def test_local_origins_are_allowed(http, live) -> None:
    for origin in (f"http://localhost:{live.port}", "http://127.0.0.1", "https://[::1]:9"):
        c = McpHttp(http, live.url)
        reply = await c.post(c.init_message(), headers=c.headers(origin=origin))
        assert reply.status == 200, (origin, reply.body)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "localhost.evil.example",
                                  "10.0.0.1"])
async def test_host_not_in_default_allow_list_is_421(http, live, host) -> None:
    c = McpHttp(http, live.url)
    error_of(await c.post(c.init_message(), headers=c.headers(host=host)), 421)
    c = await session(http, live)
    error_of(await c.request("ping", headers=c.headers(host=host)), 421)
    # X-Forwarded-Host from an untrusted client (no trusted_proxies) is ignored both ways.
    error_of(await c.request("ping", headers=c.headers(
        host=host, x_forwarded_host=f"localhost:{live.port}")), 421)
    ok = await c.request("ping", headers=c.headers(x_forwarded_host="evil.example"))
    assert ok.status == 200


async def test_localhost_hosts_allowed_by_default(http, live) -> None:
    for host in (f"localhost:{live.port}", f"127.0.0.1:{live.port}", "localhost"):
        c = McpHttp(http, live.url)
        reply = await c.post(c.init_message(), headers=c.headers(host=host))
        assert reply.status == 200, (host, reply.body)


async def test_configured_allowed_hosts_and_trusted_proxy(http) -> None:
    srv = everything_server()
    app = srv.asgi_app(allowed_hosts=["mcp.example.com"], trusted_proxies=["127.0.0.1"],
                       allowed_origins=["https://app.example.com"])
    with LiveServer(app) as live:
        c = McpHttp(http, live.url)
        # The proxy's public name as Host passes (any port).
        reply = await c.post(c.init_message(), headers=c.headers(host="mcp.example.com:443"))
        assert reply.status == 200, reply.body
        c.session_id = reply.headers["mcp-session-id"]
        c.version = LATEST
        # localhost is no longer implied once an allow-list is configured.
        error_of(await c.request("ping", headers=c.headers(host=f"127.0.0.1:{live.port}")),
                 421)
        # The client (127.0.0.1) is a trusted proxy: X-Forwarded-Host decides.
        fwd = await c.request("ping", headers=c.headers(
            host="backend:8000", x_forwarded_host="mcp.example.com"))
        assert fwd.status == 200, fwd.body
        std = await c.request("ping", headers=c.headers(
            host="backend:8000", forwarded='for=1.2.3.4;host="mcp.example.com";proto=https'))
        assert std.status == 200, std.body
        error_of(await c.request("ping", headers=c.headers(
            host="mcp.example.com", x_forwarded_host="evil.example")), 421)
        # Origins: the configured one only.
        ok = await c.request("ping", headers=c.headers(
            host="mcp.example.com", origin="https://app.example.com"))
        assert ok.status == 200
        error_of(await c.request("ping", headers=c.headers(
            host="mcp.example.com", origin="http://localhost")), 403)

    srv = everything_server()
    app = srv.asgi_app(allowed_hosts=["mcp.example.com"], trusted_proxies=["10.9.9.9"])
    with LiveServer(app) as live:
        c = McpHttp(http, live.url)
        # The client is not a trusted proxy: X-Forwarded-Host is ignored.
        error_of(await c.post(c.init_message(), headers=c.headers(
            host="backend:8000", x_forwarded_host="mcp.example.com")), 421)
        ok = await c.post(c.init_message(), headers=c.headers(
            host="mcp.example.com", x_forwarded_host="evil.example"))
        assert ok.status == 200


# ============================================================================ GET


async def test_get_without_event_stream_accept_is_406(http, live) -> None:
    c = await session(http, live)
    for accept in ("application/json", "text/html", ""):
        error_of(await c.get(c.headers(accept=accept, content_type=None)), 406)


async def test_get_opens_standalone_stream_and_second_get_is_409(http, live) -> None:
    c = await session(http, live)
    async with c.open_get() as get:
        assert get.status == 200 and get.content_type == "text/event-stream"
        assert_priming(await get.next_event())
        error_of(await c.get(), 409)
        assert (await c.request("ping")).status == 200
    # Once the first GET is gone, a new one is allowed (the server notices the close).

    async def reopened() -> bool:
        async with c.open_get() as again:
            if again.status == 409:
                await again.body()
                return False
            assert again.status == 200
            assert_priming(await again.next_event())
            return True

    assert await eventually(reopened)


async def test_server_notifications_arrive_on_the_get_stream_only(http) -> None:
    srv = everything_server()
    with LiveServer(srv.asgi_app()) as live:
        c = await session(http, live)
        async with c.open_get() as get:
            assert_priming(await get.next_event())
            # Traffic on POST streams (responses, progress) never shows up on the GET stream.
            prog = await c.call_tool("test_tool_with_progress", meta={"progressToken": 9})
            assert prog.content_type == "text/event-stream" and len(prog.messages) == 4
            sub = await c.request("resources/subscribe", {"uri": "test://static-text"})
            assert sub.status == 200 and sub.json["result"] == {}

            async def noop() -> str:
                return "new"

            live.call(lambda: srv.add_tool(noop, name="added_at_runtime"))
            _, msg = await get.next_message()
            assert msg == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            live.call(lambda: srv.notify_resource_updated("test://static-text"))
            _, msg = await get.next_message()
            assert msg["method"] == "notifications/resources/updated"
            assert msg["params"]["uri"] == "test://static-text"
            # From a foreign thread (this test's loop is not the server's): still delivered.
            srv.remove_tool("added_at_runtime")
            _, msg = await get.next_message(timeout=3)
            assert msg["method"] == "notifications/tools/list_changed"
            listed = await c.request("tools/list")
            assert "added_at_runtime" not in {t["name"] for t in listed.json["result"]["tools"]}
            for ev in get.events:
                if ev.data:
                    m = orjson.loads(ev.data)
                    assert "method" in m and "id" not in m, m  # never a response
        await c.delete()


async def test_notifications_from_other_threads_reach_the_get_stream(http) -> None:
    srv = everything_server()

    @srv.tool
    def touch(uri: str) -> str:
        """A synchronous tool (run in a worker thread) that notifies subscribers."""
        srv.notify_resource_updated(uri)
        return "touched"

    with LiveServer(srv.asgi_app(), debug=True) as live:  # debug: foreign-thread calls raise
        c = await session(http, live)
        sub = await c.request("resources/subscribe", {"uri": "test://static-text"})
        assert sub.status == 200
        async with c.open_get() as get:
            assert_priming(await get.next_event())
            reply = await c.call_tool("touch", {"uri": "test://static-text"})
            assert text_of(reply.json) == "touched"
            _, msg = await get.next_message(timeout=3)
            assert msg["method"] == "notifications/resources/updated"

            def noop() -> str:
                return "x"

            srv.add_tool(noop)  # from this test's thread, not the server's loop
            _, msg = await get.next_message(timeout=3)
            assert msg["method"] == "notifications/tools/list_changed"


async def test_notifications_wait_for_a_get_stream(http) -> None:
    srv = everything_server()
    with LiveServer(srv.asgi_app()) as live:
        c = await session(http, live)

        async def one() -> str:
            return "1"

        live.call(lambda: srv.add_tool(one, name="one"))  # no GET stream open yet
        async with c.open_get() as get:
            assert_priming(await get.next_event())
            _, msg = await get.next_message()
            assert msg["method"] == "notifications/tools/list_changed"


async def test_get_disabled_is_405_and_delete_disabled_is_405(http) -> None:
    srv = everything_server()
    with LiveServer(srv.asgi_app(enable_get=False, allow_delete=False)) as live:
        c = await session(http, live)
        reply = await c.get()
        error_of(reply, 405)
        assert "GET" not in reply.headers["allow"] and "POST" in reply.headers["allow"]
        reply = await c.delete()
        error_of(reply, 405)
        assert "DELETE" not in reply.headers["allow"]
        assert (await c.request("ping")).status == 200  # the session survived


# ============================================================================ resumability


def event_store(kind: str, tmp_path: Path) -> Any:
    return MemoryEventStore() if kind == "memory" else SQLiteEventStore(
        str(tmp_path / "ev.db"))


@pytest.fixture(params=["memory", "sqlite"])
def resumable(request, tmp_path) -> Iterator[tuple[Any, LiveServer]]:
    store = event_store(request.param, tmp_path)
    srv = everything_server()
    try:
        with LiveServer(srv.asgi_app(event_store=store)) as live:
            yield srv, live
    finally:
        if isinstance(store, SQLiteEventStore):
            store.close()


async def cut_after(c: McpHttp, msg: dict[str, Any], n_events: int) -> list[Any]:
    """POST ``msg`` on its own connection, read ``n_events`` SSE events, cut the TCP link."""
    async with httpx.AsyncClient(timeout=10) as own:
        async with c.open_post(msg, http=own) as live:
            assert live.status == 200 and live.content_type == "text/event-stream"
            got = [await live.next_event() for _ in range(n_events)]
    return got


def sleep_call(rid: int, seconds: float, token: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"seconds": seconds}, "_meta": {"progressToken": token}}}


def check_resumed(before: list[Any], after: list[Any], rid: int, progress: list[float]) -> None:
    """The events read before and after the cut are the whole stream: in order, once."""
    assert_priming(before[0])
    everything = before + after
    ids = [ev.id for ev in everything]
    assert len(set(ids)) == len(ids), ids  # nothing twice
    assert [seq_of(i) for i in ids] == sorted(seq_of(i) for i in ids), ids  # in order
    assert len({stream_of(i) for i in ids}) == 1, ids  # one stream only
    msgs = [orjson.loads(ev.data) for ev in everything if ev.data]
    assert [m["params"]["progress"] for m in msgs[:-1]] == progress, msgs
    assert msgs[-1]["id"] == rid and text_of(msgs[-1]).startswith("Slept"), msgs


async def test_resume_cut_post_stream_after_priming_event(http, resumable) -> None:
    _, live = resumable
    c = await session(http, live)
    before = await cut_after(c, sleep_call(5, 1.5, "t5"), 1)  # priming only
    # The tool keeps running; the GET attaches to the same stream and gets the rest live.
    async with c.open_get(last_event_id=before[-1].id) as get:
        assert get.status == 200 and get.content_type == "text/event-stream"
        after = [ev for ev, _ in await get.until_end(timeout=5)]
    check_resumed(before, after, 5, [1.0, 1.5])


async def test_resume_cut_post_stream_after_first_progress(http, resumable) -> None:
    _, live = resumable
    c = await session(http, live)
    before = await cut_after(c, sleep_call(6, 1.3, "t6"), 2)  # priming + progress 1.0
    assert orjson.loads(before[1].data)["params"]["progress"] == 1.0
    await anyio.sleep(0.6)  # the handler finishes while no one is connected
    async with c.open_get(last_event_id=before[-1].id) as get:
        assert get.status == 200
        after = [ev for ev, _ in await get.until_end(timeout=5)]
    check_resumed(before, after, 6, [1.0, 1.3])
    # Resuming from the last event replays nothing more, and ends at once.
    async with c.open_get(last_event_id=after[-1].id) as get:
        assert get.status == 200
        assert await get.until_end(timeout=3) == []
    # Resuming again from the same point replays the same events again (the store keeps
    # them), still only that stream's.
    async with c.open_get(last_event_id=before[-1].id) as get:
        again = [ev for ev, _ in await get.until_end(timeout=3)]
    assert [e.id for e in again] == [e.id for e in after]


class SlowFinalStore(MemoryEventStore):
    """An event store that takes its time storing a final answer (as a remote store can):
    ``append`` of a message with a ``result`` waits until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.storing = threading.Event()
        self.release = threading.Event()

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        if b'"result"' in data:
            self.storing.set()
            await anyio.to_thread.run_sync(self.release.wait, 10)
        return await super().append(session_id, stream_id, data)


async def test_resume_while_the_answer_is_being_stored_gets_it(http) -> None:
    """A resumption arriving after the handler answered but before the answer's event is
    stored attaches to the stream and gets the answer (it used to find the stream gone,
    replay a store without the answer and end: the answer was lost)."""
    store = SlowFinalStore()
    with LiveServer(everything_server().asgi_app(event_store=store)) as live:
        c = await session(http, live)
        before = await cut_after(c, sleep_call(8, 0.2, "t8"), 2)  # priming + progress
        assert await anyio.to_thread.run_sync(store.storing.wait, 10)
        async with c.open_get(last_event_id=before[-1].id) as get:
            assert get.status == 200
            store.release.set()
            after = [ev for ev, _ in await get.until_end(timeout=5)]
    check_resumed(before, after, 8, [0.2])


@pytest.mark.parametrize("last", ["garbage", "s1", "_5", "s1_x", "s1_-1", "s999_999999",
                                  "x" * 300])
async def test_garbage_last_event_id_is_400(http, live, last) -> None:
    c = await session(http, live)
    await c.call_tool("test_tool_with_progress", meta={"progressToken": 1})
    error_of(await c.get(c.headers(accept="text/event-stream", content_type=None,
                                   last_event_id=last)), 400)
    assert (await c.request("ping")).status == 200


async def test_another_sessions_event_id_is_400(http, live) -> None:
    a = await session(http, live)
    for _ in range(3):  # make a's ids ones that b never issued
        await a.call_tool("test_tool_with_progress", meta={"progressToken": 1})
    reply = await a.call_tool("test_tool_with_progress", meta={"progressToken": 1})
    a_ids = [ev.id for ev in reply.events]
    b = await session(http, live)
    b_reply = await b.call_tool("test_tool_with_progress", meta={"progressToken": 2})
    assert not {ev.id for ev in b_reply.events} & set(a_ids)
    for eid in a_ids:
        error_of(await b.get(b.headers(accept="text/event-stream", content_type=None,
                                       last_event_id=eid)), 400)
    # a itself may resume from its own id.
    async with a.open_get(last_event_id=a_ids[0]) as get:
        assert len(await get.until_end()) == 4


async def test_event_ids_of_one_stream_never_replay_another_stream(http, resumable) -> None:
    srv, live = resumable
    c = await session(http, live)
    one = await c.call_tool("test_tool_with_progress", meta={"progressToken": "one"}, rid=1)
    two = await c.call_tool("test_tool_with_progress", meta={"progressToken": "two"}, rid=2)
    async with c.open_get() as get:  # the standalone stream gets a notification too
        get_prime = await get.next_event()
        live.call(lambda: srv.add_tool(lambda: "x", name="x"))
        note_ev, _ = await get.next_message()
    three = await c.call_tool("test_tool_with_progress", meta={"progressToken": "three"},
                              rid=3)
    ids = [ev.id for r in (one, two, three) for ev in r.events] + [get_prime.id, note_ev.id]
    assert len(set(ids)) == len(ids), ids  # unique across all streams of the session
    for reply, token, rid in ((one, "one", 1), (two, "two", 2), (three, "three", 3)):
        async with c.open_get(last_event_id=reply.events[0].id) as get:
            msgs = [m for _, m in await get.until_end()]
        assert [m.get("params", {}).get("progressToken") for m in msgs[:-1]] == [token] * 3
        assert msgs[-1]["id"] == rid and len(msgs) == 4
    # The standalone stream's id replays only the standalone stream (its notification).
    async with c.open_get(last_event_id=get_prime.id) as get:
        ev, msg = await get.next_message()
        assert ev.id == note_ev.id and msg["method"] == "notifications/tools/list_changed"
        with pytest.raises(TimeoutError):
            await get.next_message(timeout=0.5)  # nothing else (and it stays open: live)


async def test_resume_a_broken_get_stream_keeps_it_open(http, resumable) -> None:
    srv, live = resumable
    c = await session(http, live)

    async def one() -> str:
        return "1"

    async with httpx.AsyncClient(timeout=10) as own:
        async with c.open_get(http=own) as get:
            prime = await get.next_event()
            assert_priming(prime)
            live.call(lambda: srv.add_tool(one, name="one"))
            first, msg = await get.next_message()
            assert msg["method"] == "notifications/tools/list_changed"
    # While no GET stream is connected, a server notification waits.
    live.call(lambda: srv.remove_tool("one"))
    # Reconnect at once (the server may not have noticed the break yet) from the priming
    # event: the missed notification, then the stream stays open for new ones.
    async with c.open_get(last_event_id=prime.id) as get:
        assert get.status == 200
        seen = []
        while len(seen) < 2:
            ev = await get.next_event()
            if ev.data:
                seen.append((ev, orjson.loads(ev.data)))
        assert seen[0][0].id == first.id  # replayed, same id
        assert all(m["method"] == "notifications/tools/list_changed" for _, m in seen)
        error_of(await c.get(), 409)  # the resumed stream is the session's GET stream
        live.call(lambda: srv.add_tool(one, name="one"))
        _, msg = await get.next_message()
        assert msg["method"] == "notifications/tools/list_changed"
        ids = [e.id for e in get.events]
        assert len(set(ids)) == len(ids) and {stream_of(i) for i in ids} == {
            stream_of(prime.id)}
    # Closed again: a plain GET opens a new stream (once the server noticed).

    async def reopened() -> bool:
        async with c.open_get() as again:
            if again.status == 409:
                await again.body()
                return False
            assert_priming(await again.next_event())
            return True

    assert await eventually(reopened)


async def test_disconnect_does_not_cancel_the_handler(http) -> None:
    srv = everything_server()
    finished = threading.Event()

    @srv.tool
    async def slow_record(seconds: float) -> str:
        """Sleep, then record that it finished."""
        await anyio.sleep(seconds)
        finished.set()
        return "recorded"

    with LiveServer(srv.asgi_app()) as live:
        c = await session(http, live)
        # A JSON-mode request whose client gives up before the answer.
        with pytest.raises(httpx.ReadTimeout):
            await c.call_tool("slow_record", {"seconds": 0.6}, timeout=0.2)
        assert await anyio.to_thread.run_sync(finished.wait, 5)
        assert (await c.request("ping")).status == 200


# ============================================================================ load


async def test_thousand_concurrent_calls_on_one_session(live) -> None:
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(limits=limits, timeout=30) as http:
        c = await session(http, live)
        answers: dict[int, Reply] = {}

        async def one(i: int) -> None:
            answers[i] = await c.call_tool("echo", {"text": f"msg-{i}"}, rid=i, timeout=30)

        with anyio.fail_after(40):
            async with anyio.create_task_group() as tg:
                for i in range(1000):
                    tg.start_soon(one, i)
    assert len(answers) == 1000
    for i, reply in answers.items():
        assert reply.status == 200 and reply.json["id"] == i, reply.json
        assert text_of(reply.json) == f"msg-{i}"


async def test_max_sessions_cap_is_503_and_existing_sessions_keep_working(http) -> None:
    srv = everything_server()
    with LiveServer(srv.asgi_app(max_sessions=50)) as live:
        sessions = [await session(http, live) for _ in range(50)]
        c = McpHttp(http, live.url)
        reply = await c.post(c.init_message())
        error_of(reply, 503)
        assert "mcp-session-id" not in reply.headers and reply.headers.get("retry-after")
        for s in (sessions[0], sessions[25], sessions[-1]):
            r = await s.call_tool("echo", {"text": "still here"})
            assert text_of(r.json) == "still here"
        assert (await sessions[0].delete()).status == 200
        await c.initialize()  # a slot is free again
        error_of(await McpHttp(http, live.url).post(c.init_message()), 503)


async def test_idle_sessions_expire_then_404_and_free_their_slot(http) -> None:
    srv = everything_server()
    with LiveServer(srv.asgi_app(max_sessions=2, session_idle_timeout=0.5)) as live:
        a = await session(http, live)
        b = await session(http, live)
        error_of(await McpHttp(http, live.url).post(a.init_message()), 503)
        for _ in range(4):  # activity keeps a alive past the timeout; b idles
            await anyio.sleep(0.15)
            assert (await a.request("ping")).status == 200
        error_of(await b.request("ping"), 404, SESSION_NOT_FOUND)
        error_of(await b.get(), 404, SESSION_NOT_FOUND)
        c = await session(http, live)  # b's slot is free again
        error_of(await McpHttp(http, live.url).post(a.init_message()), 503)
        await anyio.sleep(0.7)
        error_of(await a.request("ping"), 404, SESSION_NOT_FOUND)
        error_of(await c.call_tool("echo", {"text": "x"}), 404, SESSION_NOT_FOUND)
        d = await session(http, live)  # expired sessions no longer count
        e = await session(http, live)
        assert (await d.request("ping")).status == 200
        assert (await e.request("ping")).status == 200


async def test_slow_client_not_reading_its_stream_does_not_block_others(http) -> None:
    srv = everything_server()

    @srv.tool
    async def flood(count: int, ctx: Context) -> str:
        """Report a lot of large progress messages."""
        for i in range(count):
            await ctx.report_progress(i, count, "z" * 65_536)
        return "flooded"

    with LiveServer(srv.asgi_app()) as live:
        slow = await session(http, live)
        other = await session(http, live)
        # (its own id: the flood is paced by its reader, so it is still running below)
        body = orjson.dumps({"jsonrpc": "2.0", "id": "flood", "method": "tools/call",
                             "params": {"name": "flood", "arguments": {"count": 300},
                                        "_meta": {"progressToken": 1}}})
        head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{live.port}\r\n"
                f"Accept: {ACCEPT_BOTH}\r\nContent-Type: application/json\r\n"
                f"Mcp-Session-Id: {slow.session_id}\r\nMcp-Protocol-Version: {LATEST}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        sock = socket.create_connection(("127.0.0.1", live.port), timeout=5)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(head + body)
            first = sock.recv(256)  # the answer started ...
            assert first.startswith(b"HTTP/1.1 200"), first
            await anyio.sleep(0.5)  # ... and now ~20 MB wait behind a full socket buffer
            with anyio.fail_after(5):
                for i in range(20):
                    r = await other.call_tool("echo", {"text": f"o{i}"})
                    assert text_of(r.json) == f"o{i}"
                    r = await slow.call_tool("echo", {"text": f"s{i}"})  # same session too
                    assert text_of(r.json) == f"s{i}"
                async with other.open_get() as get:
                    assert_priming(await get.next_event())
        finally:
            sock.close()


# ============================================================================ versions


@pytest.mark.parametrize("version", STATEFUL_VERSIONS)
async def test_version_negotiation_and_header_after_init(http, live, version) -> None:
    c = McpHttp(http, live.url)
    reply = await c.initialize(version)
    assert reply.json["result"]["protocolVersion"] == version
    assert c.checker.revision == version  # later messages are checked against it
    for request in ("tools/list", "prompts/list", "resources/list"):
        assert (await c.request(request)).status == 200
    r = await c.call_tool("add", {"a": 1, "b": 2})
    assert r.status == 200 and text_of(r.json) == "3"
    for other in STATEFUL_VERSIONS:
        if other != version:
            error_of(await c.request("ping", headers=c.headers(mcp_protocol_version=other)),
                     400)
    absent = await c.request("ping", headers=c.headers(mcp_protocol_version=None))
    assert absent.status == 200


async def test_unknown_requested_version_gets_the_latest(http, live) -> None:
    c = McpHttp(http, live.url)
    reply = await c.post(c.init_message("1999-01-01"))
    assert reply.status == 200 and reply.json["result"]["protocolVersion"] == LATEST
    assert reply.headers.get("mcp-session-id")


async def test_requests_before_initialized_notification(http, live) -> None:
    c = McpHttp(http, live.url)
    await c.initialize(initialized=False)
    ping = await c.request("ping")  # ping is allowed before initialized
    assert ping.status == 200 and ping.json["result"] == {}


# ============================================================================ process


def test_everything_example_serves_http_as_a_process(tmp_path) -> None:
    port = free_port()
    err = open(tmp_path / "stderr", "wb")
    proc = subprocess.Popen([sys.executable, str(EVERYTHING), "--http", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "stderr").read_text()
                assert time.monotonic() < deadline, "the server did not listen within 15 s"
                time.sleep(0.05)

        async def talk() -> None:
            async with httpx.AsyncClient(timeout=10) as http:
                c = McpHttp(http, f"http://127.0.0.1:{port}/mcp")
                await c.initialize()
                r = await c.call_tool("echo", {"text": "from a process"})
                assert text_of(r.json) == "from a process"
                assert (await c.delete()).status == 200

        anyio.run(talk)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        err.close()

