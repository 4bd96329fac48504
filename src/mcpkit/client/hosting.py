"""A client's connection held by an asyncio task of its own: ``Host``.

anyio's task groups and cancel scopes belong to the task that entered them, so a
``Client`` entered in one task and left in another fails with "Attempted to exit cancel
scope in a different task". That is what pytest-asyncio does with an async generator
fixture (``async with Client(server) as client: yield client``: set-up and tear-down run
as two tasks), the pattern FastMCP's and the SDK's test suites use everywhere. On asyncio
the client therefore opens its connection (the task group, the transport, the session)
inside a task made for it, and the caller only waits for it to be ready and, on leaving,
for it to close. Requests still run in the caller's task: they talk to the session
through streams and events, which belong to the loop, not to a task.

Only a caller outside any anyio cancel scope is served so (``needed()``): plain asyncio
code, such as pytest-asyncio's fixtures. Code running under anyio's structured
concurrency (an anyio task group, the anyio pytest plugin, mcpkit's own proxy) keeps the
connection in its own task, so that a connection that fails cancels the caller's scope
and raises out of ``async with`` at once, as it always has. In this mode an error while
connecting is raised by ``async with`` too; one that ends the connection later fails
the requests made after it and is raised on leaving; cancelling the caller while it
enters or leaves cuts the connection. Under trio (no detached tasks, and no test runner
that splits a fixture across tasks) the connection is always the caller's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack

import anyio


def needed() -> bool:
    """Whether the current asyncio task runs outside every anyio cancel scope (then the
    connection gets a task of its own). anyio keeps that per task in a private table;
    should it move, the answer is False: the connection stays the caller's."""
    try:
        from anyio._backends._asyncio import _task_states
    except ImportError:  # pragma: no cover - anyio's internals moved
        return False
    task = asyncio.current_task()
    state = _task_states.get(task) if task is not None else None
    return state is None or getattr(state, "cancel_scope", True) is None


class Host:
    """The task holding one client's connection open (module docstring)."""

    __slots__ = ("_closing", "_task")

    def __init__(self) -> None:
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, connect: Callable[[AsyncExitStack], Awaitable[None]]) -> Host:
        """Run ``connect(stack)`` in a new task, keep the stack open there until
        ``close()``, and return once connected (raising what connecting raised)."""
        host = cls()
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        async def hold() -> None:
            stack = AsyncExitStack()
            await stack.__aenter__()
            try:  # as the caller's own task would: the error itself, the stack closed
                await connect(stack)
            except BaseException as exc:
                await stack.aclose()
                if isinstance(exc, asyncio.CancelledError):
                    ready.cancel()
                    raise
                ready.set_exception(exc)  # start() raises it; the task ends quietly
                return
            ready.set_result(None)
            try:
                await host._closing.wait()
            finally:
                await stack.aclose()  # what ended the connection, if it failed

        task = host._task = loop.create_task(hold(), name="mcpkit client connection")
        try:
            await asyncio.shield(ready)
        except BaseException:
            await _cut(task)  # failed (the task has ended) or the caller was cancelled
            raise
        return host

    async def close(self) -> None:
        """Close the connection and wait until it is closed; raise what ended it, if it
        failed. A caller cancelled meanwhile has the connection cut at once."""
        task = self._task
        if task is None:
            return
        self._closing.set()
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():  # the caller is cancelled: cut the connection now
                await _cut(task)
            raise


async def _cut(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait until it has closed its stack, even when the caller is
    itself being cancelled (anyio cancels every await of a cancelled scope: shielded)."""
    if task.done():
        return
    task.cancel()
    with anyio.CancelScope(shield=True):  # the cut itself is quick: the task is cancelled
        await asyncio.wait([task])
