"""Session renewals batched per loop turn (``mcpkit.storage.redis_batch``) against a real
redis-server: many concurrent ``touch`` calls share one pipeline (one connection) and each
still gets its own record, its own miss or its own Redis error; a caller that gave up is
skipped; a script Redis forgot (``SCRIPT FLUSH``, as after a restart) is loaded again.
Redis stopped or frozen under a batch: ``tests/test_redis_stores.py`` (the fault tests
call ``touch``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.exceptions

from mcpkit.storage.redis_link import RedisLink
from mcpkit.storage.redis_sessions import RedisSessionStore
from tests.support.redis import RedisServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def store(redis: RedisServer, request: pytest.FixtureRequest
                ) -> AsyncIterator[RedisSessionStore]:
    link = RedisLink(redis.url, prefix=f"b{abs(hash(request.node.nodeid))}:", timeout=1.0)
    yield RedisSessionStore(link, ttl=60)
    await link.aclose()


async def connections(store: RedisSessionStore) -> int:
    listed = await store.link.client().client_list()
    return len(listed)


async def test_concurrent_touches_share_one_connection_each_gets_its_own_record(
        store: RedisSessionStore) -> None:
    records = {f"s{n}": {"n": n, "log_level": "info"} for n in range(200)}
    for sid, record in records.items():
        await store.save(sid, record)
    before = await connections(store)
    sids = [*records, "gone-1", "gone-2"]
    got = await asyncio.gather(*(store.touch(sid) for sid in sids))
    assert got == [*records.values(), None, None]
    # 202 calls made at once went out in one pipeline: no new pooled connection for them
    # (one command at a time would have taken a connection each)
    assert await connections(store) <= before + 1
    ttl = await store.link.client().pttl(store._key("s7"))
    assert 55_000 < ttl <= 60_000  # renewed to the store's ttl


async def test_one_call_failing_in_redis_fails_alone(store: RedisSessionStore) -> None:
    await store.save("good", {"ok": True})
    await store.link.client().rpush(store._key("list"), "x")  # GET on a list: WRONGTYPE
    good, bad, missing = await asyncio.gather(
        store.touch("good"), store.touch("list"), store.touch("missing"),
        return_exceptions=True)
    assert good == {"ok": True} and missing is None
    assert isinstance(bad, redis.exceptions.ResponseError) and "WRONGTYPE" in str(bad)


async def test_a_caller_that_gave_up_is_skipped(store: RedisSessionStore) -> None:
    await store.save("a", {"a": 1})
    await store.save("b", {"b": 2})
    first = asyncio.ensure_future(store.touch("a"))
    second = asyncio.ensure_future(store.touch("b"))
    await asyncio.sleep(0)  # both queued in the same turn
    first.cancel()
    assert await second == {"b": 2}
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await store.touch("a") == {"a": 1}  # and the next batch works


async def test_a_forgotten_script_is_loaded_again(store: RedisSessionStore) -> None:
    await store.save("s", {"s": 1})
    assert await store.touch("s") == {"s": 1}
    await store.link.client().script_flush()
    got = await asyncio.gather(store.touch("s"), store.touch("none"))
    assert got == [{"s": 1}, None]
