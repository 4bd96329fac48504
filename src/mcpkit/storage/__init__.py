"""State that outlives one request: SSE event logs for resumability (memory, SQLite)."""

from .events import EventStore, MemoryEventStore, SQLiteEventStore

__all__ = ["EventStore", "MemoryEventStore", "SQLiteEventStore"]
