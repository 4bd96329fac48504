"""What a kept message costs, and the byte bound of the memory event store.

``orjson.dumps`` (3.13) returns bytes holding its whole write buffer: ~4 KB for a
150-byte message. Bytes kept beyond their request (the event store, a session's backlog
of messages for its GET stream) are kept as compact copies, so 1,000 stored events of
~150 bytes cost ~0.26 MB instead of ~4 MB. Measured with ``tracemalloc`` (allocations,
not time), through the real store class and a live server on loopback.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import orjson
import pytest

from mcpkit import Server
from mcpkit.storage.events import DEFAULT_MAX_BYTES, MemoryEventStore
from tests.support.http import LiveServer, McpHttp

pytestmark = pytest.mark.anyio

EVENTS = 1000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def progress(i: int, note: str = "working through the list") -> bytes:
    """A ~150-byte message serialized as the server does (``orjson.dumps``); the same
    size for every ``i`` below 1,000."""
    return orjson.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
        "progressToken": f"call-{i:03d}", "progress": 1000 + i, "total": 2000,
        "message": note}})


class Traced:
    """Bytes allocated and still held between ``__enter__`` and ``grown``."""

    def __enter__(self) -> Traced:
        gc.collect()
        tracemalloc.start()
        self.start = tracemalloc.get_traced_memory()[0]
        return self

    def grown(self) -> int:
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - self.start

    def __exit__(self, *exc: Any) -> None:
        tracemalloc.stop()


async def test_stored_events_cost_their_size() -> None:
    store = MemoryEventStore()
    size = len(progress(1))
    assert 130 <= size <= 170
    with Traced() as traced:
        ids = [await store.append("one", "s1", progress(i)) for i in range(EVENTS)]
        held = traced.grown()
    # ~350 bytes an event (the data, its bytes object, the tuple, the number, and the
    # id this test keeps); 4.2 MB when the bytes orjson returned were kept as they were
    assert held < 400_000, f"{EVENTS} events of {size} B hold {held} bytes"
    replay = await store.replay("one", ids[0])
    assert replay is not None and len(replay[1]) == EVENTS - 1
    assert replay[1][-1] == (ids[-1], progress(EVENTS - 1))


async def test_memory_event_store_keeps_at_most_max_bytes_per_session() -> None:
    assert MemoryEventStore().max_bytes == DEFAULT_MAX_BYTES == 1024 * 1024
    size = len(progress(1))
    store = MemoryEventStore(max_events=EVENTS, max_bytes=20 * size)
    ids = [await store.append("one", "s1", progress(i)) for i in range(100)]
    other = [await store.append("two", "s1", progress(i)) for i in range(3)]
    assert await store.replay("one", ids[79]) is None  # dropped: the client starts over
    kept = await store.replay("one", ids[80])
    assert kept == ("s1", [(ids[i], progress(i)) for i in range(81, 100)])  # 20 in all
    assert await store.replay("two", other[0]) == ("s1", [(other[1], progress(1)),
                                                          (other[2], progress(2))])
    # an event bigger than the bound is not kept, and takes the older ones with it
    big = await store.append("one", "s2", b'{"jsonrpc":"2.0","method":"x","params":{"d":"'
                             + b"x" * 21 * size + b'"}}')
    assert await store.replay("one", big) is None
    assert await store.replay("one", ids[99]) is None
    after = await store.append("one", "s1", progress(7))
    assert await store.replay("one", after) == ("s1", [])
    # the count bound still holds beside the byte bound
    counted = MemoryEventStore(max_events=3)
    few = [await counted.append("c", "s1", progress(i)) for i in range(5)]
    assert await counted.replay("c", few[1]) is None
    assert await counted.replay("c", few[2]) == ("s1", [(few[3], progress(3)),
                                                        (few[4], progress(4))])


@pytest.mark.parametrize("bad", [0, -1, 1.5, "1"])
def test_bounds_are_checked(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        MemoryEventStore(max_bytes=bad)
    with pytest.raises(ValueError, match="max_events"):
        MemoryEventStore(max_events=bad)


def announcing_server() -> Any:
    server = Server("announcing")

    @server.tool
    async def announce(times: int) -> str:
        """Announce ``times`` changes of the tool list (for a session without a GET
        stream they wait in its backlog)."""
        for _ in range(times):
            server.notify_list_changed("tools")
        return "announced"

    return server.asgi_app()


@pytest.fixture
def live() -> Iterator[LiveServer]:
    with LiveServer(announcing_server()) as server:
        yield server


async def test_a_sessions_backlog_holds_messages_at_their_size(live: LiveServer) -> None:
    async with httpx.AsyncClient() as http:
        client = McpHttp(http, live.url)
        await client.initialize()
        assert (await client.call_tool("announce", {"times": 10})).status == 200  # warm
        with Traced() as traced:
            reply = await client.call_tool("announce", {"times": EVENTS})
            assert reply.status == 200
            await anyio.sleep(0.1)  # (the answer was the last thing the session made)
            held = traced.grown()
        # 1,000 list_changed messages of 54 bytes wait for the GET stream: ~4.1 MB when
        # kept as orjson returned them
        assert held < 400_000, f"{EVENTS} backlogged messages hold {held} bytes"
        async with client.open_get() as stream:  # and they are all delivered
            await stream.next_event()  # priming
            got = [(await stream.next_message())[1]["method"] for _ in range(EVENTS)]
        assert set(got) == {"notifications/tools/list_changed"}
