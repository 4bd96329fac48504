"""Serving: the lifespan shared by every session, one client over a byte stream, and the
process-level set-up of ``Server.run`` (the HTTP app's options are
``transports.http_options.HttpOptions``).

The user's lifespan is entered when the first session (or the ASGI app's startup) needs
it and left after the last one ends, however many run at a time. A byte-stream session
(stdio, memory) ends at end of input; with ``stop_on_signals`` the first SIGTERM/SIGINT
ends input the same way (in-flight handlers get the drain window, then are cancelled) and
a second one cancels at once.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from ..protocol.connection import Connection
from ..session import DEFAULT_OUTPUT_BUFFER, ByteStream, Session
from .methods import Methods
from .peers import Peers

if TYPE_CHECKING:
    from .app import Server

log = logging.getLogger("mcpkit.server")

LifespanFactory = Callable[["Server"], AbstractAsyncContextManager[Any]]
"""``lifespan(server)``: an async context manager whose value handlers see as
``ctx.lifespan``."""


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
