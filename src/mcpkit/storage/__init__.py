"""State that outlives one request: SSE event logs, session and task records (memory,
SQLite).

The names are loaded on first use (``__getattr__``), so a server that keeps its tasks in
memory never imports ``sqlite3`` just by importing ``mcpkit``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .events import EventStore, MemoryEventStore, SQLiteEventStore
    from .sessions import MemorySessionStore, SessionStore, SharedSecret, SQLiteSessionStore
    from .tasks import MemoryTaskStore, TaskRecord, TaskStore
    from .tasks_sqlite import SQLiteTaskStore

_WHERE = {
    "EventStore": "events",
    "MemoryEventStore": "events",
    "SQLiteEventStore": "events",
    "MemorySessionStore": "sessions",
    "SessionStore": "sessions",
    "SharedSecret": "sessions",
    "SQLiteSessionStore": "sessions",
    "MemoryTaskStore": "tasks",
    "TaskRecord": "tasks",
    "TaskStore": "tasks",
    "SQLiteTaskStore": "tasks_sqlite",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "EventStore",
    "MemoryEventStore",
    "MemorySessionStore",
    "MemoryTaskStore",
    "SQLiteEventStore",
    "SQLiteSessionStore",
    "SQLiteTaskStore",
    "SessionStore",
    "SharedSecret",
    "TaskRecord",
    "TaskStore",
]
