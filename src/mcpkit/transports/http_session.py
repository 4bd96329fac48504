"""HTTP sessions (Streamable HTTP and legacy HTTP+SSE): a ``Session`` whose output is routed.

An ``HttpSession`` owns a ``Session`` and is its ``Output``: each message the connection
produces is routed, not written — a message related to an inbound request goes to that
request's ``ResponseStream`` (``transports.http_streams``), anything else to the session's
standalone GET stream (or a bounded backlog until one opens). A standalone stream whose
connection ended is *parked*: its pump stops and unstored messages go back to the backlog;
resuming it (``Last-Event-ID``) or a new GET starts a pump again. So a client that
reconnects its GET stream in a loop holds one stream, not one per attempt. Each POSTed
body is fed with its ``Origin`` (principal, address). asyncio only.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Coroutine
from typing import Any, Protocol

from ..protocol.connection import Connection, Outgoing
from ..protocol.events import NO_ORIGIN, Origin
from ..protocol.jsonrpc import RequestId, compact
from ..session import Principal, RequestHandler, Session, SessionNotificationHandler
from ..storage.bus import NOTIFY, SessionBus
from ..storage.events import EventStore
from ..storage.faults import StoreUnavailable
from ..storage.sessions import SessionStore
from .http_stalls import STALL_TIMEOUT
from .http_streams import (
    MAX_BACKLOG,
    MAX_BACKLOG_BYTES,
    STORE_OUTAGE,
    STORE_RETRY,
    Listener,
    ResponseStream,
)

log = logging.getLogger("mcpkit.http")


class HttpSession:
    """One MCP session over HTTP: a ``Session`` whose output is routed to response streams."""

    __slots__ = (
        "__weakref__",
        "_seq",
        "backlog",
        "backlog_bytes",
        "bus",
        "checked",
        "direct",
        "last_seen",
        "last_standalone",
        "outbox",
        "owner",
        "patience",
        "resumable",
        "saved",
        "session",
        "session_id",
        "standalone",
        "store",
        "stream_prefix",
        "streams",
    )

    def __init__(
        self,
        conn: Connection,
        session_id: str,
        store: EventStore,
        *,
        on_request: RequestHandler | None,
        on_notification: SessionNotificationHandler | None,
        owner: str | None = None,
        patience: float = STALL_TIMEOUT,
    ) -> None:
        """``owner``: the identity of the principal that created the session (None: an
        unauthenticated endpoint); only requests of that identity may use it.
        ``patience``: seconds a producer paced by one of its streams waits for the reader
        (the app's stall timeout: its watchdog cuts a reader stuck that long)."""
        self.patience = patience
        self.session = Session(conn, output=self, on_request=on_request,
                               on_notification=on_notification)
        self.owner = owner
        self.session.attach()  # handlers run as tasks of the running (asyncio) loop
        self.session_id = session_id
        self.session.session_id = session_id or None
        self.store = store
        self.streams: dict[RequestId, ResponseStream] = {}
        #: The request streams answered as SSE, by stream id, until their final event is
        #: stored: what a ``Last-Event-ID`` resumption attaches to (also after the answer
        #: was produced but before it was stored; once stored, the replay has it).
        self.resumable: dict[str, ResponseStream] = {}
        self.standalone: ResponseStream | None = None
        self.last_standalone: ResponseStream | None = None  # the latest GET stream (resumable)
        self.backlog: list[bytes] = []  # server-initiated messages waiting for a GET stream
        self.backlog_bytes = 0
        self.direct: list[bytes] | None = None  # errors answering the POST being fed
        self.last_seen = time.monotonic()
        self.saved: dict[str, Any] | None = None  # the handshake state last stored
        self._seq = 0
        #: Shared with other instances (``http_shared``): the bus to them, and this
        #: instance's prefix of stream ids.
        self.bus: SessionBus | None = None
        self.checked = 0.0  # when the shared record was last renewed and read (monotonic)
        self.stream_prefix = ""
        self.outbox: list[bytes] = []  # for the bus, in order

    @property
    def conn(self) -> Connection:
        return self.session.conn

    def record(self) -> dict[str, Any]:
        """What a session store keeps of this session: the handshake state and the
        owner."""
        return {**self.conn.snapshot(), "owner": self.owner}

    @property
    def shared(self) -> bool:
        """Whether other instances may hold this session too."""
        return self.bus is not None

    def new_stream_id(self, standalone: bool = False) -> str:
        """``s<n>`` (``<token>-s<n>``, or ``-g<n>`` for a GET stream, when shared)."""
        self._seq += 1
        if self.bus is None:
            return f"s{self._seq}"
        return f"{self.stream_prefix}{'g' if standalone else 's'}{self._seq}"

    def is_standalone_id(self, stream_id: str) -> bool:
        """Whether a (shared) stream id names a GET stream."""
        return stream_id.rpartition("-")[2][:1] == "g"

    def wake(self, now: bool) -> None:
        """``Output``: route every queued message to its stream, at once."""
        for out in self.session.conn.messages_to_send():
            self._route(out)

    def _route(self, out: Outgoing) -> None:
        rid = out.related
        stream = self.streams.get(rid) if rid is not None else None
        if stream is not None:
            stream.push(out.data, out.final)
            if out.final:
                stream.error = out.error
                del self.streams[rid]  # type: ignore[arg-type]
            return
        if not out.data:
            return  # a withdrawn answer, and no exchange open here to end
        if out.final and self.direct is not None:
            self.direct.append(out.data)
            return
        standalone = self.standalone
        if standalone is not None:
            standalone.push(out.data, False)
        elif self.bus is not None:  # the GET stream may be open on another instance
            if len(self.outbox) < MAX_BACKLOG:  # (only while the bus is unreachable)
                self.outbox.append(NOTIFY + out.data)  # (a new, exact-size bytes)
            if len(self.outbox) == 1:
                self.session.spawn(self._publish)
        else:
            self.requeue([out.data])

    def requeue(self, messages: list[bytes]) -> None:
        """Keep messages for the next GET stream, after those kept already: at most
        ``MAX_BACKLOG`` of them and ``MAX_BACKLOG_BYTES`` in all (the newest are dropped:
        a client that opens no GET stream cannot make the server hold more)."""
        backlog = self.backlog
        for data in messages:
            if len(backlog) >= MAX_BACKLOG or self.backlog_bytes + len(data) > MAX_BACKLOG_BYTES:
                return
            backlog.append(compact(data))  # kept: held at its size
            self.backlog_bytes += len(data)

    def congested(self, related: RequestId | None) -> Coroutine[Any, Any, None] | None:
        """``Output``: None when the stream of ``related`` (the GET stream for None) has
        room; else a wait for its reader to catch up (``ResponseStream.congested``)."""
        stream = self.streams.get(related) if related is not None else self.standalone
        return None if stream is None else stream.congested()

    async def _publish(self) -> None:
        """Publish the outbox on the bus, in order (one publisher at a time). While the
        bus cannot be reached the messages wait (up to ``MAX_BACKLOG`` of them, for up to
        ``STORE_OUTAGE`` seconds, as SSE events do); past that they are dropped, logged."""
        down_since: float | None = None
        while self.outbox and self.bus is not None:
            try:
                await self.bus.publish(self.session_id, self.outbox[0])
                down_since = None
            except Exception as exc:
                now = time.monotonic()
                down_since = now if down_since is None else down_since
                if isinstance(exc, StoreUnavailable) and now - down_since < STORE_OUTAGE:
                    await asyncio.sleep(STORE_RETRY)
                    continue
                log.warning("session %s: a message for the GET stream was dropped: %s",
                            self.session_id, exc)
            del self.outbox[0]

    def feed(self, obj: Any, principal: Principal | None = None,
             peer: str | None = None) -> list[bytes]:
        """Give the connection one POSTed body, sent by ``principal`` (what the handlers
        of its requests see as ``ctx.auth``) from the address ``peer``; return errors that
        answer the POST itself."""
        self.last_seen = time.monotonic()
        origin = NO_ORIGIN if principal is None and peer is None else Origin(principal, peer)
        self.direct = []
        try:
            self.session.receive_message(obj, origin)
            return self.direct
        finally:
            self.direct = None

    def open_standalone(self, stream: ResponseStream, listener: Listener) -> None:
        """Make ``stream`` the GET stream, read by ``listener``'s connection."""
        self.standalone = self.last_standalone = stream
        stream.listener = listener
        for data in self.backlog:
            stream.push(data, False)
        self.backlog.clear()
        self.backlog_bytes = 0
        stream.start_sse()

    def release_standalone(self, stream: ResponseStream) -> None:
        """The GET stream's connection ended: unless a resumed one took it over, park the
        stream; messages wait in the backlog for the next GET (or its resumption)."""
        if self.standalone is stream and stream.listener is None:
            self.standalone = None
            stream.park()

    def close(self) -> None:
        """End the session: handlers and stream pumps cancelled, every stream ended."""
        self.session.close()
        for stream in (self.standalone, *self.streams.values(), *self.resumable.values()):
            if stream is not None:
                stream.end()


class OpenSession(Protocol):
    """How a path of an app makes a session (``StreamableHTTPApp.open_session``): for id
    ``sid``, with connection ``conn`` (a restored one; None: a new one), belonging to
    ``owner``."""

    def __call__(self, sid: str, conn: Connection | None = None,
                 owner: str | None = None) -> HttpSession: ...


def is_answer(msg: Any) -> bool:
    """Whether a decoded message is a JSON-RPC response (a result or an error)."""
    return isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg)



def forget_stored(sid: str, events: EventStore, sessions: SessionStore) -> None:
    """Remove an ended session's event log and stored record in the background (from the
    event loop); a failure is logged, never lost silently."""
    loop = asyncio.get_running_loop()
    for what, coro in (("event log", events.drop(sid)), ("stored state", sessions.delete(sid))):
        task = loop.create_task(coro)
        task.add_done_callback(functools.partial(_log_failure, what, sid))


def _log_failure(what: str, sid: str, task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("could not remove the %s of ended session %s", what, sid,
                  exc_info=task.exception())


__all__ = ["HttpSession", "forget_stored", "is_answer"]
