"""Session records for Streamable HTTP: what a server needs to take a session back.

A record holds what the handshake settled (revision, client info and capabilities,
whether ``notifications/initialized`` arrived, the log level). With ``SQLiteSessionStore``
a restarted server recognises its sessions' ids, so clients resume their SSE streams
instead of starting over; with ``MemorySessionStore`` (default) sessions end with the
process and clients re-initialize after a 404, as the spec requires.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from typing import Any, Protocol, runtime_checkable

import anyio.to_thread

Record = dict[str, Any]


class SessionStore(Protocol):
    """Where a Streamable HTTP server keeps its sessions' records."""

    async def save(self, session_id: str, record: Record) -> None:
        """Store (or replace) the record of a session (a JSON-able dict)."""
        ...

    async def load(self, session_id: str) -> Record | None:
        """The record saved for ``session_id``, or None if there is none."""
        ...

    async def delete(self, session_id: str) -> None:
        """Forget an ended session's record."""
        ...


@runtime_checkable
class SharedSecret(Protocol):
    """A store that also keeps a key every server instance using it reads back the same:
    ``Server.asgi_app(session_store=...)`` seals 2026-07-28 ``requestState`` with it, so
    an MRTR round trip begun on one instance can finish on another."""

    def secret(self) -> bytes:
        """The shared key (32 random bytes, made by whichever instance asked first)."""
        ...


class MemorySessionStore:
    """Keeps nothing beyond the live sessions themselves (the default)."""

    async def save(self, session_id: str, record: Record) -> None:
        return None

    async def load(self, session_id: str) -> Record | None:
        return None

    async def delete(self, session_id: str) -> None:
        return None


class SQLiteSessionStore:
    """Session records in SQLite (may share a database file with ``SQLiteEventStore``)."""

    def __init__(self, path: str) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS mcp_sessions (id TEXT PRIMARY KEY, record TEXT NOT NULL)"
        )

    def secret(self) -> bytes:
        """A 32-byte key kept in the database, made on first use: every server instance
        on this database seals and opens MRTR ``requestState`` with the same key."""
        with self._lock:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS mcp_secret (id INTEGER PRIMARY KEY CHECK (id = 1), "
                "key BLOB NOT NULL)"
            )
            self._db.execute("INSERT OR IGNORE INTO mcp_secret (id, key) VALUES (1, ?)",
                             (secrets.token_bytes(32),))
            row = self._db.execute("SELECT key FROM mcp_secret WHERE id = 1").fetchone()
        return bytes(row[0])

    def _save(self, session_id: str, record: Record) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO mcp_sessions (id, record) VALUES (?, ?) ON CONFLICT(id) DO UPDATE "
                "SET record = excluded.record",
                (session_id, json.dumps(record)),
            )

    def _load(self, session_id: str) -> Record | None:
        with self._lock:
            row = self._db.execute(
                "SELECT record FROM mcp_sessions WHERE id = ?", (session_id,)
            ).fetchone()
        if row is None:
            return None
        value = json.loads(row[0])
        return value if isinstance(value, dict) else None

    def _delete(self, session_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM mcp_sessions WHERE id = ?", (session_id,))

    async def save(self, session_id: str, record: Record) -> None:
        await anyio.to_thread.run_sync(self._save, session_id, record)

    async def load(self, session_id: str) -> Record | None:
        return await anyio.to_thread.run_sync(self._load, session_id)

    async def delete(self, session_id: str) -> None:
        await anyio.to_thread.run_sync(self._delete, session_id)

    def close(self) -> None:
        with self._lock:
            self._db.close()
