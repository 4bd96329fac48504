"""Cancellation over Streamable HTTP, the way hosts send it (issue #25, item 1 and 4).

A host sends ``notifications/cancelled`` whenever a user stops a generation. The request
it names gets no answer (basic/utilities/cancellation), yet its POST must still end: a
request POST is answered as SSE or JSON (basic/transports), so the server completes an
SSE response with no event (or ends the SSE stream it had begun), and everything the
request held — its id, its place in the in-flight counts, its stream, its memory — is
free at once. Behind a balancer the notification may reach another instance than the one
running the request: it travels on the session bus.

Real processes: ``examples/everything.py --http`` as a subprocess (for SIGTERM and the
server's own log), uvicorn on loopback in a thread (to look inside the app), and two
instances on a real redis-server. Every message the server sends is checked against the
official schema (``McpHttp``).
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

from mcpkit.transports.http_server import StreamableHTTPApp
from tests.support.daemon import Daemon
from tests.support.http import EVERYTHING, LiveServer, McpHttp, everything_server, free_port
from tests.support.redis import BOUNDED, RedisServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def everything(tmp_path: Path) -> Iterator[Daemon]:
    port = free_port()
    daemon = Daemon([sys.executable, str(EVERYTHING), "--http", "--port", str(port)], port,
                    tmp_path / "server.log")
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop(signal.SIGKILL)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def sleep_call(rid: Any, seconds: float, token: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "sleep", "arguments": {"seconds": seconds}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def cancel(c: McpHttp, rid: Any) -> None:
    note = await c.notify("notifications/cancelled", {"requestId": rid, "reason": "stop"})
    assert note.status == 202, note.body


async def until_running() -> None:
    """Give a call just POSTed time to reach its handler."""
    await anyio.sleep(0.3)


async def test_a_cancelled_call_ends_its_post_and_frees_its_id(
        everything: Daemon, http: httpx.AsyncClient) -> None:
    c = McpHttp(http, f"http://127.0.0.1:{everything.port}/mcp")
    await c.initialize()
    c.checker.saw_peer(sleep_call(1, 30))
    call = asyncio.ensure_future(c.post(sleep_call(1, 30), timeout=20))
    await until_running()
    started = time.monotonic()
    await cancel(c, 1)
    reply = await asyncio.wait_for(call, 5)  # today's main: held until the client gives up
    assert time.monotonic() - started < 3
    # No response for a cancelled request; the POST is still a complete SSE response.
    assert reply.status == 200 and reply.content_type == "text/event-stream"
    assert reply.messages == []
    # Its id is free at once, on this session.
    again = await c.request("ping", rid=1)
    assert again.status == 200 and again.json == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert (await c.delete()).status == 200
    # Nothing holds the server: SIGTERM ends it, with status 0, quickly.
    proc = everything.proc
    assert proc is not None
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    log = everything.output()
    assert "ERROR" not in log and "WARNING" not in log, log


async def test_a_call_cancelled_after_its_stream_began_ends_the_stream(
        everything: Daemon, http: httpx.AsyncClient) -> None:
    """Progress first made it SSE (primed, with event ids): the cancel ends the stream,
    complete and without a response, and resuming it replays nothing and ends."""
    c = McpHttp(http, f"http://127.0.0.1:{everything.port}/mcp")
    await c.initialize()
    async with c.open_post(sleep_call(2, 30, "p2")) as live:
        assert live.content_type == "text/event-stream"
        _, progress = await live.next_message(timeout=5)
        assert progress["method"] == "notifications/progress"
        await cancel(c, 2)
        rest = await live.until_end(timeout=5)
        assert rest == []
        last = [e.id for e in live.events if e.id][-1]
    async with c.open_get(last_event_id=last) as resumed:
        assert resumed.status == 200
        assert await resumed.until_end(timeout=5) == []
    assert (await c.request("ping", rid=2)).json["result"] == {}


async def test_a_batch_whose_requests_are_all_cancelled_still_ends(
        everything: Daemon, http: httpx.AsyncClient) -> None:
    """2025-03-26 batches: the answer of a batch waits for all its requests; a batch
    whose only request is cancelled has none, and one with another request answers
    that one alone."""
    c = McpHttp(http, f"http://127.0.0.1:{everything.port}/mcp")
    await c.initialize("2025-03-26")
    lone = [sleep_call(7, 30)]
    c.checker.saw_peer(lone)
    call = asyncio.ensure_future(c.post(lone, timeout=20))
    await until_running()
    await cancel(c, 7)
    reply = await asyncio.wait_for(call, 5)
    assert reply.status == 200 and reply.messages == []
    pair = [sleep_call(8, 30), {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                "params": {"name": "sleep", "arguments": {"seconds": 0.5}}}]
    call = asyncio.ensure_future(c.post(pair, timeout=20))
    await until_running()
    await cancel(c, 8)
    reply = await asyncio.wait_for(call, 5)
    assert [m["id"] for m in reply.json] == [9]


async def test_a_session_ended_under_a_running_call_ends_its_post(
        everything: Daemon, http: httpx.AsyncClient) -> None:
    c = McpHttp(http, f"http://127.0.0.1:{everything.port}/mcp")
    await c.initialize()
    c.checker.saw_peer(sleep_call(3, 30))
    call = asyncio.ensure_future(c.post(sleep_call(3, 30), timeout=20))
    await until_running()
    assert (await c.delete()).status == 200
    reply = await asyncio.wait_for(call, 5)
    assert reply.status == 200 and reply.messages == []


@pytest.fixture
def small_app() -> Iterator[tuple[LiveServer, StreamableHTTPApp]]:
    app = everything_server().asgi_app(max_in_flight_total=20)
    assert isinstance(app, StreamableHTTPApp)
    with LiveServer(app) as server:
        yield server, app


async def test_cancels_leave_counts_ids_and_objects_where_they_were(
        small_app: tuple[LiveServer, StreamableHTTPApp], http: httpx.AsyncClient) -> None:
    """Many cancels on a server whose in-flight limit is 20: none of them is counted
    after it ended (today's main answered every request with 503 after the 20th cancel),
    every id is reusable, and the live objects of the server do not grow with them."""
    server, app = small_app
    c = McpHttp(http, server.url)
    await c.initialize()

    async def cancelled_calls(count: int) -> None:
        for n in range(count):  # bounded: a few ms each
            rid = f"c{n % 10}"
            c.checker.saw_peer(sleep_call(rid, 30))
            call = asyncio.ensure_future(c.post(sleep_call(rid, 30), timeout=20))
            await asyncio.sleep(0.01)
            await cancel(c, rid)
            reply = await asyncio.wait_for(call, 5)
            assert reply.status == 200 and reply.messages == [], reply.body

    def live_objects() -> int:
        return server.call(lambda: (gc.collect(), len(gc.get_objects()))[1])

    await cancelled_calls(100)  # warm-up: caches, pools, first-use imports
    before = live_objects()
    await cancelled_calls(600)
    after = live_objects()
    session = server.call(lambda: next(iter(app.sessions.values())))
    assert server.call(lambda: app.in_flight) == 0
    assert server.call(lambda: (session.streams, session.session.in_flight,
                                len(session.conn._inbound))) == ({}, 0, 0)
    assert after - before < 600, (before, after)  # today's main: thousands per hundred
    reply = await c.call_tool("echo", {"text": "still served"})
    assert reply.json["result"]["content"][0]["text"] == "still served"


@pytest.fixture
def two_on_redis() -> Iterator[tuple[LiveServer, LiveServer]]:
    with RedisServer() as redis, LiveServer(everything_server().asgi_app(
            store=redis.url)) as a, LiveServer(everything_server().asgi_app(
            store=redis.url)) as b:
        yield a, b


@BOUNDED
async def test_a_cancel_reaching_another_instance_stops_the_call(
        two_on_redis: tuple[LiveServer, LiveServer], http: httpx.AsyncClient) -> None:
    """Behind a balancer: the call runs on A, its cancel is POSTed to B, which passes it
    on the session bus; A stops the handler and ends the POST (today's main ran it to the
    end: 5,769 of 11,383 cancelled calls in the soak)."""
    a, b = two_on_redis
    c = McpHttp(http, a.url)
    await c.initialize()
    c.checker.saw_peer(sleep_call(4, 30))
    call = asyncio.ensure_future(c.post(sleep_call(4, 30), timeout=20))
    await until_running()
    c.url = b.url
    started = time.monotonic()
    await cancel(c, 4)
    reply = await asyncio.wait_for(call, 5)
    assert time.monotonic() - started < 3
    assert reply.status == 200 and reply.messages == []
    # The id is free on either instance.
    assert (await c.request("ping", rid=4)).json["result"] == {}
    c.url = a.url
    assert (await c.request("ping", rid=4)).json["result"] == {}


def test_a_stdio_cancel_is_still_silent() -> None:
    """The withdrawn answer is HTTP's business: over stdio a cancelled request writes
    nothing at all (no blank line), and the next request is answered."""
    from tests.support.stdio import ServerProcess

    with ServerProcess() as server:
        server.initialize()
        server.send(sleep_call(11, 30))
        time.sleep(0.3)
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 11}})
        server.send({"jsonrpc": "2.0", "id": 12, "method": "ping"})
        assert server.recv(timeout=5) == {"jsonrpc": "2.0", "id": 12, "result": {}}
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        with pytest.raises(EOFError):  # a blank line would fail to decode instead
            server.recv(timeout=5)
        assert server._buf == b""


@BOUNDED
async def test_a_cancelled_stream_resumed_on_another_instance_ends(
        two_on_redis: tuple[LiveServer, LiveServer], http: httpx.AsyncClient) -> None:
    """A stream that began as SSE on A and was cancelled: resuming it on B (which follows
    streams live elsewhere through the store) replays what A stored and ends at once,
    instead of waiting for an answer that will never come."""
    a, b = two_on_redis
    c = McpHttp(http, a.url)
    await c.initialize()
    async with c.open_post(sleep_call(5, 30, "p5")) as live:
        _, progress = await live.next_message(timeout=5)
        assert progress["method"] == "notifications/progress"
        primed = next(e.id for e in live.events if e.id)
        await cancel(c, 5)
        assert await live.until_end(timeout=5) == []
    c.url = b.url
    started = time.monotonic()
    async with c.open_get(last_event_id=primed) as resumed:
        assert resumed.status == 200
        replayed = await resumed.until_end(timeout=5)
    assert time.monotonic() - started < 3
    assert [m["method"] for _, m in replayed] == ["notifications/progress"]


async def test_a_server_cancelling_its_question_sends_nothing_more(
        everything: Daemon) -> None:
    """The other direction: the client cancels a call whose handler was asking it a
    question (elicitation); the server cancels that question, the client's handler
    stops, and the client POSTs nothing for it (no empty body, no answer)."""
    from mcpkit.client import Client, Http

    bodies: list[bytes] = []
    asked = anyio.Event()

    async def record(request: httpx.Request) -> None:
        if request.method == "POST":
            bodies.append(request.content)

    async def elicit(params: Any) -> Any:
        asked.set()
        await anyio.sleep(30)  # a user who does not answer
        return {"action": "decline"}

    async with httpx.AsyncClient(event_hooks={"request": [record]}) as http, Client(
            Http(f"http://127.0.0.1:{everything.port}/mcp", http_client=http),
            mode="stateful", elicitation=elicit) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "test_elicitation", {"message": "sure?"})
            with anyio.fail_after(5):
                await asked.wait()
            tg.cancel_scope.cancel()  # the call is cancelled: notifications/cancelled
        await anyio.sleep(0.5)
        assert (await client.call_tool("echo", {"text": "on"})).content[0].text == "on"  # type: ignore[union-attr]
    assert all(body for body in bodies), bodies
    sent = [orjson.loads(body) for body in bodies]
    assert not any("result" in m and "action" in m["result"] for m in sent
                   if isinstance(m, dict)), sent  # the question was never answered
