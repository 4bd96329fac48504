"""One instance of a deployment sharing its state on Redis (``asgi_app(store=...)``).

``shared_stores`` turns ``store=`` into the Redis stores. ``Sharing`` is the app's
lifespan around the server's own: while it runs, ``list_changed`` and
``resources/updated`` made on this instance are announced to every instance on the bus's
deployment channel (this one included) and what is heard there is delivered to the
sessions and listen streams this instance holds (``Peers``); at its end the stores'
connections are closed. The announcement is published in the background: if Redis
cannot be reached it is logged and lost (each instance's own sessions then miss it).
A notification made outside the app's event loop, or before the deployment channel is
listened to, is delivered here only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from ..storage.bus import DEPLOYMENT, LIST_CHANGED, TASKS, UPDATED
from ..storage.cancels import stop_tasks
from ..storage.faults import StoreUnavailable
from .peers import Peers

if TYPE_CHECKING:
    from ..session import Session
    from ..storage.redis_stores import RedisStores
    from .task_relay import TaskRelay

log = logging.getLogger("mcpkit.server")

LISTEN_RETRY = 1.0
"""Seconds between attempts to listen to the deployment channel while Redis is away."""


def shared_stores(store: str | RedisStores, ttl: float) -> RedisStores:
    """The stores ``asgi_app(store=...)`` names: a ``redis://`` URL (records and event
    logs expiring ``ttl`` seconds after their last use) or ``RedisStores`` as given."""
    if isinstance(store, str):
        from ..storage.redis_stores import RedisStores

        return RedisStores.from_url(store, ttl=ttl)
    return store


class Sharing:
    """Deployment-wide notifications and the stores' lifetime (module docstring)."""

    def __init__(self, stores: RedisStores, peers: Peers,
                 lifespan: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        self.stores = stores
        self.peers = peers
        self.lifespan = lifespan
        #: Set once the app is built: whether a list_changed for a session is written here.
        self.reaches: Callable[[Session], bool] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        #: Announcements of a list change or resource update not yet published: a storm
        #: of the same change (200 tools added in a loop) is published once.
        self._unsent: set[bytes] = set()
        self._listening = False  # the deployment channel is listened to (else: local)
        self.origin = secrets.token_hex(8)  # tells this instance's announcements apart
        #: Set when the tasks are shared: carries tasks/update and tasks/cancel.
        self.relay: TaskRelay | None = None

    @asynccontextmanager
    async def scope(self) -> AsyncIterator[Any]:
        """The app's lifespan: the server's, with announcements on while it runs."""
        self._loop = asyncio.get_running_loop()
        self._spawn(self._listen())
        self.peers.announce, self.peers.reaches = self.announce, self.reaches
        bound = self.stores.link.timeout * 2 + 1
        try:
            async with self.lifespan() as state:
                try:
                    yield state
                finally:  # this instance's task handlers end while the server's lifespan
                    if self.relay is not None:  # and Redis are still there for them
                        await self.relay.manager.stop_handlers(bound)  # (stored: failed)
        finally:
            self.peers.announce = self.peers.reaches = None
            await stop_tasks(list(self._tasks), bound, "deployment announcement")
            if self.relay is not None:
                await self.relay.stop()
            await self.stores.aclose()

    def announce(self, kind: str, value: str) -> bool:
        """Publish a change (``Peers.announce``) to every instance, in the background;
        False when not on the app's loop or not listening yet (then the caller delivers
        it here)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if running is not self._loop or not self._listening:
            return False
        if kind == "tasks":  # delivered here already: tell the others only
            message = TASKS + json.dumps([self.origin, *json.loads(value)]).encode()
        else:
            message = (LIST_CHANGED if kind == "list_changed" else UPDATED) + value.encode()
            if message in self._unsent:
                return True  # the same change, not yet published: that one tells it
            self._unsent.add(message)
        self._spawn(self._publish(message))
        return True

    def heard(self, message: bytes) -> None:
        kind, value = message[:1], message[1:].decode(errors="replace")
        if kind == LIST_CHANGED:
            self.peers.heard_list_changed(value)
        elif kind == UPDATED:
            self.peers.heard_resource_updated(value)
        elif kind == TASKS:
            with contextlib.suppress(ValueError, TypeError):
                origin, task_id, params = json.loads(value)
                if origin != self.origin and isinstance(params, dict):
                    self.peers.heard_task_changed(str(task_id), params)

    def _spawn(self, coro: Any) -> None:
        assert self._loop is not None
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _publish(self, message: bytes) -> None:
        self._unsent.discard(message)  # a change made from now on is published again
        try:
            await self.stores.bus.publish(DEPLOYMENT, message)
        except StoreUnavailable as exc:
            log.warning("a change could not be announced to the other instances: %s", exc)

    async def _listen(self) -> None:
        """Listen to the deployment channel (and the task relay's), retrying while Redis
        cannot be reached."""
        await self._keep(lambda: self.stores.bus.listen(DEPLOYMENT, self.heard))
        self._listening = True
        if self.relay is not None:  # then this instance's task channel (one at a time)
            await self._keep(self.relay.start)

    @staticmethod
    async def _keep(start: Callable[[], Any]) -> None:
        """``await start()`` until it succeeds, retrying while Redis cannot be reached."""
        while True:
            with contextlib.suppress(StoreUnavailable):
                await start()
                return
            await asyncio.sleep(LISTEN_RETRY)
