"""Draining a Streamable HTTP endpoint before its process exits (a restart, a rolling
deploy): the answers in flight go out, nothing new is taken, and every stream ends as a
complete response.

``Drain.begin`` (``Server.run("http")`` calls it once uvicorn stopped accepting; in a
server of the user's own, the process's first SIGTERM/SIGINT, see ``hook_signals``):

- new work is refused: a POST carrying a request, and a GET, are answered 503 with
  ``Retry-After: 1``, ``Connection: close`` and a JSON-RPC error saying the server is
  restarting and to send it again. A POST of answers or notifications is still taken (a
  request in flight may be waiting for it), and so is a DELETE;
- a request body still arriving gets that 503 at once (a client gone silent mid-body
  holds nothing up);
- GET streams end at once, as complete responses. Their events are stored before they
  are sent, so the client resumes with ``Last-Event-ID`` (on another instance, when the
  stores are shared); a resumption following another instance's stream ends too;
- 2026-07-28 ``subscriptions/listen`` streams end gracefully: the listen request is
  answered with its completion result (``resultType: "complete"``, R26-07.SUB.5);
- a legacy HTTP+SSE stream ends once its session has no request left in flight.

Requests in flight get ``seconds`` to be answered. At the deadline (``cut``) each one still
unanswered, for whatever reason (a slow handler, a request whose cancellation left its
exchange open), is answered in its place with a JSON-RPC error saying the server stopped
it: a JSON answer not yet begun is a 503, an SSE stream gets the error as its last event
(stored like the others, so a resumption ends with it too) and its response ends. Once
those are written (``CUT_GRACE`` at most) every session is closed, which cancels what its
handlers still run. One INFO line is logged as the drain begins and one as it ends.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

import orjson

from ..protocol.errors import INTERNAL_ERROR, LocalProtocolError
from ..protocol.jsonrpc import RequestId
from ..protocol.stateless import SUBSCRIPTION_ID
from .asgi import Refused

if TYPE_CHECKING:
    from .http_server import StreamableHTTPApp
    from .http_session import HttpSession

log = logging.getLogger("mcpkit.http")

RESTART_HEADERS = [(b"retry-after", b"1"), (b"connection", b"close")]
"""Headers of a 503 while draining: retry at once (another instance), not on this
connection."""
REFUSED = ("Service unavailable: the server is restarting and takes no new requests; send "
           "this request again (it was not processed).")
CUT = ("The server is restarting and stopped this request before it finished; send it "
       "again (it may have been carried out in part).")
CUT_GRACE = 1.0
"""Seconds after the cut for the answers put in place to be written before the sessions
close."""
TICK = 0.05
"""Seconds between the drain's looks at what is still in flight."""


def cut_answer(rid: RequestId) -> bytes:
    """The error answering request ``rid`` in place of the answer the cut stopped."""
    return orjson.dumps({"jsonrpc": "2.0", "id": rid,
                         "error": {"code": INTERNAL_ERROR, "message": CUT}})


def refusal() -> Refused:
    """The 503 of a request that comes while the server drains."""
    return Refused(503, REFUSED, headers=list(RESTART_HEADERS))


