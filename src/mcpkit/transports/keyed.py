"""``KeyedLock``: one holder per key at a time, with nothing kept for a key no one holds
or awaits (a hostile client naming many keys leaves no trace once its requests end)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class KeyedLock:
    """``async with locks.hold(key):`` waits for the key's current holder, if any."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[str, tuple[asyncio.Lock, list[int]]] = {}  # key -> (lock, users)

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._held.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._held[key]

    def __len__(self) -> int:
        """Keys held or awaited now."""
        return len(self._held)
