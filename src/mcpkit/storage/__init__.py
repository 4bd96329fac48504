"""State that outlives one request: SSE event logs, session and task records and, for
several instances of one deployment, rate-limit buckets and the bus between them
(memory, SQLite, Redis).

The names are loaded on first use (``__getattr__``), so a server that keeps its state in
memory never imports ``sqlite3`` just by importing ``mcpkit``, and nothing of redis-py
(the ``mcpkit[redis]`` extra) loads unless a Redis store is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bus import SessionBus
    from .events import EventStore, MemoryEventStore, SQLiteEventStore
    from .faults import StoreUnavailable
    from .redis_buckets import RedisBuckets
    from .redis_bus import RedisBus
    from .redis_events import RedisEventStore
    from .redis_link import RedisLink
    from .redis_sessions import RedisSessionStore
    from .redis_stores import RedisStores
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
    "SessionBus": "bus",
    "StoreUnavailable": "faults",
    "RedisBuckets": "redis_buckets",
    "RedisBus": "redis_bus",
    "RedisEventStore": "redis_events",
    "RedisLink": "redis_link",
    "RedisSessionStore": "redis_sessions",
    "RedisStores": "redis_stores",
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
    "RedisBuckets",
    "RedisBus",
    "RedisEventStore",
    "RedisLink",
    "RedisSessionStore",
    "RedisStores",
    "SQLiteEventStore",
    "SQLiteSessionStore",
    "SQLiteTaskStore",
    "SessionBus",
    "SessionStore",
    "SharedSecret",
    "StoreUnavailable",
    "TaskRecord",
    "TaskStore",
]
