"""Every Redis store of one deployment on one connection: ``RedisStores.from_url(url)``.

``Server.asgi_app(store="redis://...")`` builds this and wires each part where it belongs:
session records (and the shared ``requestState`` key), SSE event logs, rate-limit
buckets, the bus carrying messages between instances holding one session, and task
records (with each instance's heartbeat, so a stopped instance's tasks end ``failed``). ``ttl`` is
the session idle timeout (records and event logs expire that long after their last use).
"""

from __future__ import annotations

from dataclasses import dataclass

from .events import DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS
from .redis_buckets import RedisBuckets
from .redis_bus import RedisBus
from .redis_events import RedisEventStore
from .redis_link import RedisLink
from .redis_sessions import RECHECK, RedisSessionStore
from .redis_tasks import RedisTaskStore


@dataclass(frozen=True, slots=True)
class RedisStores:
    """The Redis stores sharing ``link``."""

    link: RedisLink
    sessions: RedisSessionStore
    events: RedisEventStore
    buckets: RedisBuckets
    bus: RedisBus
    tasks: RedisTaskStore

    @classmethod
    def from_url(cls, url: str, *, ttl: float = 3600.0,
                 max_events: int = DEFAULT_MAX_EVENTS, max_bytes: int = DEFAULT_MAX_BYTES,
                 prefix: str = "mcpkit:", timeout: float = 2.0, heartbeat: float = 1.0,
                 recheck: float = RECHECK) -> RedisStores:
        """Stores on the Redis at ``url`` (``redis://``, ``rediss://`` or ``unix://``);
        ``timeout``: seconds any one Redis call may take before the request needing it
        gets a 503; ``heartbeat``: seconds between an instance's heartbeats (its running
        tasks are reported ``failed`` once it missed three); ``recheck``: see
        ``RedisSessionStore``."""
        link = RedisLink(url, prefix=prefix, timeout=timeout)
        return cls(link, RedisSessionStore(link, ttl=ttl, recheck=recheck),
                   RedisEventStore(link, max_events=max_events, max_bytes=max_bytes,
                                   ttl=ttl), RedisBuckets(link),
                   RedisBus(link), RedisTaskStore(link, heartbeat=heartbeat))

    async def ready(self) -> None:
        """Readiness (``/ready``): Redis answers a PING within the link's timeout;
        ``StoreUnavailable`` otherwise."""
        await self.link.run("answer a readiness check", lambda client: client.ping())

    async def aclose(self) -> None:
        """Close the connections of the running event loop."""
        await self.tasks.aclose()
        await self.bus.aclose()
        await self.link.aclose()
