"""``transports.keyed.KeyedLock``: one holder per key, nothing kept for a key no one holds
or awaits, also when a waiter is cancelled."""

from __future__ import annotations

import anyio
import pytest

from mcpkit.transports.keyed import KeyedLock

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_one_holder_per_key_and_nothing_left_behind() -> None:
    locks = KeyedLock()
    inside: dict[str, int] = {"a": 0, "b": 0}
    most: dict[str, int] = {"a": 0, "b": 0}

    async def use(key: str) -> None:
        async with locks.hold(key):
            inside[key] += 1
            most[key] = max(most[key], inside[key])
            await anyio.sleep(0.01)
            inside[key] -= 1

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for key in "ababab":
                tg.start_soon(use, key)
    assert most == {"a": 1, "b": 1}
    assert len(locks) == 0


async def test_a_cancelled_waiter_leaves_nothing_behind() -> None:
    locks = KeyedLock()
    held = anyio.Event()
    release = anyio.Event()

    async def holder() -> None:
        async with locks.hold("k"):
            held.set()
            await release.wait()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(holder)
            await held.wait()
            with anyio.move_on_after(0.05):  # a waiter gives up
                async with locks.hold("k"):
                    pytest.fail("the key was held")
            assert len(locks) == 1  # the holder's
            release.set()
    assert len(locks) == 0
