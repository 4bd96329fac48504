"""Task records: what a task is, whoever polls it, and where records are kept.

A ``TaskRecord`` is the durable part of a task (its id, owner, status, timestamps, ttl,
and once terminal its result or JSON-RPC error); the running handler, pending input
requests and waiters live in the server (``server/task_runs.py``), never in the store.

``TaskStore`` is the small async interface a store implements (memory here, SQLite in
``tasks_sqlite.py``; a shared store for several instances implements the same five
calls). ``get`` never returns an expired record; ``sweep`` deletes them; ``abandon``
turns the records of tasks that were running when a process died into ``failed`` ones,
so none stays ``working`` forever.
"""

from __future__ import annotations

import base64
import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import orjson

from ..protocol.errors import InvalidParams

JSON = dict[str, Any]


@dataclass(slots=True)
class TaskRecord:
    """One task's durable state (times are epoch seconds; ttl and poll in ms)."""

    task_id: str
    owner: str
    """Who may see the task: principal identity and session, as the server binds it."""
    form: str
    """``"core"`` (2025-11-25) or ``"ext"`` (2026-07-28 extension): a task is visible
    only through the generation that created it."""
    method: str
    status: str
    created: float
    updated: float
    ttl_ms: int | None
    poll_ms: int | None
    message: str | None = None
    result: JSON | None = None
    error: JSON | None = None
    inputs: JSON | None = None
    """2026-07-28: the outstanding input requests by key (while ``input_required``), so
    an instance that does not run the task can answer ``tasks/get`` with them."""

    @property
    def expires(self) -> float | None:
        """When the task may be deleted (None: never)."""
        return None if self.ttl_ms is None else self.created + self.ttl_ms / 1000

    def expired(self, now: float) -> bool:
        end = self.expires
        return end is not None and now >= end

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_json(cls, data: bytes | str) -> TaskRecord:
        return cls(**orjson.loads(data))


def encode_cursor(record: TaskRecord) -> str:
    """An opaque ``tasks/list`` cursor: the position after ``record``."""
    return base64.urlsafe_b64encode(orjson.dumps([record.created, record.task_id])).decode()


def decode_cursor(cursor: Any) -> tuple[float, str] | None:
    """The position a cursor names (None: from the start); a cursor we did not issue is
    ``InvalidParams`` (R25-11.TASKS.14)."""
    if cursor is None:
        return None
    try:
        created, task_id = orjson.loads(base64.urlsafe_b64decode(str(cursor).encode()))
        if not isinstance(task_id, str) or not isinstance(created, int | float):
            raise ValueError
    except Exception:
        raise InvalidParams("Invalid params: this cursor was not issued by tasks/list; "
                            "list again without a cursor.") from None
    return float(created), task_id


class TaskStore(Protocol):
    """Where a server keeps its task records (all calls are safe on one event loop)."""

    async def put(self, record: TaskRecord) -> None:
        """Create or replace ``record`` (durable when this returns)."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``, or None when unknown or expired."""
        ...

    async def page(self, owner: str, after: tuple[float, str] | None, limit: int
                   ) -> list[TaskRecord]:
        """Up to ``limit`` unexpired records of ``owner`` in creation order, after the
        position ``after`` (a decoded cursor)."""
        ...

    async def sweep(self, now: float) -> list[str]:
        """Delete the records expired at ``now``; their ids."""
        ...

    async def abandon(self, message: str) -> int:
        """Mark every non-terminal record ``failed`` with ``message`` (at start-up: their
        handlers died with the previous process); how many there were."""
        ...


def failed_error(message: str) -> JSON:
    """The JSON-RPC error a task that could not finish carries."""
    return {"code": -32603, "message": message}


class MemoryTaskStore:
    """Records in memory (the default): they end with the process."""

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._by_owner: dict[str, dict[str, TaskRecord]] = {}

    async def put(self, record: TaskRecord) -> None:
        self.keep(record)

    def keep(self, record: TaskRecord) -> None:
        """``put`` without waiting (it never needs to, in memory)."""
        self._records[record.task_id] = record
        self._by_owner.setdefault(record.owner, {})[record.task_id] = record

    async def get(self, task_id: str) -> TaskRecord | None:
        record = self._records.get(task_id)
        if record is not None and record.expired(time.time()):
            self._drop(record)
            return None
        return record

    def peek(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id`` as kept, expired or not, without waiting."""
        return self._records.get(task_id)

    async def page(self, owner: str, after: tuple[float, str] | None, limit: int
                   ) -> list[TaskRecord]:
        now = time.time()
        mine = sorted(self._by_owner.get(owner, {}).values(),
                      key=lambda r: (r.created, r.task_id))
        return [r for r in mine if (after is None or (r.created, r.task_id) > after)
                and not r.expired(now)][:limit]

    async def sweep(self, now: float) -> list[str]:
        gone = [r for r in self._records.values() if r.expired(now)]
        for record in gone:
            self._drop(record)
        return [r.task_id for r in gone]

    async def abandon(self, message: str) -> int:
        return 0  # a new process starts with no records

    def _drop(self, record: TaskRecord) -> None:
        self._records.pop(record.task_id, None)
        owned = self._by_owner.get(record.owner)
        if owned is not None:
            owned.pop(record.task_id, None)
            if not owned:
                del self._by_owner[record.owner]
