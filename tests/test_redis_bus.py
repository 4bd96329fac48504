"""The session bus on a real redis-server: messages published with ``publish_kept`` (a
``notifications/cancelled`` carried to the instance running the request) survive the
subscriber's reconnection, which plain pub/sub messages do not (Redis keeps nothing for
a subscriber that is not connected). The soak saw a cancel lost that way as Redis came
back (issue #25).
"""

from __future__ import annotations

import asyncio

import pytest

from mcpkit.storage.redis_bus import RedisBus
from tests.support.redis import BOUNDED, RedisServer

pytestmark = [pytest.mark.anyio, BOUNDED]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_kept_message_reaches_a_subscriber_that_reconnected(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import mcpkit.storage.redis_bus as redis_bus

    monkeypatch.setattr(redis_bus, "RETRY_SECONDS", 2.0)  # a wide window to publish in
    with RedisServer(appendonly=True) as redis:
        await _kept_across_a_restart(redis)


async def _kept_across_a_restart(redis: RedisServer) -> None:
    listener, sender = RedisBus(redis.url), RedisBus(redis.url)
    got: list[bytes] = []
    try:
        await listener.listen("s1", got.append)
        await sender.publish_kept("s1", b"Xfirst")
        for _ in range(50):  # bounded: 5 s
            if got:
                break
            await asyncio.sleep(0.1)
        assert got == [b"Xfirst"]
        redis.stop()  # the subscriber breaks, and retries every 2 s ...
        await asyncio.sleep(1.0)
        redis.start()  # (blocking: the subscriber cannot reconnect meanwhile)
        await sender.publish_kept("s1", b"Xkept")  # ... published before it is back
        for _ in range(50):  # bounded: 5 s
            if b"Xkept" in got:
                break
            await asyncio.sleep(0.1)
        assert b"Xkept" in got  # replayed from the kept set (at least once)
    finally:
        await listener.unlisten("s1")
        await listener.aclose()
        await sender.aclose()
        await listener.link.aclose()
        await sender.link.aclose()
