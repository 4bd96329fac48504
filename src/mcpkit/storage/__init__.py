"""State that outlives one request: SSE event logs, session and task records (memory,
SQLite)."""

from .events import EventStore, MemoryEventStore, SQLiteEventStore
from .sessions import MemorySessionStore, SessionStore, SharedSecret, SQLiteSessionStore
from .tasks import MemoryTaskStore, TaskRecord, TaskStore
from .tasks_sqlite import SQLiteTaskStore

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
