"""Redis away for a few seconds under a running instance: no SSE answer is lost.

An instance of ``examples/everything.py``'s server on a real redis-server (append-only, so
a restart finds the session again) runs calls whose answers are SSE streams (the ``sleep``
tool reports progress each second), and Redis is stopped while they run: the event that
opens each stream (the priming event, with the id a client resumes from) and every later
event wait for Redis, in order, and all go out once it is back. A request that reaches the
instance while it cannot check the session in Redis gets 503 with ``Retry-After``, never
an empty ``200``. Past ``STORE_OUTAGE`` (shortened here) a stream's events go out without
ids instead: the answer still arrives on the open connection. The other writes an outage
meets: a GET stream's priming (waits), a task's result (waits), the session record after
``notifications/initialized`` was taken (saved at the next request, not a 503).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from mcpkit.transports import http_streams
from tests.support.http import LiveServer, McpHttp, everything_server
from tests.support.redis import BOUNDED, RedisServer

pytestmark = [pytest.mark.anyio, BOUNDED]

CALLS = 12
"""Calls running when Redis stops."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client() -> AsyncIterator[McpHttp]:
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=CALLS * 2)) as http:
        yield McpHttp(http, "")


@pytest.fixture
def deployment() -> Iterator[tuple[RedisServer, LiveServer]]:
    with RedisServer(appendonly=True) as redis, LiveServer(
            everything_server().asgi_app(store=redis.url)) as server:
        yield redis, server


def sleep_call(rid: int, seconds: float = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"seconds": seconds},
        "_meta": {"progressToken": rid}}}


async def answered(client: McpHttp, rid: int, seconds: float = 2
                   ) -> tuple[int, str, list[tuple[str | None, Any]]]:
    """(status, content type, [(event id, message)]) of one call read to its end."""
    async with client.open_post(sleep_call(rid, seconds)) as stream:
        if stream.content_type != "text/event-stream":
            reply = await stream.body()
            return stream.status, stream.content_type, [(None, m) for m in reply.messages]
        got = await stream.until_end(timeout=40)
        return stream.status, stream.content_type, [(ev.id, m) for ev, m in got]


async def start_during_outage(client: McpHttp, redis: RedisServer, seconds: float = 2
                              ) -> list[asyncio.Task[Any]]:
    """``CALLS`` calls taken by the instance (within the second in which it trusts its
    last check of the session, so no Redis call is needed), then Redis stopped before any
    of them emits its first progress (after one second): each stream's priming event is
    stored during the outage."""
    assert (await client.request("ping")).status == 200  # the session just checked
    calls = [asyncio.create_task(answered(client, 10 + i, seconds)) for i in range(CALLS)]
    await asyncio.sleep(0.3)  # the POSTs reach the instance
    redis.stop()
    return calls


async def test_sse_answers_wait_out_a_short_redis_outage(
        deployment: tuple[RedisServer, LiveServer], client: McpHttp) -> None:
    redis, server = deployment
    client.url = server.url
    await client.initialize()
    calls = await start_during_outage(client, redis)
    await asyncio.sleep(3.5)  # well under STORE_OUTAGE
    redis.start()
    results = await asyncio.gather(*calls)
    for i, (status, ctype, got) in enumerate(results):
        rid = 10 + i
        assert (status, ctype) == (200, "text/event-stream"), (rid, status, got)
        assert got, f"call {rid}: an empty SSE answer"
        progress = [m["params"]["progress"] for _, m in got if "method" in m]
        assert progress == [1.0, 2.0], (rid, got)
        assert got[-1][1]["id"] == rid and "result" in got[-1][1], (rid, got)
        assert all(eid for eid, _ in got), f"call {rid}: an event without an id: {got}"
    # every answer was stored: a client that lost its connection gets it back once Redis
    # is there (resumption from the first event of one of the streams)
    first = results[0][2][0][0]
    async with client.open_get(last_event_id=first) as stream:
        replay = [m for _, m in await stream.until_end(timeout=10)]
    assert replay[-1]["id"] == 10 and "result" in replay[-1]


