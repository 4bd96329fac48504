"""``RedisTaskStore`` against a real redis-server (tests/support/redis.py).

Two stores on one Redis under one key prefix stand for two instances of a deployment:
records expire with their ttl, the owner's index pages in (created, id) order, ``sweep``
reports what expired, a terminal record is never overwritten, and a task whose running
instance stopped (heartbeat gone) is reported ``failed`` — never a live instance's. Redis
stopped: every call raises ``StoreUnavailable`` within its bound.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from mcpkit.storage import StoreUnavailable
from mcpkit.storage.redis_link import RedisLink
from mcpkit.storage.redis_tasks import ORPHANED, RedisTaskStore
from mcpkit.storage.tasks import TaskRecord
from tests.support.redis import BOUNDED, RedisServer

pytestmark = [pytest.mark.anyio, BOUNDED]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def two(redis: RedisServer, request: pytest.FixtureRequest
              ) -> AsyncIterator[tuple[RedisTaskStore, RedisTaskStore]]:
    """Two instances' task stores under a key prefix of this test's own."""
    prefix = f"t{abs(hash(request.node.nodeid))}:"
    stores = (RedisTaskStore(RedisLink(redis.url, prefix=prefix, timeout=0.5), heartbeat=0.1),
              RedisTaskStore(RedisLink(redis.url, prefix=prefix, timeout=0.5), heartbeat=0.1))
    yield stores
    for store in stores:
        await store.aclose()
        await store.link.aclose()


def record(task_id: str, owner: str = "alice\n", *, created: float | None = None,
           ttl_ms: int | None = 60_000, status: str = "working") -> TaskRecord:
    now = time.time() if created is None else created
    return TaskRecord(task_id, owner, "ext", "tools/call", status, now, now, ttl_ms, 500)


async def test_records_are_shared_and_expire_with_their_ttl(
        two: tuple[RedisTaskStore, RedisTaskStore]) -> None:
    a, b = two
    await a.put(record("t1", ttl_ms=300))
    seen = await b.get("t1")
    assert seen is not None and seen.status == "working" and seen.owner == "alice\n"
    assert await b.get("unknown") is None
    await asyncio.sleep(0.4)
    assert await b.get("t1") is None
    assert await a.page("alice\n", None, 10) == []


async def test_pages_follow_created_then_id_and_skip_the_expired(
        two: tuple[RedisTaskStore, RedisTaskStore]) -> None:
    a, b = two
    base = time.time()
    for i, name in enumerate(["c", "a", "b"]):  # equal times: ordered by id
        await a.put(record(name, created=base, status="completed"))
        await a.put(record(f"z{i}", created=base + 1 + i, status="completed"))
    await a.put(record("bob1", owner="bob\n", created=base, status="completed"))
    await a.put(record("short", created=base + 0.5, ttl_ms=200, status="completed"))
    await asyncio.sleep(base + 0.8 - time.time())  # past "short"'s end (created + ttl)
    first = await b.page("alice\n", None, 2)
    assert [r.task_id for r in first] == ["a", "b"]
    rest = await b.page("alice\n", (first[-1].created, first[-1].task_id), 10)
    assert [r.task_id for r in rest] == ["c", "z0", "z1", "z2"]  # "short" expired
    assert [r.task_id for r in await b.page("bob\n", None, 10)] == ["bob1"]
    assert await b.page("nobody\n", None, 10) == []


async def test_sweep_reports_what_expired(two: tuple[RedisTaskStore, RedisTaskStore]) -> None:
    a, b = two
    await a.put(record("gone", ttl_ms=100, status="completed"))
    await a.put(record("kept", ttl_ms=60_000, status="completed"))
    await asyncio.sleep(0.15)
    assert await b.sweep(time.time()) == ["gone"]
    assert await b.sweep(time.time()) == []
    assert await b.get("kept") is not None


async def test_a_terminal_record_is_never_overwritten(
        two: tuple[RedisTaskStore, RedisTaskStore]) -> None:
    a, b = two
    await a.put(record("t"))
    assert await b.write(record("t", status="cancelled"))
    assert not await a.write(record("t", status="completed"))  # the cancel came first
    stored = await a.get("t")
    assert stored is not None and stored.status == "cancelled"


async def test_a_stopped_instances_tasks_fail_and_a_live_ones_do_not(
        two: tuple[RedisTaskStore, RedisTaskStore]) -> None:
    a, b = two
    await a.put(record("on-a"))
    await b.put(record("on-b"))
    assert await b.runner("on-a") == a.instance
    await asyncio.sleep(0.5)  # both heartbeats keep going
    assert (await b.get("on-a")).status == "working"  # type: ignore[union-attr]
    assert await a.abandon("restarted") == 0
    await a.aclose()  # instance A stops: its heartbeat ends
    assert await b.runner("on-a") is None
    failed = await b.get("on-a")
    assert failed is not None and failed.status == "failed"
    assert failed.message == ORPHANED and failed.error is not None
    assert failed.error["code"] == -32603
    assert (await b.get("on-b")).status == "working"  # type: ignore[union-attr]


async def test_abandon_fails_only_orphans(two: tuple[RedisTaskStore, RedisTaskStore]) -> None:
    a, b = two
    await a.put(record("orphan"))
    await b.put(record("alive"))
    await a.aclose()
    assert await b.abandon("gone") == 1
    orphan = await b.get("orphan")
    assert orphan is not None and orphan.status == "failed" and orphan.message == "gone"
    assert (await b.get("alive")).status == "working"  # type: ignore[union-attr]
    assert await b.abandon("gone") == 0


async def test_aclose_stops_the_heartbeat_and_keeps_the_callers_cancel(
        two: tuple[RedisTaskStore, RedisTaskStore]) -> None:
    """Closing the store ends its heartbeat; the closer cancelled meanwhile (a test runner
    tearing down, a server stopping) is cancelled, not left running with its cancel
    swallowed."""
    a, _ = two
    await a.put(record("t"))  # a running task: the heartbeat starts
    beating = a._beating
    assert beating is not None and not beating.done()
    closing = asyncio.create_task(a.aclose())
    await asyncio.sleep(0)
    closing.cancel()
    await asyncio.wait([closing], timeout=5)
    assert closing.cancelled()
    await asyncio.wait([beating], timeout=5)
    assert beating.done()
    await a.aclose()  # again, to completion: nothing left to stop
    assert a._beating is None
    await a.put(record("late"))  # a handler saving its inputs as the instance stops
    assert a._beating is None  # no heartbeat started again after aclose


async def test_a_stopped_redis_fails_fast_with_store_unavailable() -> None:
    with RedisServer() as redis:
        store = RedisTaskStore(RedisLink(redis.url, timeout=0.3), heartbeat=0.1)
        await store.put(record("t", status="completed"))
        redis.stop()
        calls = (store.get("t"), store.put(record("u")), store.page("alice\n", None, 5),
                 store.sweep(time.time()), store.abandon("x"), store.runner("t"))
        for call in calls:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="could not"):
                await call
            assert time.monotonic() - started < 1.5
        redis.start()
        assert await store.get("t") is None  # no persistence: empty, reachable again
        await store.put(record("v", status="completed"))
        assert await store.get("v") is not None
        await store.aclose()
        await store.link.aclose()
