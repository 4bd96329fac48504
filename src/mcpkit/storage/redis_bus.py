"""``SessionBus`` on Redis pub/sub: one channel per session (``<prefix>bus:<sid>``).

Each instance has one subscriber connection (per event loop) and one reader task that
hands each message to the ``deliver`` callback of its session. Subscribing and publishing
are bounded Redis calls (``StoreUnavailable`` when Redis cannot be reached). When the
subscriber connection breaks, the reader makes a new one every ``RETRY_SECONDS`` until it
connects, and subscribes it to every channel listened to, so the bus recovers by itself
(messages published meanwhile are lost: pub/sub keeps nothing). A message that must not
be lost that way is published with ``publish_kept``: it is also kept for ``keep`` seconds
in a sorted set per session (``<prefix>kept:<sid>``, by publication time), and a
subscriber that reconnects delivers again what was kept for its channels since it broke
(so such a message may arrive twice: at least once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from .cancels import keep_cancel, stop_tasks
from .redis_link import RedisLink

log = logging.getLogger("mcpkit.storage")

RETRY_SECONDS = 0.2
"""Seconds between attempts to reconnect a broken subscriber connection."""
CLOCK_SKEW = 2.0
"""Seconds of clock difference between instances allowed for when replaying kept messages."""


class _Subscriber:
    """The subscriber connection and reader task of one event loop."""

    def __init__(self, link: RedisLink) -> None:
        self.link = link
        self.deliver: dict[bytes, Callable[[bytes], None]] = {}
        self.reader: asyncio.Task[None] | None = None
        self.alive_at = time.time()  # wall clock: the connection last known to work
        self.pubsub: Any = link.client().pubsub(ignore_subscribe_messages=True)

    async def renew(self) -> None:
        """A new subscriber connection, subscribed to every channel listened to (after
        the old one broke: Redis restarted or the network failed)."""
        old, self.pubsub = self.pubsub, self.link.client().pubsub(
            ignore_subscribe_messages=True)
        with contextlib.suppress(Exception):
            await old.aclose()
        if self.deliver:
            await self.link.run("listen again", lambda r: self.pubsub.subscribe(*self.deliver))
            await self.replay_kept(self.alive_at - CLOCK_SKEW)

    async def replay_kept(self, since: float) -> None:
        """Deliver again what was published with ``publish_kept`` since ``since`` (wall
        clock) on the channels listened to: what the broken connection may have missed."""
        channels = list(self.deliver)
        bus = self.link.key("bus", "").encode()
        keys = [self.link.key("kept", c[len(bus):].decode()) for c in channels]

        async def read(r: Any) -> list[Any]:
            async with r.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.zrangebyscore(key, int(since * 1000), "+inf")
                return list(await pipe.execute())

        for channel, kept in zip(channels, await self.link.run("read kept messages", read),
                                 strict=True):
            deliver = self.deliver.get(channel)
            if deliver is None:
                continue
            for message in kept:
                try:
                    deliver(bytes(message).partition(b"\n")[2])  # (after its stamp)
                except Exception:
                    log.exception("session bus: delivering a kept message failed")

    async def read(self) -> None:
        broken = False
        while True:
            keep_cancel(0)  # a cancellation redis-py dropped (redis_link) ends the reader
            if not self.deliver:
                await asyncio.sleep(0.05)
                continue
            try:
                if broken:
                    await self.renew()
                    broken = False
                    log.warning("session bus: Redis subscriber connected again")
                message = await self.pubsub.get_message(timeout=1.0)
                self.alive_at = time.time()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not broken:
                    log.warning("session bus: Redis subscriber failed (%s); reconnecting", exc)
                broken = True
                await asyncio.sleep(RETRY_SECONDS)
                continue
            if message is None or message.get("type") != "message":
                continue
            deliver = self.deliver.get(message["channel"])
            if deliver is not None:
                try:
                    deliver(message["data"])
                except Exception:
                    log.exception("session bus: delivering a message failed")


class RedisBus:
    """The ``SessionBus`` of a deployment on one Redis."""

    def __init__(self, link: RedisLink | str) -> None:
        self.link = link if isinstance(link, RedisLink) else RedisLink(link)
        self._subscribers: dict[asyncio.AbstractEventLoop, _Subscriber] = {}

    def _channel(self, session_id: str) -> bytes:
        return self.link.key("bus", session_id).encode()

    def _subscriber(self) -> _Subscriber:
        loop = asyncio.get_running_loop()
        sub = self._subscribers.get(loop)
        if sub is None:
            sub = self._subscribers[loop] = _Subscriber(self.link)
        if sub.reader is None or sub.reader.done():
            sub.reader = loop.create_task(sub.read())
        return sub

    async def publish(self, session_id: str, message: bytes) -> None:
        channel = self._channel(session_id)
        await self.link.run("deliver to the instance holding the session",
                            lambda r: r.publish(channel, message))

    async def publish_kept(self, session_id: str, message: bytes, keep: float = 60.0) -> None:
        """``publish``, and keep ``message`` for ``keep`` seconds for the subscribers that
        reconnect meanwhile (see the module docstring)."""
        channel = self._channel(session_id)
        key = self.link.key("kept", session_id)
        now = int(time.time() * 1000)
        stamped = b"%d\n%s" % (now, message)  # (the same message kept twice stays twice)

        async def work(r: Any) -> Any:
            async with r.pipeline(transaction=False) as pipe:
                pipe.zadd(key, {stamped: now})
                pipe.zremrangebyscore(key, 0, now - int(keep * 1000))
                pipe.pexpire(key, int(keep * 1000))
                pipe.publish(channel, message)
                return await pipe.execute()

        await self.link.run("deliver to the instance holding the session", work)

    async def listen(self, session_id: str, deliver: Callable[[bytes], None]) -> None:
        sub = self._subscriber()
        channel = self._channel(session_id)
        await self.link.run("listen for the session", lambda r: sub.pubsub.subscribe(channel))
        sub.deliver[channel] = deliver  # (the reader reads once a subscription exists)

    async def unlisten(self, session_id: str) -> None:
        sub = self._subscriber()
        channel = self._channel(session_id)
        if sub.deliver.pop(channel, None) is not None:
            await self.link.run("stop listening for the session",
                                lambda r: sub.pubsub.unsubscribe(channel))

    async def aclose(self) -> None:
        """Stop the reader and close the subscriber connection of the running loop."""
        sub = self._subscribers.pop(asyncio.get_running_loop(), None)
        if sub is None:
            return
        if sub.reader is not None:
            await stop_tasks([sub.reader], self.link.timeout * 2 + 1, "session bus reader")
        await sub.pubsub.aclose()
