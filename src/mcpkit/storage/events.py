"""SSE event stores for Streamable HTTP resumability: memory (default) and SQLite.

An event id is ``"<stream>_<seq>"``: ``seq`` counts up across all streams of one session,
so ids are unique in the session and name their stream. ``replay(session, last_id)``
returns the events of *that* stream after ``last_id``, in order: never another stream's,
never another session's (an id this session never issued gives ``None``).

Bounds per session: the memory store keeps at most ``max_events`` events and
``max_bytes`` bytes of event data (``DEFAULT_MAX_EVENTS``, ``DEFAULT_MAX_BYTES``), oldest
dropped first, each event held at its size (a compact copy, ``protocol.jsonrpc.compact``);
the SQLite store ``max_events`` rows (on disk), until the session ends; the Redis store
(``redis_events``) ``max_events`` events and ``max_bytes`` bytes, for ``ttl`` seconds after
the session's last event. Replaying from a dropped event gives ``None`` (the client opens a
new stream).

Failure modes: the SQLite store raises ``sqlite3.Error`` subclasses when the database is
unusable; both stores are safe to call from one event loop (SQLite work runs in a worker
thread so the loop never waits on the disk).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

import anyio.to_thread

from ..protocol.jsonrpc import compact

DEFAULT_MAX_EVENTS = 1000
"""Events kept per session by default (every store)."""
DEFAULT_MAX_BYTES = 1024 * 1024
"""Bytes of event data kept per session by default (memory and Redis stores): with the
default 10,000 sessions of an HTTP endpoint, at most ~10 GiB of events in memory."""


class EventStore(Protocol):
    """Where SSE events wait to be replayed after a broken connection."""

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Store one event; return its id."""
        ...

    async def replay(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        """(stream id, events after ``last_event_id`` on that stream), or None if the id is
        not one of this session's."""
        ...

    async def drop(self, session_id: str) -> None:
        """Forget a session's events."""
        ...


def parse_event_id(event_id: str) -> tuple[str, int] | None:
    stream, sep, seq = event_id.rpartition("_")
    if not sep or not stream or not seq.isdigit() or len(event_id) > 200:
        return None
    return stream, int(seq)


def _check_bounds(max_events: int, max_bytes: int | None = None) -> None:
    if not isinstance(max_events, int) or max_events < 1:
        raise ValueError(f"max_events must be an int of at least 1, got {max_events!r}")
    if max_bytes is not None and (not isinstance(max_bytes, int) or max_bytes < 1):
        raise ValueError(f"max_bytes must be an int of at least 1, got {max_bytes!r}")


@dataclass(slots=True)
class _Log:
    seq: int = 0
    size: int = 0  # bytes of event data kept
    events: deque[tuple[int, str, bytes]] = field(default_factory=deque)


class MemoryEventStore:
    """Events in memory, at most ``max_events`` and ``max_bytes`` bytes of event data per
    session (oldest dropped first; an event bigger than ``max_bytes`` is not kept)."""

    def __init__(self, max_events: int = DEFAULT_MAX_EVENTS,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        _check_bounds(max_events, max_bytes)
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._logs: dict[str, _Log] = {}

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        log = self._logs.get(session_id)
        if log is None:
            log = self._logs[session_id] = _Log()
        log.seq += 1
        events = log.events
        events.append((log.seq, stream_id, compact(data)))  # kept: held at its size
        log.size += len(data)
        while len(events) > self.max_events or log.size > self.max_bytes:
            log.size -= len(events.popleft()[2])
        return f"{stream_id}_{log.seq}"

    async def replay(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        parsed = parse_event_id(last_event_id)
        log = self._logs.get(session_id)
        if parsed is None or log is None:
            return None
        stream, seq = parsed
        if not any(s == seq and st == stream for s, st, _ in log.events):
            return None  # never issued in this session, another stream's, or evicted
        out = [(f"{st}_{s}", d) for s, st, d in log.events if st == stream and s > seq]
        return stream, out

    async def drop(self, session_id: str) -> None:
        self._logs.pop(session_id, None)


class SQLiteEventStore:
    """Events in a SQLite database: they survive a restart of the server."""

    def __init__(self, path: str, max_events: int = DEFAULT_MAX_EVENTS) -> None:
        _check_bounds(max_events)
        self.path = path
        self.max_events = max_events
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS mcp_events (session TEXT NOT NULL, seq INTEGER NOT "
            "NULL, stream TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (session, seq))"
        )

    def _append(self, session_id: str, stream_id: str, data: bytes) -> str:
        with self._lock:
            row = self._db.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM mcp_events WHERE session = ?", (session_id,)
            ).fetchone()
            seq = int(row[0]) + 1
            self._db.execute(
                "INSERT INTO mcp_events (session, seq, stream, data) VALUES (?, ?, ?, ?)",
                (session_id, seq, stream_id, data),
            )
            if seq > self.max_events:
                self._db.execute(
                    "DELETE FROM mcp_events WHERE session = ? AND seq <= ?",
                    (session_id, seq - self.max_events),
                )
        return f"{stream_id}_{seq}"

    def _replay(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        parsed = parse_event_id(last_event_id)
        if parsed is None:
            return None
        stream, seq = parsed
        with self._lock:
            known = self._db.execute(
                "SELECT 1 FROM mcp_events WHERE session = ? AND seq = ? AND stream = ?",
                (session_id, seq, stream),
            ).fetchone()
            if known is None:
                return None
            rows = self._db.execute(
                "SELECT seq, data FROM mcp_events WHERE session = ? AND stream = ? AND seq > ? "
                "ORDER BY seq",
                (session_id, stream, seq),
            ).fetchall()
        return stream, [(f"{stream}_{s}", bytes(d)) for s, d in rows]

    def _drop(self, session_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM mcp_events WHERE session = ?", (session_id,))

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        return await anyio.to_thread.run_sync(self._append, session_id, stream_id, data)

    async def replay(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        return await anyio.to_thread.run_sync(self._replay, session_id, last_event_id)

    async def drop(self, session_id: str) -> None:
        await anyio.to_thread.run_sync(self._drop, session_id)

    def close(self) -> None:
        with self._lock:
            self._db.close()
