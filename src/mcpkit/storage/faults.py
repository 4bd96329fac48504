"""The one failure a shared store reports: it cannot be reached right now.

A store on another machine (Redis) can be down, restarting or too slow. Its calls then
raise ``StoreUnavailable`` within a bounded time instead of hanging; the HTTP transport
answers the request that needed the store with 503 and ``Retry-After`` (the message says
why), and the next request tries again, so an instance recovers by itself once the store
is back. Nothing in this module imports a driver.

What must not be lost (an SSE stream's events, a task's status) is not refused: its write
waits the outage out (``outlast``), tried again every ``RETRY_EVERY`` seconds for up to
``OUTAGE_WAIT`` seconds, and only then fails.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")

OUTAGE_WAIT = 60.0
"""Seconds a write that must not be lost waits for an unreachable shared store."""
RETRY_EVERY = 0.5
"""Seconds between attempts of such a write while the store is unreachable."""


class StoreUnavailable(Exception):
    """A shared store did not answer (unreachable, restarting, or past its timeout).

    ``retry_after``: whole seconds after which a retry may succeed (the 503's
    ``Retry-After``)."""

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


async def outlast(write: Callable[[], Awaitable[T]], wait: float = OUTAGE_WAIT) -> T:
    """``write()``, tried again every ``RETRY_EVERY`` seconds while it raises
    ``StoreUnavailable``, for at most ``wait`` seconds (then that ``StoreUnavailable``).
    A store that never raises it (memory, SQLite) costs one call, as before."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return await write()
        except StoreUnavailable:
            if time.monotonic() + RETRY_EVERY > deadline:
                raise
        await anyio.sleep(RETRY_EVERY)


__all__ = ["OUTAGE_WAIT", "RETRY_EVERY", "StoreUnavailable", "outlast"]
