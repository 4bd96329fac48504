"""``TokenCache``: verification results kept for a while, keyed by the token's hash.

What: a bounded map from ``sha256(token)`` to a value with a deadline (monotonic clock).
An entry is served until its deadline and then dropped; when the cache is full the
least recently used entry makes room.

Why: verifying by introspection costs a round trip to the authorization server per
token, and a client sends the same token on every request. The key is a digest so the
token itself is never stored (a memory dump or a debugger shows no credential), and the
bound keeps a flood of distinct tokens from growing memory without limit.

Failure modes: none; a miss is ``None``. A deadline at or before now is never stored.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")


def token_key(token: str | bytes) -> bytes:
    """The cache key of a token (or of a raw header value carrying one): its SHA-256."""
    data = token if isinstance(token, bytes) else token.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).digest()


def within_expiry(ttl: float, expires_at: float | None, now: float | None = None) -> float:
    """``ttl`` shortened so that an entry for a token never outlives the token's
    ``expires_at`` (seconds since the epoch; None: no expiry). ``now``: ``time.time()``."""
    if expires_at is None:
        return ttl
    return min(ttl, expires_at - (time.time() if now is None else now))


class TokenCache(Generic[V]):
    """At most ``max_entries`` values, each until its own deadline (``time.monotonic``)."""

    def __init__(self, max_entries: int = 10_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self.max_entries = max_entries
        self._entries: OrderedDict[bytes, tuple[float, V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> V | None:
        """The value stored under ``key`` if its deadline has not passed."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= time.monotonic():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: bytes, value: V, ttl: float) -> None:
        """Keep ``value`` for ``ttl`` seconds (nothing is kept when ``ttl <= 0``)."""
        if ttl <= 0:
            self._entries.pop(key, None)
            return
        self._entries[key] = (time.monotonic() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
