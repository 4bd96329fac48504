"""One connection to Redis shared by the Redis stores, with bounded calls.

``RedisLink(url)`` holds redis-py's asyncio client (imported on first use: the
``mcpkit[redis]`` extra; nothing here is imported unless a Redis store is made). Every
call goes through ``run``: it is bounded by ``timeout`` seconds (connect and each
command; an overall deadline as well) and any connection failure, timeout or a Redis still
loading its data after a restart becomes ``StoreUnavailable``, so a request never hangs
on Redis and never crashes the server. A stale pooled connection (Redis restarted) is
retried once on a fresh one, which is how an instance recovers by itself.

Keys all start with ``prefix`` ("mcpkit:"), and a session's keys carry the session id as
a hash tag (``{sid}``) so they sit in one slot of a Redis Cluster. The client is made per
event loop (an asyncio client cannot be shared between loops).

A cancellation requested during a call always ends it, even one redis-py dropped (see
``cancels``): ``run`` delivers it again.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .cancels import cancels, keep_cancel
from .faults import StoreUnavailable

if TYPE_CHECKING:
    import redis.asyncio

T = TypeVar("T")

MISSING_EXTRA = ("Redis stores need redis-py: pip install 'mcpkit[redis]' (the redis package, "
                 "version 5 or later)")


def _driver() -> Any:
    try:
        import redis.asyncio
    except ImportError:
        raise ImportError(MISSING_EXTRA) from None
    return redis


MAX_CONNECTIONS = 64
"""Connections to Redis one instance opens at most (per event loop); more calls wait."""


class RedisLink:
    """A Redis URL, its key prefix and its bounds; the client of the running loop."""

    def __init__(self, url: str, *, prefix: str = "mcpkit:", timeout: float = 2.0) -> None:
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"not a Redis URL: {url!r} (use redis://host:port/db, "
                             "rediss:// for TLS, or unix:///path)")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive seconds, got {timeout!r}")
        self.url = url
        self.prefix = prefix
        self.timeout = timeout
        self._driver = _driver()
        self._clients: dict[asyncio.AbstractEventLoop, redis.asyncio.Redis] = {}

    def _options(self) -> dict[str, Any]:
        from redis.backoff import NoBackoff

        retry_cls = self._driver.asyncio.retry.Retry
        return {"socket_timeout": self.timeout, "socket_connect_timeout": self.timeout,
                "retry": retry_cls(NoBackoff(), 1), "health_check_interval": 30,
                "decode_responses": False}

    def client(self) -> redis.asyncio.Redis:
        """The asyncio client of the running event loop (made on first use)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            for old in [lp for lp in self._clients if lp.is_closed()]:
                del self._clients[old]
            # A blocking pool: a burst of calls beyond ``MAX_CONNECTIONS`` waits for a
            # connection (up to ``timeout``) instead of failing at once (redis-py's default
            # pool raises "Too many connections" past 100, which a storm of
            # announcements reached).
            pool = self._driver.asyncio.BlockingConnectionPool.from_url(
                self.url, max_connections=MAX_CONNECTIONS, timeout=self.timeout,
                **self._options())
            client = self._driver.asyncio.Redis.from_pool(pool)
            self._clients[loop] = client
        return client

    def key(self, kind: str, name: str, tag: str | None = None) -> str:
        """``<prefix><kind>:<name>``, with ``{tag}`` (a Cluster hash tag) when given."""
        return f"{self.prefix}{kind}:{{{tag}}}" if tag is not None else (
            f"{self.prefix}{kind}:{name}")

    def script(self, source: str) -> Callable[..., Awaitable[Any]]:
        """A Lua script run by EVALSHA (loaded again after a Redis restart), atomically."""
        holder: dict[asyncio.AbstractEventLoop, Any] = {}

        def call(keys: list[str], args: list[Any]) -> Awaitable[Any]:
            client = self.client()
            loop = asyncio.get_running_loop()
            script = holder.get(loop)
            if script is None:
                script = holder[loop] = client.register_script(source)
            return script(keys=keys, args=args)

        return call

    async def run(self, what: str, work: Callable[[redis.asyncio.Redis], Awaitable[T]]) -> T:
        """``work(client)``, bounded by ``timeout``; failures reaching Redis (and Redis
        errors such as LOADING) become ``StoreUnavailable`` naming ``what`` was tried. A
        cancellation requested meanwhile always ends it with ``CancelledError``, even when
        redis-py dropped it (``cancels``)."""
        errors = self._driver.exceptions
        asked = cancels()
        try:
            async with asyncio.timeout(self.timeout * 2 + 0.5):
                done = await work(self.client())
        except (TimeoutError, OSError, errors.ConnectionError, errors.TimeoutError,
                errors.BusyLoadingError, errors.TryAgainError) as exc:
            keep_cancel(asked)
            raise StoreUnavailable(
                f"Service unavailable: the session store (Redis) could not {what} "
                f"({type(exc).__name__}: {exc}); retry shortly.") from exc
        keep_cancel(asked)
        return done

    def secret(self) -> bytes:
        """The deployment's 32-byte key in Redis, made by whichever instance asked first
        (a blocking call, made once when the server app is built)."""
        errors = self._driver.exceptions
        sync = self._driver.Redis.from_url(
            self.url, socket_timeout=self.timeout, socket_connect_timeout=self.timeout)
        key = self.key("secret", "requestState")
        try:
            sync.set(key, secrets.token_bytes(32), nx=True)
            value = sync.get(key)
        except (OSError, errors.ConnectionError, errors.TimeoutError,
                errors.BusyLoadingError) as exc:
            raise StoreUnavailable(f"the shared secret could not be read from Redis at "
                                   f"{self.url}: {exc}") from exc
        finally:
            sync.close()
        if not isinstance(value, bytes) or len(value) != 32:
            raise StoreUnavailable(f"the shared secret at {key} in Redis is not 32 bytes")
        return value

    async def aclose(self) -> None:
        """Close the client of the running loop."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()
