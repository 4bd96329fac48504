"""Serving: the lifespan shared by every session, one client over a byte stream, the
options of the HTTP app, and the process-level set-up of ``Server.run``.

The user's lifespan is entered when the first session (or the ASGI app's startup) needs
it and left after the last one ends, however many run at a time. A byte-stream session
(stdio, memory) ends at end of input; with ``stop_on_signals`` the first SIGTERM/SIGINT
ends input the same way (in-flight handlers get the drain window, then are cancelled) and
a second one cancels at once.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import anyio

from ..protocol.connection import Connection
from ..session import DEFAULT_OUTPUT_BUFFER, ByteStream, Session
from .methods import Methods
from .peers import Peers

if TYPE_CHECKING:
    from ..storage.events import EventStore
    from ..storage.redis_stores import RedisStores
    from ..storage.sessions import SessionStore
    from .app import Server

log = logging.getLogger("mcpkit.server")

LifespanFactory = Callable[["Server"], AbstractAsyncContextManager[Any]]
"""``lifespan(server)``: an async context manager whose value handlers see as
``ctx.lifespan``."""


class HttpOptions(TypedDict, total=False):
    """The keyword options of ``Server.asgi_app``, which ``Server.run("http", ...)``
    passes through:

    - ``response_mode``: ``"auto"`` answers a POST as JSON when the response is the
      first thing its handler produces and as SSE once it sends progress, logs or
      requests first; ``"json"`` and ``"sse"`` always use one.
    - ``allowed_hosts``: ``Host`` names served (421 otherwise; ``"*"``: any); None:
      localhost names, any port. ``allowed_origins``: ``Origin`` values accepted (403
      otherwise; ``"*"``: any); None: http(s) origins on localhost. ``trusted_proxies``
      (none): client IPs whose ``X-Forwarded-Host``/``Forwarded`` host is believed.
    - ``max_body`` (4 MiB): bytes of a POST body (413); ``body_timeout`` (30) to read it.
    - ``max_sessions`` (10,000): open sessions (503 to a new one).
      ``session_idle_timeout`` (3600): seconds without a request before a session
      ends (then 404); ``sweep_interval`` (1) between sweeps, ``sweep_batch`` (1000).
    - ``max_in_flight`` (4096): requests being answered per session (429);
      ``max_in_flight_total`` (65,536): across sessions (503).
    - ``retry_ms`` (1000): the SSE ``retry`` field, how long a client waits before
      reconnecting a broken stream.
    - ``max_stream_buffer`` (1 MiB): bytes one SSE response may hold for a reader slower
      than the server. A handler's progress and logs wait (``await
      ctx.report_progress``) while a quarter of it is unsent; past all of it the
      response ends and the client resumes with ``Last-Event-ID``. ``stall_timeout``
      (30): seconds a write to a reader that reads nothing may block before its
      connection is cut.
    - ``enable_get`` (True): serve the GET stream (405 when False); ``allow_delete``
      (True): clients may end their session with DELETE.
    - ``legacy_sse`` (True): also serve 2024-11-05 HTTP+SSE clients (at
      ``legacy_sse_path``, "/sse", and ``legacy_messages_path``, "/messages").
    - ``drain`` (10): seconds requests in flight get to finish on SIGTERM (docs/http.md).
    - ``event_store``: where SSE events wait for a client that resumes (an
      ``EventStore``; None: in memory); ``SQLiteEventStore`` survives a restart.
    - ``session_store``: session records a restarted server takes back (a
      ``SessionStore``); None: kept nowhere. A store that is also a ``SharedSecret``
      (``SQLiteSessionStore``) gives the ``state_key``, unless one was given.
    - ``store``: run as one of several instances sharing all their state, on Redis
      (``"redis://host:port/db"`` or ``RedisStores``; the ``mcpkit[redis]`` extra):
      session records, SSE event logs, the ``requestState`` key, rate-limit buckets
      (unless ``Server(rate_limit_store=...)`` was given), task records (unless
      ``Server(task_store=...)`` was given; docs/tasks.md), and delivery between
      instances; ``event_store``/``session_store`` given too win over its own. Any
      instance then serves any request of any session (docs/deployment.md). Redis
      unreachable: 503 with ``Retry-After`` to the requests that need it.
    """

    response_mode: Literal["auto", "json", "sse"]
    allowed_hosts: Iterable[str] | None
    allowed_origins: Iterable[str] | None
    trusted_proxies: Iterable[str]
    max_body: int
    max_sessions: int
    session_idle_timeout: float
    body_timeout: float
    sweep_interval: float
    sweep_batch: int
    max_in_flight: int
    max_in_flight_total: int
    retry_ms: int
    max_stream_buffer: int
    stall_timeout: float
    enable_get: bool
    allow_delete: bool
    legacy_sse: bool
    legacy_sse_path: str
    legacy_messages_path: str
    drain: float
    event_store: EventStore | None
    session_store: SessionStore | None
    store: str | RedisStores | None


class SharedLifespan:
    """The user's lifespan, entered once however many sessions use it at a time; the
    lifespans of mounted servers (``inner``) are entered inside it, in mount order, and
    left before it."""

    def __init__(self, factory: LifespanFactory | None, server: Server) -> None:
        self._factory = factory
        self._server = server  # what the factory is called with
        self._users = 0
        self._stack: AsyncExitStack | None = None
        #: What the lifespan yielded when last entered (None before that, or without one).
        self.state: Any = None
        #: The lifespan scopes of mounted servers (``Server.lifespan_scope``).
        self.inner: list[Callable[[], AbstractAsyncContextManager[Any]]] = []

    @asynccontextmanager
    async def scope(self) -> AsyncIterator[Any]:
        """Enter the lifespan if no one else holds it; leave it after the last user."""
        if self._factory is None and not self.inner:
            yield None
            return
        if self._users == 0:
            stack = AsyncExitStack()
            try:
                if self._factory is not None:
                    self.state = await stack.enter_async_context(
                        self._factory(self._server))
                for inner in self.inner:
                    await stack.enter_async_context(inner())
            except BaseException:
                await stack.aclose()
                raise
            self._stack = stack
        self._users += 1
        try:
            yield self.state
        finally:
            self._users -= 1
            if self._users == 0 and self._stack is not None:
                stack, self._stack = self._stack, None
                await stack.aclose()


async def serve_stream(stream: ByteStream, connection: Connection, methods: Methods,
                       peers: Peers, *, drain_timeout: float, stop_on_signals: bool,
                       output_buffer: int = DEFAULT_OUTPUT_BUFFER) -> None:
    """Serve one client over ``stream`` until it closes (see the module docstring); the
    session is among ``peers`` meanwhile. ``output_buffer``: the bytes the client may
    leave unread before its requests are no longer read (``BytePump.limit_output``)."""
    session = Session(
        connection,
        stream,
        on_request=methods.on_request,
        on_notification=methods.on_notification,
    )
    session.drain_timeout = drain_timeout
    assert session.pump is not None
    session.pump.limit_output(output_buffer)
    peers.track(session, True)
    try:
        if stop_on_signals and _can_receive_signals():
            async with anyio.create_task_group() as tg:
                tg.start_soon(_stop_on_signals, session, tg.cancel_scope)
                await session.run()
                tg.cancel_scope.cancel()
        else:
            await session.run()
    finally:
        peers.track(session, False)


def _can_receive_signals() -> bool:
    """Signal handlers can only be installed from the main thread, and not on Windows."""
    import threading

    return sys.platform != "win32" and threading.current_thread() is threading.main_thread()


async def _stop_on_signals(session: Session, scope: anyio.CancelScope) -> None:
    """First SIGTERM/SIGINT: stop reading and drain; a second one: cancel everything."""
    import signal

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        count = 0
        async for signum in signals:
            count += 1
            if count == 1:
                log.info("%s: finishing in-flight requests, then exiting",
                         signal.Signals(signum).name)
                session.stop_input()
            else:
                scope.cancel()
                return


def log_to_stderr(level: str | int) -> None:
    """Send log records at ``level`` and above to stderr, unless the application has
    configured logging itself (the root logger has a handler)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=level,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
        )