async def test_a_request_the_instance_cannot_check_gets_503_not_an_empty_answer(
        deployment: tuple[RedisServer, LiveServer], client: McpHttp) -> None:
    redis, server = deployment
    client.url = server.url
    await client.initialize()
    redis.stop()
    await asyncio.sleep(1.2)  # past the second in which the last check is trusted
    try:
        status, _, got = await answered(client, 50)
        assert status == 503, got
        opened = await client.get(timeout=15)  # the GET stream too, and its priming
        assert opened.status == 503 and opened.headers["retry-after"] == "1"
    finally:
        redis.start()
    status, _, got = await answered(client, 51, seconds=1)
    assert status == 200 and got[-1][1]["id"] == 51


async def test_past_the_wait_the_answer_still_arrives_without_an_id(
        deployment: tuple[RedisServer, LiveServer], client: McpHttp,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_streams, "STORE_OUTAGE", 1.0)
    redis, server = deployment
    client.url = server.url
    await client.initialize()
    calls = await start_during_outage(client, redis)
    results = await asyncio.gather(*calls)  # while Redis is still away
    redis.start()
    for i, (status, ctype, got) in enumerate(results):
        rid = 10 + i
        assert (status, ctype) == (200, "text/event-stream"), (rid, status, got)
        progress = [m["params"]["progress"] for _, m in got if "method" in m]
        assert progress == [1.0, 2.0], (rid, got)
        assert got[-1][1]["id"] == rid and "result" in got[-1][1], (rid, got)
        assert [eid for eid, _ in got] == [None] * len(got), got  # nothing stored


async def test_a_task_ending_during_the_outage_keeps_its_result(
        deployment: tuple[RedisServer, LiveServer]) -> None:
    from tests.test_redis_tasks_instances import create, until

    redis, server = deployment
    async with httpx.AsyncClient(timeout=15) as http:
        task_id = await create(http, server.url, "slow_compute", {"seconds": 1.5})
        redis.stop()  # the task ends (and stores "completed") while Redis is away
        await asyncio.sleep(3)
        redis.start()
        done = await until(http, server.url, task_id, "completed", seconds=15)
    assert done["result"]["content"] == [{"type": "text", "text": "Computed result in 1.5s"}]


async def test_a_get_stream_opened_during_the_outage_is_primed_once_redis_is_back(
        deployment: tuple[RedisServer, LiveServer], client: McpHttp) -> None:
    redis, server = deployment
    client.url = server.url
    await client.initialize()
    assert (await client.request("ping")).status == 200  # the session just checked
    redis.stop()
    async with client.open_get() as stream:  # within the second the check is trusted
        assert stream.status == 200
        first = asyncio.create_task(stream.next_event(timeout=30))
        await asyncio.sleep(2)
        assert not first.done(), "the GET stream ended (or was primed) without Redis"
        redis.start()
        primed = await first
    assert primed.id and not primed.data


async def test_notifications_initialized_during_the_outage_is_taken_and_saved_later(
        deployment: tuple[RedisServer, LiveServer], client: McpHttp) -> None:
    import json

    import redis as redis_py

    redis, server = deployment
    client.url = server.url
    await client.initialize(initialized=False)
    assert (await client.request("ping")).status == 200  # the session just checked
    redis.stop()
    try:  # taken (202): a 503 would have the client send it again
        assert (await client.notify("notifications/initialized")).status == 202
    finally:
        redis.start()
    reply = None
    for _ in range(50):  # bounded: 5 s; the next request saves the record
        reply = await client.request("ping")
        if reply.status == 200:
            break
        await asyncio.sleep(0.1)
    assert reply is not None and reply.status == 200
    with redis_py.Redis.from_url(redis.url) as r:
        record = json.loads(r.get(f"mcpkit:s:{{{client.session_id}}}"))
    assert record["ready"] is True, record
