"""The response streams of HTTP sessions (Streamable HTTP and legacy HTTP+SSE).

A ``ResponseStream`` carries what a request (or the session's GET stream) is answered
with: the first message decides JSON or SSE; once it switches to SSE its pump stores every
event in the ``EventStore`` before handing it to the ``Listener`` (the live HTTP
connection, if any), so a client whose connection broke can resume. Both are bounded in
bytes; a producer is paced by ``congested`` (``transports.http_stalls`` cuts a reader
stuck past its time). ``HttpSession`` (``transports.http_session``) routes each message
of its connection to one of them. asyncio only (see ``transports.asgi``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from ..protocol.jsonrpc import compact
from ..protocol.sse import encode_event
from ..storage.events import EventStore
from ..storage.faults import OUTAGE_WAIT, RETRY_EVERY, StoreUnavailable
from .asgi import DisconnectWatch, Receive, Send
from .http_stalls import MAX_STREAM_BUFFER

if TYPE_CHECKING:
    from .http_session import HttpSession

log = logging.getLogger("mcpkit.http")

MAX_BACKLOG, MAX_BACKLOG_BYTES = 1000, 1024 * 1024
"""Server-initiated messages (and their bytes) kept for a session without a GET stream."""
WITHDRAWN = (b"", True)
"""What ``ResponseStream.first`` gives for an exchange that ended without an answer."""
STREAM_END = b"\x00"
"""The stored end of a request stream whose answer was withdrawn (never sent: not JSON)."""
PACE_POLL = 0.01
"""Seconds between looks at a congested stream while a producer waits for room."""
STORE_OUTAGE = OUTAGE_WAIT
"""Seconds an SSE stream's event waits for an unreachable event store; past them the
stream's events go out without ids (``ResponseStream._stored``)."""
STORE_RETRY = RETRY_EVERY
"""Seconds between attempts to store an event while the store is unreachable."""


class Listener:
    """The live HTTP connection consuming one stream's events.

    ``pending`` counts the bytes handed to it and not yet written; past ``limit`` the
    reader has fallen too far behind: what is not yet taken is dropped (the event store
    has it), nothing more is taken, and the writer ends the response after what it holds,
    so the client resumes from its last event id (``transports.http_stalls``)."""

    __slots__ = ("ended", "gone", "items", "limit", "overflowed", "pending", "wakeup")

    def __init__(self, limit: int = MAX_STREAM_BUFFER) -> None:
        self.items: list[tuple[str, bytes, bool]] = []
        self.wakeup = asyncio.Event()
        self.gone = False
        self.ended = False
        self.overflowed = False
        self.pending = 0
        self.limit = limit

    def put(self, event_id: str, data: bytes, final: bool) -> None:
        if self.overflowed:
            return
        if self.items:  # the reader lags: this one is held a while, at its own size
            data = compact(data)
        self.items.append((event_id, data, final))
        self.pending += len(data)
        if self.pending > self.limit and not final:
            self.overflowed = True
            self.pending -= sum(len(d) for _, d, _ in self.items)
            self.items.clear()
        self.wakeup.set()

    def sent(self, size: int) -> None:
        """The writer wrote an event of ``size`` bytes of data."""
        self.pending -= size

    def leave(self) -> None:
        """The connection ended (or another took over): stop waiting."""
        self.gone = True
        self.wakeup.set()

    def end(self) -> None:
        """Nothing more will come (the stream ended or failed): finish the response."""
        self.ended = True
        self.wakeup.set()

    def retire(self) -> None:
        """Another connection took the stream over: finish this response without writing
        what it had not taken yet (the new one replays it)."""
        self.pending -= sum(len(d) for _, d, _ in self.items)
        self.items.clear()
        self.end()

    @property
    def stopped(self) -> bool:
        """Whether the writer should stop waiting for more (gone, ended or overflowed)."""
        return self.gone or self.ended or self.overflowed

    async def take(self) -> list[tuple[str, bytes, bool]]:
        while not self.items and not self.stopped:
            await self.wakeup.wait()
            self.wakeup = asyncio.Event()
        items, self.items = self.items, []
        return items


