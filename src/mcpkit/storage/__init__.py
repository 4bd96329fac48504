"""State that outlives one request: SSE event logs, session records and, for several
instances of one deployment, rate-limit buckets (memory, SQLite, Redis).

The Redis stores need the ``mcpkit[redis]`` extra; they are imported on first access
(``mcpkit.storage.RedisStores``), so nothing of redis-py loads otherwise.
"""

from typing import TYPE_CHECKING, Any

from .bus import SessionBus
from .events import EventStore, MemoryEventStore, SQLiteEventStore
from .faults import StoreUnavailable
from .sessions import MemorySessionStore, SessionStore, SharedSecret, SQLiteSessionStore

if TYPE_CHECKING:
    from .redis_buckets import RedisBuckets
    from .redis_bus import RedisBus
    from .redis_events import RedisEventStore
    from .redis_link import RedisLink
    from .redis_sessions import RedisSessionStore
    from .redis_stores import RedisStores

_LAZY = {
    "RedisBuckets": "redis_buckets",
    "RedisBus": "redis_bus",
    "RedisEventStore": "redis_events",
    "RedisLink": "redis_link",
    "RedisSessionStore": "redis_sessions",
    "RedisStores": "redis_stores",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpkit.storage' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "EventStore",
    "MemoryEventStore",
    "MemorySessionStore",
    "RedisBuckets",
    "RedisBus",
    "RedisEventStore",
    "RedisLink",
    "RedisSessionStore",
    "RedisStores",
    "SQLiteEventStore",
    "SQLiteSessionStore",
    "SessionBus",
    "SessionStore",
    "SharedSecret",
    "StoreUnavailable",
]