class InFlight:
    """The count of POSTed requests being answered, all sessions of an app (what
    ``max_in_flight_total`` caps, and what the drain's last answers are written before):
    ``with in_flight:`` counts one for the block."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> None:
        self.count += 1

    def __exit__(self, *exc: object) -> None:
        self.count -= 1


class Drain:
    """The drain of one ``StreamableHTTPApp`` (see the module docstring)."""

    def __init__(self, app: StreamableHTTPApp, seconds: float) -> None:
        if not seconds >= 0:
            raise ValueError(f"drain must be a number of seconds >= 0, got {seconds!r}")
        self.app = app
        self.seconds = seconds
        self.active = False  # begun: new work is refused
        #: True when the server running the app begins the drain itself (``run_http``):
        #: then no signal handler is chained.
        self.managed = False
        #: The 2026-07-28 requests being answered, each a session of its own -> the
        #: request's id when it is a listen stream (None for any other request).
        self.stateless: dict[HttpSession, RequestId | None] = {}
        self._began = 0.0
        self._cut = False
        self._timer: asyncio.TimerHandle | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._hooked: dict[int, tuple[Any, Any]] = {}

    def pending(self) -> int:
        """Requests in flight: not answered yet (their exchange may be gone)."""
        app = self.app
        count = len(self.stateless) + sum(len(s.streams) for s in app.sessions.values())
        if app.legacy is not None:
            count += sum(s.session.in_flight for s in app.legacy.sessions.values())
        return count

    def begin(self, reason: str = "shutting down") -> None:
        """Stop taking new work and end the streams that never end by themselves; the
        cut follows in ``seconds`` unless everything was answered by then."""
        if self.active:
            return
        self.active = True
        self._began = time.monotonic()
        app = self.app
        listens = [(s, rid) for s, rid in self.stateless.items() if rid is not None]
        in_flight = self.pending() - len(listens)
        app.body_deadlines.expire(refusal)
        ended = 0
        for session in app.sessions.values():
            stream = session.standalone
            if stream is not None and stream.listener is not None:
                stream.listener.end()  # a complete response; its events are stored
                ended += 1
        for session, rid in listens:
            ended += end_listen(session, rid)
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.seconds, self.cut)
        self._watcher = loop.create_task(self._watch())
        log.info("%s: draining for up to %g s: %d requests in flight, %d streams ended "
                 "(their clients resume them)", reason, self.seconds, in_flight, ended)

    def cut(self) -> None:
        """The deadline: answer what is still unanswered with an error (see the module
        docstring); the sessions close once that is written."""
        if self._cut:
            return
        if not self.active:
            self.begin()
        self._cut = True
        if self._timer is not None:
            self._timer.cancel()
        cut = 0
        app = self.app
        for session in [*app.sessions.values(), *self.stateless]:
            for rid, stream in list(session.streams.items()):
                if not stream.done:
                    stream.cut(cut_answer(rid))
                    cut += 1
        if app.legacy is not None:
            for session in app.legacy.sessions.values():
                cut += session.session.in_flight
                if session.standalone is not None:
                    session.standalone.end()
        log.info("drain deadline after %.2f s: %d requests still unanswered were cut, each "
                 "answered with an error saying so", time.monotonic() - self._began, cut)

    async def run(self, reason: str = "shutting down") -> None:
        """Begin (unless begun) and wait until the drain is over: every request answered,
        or the cut and its grace."""
        self.begin(reason)
        if self._watcher is not None:
            await self._watcher

    async def finish(self) -> None:
        """At the ASGI lifespan's shutdown: wait for a drain in progress; without one (the
        host waited for its connections already), cut at once."""
        if not self.active and self.pending():
            self.begin("lifespan shutdown")
            self.cut()
        if self._watcher is not None:
            await self._watcher
        self.unhook_signals()

    async def _watch(self) -> None:
        app = self.app
        while not self._cut:
            self._end_idle_legacy()
            if not self.pending():
                if self._timer is not None:
                    self._timer.cancel()
                log.info("drained in %.2f s: every request in flight was answered",
                         time.monotonic() - self._began)
                return
            await asyncio.sleep(TICK)
        for _ in range(int(CUT_GRACE / TICK)):  # the answers put in place being written
            if not app.in_flight:
                break
            await asyncio.sleep(TICK)
        for session in list(self.stateless):  # what handlers still run is cancelled
            session.close()
        app.close_all()

    def _end_idle_legacy(self) -> None:
        legacy = self.app.legacy
        if legacy is None:
            return
        for session in legacy.sessions.values():
            stream = session.standalone
            if stream is not None and not stream.closed and not session.session.in_flight:
                stream.end()

    # ------------------------------------------------------------------ signals

    def hook_signals(self) -> None:
        """Served by the user's own ASGI server: begin the drain on the process's first
        SIGTERM/SIGINT and cut on the next, chained to the handlers in place (the host's
        own graceful shutdown goes on). Only in the main thread, and not for a signal the
        process does not catch (default or ignored)."""
        if self.managed or self._hooked or (
                threading.current_thread() is not threading.main_thread()):
            return
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)
            if not callable(previous):
                continue

            def chained(signum: int, frame: Any, previous: Any = previous) -> None:
                try:
                    loop.call_soon_threadsafe(self._signalled, signum)
                except RuntimeError:  # that event loop is closed: nothing left to drain
                    pass
                previous(signum, frame)

            signal.signal(sig, chained)
            self._hooked[sig] = (chained, previous)

    def unhook_signals(self) -> None:
        """Put back the handlers ``hook_signals`` chained to (unless replaced since)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, (chained, previous) in self._hooked.items():
            if signal.getsignal(sig) is chained:
                signal.signal(sig, previous)
        self._hooked.clear()

    def _signalled(self, signum: int) -> None:
        if self.active:
            self.cut()
        else:
            self.begin(signal.Signals(signum).name)


def end_listen(session: HttpSession, rid: RequestId) -> int:
    """End a 2026-07-28 listen stream gracefully: its request answered with the
    completion result (the handler is cancelled when the exchange ends). 1 if sent."""
    try:
        sent = session.conn.send_result(rid, {"_meta": {SUBSCRIPTION_ID: rid}})
    except LocalProtocolError:  # answered meanwhile
        return 0
    session.session.flush()
    return int(sent)