class ResponseStream:
    """One response stream (a POSTed request's, or the standalone GET stream)."""

    __slots__ = (
        "_parked",
        "_primed",
        "_pump",
        "_unstored",
        "closed",
        "cut_off",
        "done",
        "dropped",
        "error",
        "finished",
        "id",
        "limit",
        "listener",
        "overflowed",
        "queue",
        "queued",
        "session",
        "sse",
        "standalone",
        "wakeup",
    )

    def __init__(self, session: HttpSession, stream_id: str, standalone: bool = False,
                 limit: int = MAX_STREAM_BUFFER) -> None:
        self.session = session
        self.id = stream_id
        self.standalone = standalone
        self.queue: list[tuple[bytes, bool]] = []  # produced, not yet stored/sent
        self.wakeup = asyncio.Event()
        self.done = False  # the final message was produced
        self.closed = False  # the session ended: stop waiting for more
        self.cut_off = False  # ended by the server's drain in place of its answer (cut)
        self.error: int | None = None  # the code of a final answer that is an error
        self.sse = False  # switched to SSE (events are stored from then on)
        self.listener: Listener | None = None
        self.finished = asyncio.Event()  # the final event was stored (and handed on)
        self._pump = False  # a pump is running
        self._primed = False
        self._parked = False
        #: Bytes in ``queue``, bounded by ``limit``: past it a message that is not the
        #: final one is dropped (the event store is unreachable: counted in ``dropped``),
        #: or the stream is ``overflowed`` (written without a store: its reader is slow).
        self.queued = 0
        self.limit = limit
        self.dropped = 0
        self.overflowed = False
        self._unstored = False  # the event store failed: events go out without ids

    def push(self, data: bytes, final: bool) -> None:
        """Queue a message; ``final``: it ends the exchange (empty ``data``: withdrawn,
        the peer cancelled the request and no answer will come)."""
        if final:
            self.done = True
        elif self.queued > self.limit:  # a producer that is not paced (a broadcast)
            if not self.dropped:
                log.warning("session %s: stream %s holds %d bytes not yet taken (the event "
                            "store is unreachable, or its reader too slow); its "
                            "notifications are dropped until it drains",
                            self.session.session_id, self.id, self.queued)
            self.dropped += 1
            if not self.sse:  # relayed without a store (stateless, legacy): end it
                self.overflowed = True
                self.wakeup.set()
            return
        if self.queue:  # something waits already: this one is held too, at its size
            data = compact(data)
        self.queue.append((data, final))
        self.queued += len(data)
        self.wakeup.set()

    def take_queue(self) -> list[tuple[bytes, bool]]:
        """Everything queued, in order, and the queue emptied."""
        batch, self.queue = self.queue, []
        self.queued = 0
        return batch

    def end(self) -> None:
        """The session ended: nothing more will come; a connection writing the stream
        finishes its response."""
        self.closed = True
        self.wakeup.set()
        if self.listener is not None:
            self.listener.end()

    def unsent(self) -> int:
        """Bytes produced for this stream and not yet written to its reader."""
        listener = self.listener
        return self.queued + (listener.pending if listener is not None else 0)

    def congested(self) -> Coroutine[Any, Any, None] | None:
        """None when a producer may go on; else a wait until a quarter of the bound is
        left unsent (or the stream ended, its reader left or fell behind for good)."""
        if self.unsent() <= self.limit // 4:
            return None
        return self._room()

    async def _room(self) -> None:
        low = self.limit // 8
        deadline = time.monotonic() + self.session.patience + 1.0  # (the watchdog cuts first)
        while time.monotonic() < deadline and not (self.closed or self.overflowed):
            listener = self.listener
            held = self.queued  # (the pump takes it to the store, reader or not)
            if listener is not None and not listener.stopped:
                held += listener.pending
            if held <= low:
                return
            await asyncio.sleep(PACE_POLL)

    def cut(self, answer: bytes) -> None:
        """The server's drain ran out of time (``http_drain``): ``answer``, an error saying
        so, is the final message in place of the one that will not come."""
        self.cut_off = True
        self.push(answer, True)

    async def first(self) -> tuple[bytes, bool]:
        """The first message queued, left in the queue: ``(b"", True)`` when the exchange
        ended without one (withdrawn, or the session ended)."""
        while not self.queue:
            if self.closed:
                return WITHDRAWN
            await self.wakeup.wait()
            self.wakeup = asyncio.Event()
        return self.queue[0]

    def pop_first(self) -> None:
        """Drop the first message queued (an answer written as JSON, say)."""
        data, _ = self.queue.pop(0)
        self.queued -= len(data)

    async def first_unless_gone(self, receive: Receive) -> tuple[bytes, bool] | None:
        """The first message, or None if the client disconnected before it came."""
        if self.queue:
            return self.queue[0]
        with DisconnectWatch(receive, self.wake) as watch:
            while not self.queue and not watch.gone and not self.closed:
                await self.wakeup.wait()
                self.wakeup = asyncio.Event()
        if self.queue:
            return self.queue[0]
        return None if watch.gone else WITHDRAWN

    def wake(self) -> None:
        """Wake the writer waiting on this stream (its client went away, say)."""
        self.wakeup.set()

    def start_sse(self) -> None:
        """Store events from now on (starting the pump unless it runs)."""
        self.sse = True
        self._parked = False
        self._unstored = False  # (a GET stream opened again: its events are stored again)
        if not self.standalone:  # resumable by its id until its final event is stored
            self.session.resumable[self.id] = self
        if not self._pump:
            self._pump = True
            self.session.session.spawn(self._run_pump)

    def park(self) -> None:
        """The standalone stream lost its connection: stop the pump (it ends once idle);
        unstored messages go back to the session's backlog (within its bounds)."""
        self._parked = True
        self.wakeup.set()
        self.session.requeue([d for d, _ in self.take_queue()])

    async def _run_pump(self) -> None:
        store = self.session.store
        sid = self.session.session_id
        try:
            if not self._primed:
                self._primed = True
                rev = self.session.session.revision
                if rev is None or rev.has("sse_priming"):  # older clients choke on empty data
                    prime = await self._stored(store, sid, b"")
                    if prime and self.listener is not None:
                        self.listener.put(prime, b"", False)
            while True:
                while not self.queue:
                    if self._parked or self.closed:
                        return
                    await self.wakeup.wait()
                    self.wakeup = asyncio.Event()
                for data, final in self.take_queue():
                    if not data:  # withdrawn: the exchange ends without an answer,
                        # which the store records for a resumption on another instance
                        await self._stored(store, sid, STREAM_END)
                        self.finished.set()
                        if self.listener is not None:
                            self.listener.end()
                        return
                    event_id = await self._stored(store, sid, data)
                    if self.listener is not None:
                        self.listener.put(event_id, data, final)
                    if final:
                        self.finished.set()
                        return
        except Exception:
            log.exception("SSE stream %s of session %s failed", self.id, sid)
            self.finished.set()
            if self.listener is not None:
                self.listener.end()  # the response ends; the client may resume
        finally:
            self._pump = False
            if self.finished.is_set():
                self.session.resumable.pop(self.id, None)

    async def _stored(self, store: EventStore, sid: str, data: bytes) -> str:
        """The id of ``data`` stored as this stream's next event. A shared store that
        cannot be reached is waited for (``_stored_later``), so events go out in order
        once it is back. When it stays away past ``STORE_OUTAGE`` (or the store fails
        otherwise) this and every later event of the stream get no id (""): they still
        go to the connection, not stored and so not resumable, rather than being lost."""
        if self._unstored:
            return ""
        try:
            try:
                return await store.append(sid, self.id, data)
            except StoreUnavailable:  # a shared store: wait for it, in order
                return await _stored_later(store, sid, self.id, data)
        except Exception as exc:
            self._unstored = True
            log.warning("SSE stream %s of session %s: its events go out without ids from "
                        "now on (not resumable): the event store failed: %s", self.id, sid,
                        exc, exc_info=not isinstance(exc, StoreUnavailable))
            return ""


