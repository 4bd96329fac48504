"""State that outlives one request: SSE event logs and session records (memory, SQLite)."""

from .events import EventStore, MemoryEventStore, SQLiteEventStore
from .sessions import MemorySessionStore, SessionStore, SharedSecret, SQLiteSessionStore

__all__ = [
    "EventStore",
    "MemoryEventStore",
    "MemorySessionStore",
    "SQLiteEventStore",
    "SQLiteSessionStore",
    "SessionStore",
    "SharedSecret",
]
