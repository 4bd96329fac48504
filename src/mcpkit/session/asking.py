"""The requests a session sends, and the answers it waits for.

``Asking`` holds one waiter per request this side sent (a ``sampling/createMessage`` of a
server, a ``tools/call`` of a client): ``request`` queues the request on the connection
and waits, within its timeout, for the answer the session routes back (``answered``) or
for the transport to give up on it (``fail``); a waiter's progress callback gets the
peer's progress. When the connection ends every waiter fails (``fail_all``). It never
touches the transport: ``wake`` tells the session's output that something was queued.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import anyio

from ..protocol.connection import Connection, ErrorReceived, ResponseReceived
from ..protocol.errors import ConnectionClosed, RequestTimeout
from ..protocol.jsonrpc import JSONObject, RequestId
from ..protocol.record import Record
from .interfaces import ProgressCallback


class _Waiter(Record):
    __slots__ = ("done", "error", "on_progress", "result")

    def __init__(self, on_progress: ProgressCallback | None = None) -> None:
        self.done = anyio.Event()
        self.result: JSONObject | None = None
        self.error: Exception | None = None
        self.on_progress = on_progress


class Asking:
    """The waiters of one session's outbound requests (see the module docstring)."""

    __slots__ = ("_waiters", "conn", "wake")

    def __init__(self, conn: Connection, wake: Callable[[], None]) -> None:
        self.conn = conn
        self.wake = wake
        self._waiters: dict[RequestId, _Waiter] = {}

    async def request(self, method: str, params: JSONObject | None, timeout: float | None,
                      related: RequestId | None, on_progress: ProgressCallback | None,
                      on_sent: Callable[[RequestId], None] | None) -> JSONObject:
        """Send ``method`` and wait for its result (``Session.request`` says what it
        raises); a request the caller stops waiting for is cancelled on the peer."""
        rid = self.conn.send_request(method, params, related=related)
        if on_sent is not None:
            on_sent(rid)
        waiter = _Waiter(on_progress)
        self._waiters[rid] = waiter
        self.wake()
        completed = False
        deadline = anyio.move_on_after(math.inf if timeout is None else timeout)
        try:
            with deadline:
                await waiter.done.wait()
                completed = True
        finally:
            if not completed:
                self._waiters.pop(rid, None)
                # Our own deadline, or the caller was cancelled (e.g. its request was).
                reason = "timed out" if deadline.cancelled_caught else "cancelled"
                if self.conn.cancel_request(rid, reason):
                    self.wake()
        if not completed:
            raise RequestTimeout(f"no answer to '{method}' within {timeout} seconds")
        if waiter.error is not None:
            raise waiter.error
        assert waiter.result is not None
        return waiter.result

    def answered(self, event: ResponseReceived | ErrorReceived) -> None:
        """The peer's answer to one of our requests: its waiter wakes with it."""
        waiter = self._waiters.pop(event.id, None)
        if waiter is not None:
            if isinstance(event, ResponseReceived):
                waiter.result = event.result
            else:
                waiter.error = event.error
            waiter.done.set()

    def on_progress(self, rid: RequestId) -> ProgressCallback | None:
        """The progress callback of our request ``rid`` still waiting, if it gave one."""
        waiter = self._waiters.get(rid)
        return None if waiter is None else waiter.on_progress

    def fail(self, rid: RequestId, error: Exception) -> None:
        """Our request ``rid`` will get no answer: its caller gets ``error`` now."""
        waiter = self._waiters.pop(rid, None)
        if waiter is not None:
            waiter.error = error
            waiter.done.set()

    def fail_all(self) -> None:
        """The connection ended: every caller still waiting gets ``ConnectionClosed``."""
        for waiter in self._waiters.values():
            if waiter.result is None and waiter.error is None:
                waiter.error = ConnectionClosed("the connection to the peer closed")
            waiter.done.set()
        self._waiters.clear()
