"""Slow readers of SSE responses: byte bounds, pacing, and the stall watchdog.

An SSE response is written with ASGI ``send``, which waits while the connection's write
buffer is full (uvicorn's flow control). What the server produces meanwhile waits in
mcpkit's own buffers, so each of those has a byte bound (``HttpOptions.max_stream_buffer``):

- a handler writing to a request's stream is *paced*: ``await ctx.report_progress(...)``
  (and logs, notifications) waits while more than a quarter of the bound is unsent;
- what cannot be paced (the GET stream's notifications, which come from anywhere) fills
  the buffer up to the bound; past it the response is ended, complete, and the client
  resumes with ``Last-Event-ID`` from the event store (a stream without event ids, such
  as a 2026-07-28 listen stream, is ended and the client listens again);
- a ``send`` that has not returned for ``HttpOptions.stall_timeout`` seconds means a reader
  that stopped reading: its connection is cut (``Stalls.sweep``, from the app's
  housekeeping), which ends the response the way a client that went away does.

Cutting needs the connection's transport: uvicorn's ``receive`` is a method of the
request cycle, which holds it. Under an ASGI server that does not expose it a stalled
writer is left waiting (its memory is still bounded) and nothing is cut.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from .asgi import Receive, Send
from .http_defaults import MAX_STREAM_BUFFER, STALL_TIMEOUT

log = logging.getLogger("mcpkit.http")



def transport_cutter(receive: Receive) -> Callable[[], None] | None:
    """How to cut the connection ``receive`` belongs to (its transport's ``abort``), when
    the ASGI server exposes it (uvicorn's request cycle does); else None."""
    transport = getattr(getattr(receive, "__self__", None), "transport", None)
    abort = getattr(transport, "abort", None)
    return abort if callable(abort) else None


class Sender:
    """``send`` of one SSE response, timed: ``since`` is when the write in progress began
    (0.0 when none is), which the watchdog reads."""

    __slots__ = ("_send", "cut", "since")

    def __init__(self, send: Send, cut: Callable[[], None] | None) -> None:
        self._send = send
        self.cut = cut
        self.since = 0.0

    async def __call__(self, message: dict[str, Any]) -> None:
        self.since = time.monotonic()
        try:
            await self._send(message)
        finally:
            self.since = 0.0


class Stalls:
    """The SSE writers of one app, and the cut of those stuck past ``timeout``."""

    __slots__ = ("timeout", "writers")

    def __init__(self, timeout: float = STALL_TIMEOUT) -> None:
        self.timeout = timeout
        self.writers: set[Sender] = set()

    def guard(self, send: Send, receive: Receive) -> Sender:
        """``send`` timed and watched until ``release``."""
        sender = Sender(send, transport_cutter(receive))
        self.writers.add(sender)
        return sender

    def release(self, sender: Sender) -> None:
        self.writers.discard(sender)

    def sweep(self, now: float) -> int:
        """Cut the connections whose write has been blocked past the timeout; how many."""
        cut = 0
        for sender in list(self.writers):
            since = sender.since
            if since and now - since > self.timeout and sender.cut is not None:
                log.info("cut an SSE connection whose client read nothing for %.0f s",
                         now - since)
                self.writers.discard(sender)
                sender.cut()
                cut += 1
        return cut


__all__ = ["MAX_STREAM_BUFFER", "STALL_TIMEOUT", "Sender", "Stalls", "transport_cutter"]
