"""SSE event stores for Streamable HTTP resumability: memory (default) and SQLite.

An event id is ``"<stream>_<seq>"``: ``seq`` counts up across all streams of one session,
so ids are unique in the session and name their stream. ``replay(session, last_id)``
returns the events of *that* stream after ``last_id``, in order: never another stream's,
never another session's (an id this session never issued gives ``None``).

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


@dataclass(slots=True)
class _Log:
    seq: int = 0
    events: deque[tuple[int, str, bytes]] = field(default_factory=deque)


class MemoryEventStore:
    """Events in memory, at most ``max_events`` per session (oldest dropped first)."""

    def __init__(self, max_events: int = 1000) -> None:
        self.max_events = max_events
        self._logs: dict[str, _Log] = {}

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        log = self._logs.get(session_id)
        if log is None:
            log = self._logs[session_id] = _Log()
        log.seq += 1
        log.events.append((log.seq, stream_id, data))
        while len(log.events) > self.max_events:
            log.events.popleft()
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

    def __init__(self, path: str, max_events: int = 1000) -> None:
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
