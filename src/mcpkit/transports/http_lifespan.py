"""The server's lifespan for the Streamable HTTP app, whoever starts it.

Run on its own (``uvicorn app``, ``mcpkit run``), the app receives the ASGI ``lifespan``
messages and enters the server's lifespan at startup, leaving it at shutdown. Mounted in
another app (Starlette's ``Mount``, FastAPI), it usually receives none: the host answers
its own lifespan and does not forward it. Handlers would then meet a lifespan that never
ran (``ctx.lifespan`` None). So the first HTTP request that finds it not started enters
it in a task of its own, which holds it until the event loop ends (uvicorn's shutdown
cancels that task, and the lifespan exits then); requests wait for it once. If the host
entered ``Server.lifespan_scope()`` itself, entering again only counts one more user.
A lifespan that fails to start fails every request with a 500 that says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any

from ..protocol.errors import INTERNAL_ERROR
from .asgi import Receive, Refused, Send

log = logging.getLogger("mcpkit.http")

Lifespan = Callable[[], AbstractAsyncContextManager[Any]]


class LifespanHolder:
    """Enters the lifespan once: at ASGI startup, or on the first request without one."""

    def __init__(self, lifespan: Lifespan | None, on_shutdown: Callable[[], Awaitable[None]],
                 on_start: Callable[[], None] | None = None) -> None:
        """``on_start``: called once the lifespan is held (at startup, or by the first
        request); ``on_shutdown``: awaited at the ASGI shutdown, before the lifespan is
        left."""
        self.lifespan = lifespan
        self.on_shutdown = on_shutdown
        self.on_start = on_start
        #: True once the lifespan is held (or there is none): the per-request check.
        self.ready = lifespan is None
        self._entering: asyncio.Future[None] | None = None
        self._holder: asyncio.Task[None] | None = None

    async def serve(self, receive: Receive, send: Send) -> None:
        """The ASGI ``lifespan`` scope: enter at startup, leave at shutdown."""
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with AsyncExitStack() as stack:
            try:
                if self.lifespan is not None:
                    await stack.enter_async_context(self.lifespan())
            except Exception as exc:
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            self.ready = True
            if self.on_start is not None:
                self.on_start()
            await send({"type": "lifespan.startup.complete"})
            while (await receive())["type"] != "lifespan.shutdown":
                pass
            await self.on_shutdown()
        await send({"type": "lifespan.shutdown.complete"})

    async def wait(self) -> None:
        """Before the first request is served: the lifespan entered, by the ASGI startup
        or here. Raises ``Refused`` (500) when it cannot start."""
        if self._entering is None:
            loop = asyncio.get_running_loop()
            self._entering = loop.create_future()
            self._holder = loop.create_task(self._hold(self._entering))
        try:
            await asyncio.shield(self._entering)
        except Exception as exc:
            raise Refused(500, (
                "The server could not start: its lifespan failed (the details are in the "
                "server's log). The operator must fix it and restart the application."),
                code=INTERNAL_ERROR) from exc

    async def _hold(self, entered: asyncio.Future[None]) -> None:
        assert self.lifespan is not None
        try:
            async with self.lifespan():
                self.ready = True
                if self.on_start is not None:
                    self.on_start()
                entered.set_result(None)
                await asyncio.Event().wait()  # until the loop's shutdown cancels this task
        except Exception as exc:
            log.error("the server's lifespan failed to start on first use", exc_info=exc)
            if not entered.done():
                entered.set_exception(exc)

