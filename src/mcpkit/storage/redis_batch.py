"""One Lua script's calls made in the same turn of the event loop, sent to Redis together.

Every request of a session on Redis renews its record (``RedisSessionStore.touch``): one
script call. Made one at a time, each call costs an instance redis-py's whole per-command
path (a pooled connection taken and given back, a write, a read, retry and timeout
wrappers), about as much CPU as the rest of a ``tools/call echo``. ``ScriptBatch`` queues
the calls of one turn of the event loop and sends them in the next as one pipeline of
``EVALSHA`` (one write, one read, one connection): under load, many sessions' renewals
share a round trip; alone, a call waits one loop turn more.

Each call still gets its own answer (or its own Redis error). A failure of the pipeline
as a whole (Redis unreachable, a timeout) is every queued call's failure, which
``RedisLink.run`` turns into ``StoreUnavailable``; a script Redis no longer knows
(``NOSCRIPT`` after a restart) is loaded again and the batch sent once more. A caller
that gave up (its ``run`` timed out, its request was cancelled) is skipped.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .redis_link import RedisLink

Call = tuple[list[str], list[Any], "asyncio.Future[Any]"]


class ScriptBatch:
    """Calls of the Lua script ``source`` through ``link``, pipelined per loop turn."""

    def __init__(self, link: RedisLink, source: str) -> None:
        self.link = link
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()
        self._queued: dict[asyncio.AbstractEventLoop, list[Call]] = {}
        self._sending: set[asyncio.Task[None]] = set()  # strong references until done

    def __call__(self, keys: list[str], args: list[Any]) -> asyncio.Future[Any]:
        """The script's answer for ``keys`` and ``args``, once this turn's batch is sent."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        queued = self._queued.get(loop)
        if queued is None:
            queued = self._queued[loop] = []
            loop.call_soon(self._send_queued, loop)
        queued.append((keys, args, future))
        return future

    def _send_queued(self, loop: asyncio.AbstractEventLoop) -> None:
        calls = self._queued.pop(loop, [])
        task = loop.create_task(self._send(calls))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, calls: list[Call]) -> None:
        live = [call for call in calls if not call[2].done()]
        if not live:
            return
        try:
            answers = await self._pipeline(live)
            if any(_is_noscript(a) for a in answers):
                await self.link.client().script_load(self.source)
                answers = await self._pipeline(live)
        except asyncio.CancelledError:
            for _, _, future in live:
                future.cancel()
            raise
        except BaseException as exc:  # each caller's run() sees why Redis failed
            for _, _, future in live:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for (_, _, future), answer in zip(live, answers, strict=True):
            if not future.done():
                if isinstance(answer, Exception):
                    future.set_exception(answer)
                else:
                    future.set_result(answer)

    async def _pipeline(self, calls: list[Call]) -> list[Any]:
        pipe = self.link.client().pipeline(transaction=False)
        for keys, args, _ in calls:
            pipe.evalsha(self.sha, len(keys), *keys, *args)
        answers: list[Any] = await pipe.execute(raise_on_error=False)
        return answers


def _is_noscript(answer: Any) -> bool:
    from redis.exceptions import NoScriptError

    return isinstance(answer, NoScriptError)