async def _stored_later(store: EventStore, sid: str, stream_id: str, data: bytes) -> str:
    """``store.append`` that failed once, retried while a shared store is unreachable (for
    at most ``STORE_OUTAGE`` seconds): events wait in order and nothing is lost meanwhile."""
    deadline = time.monotonic() + STORE_OUTAGE
    while True:
        await asyncio.sleep(STORE_RETRY)
        try:
            return await store.append(sid, stream_id, data)
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise


async def relay_sse(stream: ResponseStream, send: Send, receive: Receive) -> None:
    """Write a stream's messages as plain SSE events (no ids: nothing to resume; the
    response was started) until its final message, the end of its session, or a reader
    so slow that the stream's bound overflowed, then complete the response (a listen
    stream: listen again); or until the client's departure."""
    with DisconnectWatch(receive, stream.wake) as watch:
        try:
            await _relay(stream, send, watch)
            if not watch.gone:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass


async def _relay(stream: ResponseStream, send: Send, watch: DisconnectWatch) -> None:
    done = False
    while not done and not watch.gone:
        while not stream.queue and not watch.gone and not stream.closed:
            if stream.overflowed:
                return
            await stream.wakeup.wait()
            stream.wakeup = asyncio.Event()
        if not stream.queue:
            return  # the client left, or the stream ended with nothing left to send
        for data, final in stream.take_queue():
            if data:
                await send({"type": "http.response.body", "body": encode_event(data),
                            "more_body": True})
            done = done or final


__all__ = ["STREAM_END", "Listener", "ResponseStream", "relay_sse"]
