"""The Redis stores against a real redis-server (tests/support/redis.py): session records,
SSE event logs in Redis Streams, the shared secret, rate-limit buckets, and faults.

Two ``RedisLink``s on one server stand for two instances of a deployment: what one
stores the other reads. Redis stopped mid-use makes every call fail within its bounded
timeout with ``StoreUnavailable``; started again, the same link works again.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator

import pytest

from mcpkit.storage import StoreUnavailable
from mcpkit.storage.cancels import stop_tasks
from mcpkit.storage.redis_buckets import RedisBuckets
from mcpkit.storage.redis_events import RedisEventStore
from mcpkit.storage.redis_link import RedisLink
from mcpkit.storage.redis_sessions import RedisSessionStore
from mcpkit.storage.redis_stores import RedisStores
from tests.support.redis import BOUNDED, RedisServer

pytestmark = [pytest.mark.anyio, BOUNDED]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server(redis: RedisServer) -> RedisServer:
    return redis


@pytest.fixture
async def two(server: RedisServer, request: pytest.FixtureRequest
              ) -> AsyncIterator[tuple[RedisLink, RedisLink]]:
    """Two links (two instances) under a key prefix of this test's own."""
    prefix = f"t{abs(hash(request.node.nodeid))}:"
    links = (RedisLink(server.url, prefix=prefix, timeout=0.5),
             RedisLink(server.url, prefix=prefix, timeout=0.5))
    yield links
    for link in links:
        await link.aclose()


async def test_session_records_are_shared_and_expire(two: tuple[RedisLink, RedisLink]) -> None:
    a, b = (RedisSessionStore(two[0], ttl=1.0, recheck=0),
            RedisSessionStore(two[1], ttl=1.0, recheck=0))
    record = {"version": "2025-11-25", "owner": None, "ready": True, "log_level": "info"}
    await a.save("s1", record)
    assert await b.load("s1") == record
    assert await b.load("nope") is None
    for _ in range(3):  # touching keeps it past its ttl, and reads it back (600 ms of
        await asyncio.sleep(0.4)  # slack for a loaded machine)
        assert await b.touch("s1") == record
    await asyncio.sleep(1.2)
    assert await a.load("s1") is None and await a.touch("s1") is None
    await a.save("s2", record)
    await b.delete("s2")
    assert await a.load("s2") is None and await a.touch("s2") is None


async def test_a_damaged_record_is_no_session(two: tuple[RedisLink, RedisLink]) -> None:
    store = RedisSessionStore(two[0])
    for raw in (b"{not json", b"[1, 2]", b"\xff\xfe"):
        await two[0].client().set(store._key("bad"), raw)
        assert await store.load("bad") is None


async def test_secret_is_one_for_every_instance(server: RedisServer) -> None:
    prefix = f"secret{time.monotonic_ns()}:"  # (secret() uses a blocking client)
    first = RedisSessionStore(RedisLink(server.url, prefix=prefix)).secret()
    again = RedisSessionStore(RedisLink(server.url, prefix=prefix)).secret()
    assert len(first) == 32 and first == again
    assert RedisSessionStore(RedisLink(server.url, prefix=prefix + "x")).secret() != first


async def test_events_resume_on_another_instance_once_in_order(
        two: tuple[RedisLink, RedisLink]) -> None:
    a, b = RedisEventStore(two[0]), RedisEventStore(two[1])
    prime = await a.append("S", "s1", b"")
    other = await b.append("S", "s2", b'{"other": 1}')
    ids = [await (a if i % 2 else b).append("S", "s1", f'{{"n": {i}}}'.encode())
           for i in range(5)]
    assert len({*ids, prime, other}) == 7
    replay = await b.replay("S", prime)
    assert replay == ("s1", [(i, f'{{"n": {n}}}'.encode()) for n, i in enumerate(ids)])
    assert await a.replay("S", ids[2]) == ("s1", [(i, f'{{"n": {n}}}'.encode())
                                                  for n, i in enumerate(ids) if n > 2])
    assert await a.replay("S", ids[-1]) == ("s1", [])
    assert await a.replay("S", other) == ("s2", [])
    # ids this session never issued, or another stream's number under this stream's name
    for bad in ("s1_999", other.replace("s2", "s1"), "garbage", "s1_", "_3", "s1_-1",
                "x" * 300 + "_1"):
        assert await a.replay("S", bad) is None, bad
    assert await a.replay("T", prime) is None
    await b.drop("S")
    assert await a.replay("S", prime) is None


