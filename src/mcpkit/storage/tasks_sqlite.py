"""Task records in SQLite: a finished task's result survives a restart.

One table, ``mcp_tasks`` (may share a database file with the session and event stores).
The disk work runs in a worker thread, one statement at a time under a lock, so the
event loop never waits on the disk and writes of one record never reorder. At start-up
the server calls ``abandon``: a task that was ``working`` or ``input_required`` when the
previous process died is reported ``failed`` with a message that says so.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import anyio.to_thread

from .tasks import TaskRecord, failed_error


class SQLiteTaskStore:
    """``TaskStore`` on an SQLite database file (``":memory:"`` for a private one)."""

    def __init__(self, path: str) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS mcp_tasks (id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
            "created REAL NOT NULL, expires REAL, status TEXT NOT NULL, record BLOB NOT NULL)")
        self._db.execute(
            "CREATE INDEX IF NOT EXISTS mcp_tasks_owner ON mcp_tasks (owner, created, id)")

    def _put(self, record: TaskRecord) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO mcp_tasks (id, owner, created, expires, status, record) VALUES "
                "(?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET status = excluded.status, "
                "expires = excluded.expires, record = excluded.record",
                (record.task_id, record.owner, record.created, record.expires, record.status,
                 record.to_json()))

    def _get(self, task_id: str) -> TaskRecord | None:
        with self._lock:
            row = self._db.execute(
                "SELECT record FROM mcp_tasks WHERE id = ? AND (expires IS NULL OR "
                "expires > ?)", (task_id, time.time())).fetchone()
        return None if row is None else TaskRecord.from_json(row[0])

    def _page(self, owner: str, after: tuple[float, str] | None, limit: int
              ) -> list[TaskRecord]:
        created, task_id = after if after is not None else (-1.0, "")
        with self._lock:
            rows = self._db.execute(
                "SELECT record FROM mcp_tasks WHERE owner = ? AND (created, id) > (?, ?) AND "
                "(expires IS NULL OR expires > ?) ORDER BY created, id LIMIT ?",
                (owner, created, task_id, time.time(), limit)).fetchall()
        return [TaskRecord.from_json(r[0]) for r in rows]

    def _sweep(self, now: float) -> list[str]:
        with self._lock:
            rows = self._db.execute(
                "DELETE FROM mcp_tasks WHERE expires IS NOT NULL AND expires <= ? RETURNING id",
                (now,)).fetchall()
        return [r[0] for r in rows]

    def _abandon(self, message: str) -> int:
        with self._lock:
            rows = self._db.execute(
                "SELECT record FROM mcp_tasks WHERE status IN ('working', 'input_required')"
            ).fetchall()
        now = time.time()
        for (data,) in rows:
            record = TaskRecord.from_json(data)
            record.status, record.updated, record.message = "failed", now, message
            record.error = failed_error(message)
            self._put(record)
        return len(rows)

    async def put(self, record: TaskRecord) -> None:
        await anyio.to_thread.run_sync(self._put, record)

    async def get(self, task_id: str) -> TaskRecord | None:
        return await anyio.to_thread.run_sync(self._get, task_id)

    async def page(self, owner: str, after: tuple[float, str] | None, limit: int
                   ) -> list[TaskRecord]:
        return await anyio.to_thread.run_sync(self._page, owner, after, limit)

    async def sweep(self, now: float) -> list[str]:
        return await anyio.to_thread.run_sync(self._sweep, now)

    async def abandon(self, message: str) -> int:
        return await anyio.to_thread.run_sync(self._abandon, message)

    async def ready(self) -> None:
        """Readiness (``/ready``): the database answers a query; raises when it does not
        (closed, unreadable)."""
        await anyio.to_thread.run_sync(self._probe)

    def _probe(self) -> None:
        with self._lock:
            self._db.execute("SELECT 1").fetchone()

    def close(self) -> None:
        with self._lock:
            self._db.close()