async def test_concurrent_appends_are_numbered_once(two: tuple[RedisLink, RedisLink]) -> None:
    a, b = RedisEventStore(two[0]), RedisEventStore(two[1])
    ids = await asyncio.gather(*(
        (a if i % 2 else b).append("C", "s1", str(i).encode()) for i in range(60)))
    seqs = sorted(int(i.rpartition("_")[2]) for i in ids)
    assert seqs == list(range(1, 61))
    replay = await a.replay("C", "s1_1")
    assert replay is not None and [int(e.rpartition("_")[2]) for e, _ in replay[1]] == seqs[1:]


async def test_event_log_is_bounded(two: tuple[RedisLink, RedisLink]) -> None:
    store = RedisEventStore(two[0], max_events=3)
    ids = [await store.append("M", "s1", str(i).encode()) for i in range(5)]
    assert await store.replay("M", ids[0]) is None  # evicted: the client starts over
    assert await store.replay("M", ids[2]) == ("s1", [(ids[3], b"3"), (ids[4], b"4")])
    assert await two[0].client().xlen(two[0].key("e", "M", tag="M")) == 3


async def test_event_log_is_bounded_in_bytes(two: tuple[RedisLink, RedisLink]) -> None:
    store = RedisEventStore(two[0], max_events=100, max_bytes=10)
    client, size = two[0].client(), two[0].key("eb", "Z", tag="Z")
    ids = [await store.append("Z", "s1", f"{i:03d}".encode()) for i in range(10)]
    assert await store.replay("Z", ids[6]) is None  # dropped: the client starts over
    assert await store.replay("Z", ids[7]) == ("s1", [(ids[8], b"008"), (ids[9], b"009")])
    assert await client.xlen(two[0].key("e", "Z", tag="Z")) == 3
    assert int(await client.get(size)) == 9
    assert 0 < await client.pttl(size) <= store.ttl_ms
    big = await store.append("Z", "s2", b"x" * 11)  # bigger than the bound: not kept
    assert await store.replay("Z", big) is None and await store.replay("Z", ids[9]) is None
    assert int(await client.get(size)) == 0
    after = await store.append("Z", "s1", b"abc")
    assert await store.replay("Z", after) == ("s1", [])
    await store.drop("Z")
    assert await client.exists(size) == 0


async def test_buckets_are_atomic_across_instances(two: tuple[RedisLink, RedisLink]) -> None:
    a, b = RedisBuckets(two[0]), RedisBuckets(two[1])
    waits = await asyncio.gather(*((a if i % 2 else b).take("k", 1.0, 0.5, 5.0)
                                   for i in range(20)))
    assert sum(1 for w in waits if w == 0) == 5
    assert all(0 < w <= 2.0 + 0.1 for w in waits if w)  # one token refills in 2 s
    assert await a.take("other", 1.0, 4.0, 1.0) == 0.0
    assert await a.take("other", 1.0, 4.0, 1.0) > 0  # within 250 ms, even on a busy machine
    await asyncio.sleep(0.3)
    assert await b.take("other", 1.0, 4.0, 1.0) == 0.0  # refilled at 4/s


async def test_a_stopped_redis_fails_fast_then_recovers() -> None:
    with RedisServer() as redis:
        stores = RedisStores.from_url(redis.url, timeout=0.5)
        await stores.sessions.save("s", {"x": 1})
        redis.stop()
        calls = (stores.sessions.load("s"), stores.sessions.save("s", {}),
                 stores.sessions.touch("s"), stores.events.append("s", "s1", b"x"),
                 stores.events.replay("s", "s1_1"), stores.buckets.take("k", 1, 1, 1))
        for call in calls:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match=r"Service unavailable: the session "
                                                          r"store .Redis. could not"):
                await call
            assert time.monotonic() - started < 2.0
        redis.start()  # no persistence: empty, but reachable again with the same link
        assert await stores.sessions.load("s") is None
        await stores.sessions.save("s", {"x": 2})
        assert await stores.sessions.load("s") == {"x": 2}
        assert await stores.events.append("s", "s1", b"x") == "s1_1"
        await stores.link.aclose()


async def test_an_unresponsive_redis_times_out() -> None:
    """A Redis that accepts connections but never answers (stopped with SIGSTOP)."""
    import os
    import signal

    with RedisServer() as redis:
        link = RedisLink(redis.url, timeout=0.3)
        store = RedisSessionStore(link)
        await store.save("s", {"a": 1})
        assert redis.daemon.proc is not None
        os.kill(redis.daemon.proc.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                await store.load("s")
            assert time.monotonic() - started < 1.5
        finally:
            os.kill(redis.daemon.proc.pid, signal.SIGCONT)
        assert await store.load("s") == {"a": 1}
        await link.aclose()


async def test_a_cancel_at_any_turn_of_a_call_ends_it(two: tuple[RedisLink, RedisLink]) -> None:
    """redis-py writes through ``asyncio.wait_for``, which on Python 3.11 returns instead of
    raising when the cancel lands in the loop turn the write completes (gh-86296): a task
    cancelled at every loop turn of a Redis call still ends cancelled (a lost cancel kept
    the task heartbeat running and hung its ``aclose``)."""
    link = two[0]
    key = link.key("cancel", "k")
    await link.run("warm up", lambda r: r.set(key, b"0"))
    tried = 0
    for turns in range(40):
        call = asyncio.create_task(link.run("set", lambda r: r.set(key, b"1")))
        for _ in range(turns):
            await asyncio.sleep(0)
        if call.done():  # finished before the cancel: nothing to lose
            continue
        tried += 1
        call.cancel()
        await asyncio.wait([call], timeout=5)
        assert call.cancelled(), f"the cancel at loop turn {turns} was lost: {call!r}"
    assert tried >= 3


async def test_stop_tasks_is_bounded_and_keeps_the_callers_cancel(
        caplog: pytest.LogCaptureFixture) -> None:
    released = asyncio.Event()

    async def stubborn() -> None:  # what a lost cancel looks like from outside
        for _ in range(200):  # bounded: 10 s
            if released.is_set():
                return
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.05)

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    started = time.monotonic()
    await stop_tasks([task], 0.2, "stubborn")
    assert time.monotonic() - started < 1.0 and not task.done()
    assert "1 stubborn task(s) did not stop within 0.2s" in caplog.text
    # the stopper itself cancelled while it waits: its cancel is not swallowed
    stopper = asyncio.create_task(stop_tasks([task], 30, "stubborn"))
    await asyncio.sleep(0.05)
    stopper.cancel()
    await asyncio.wait([stopper], timeout=2)
    assert stopper.cancelled()
    released.set()
    await asyncio.wait([task], timeout=5)
    assert task.done()


def test_bad_configuration_is_refused_plainly() -> None:
    with pytest.raises(ValueError, match="not a Redis URL"):
        RedisLink("http://localhost:6379")
    with pytest.raises(ValueError, match="timeout"):
        RedisLink("redis://localhost", timeout=0)
    with pytest.raises(ValueError, match="ttl"):
        RedisSessionStore("redis://localhost", ttl=0)
    for bad in (-1, 10.0, 20.0):
        with pytest.raises(ValueError, match="recheck must be seconds from 0 to below ttl"):
            RedisSessionStore("redis://localhost", ttl=10, recheck=bad)


def test_importing_mcpkit_storage_does_not_import_redis() -> None:
    code = ("import sys, mcpkit.storage, mcpkit.server, mcpkit.transports.http_server; "
            "print('redis' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"
