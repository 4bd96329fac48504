"""The message dispatcher of a session: events of the connection -> handlers -> answers.

``Session`` drives a sans-I/O ``Connection`` for either role, never touching bytes or
sockets: a transport feeds it what the peer sent (``receive_data``: newline-framed bytes;
``receive_message``: one decoded message) and is told through its ``Output`` when there
are messages to send (``BytePump`` for stdio and memory; response streams for an HTTP
server, ``transports.http_streams``; a POST each for an HTTP client). A handler returns
an awaitable of its result; methods answered by the core, and handlers whose awaitable is
a ``Ready`` (the result already there), are answered inline; any other awaitable runs in
a task of its own (asyncio's, or a task-group child), so a cancellation stops exactly
that request. When the session ends (``end``/``close``) every pending outbound
request fails with ``ConnectionClosed`` and every running handler is cancelled; a
transport that cannot carry one request fails just that one (``fail_request``).
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from types import CoroutineType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from ..protocol.connection import (
    CancelRequested,
    Connection,
    ErrorReceived,
    Event,
    HandshakeFailed,
    NotificationReceived,
    ProgressReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    SessionStarted,
)
from ..protocol.errors import (
    ConnectionClosed,
    InternalError,
    MCPError,
    ProtocolError,
)
from ..protocol.events import NO_ORIGIN, Origin
from ..protocol.jsonrpc import JSONObject, RequestId
from ..protocol.stateless import SUBSCRIPTION_ID
from ..protocol.versions import Revision
from .asking import Asking
from .interfaces import (
    DEFAULT_DRAIN_TIMEOUT,
    ENDLESS_METHODS,
    Output,
    ProgressCallback,
    Ready,
    RequestHandler,
    SessionNotificationHandler,
)
from .loop import running_asyncio_loop, task_factory
from .pump import BytePump

if TYPE_CHECKING:
    from .pump import ByteStream
    from .telemetry import Telemetry

log = logging.getLogger("mcpkit")

_FROM_PEER = (RequestReceived, NotificationReceived)  # what carries its Origin


class Session:
    """One MCP session, for either role: the connection, its handlers and its waiters."""

    # Slots keep an idle session small (HTTP servers hold thousands of them).
    __slots__ = (
        "__weakref__", "_asyncio_loop", "_closed", "_coros", "_endless", "_feeding",
        "_handles", "_handshake_done", "_idle", "_loop_thread", "_loop_token", "_new_task",
        "_on_event", "_on_notification", "_on_request", "_output", "_started", "_tasks",
        "_tg", "asking", "congested", "conn", "drain_timeout", "handshake_cause",
        "handshake_error", "pump", "session_id", "state", "telemetry", "visibility",
    )

    def __init__(
        self,
        conn: Connection,
        stream: ByteStream | None = None,
        *,
        output: Output | None = None,
        on_request: RequestHandler | None = None,
        on_notification: SessionNotificationHandler | None = None,
        on_event: Callable[[Session, Event], None] | None = None,
    ) -> None:
        """Give either a byte ``stream`` (served by ``run()`` through a ``BytePump``) or an
        ``output`` of the transport's own that takes the connection's messages."""
        self.conn = conn
        self._on_request = on_request
        self._on_notification = on_notification
        self._on_event = on_event
        self._handles: dict[RequestId, Any] = {}  # inbound id -> task or cancel scope
        self._coros: dict[RequestId, Awaitable[JSONObject]] = {}  # the handlers' awaitables
        self._endless: set[RequestId] = set()  # running requests of ENDLESS_METHODS
        self._feeding = False  # inside _feed: the output is woken once, at its end
        self._new_task: Callable[[Coroutine[Any, Any, None]], Any] | None = None
        self.drain_timeout = DEFAULT_DRAIN_TIMEOUT  # seconds handlers may finish after EOF
        self._idle: anyio.Event | None = None  # set when the last handler finishes
        self._closed = False
        self._tg: anyio.abc.TaskGroup | None = None
        self._asyncio_loop: Any = None
        self._loop_thread: int | None = None  # thread running the event loop (see notify)
        self._loop_token: Any = None
        self._tasks: set[Any] | None = None  # helper tasks (created on first use)
        self._started: anyio.Event | None = None
        self._handshake_done = False
        self.handshake_error: str | None = None
        self.handshake_cause: MCPError | None = None  # fail_request's error
        self.state: dict[str, Any] = {}  # the application's (Context.session_state)
        #: This session's own component visibility rules (``server/visibility.py``, kept
        #: here opaque to this layer); None while it has none.
        self.visibility: Any = None
        #: The transport's name for the session when it outlives a connection (the
        #: Streamable HTTP session id); None otherwise. Tasks are bound to it.
        self.session_id: str | None = None
        #: Traces and measures the requests this session sends (None: not done).
        self.telemetry: Telemetry | None = None
        self.pump: BytePump | None = None
        if stream is not None:
            self.pump = BytePump(self, stream)
            output = self.pump
        if output is None:
            raise TypeError("Session needs a byte stream or an output")
        self._output: Output = output
        #: The requests this side sent, waiting for their answers.
        self.asking = Asking(conn, functools.partial(output.wake, False))
        #: ``Output.congested``, bound once (checking costs one call).
        self.congested: Callable[[RequestId | None], Awaitable[None] | None] = (
            output.congested)

    @property
    def started(self) -> anyio.Event:
        """Set when the handshake result is known (``SessionStarted``/``HandshakeFailed``)."""
        if self._started is None:
            self._started = anyio.Event()
            if self._handshake_done:
                self._started.set()
        return self._started

    def _mark_started(self) -> None:
        self._handshake_done = True
        if self._started is not None:
            self._started.set()

    # ------------------------------------------------------------------ for transports

    def attach(self, tg: anyio.abc.TaskGroup | None = None) -> None:
        """Bind the session to the running event loop (call from inside it, before
        feeding input). On asyncio, handlers run as plain tasks; elsewhere ``tg`` runs them.
        """
        self._loop_thread = threading.get_ident()
        self._loop_token = anyio.lowlevel.current_token()
        self._asyncio_loop = loop = running_asyncio_loop()
        self._tg = tg
        self._new_task = None if loop is None else task_factory(loop)

    @property
    def asyncio_loop(self) -> Any:
        """The asyncio loop the session runs on (``None`` before ``attach`` or on trio)."""
        return self._asyncio_loop

    async def run(
            self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve the byte stream given to the constructor until the peer closes its side
        or the transport breaks (see ``BytePump.run``)."""
        if self.pump is None:
            raise TypeError("this session has no byte stream to run; its transport feeds it")
        await self.pump.run(task_status=task_status)

    def stop_input(self) -> None:
        """Stop reading, as if the input had ended: running handlers get the drain window
        (``drain_timeout``), then are cancelled; finished answers are still written. For a
        graceful stop on SIGTERM; safe to call more than once, or before ``run``."""
        if self.pump is not None:
            self.pump.stop_input()

    def receive_data(self, data: bytes) -> None:
        """Bytes of a newline-framed stream from the peer."""
        self._feed(self.conn.receive_data, data)

    def receive_eof(self) -> None:
        """The peer's input ended (a last unterminated line is still processed)."""
        self._feed(self.conn.receive_eof)

    def receive_message(self, obj: Any, origin: Origin = NO_ORIGIN) -> None:
        """One decoded JSON value from the peer (an object, or a batch array), sent by
        ``origin`` (who and from where, when the transport knows: every request and
        notification of ``obj`` carries it to its handler)."""
        self._feed(self.conn.receive_message, obj, origin=origin)

    def flush(self) -> None:
        """Hand queued messages to the output (after using ``conn`` directly)."""
        self._output.wake(False)

    def fail_request(self, rid: RequestId, error: MCPError) -> bool:
        """The transport could not deliver our request ``rid`` or lost its answer: its
        caller gets ``error`` (a ``TransportError``) now, and nothing is sent to the peer;
        failing the first ``initialize`` fails the handshake. False when ``rid`` is no
        longer pending (answered, cancelled or timed out meanwhile)."""
        method = self.conn.abandon_request(rid)
        if method is None:
            return False
        if method == "initialize" and not self._handshake_done:
            self.handshake_error = str(error)
            self.handshake_cause = error
            self._mark_started()
        self.asking.fail(rid, error)
        return True

    @property
    def in_flight(self) -> int:  # inbound requests being handled
        return len(self._handles)

    def is_handling(self, rid: RequestId) -> bool:
        """Whether the inbound request ``rid`` is being handled."""
        return rid in self._handles

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run a helper of the transport's (``fn()``) until it ends or the session closes;
        an exception it raises is logged (nothing else awaits it)."""

        async def guarded() -> None:
            try:
                await fn()
            except Exception:
                log.exception("session helper %r failed", fn)

        loop = self._asyncio_loop
        if loop is not None:
            self._track(loop.create_task(guarded()))
        elif self._tg is not None:
            self._tg.start_soon(guarded)
        else:
            raise RuntimeError("Session.spawn before attach()")

    def end(self) -> None:
        """The transport is gone: fail every pending outbound request (idempotent)."""
        self._closed = True
        self._fail_waiters()

    def close(self) -> None:
        """End the session now: pending requests fail, handlers and helpers are cancelled."""
        self.end()
        for rid, handle in list(self._handles.items()):
            self._cancel(rid, handle)
        for task in list(self._tasks or ()):
            task.cancel()

    async def drain(self, stopped: bool = False) -> None:
        """At end of input, let running handlers finish (up to ``drain_timeout``); endless
        requests (``subscriptions/listen``) end now, with their completion result when
        ``stopped`` (SIGTERM: R26-07.SUB.5)."""
        for rid in [r for r in self._endless if r in self._handles]:
            self._cancel(rid, self._handles.pop(rid))
            if stopped:
                self.conn.send_result(rid, {"_meta": {SUBSCRIPTION_ID: rid}})
        self._endless.clear()
        if not self._handles:
            return
        self._idle = anyio.Event()
        with anyio.move_on_after(self.drain_timeout):
            await self._idle.wait()

    def _feed(self, receive: Callable[..., list[Event]], *args: Any,
              origin: Origin = NO_ORIGIN) -> None:
        """Process input; a bug met while doing so is logged and the session goes on
        (one bad message must not take the server down)."""
        self._feeding = True
        try:
            for event in receive(*args):
                if origin is not NO_ORIGIN and type(event) in _FROM_PEER:
                    event.origin = origin  # type: ignore[union-attr]
                self._handle(event)
        except Exception:
            log.exception("internal error while processing input; the input was dropped")
        finally:
            self._feeding = False
        # Nothing in flight: every answer of this input is queued, write now; otherwise
        # let the output coalesce with what running handlers produce this loop turn.
        self._output.wake(not self._handles)

    def _fail_waiters(self) -> None:
        self.conn.fail_pending()
        self.asking.fail_all()
        if not self._handshake_done:
            self.handshake_error = self.handshake_error or (
                "the server closed the connection before answering initialize (did it "
                "crash? check its stderr)"
            )
            self._mark_started()

    def _track(self, task: Any) -> None:
        """Hold a strong reference to an asyncio task until it ends (the loop keeps weak)."""
        if self._tasks is None:
            self._tasks = set()
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _cancel(self, rid: RequestId, handle: Any) -> None:
        handle.cancel()
        work = self._coros.pop(rid, None)
        if isinstance(work, CoroutineType) and inspect.getcoroutinestate(
                work) == inspect.CORO_CREATED:
            work.close()  # never started: close it so it is not reported as un-awaited

    async def cancel_handlers(self) -> None:
        """Cancel every running handler and helper task and wait until they ended."""
        for rid, handle in list(self._handles.items()):
            self._cancel(rid, handle)
        tasks = list(self._tasks or ())
        for task in tasks:
            task.cancel()  # (a finished one ignores it)
        if tasks:
            cancelled = anyio.get_cancelled_exc_class()
            with anyio.CancelScope(shield=True):
                for task in tasks:
                    try:
                        await task
                    except cancelled:
                        pass  # it stopped, as asked (helpers log their own failures)

    # ------------------------------------------------------------------ events

    def _handle(self, event: Event) -> None:
        t = type(event)
        if t is RequestReceived:
            assert isinstance(event, RequestReceived)
            self._start_request(event)
        elif t is CancelRequested:
            assert isinstance(event, CancelRequested)
            handle = self._handles.pop(event.id, None)
            if handle is not None:
                self._cancel(event.id, handle)
                if self._idle is not None and not self._handles:
                    self._idle.set()
        elif t is ResponseReceived or t is ErrorReceived:
            assert isinstance(event, ResponseReceived | ErrorReceived)
            self.asking.answered(event)
        elif t is ProgressReceived:
            assert isinstance(event, ProgressReceived)
            callback = self.asking.on_progress(event.request_id)
            if callback is not None:
                self._spawn_callback(callback, event.progress, event.total, event.message)
        elif t is NotificationReceived:
            assert isinstance(event, NotificationReceived)
            if self._on_notification is not None:
                self._spawn_callback(self._on_notification, self, event)
        elif t is ProtocolViolation:
            assert isinstance(event, ProtocolViolation)
            log.debug("protocol violation from peer: %s", event.error.message)
        else:
            if isinstance(event, SessionStarted | HandshakeFailed):
                if isinstance(event, HandshakeFailed):
                    self.handshake_error = event.reason
                self._mark_started()
            if self._on_event is not None:
                self._on_event(self, event)

    def _start_request(self, event: RequestReceived) -> None:
        handler = self._on_request
        conn = self.conn
        if handler is None:
            conn.send_error(event.id, InternalError("Internal error: no request handler."))
            return
        try:
            outcome = handler(self, event)
        except ProtocolError as exc:
            conn.send_error(event.id, exc)
            return
        except Exception:
            log.exception("handler for %r failed", event.method)
            conn.send_error(event.id, _internal(event.method))
            return
        if type(outcome) is Ready:  # the result is there: answered now, no task started
            conn.send_result(event.id, outcome.value)
            return
        self._spawn_request(event, outcome)

    def _spawn_request(self, event: RequestReceived, work: Awaitable[JSONObject]) -> None:
        new_task = self._new_task
        if new_task is not None:
            task = new_task(self._run_handler(event, work, None))
            if task.done():  # answered before its first wait (an eager start): no task left
                return
            self._handles[event.id] = task
            self._coros[event.id] = work
            self._track(task)
        else:
            scope = anyio.CancelScope()
            self._handles[event.id] = scope
            self._coros[event.id] = work
            assert self._tg is not None
            self._tg.start_soon(self._run_handler, event, work, scope)
        if event.method in ENDLESS_METHODS:
            self._endless.add(event.id)

    async def _run_handler(
        self,
        event: RequestReceived,
        work: Awaitable[JSONObject],
        scope: anyio.CancelScope | None,
    ) -> None:
        rid = event.id
        conn = self.conn
        try:
            if scope is not None:
                with scope:
                    result = await work
                if scope.cancelled_caught:
                    return
            else:
                result = await work
        except ProtocolError as exc:
            conn.send_error(rid, exc)
        except Exception:
            log.exception("handler for %r failed", event.method)
            conn.send_error(rid, _internal(event.method))
        else:
            conn.send_result(rid, result)
        finally:
            if scope is None or not scope.cancel_called:
                self._handles.pop(rid, None)
            self._coros.pop(rid, None)
            if isinstance(work, CoroutineType):
                work.close()
            if self._endless:
                self._endless.discard(rid)
            if not self._feeding:  # (while feeding, _feed wakes the output once at its end)
                # nothing else running: the output may write now, without an extra loop turn
                self._output.wake(not self._handles)
            if self._idle is not None and not self._handles:
                self._idle.set()

    def _spawn_callback(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn`` in a task of its own (a slow callback never holds up the reader).
        asyncio starts tasks in spawn order, so callbacks start in event order there;
        trio does not promise an order."""
        async def call() -> None:
            try:
                res = fn(*args)
                if res is not None and hasattr(res, "__await__"):
                    await res
            except Exception:
                log.exception("callback %r failed", fn)

        if self._asyncio_loop is not None:
            self._track(self._asyncio_loop.create_task(call()))
        elif self._tg is not None:
            self._tg.start_soon(call)

    @property
    def closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------------------ what the handshake set

    @property
    def revision(self) -> Revision | None:
        """The revision the handshake agreed (None before it, and on a connection that
        only serves stateless requests): what governs what is sent outside a request."""
        return self.conn.revision

    @property
    def peer_capabilities(self) -> JSONObject:
        """The capabilities the peer declared in the handshake (empty before it)."""
        return self.conn.peer_capabilities

    @property
    def peer_info(self) -> JSONObject:
        """The peer's ``clientInfo``/``serverInfo`` from the handshake (empty before it)."""
        return self.conn.peer_info

    @property
    def log_level(self) -> str | None:
        """The level the client last set with ``logging/setLevel`` (None: not set)."""
        return self.conn.log_level

    def wants_log(self, level: str) -> bool:
        """Whether a log message at ``level`` would reach the client now."""
        return self.conn.wants_log(level)

    def notify(
        self, method: str, params: JSONObject | None = None, *, related: RequestId | None = None
    ) -> bool:
        """Send a notification (False if the revision/capabilities do not allow it).

        Safe to call from another thread (a synchronous tool, say): it then runs on the
        event loop, so it is written at once and never races the loop over the outbox.
        """
        if self._closed:
            return False
        if self._loop_thread is not None and threading.get_ident() != self._loop_thread:
            import anyio.from_thread  # only a worker thread needs it: off the start-up path

            try:
                return anyio.from_thread.run_sync(
                    functools.partial(self.notify, method, params, related=related),
                    token=self._loop_token,
                )
            except RuntimeError:  # the event loop is gone
                return False
        return self._woke(self.conn.send_notification(method, params, related=related))

    def progress(
        self, rid: RequestId, progress: float, total: float | None, message: str | None
    ) -> bool:
        return not self._closed and self._woke(
            self.conn.send_progress(rid, progress, total, message))

    def log(self, level: str, data: Any, logger: str | None, related: RequestId | None) -> bool:
        return not self._closed and self._woke(
            self.conn.send_log(level, data, logger, related=related))

    def _woke(self, sent: bool) -> bool:
        """``sent``, once the output is woken when it is True (something was queued)."""
        if sent:
            self._output.wake(False)
        return sent

    async def request(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        timeout: float | None = 60.0,
        related: RequestId | None = None,
        on_progress: ProgressCallback | None = None,
        on_sent: Callable[[RequestId], None] | None = None,
    ) -> JSONObject:
        """Send a request to the peer and wait for its result (``on_sent`` learns its id).

        Raises ``RemoteError`` (the peer answered with an error), ``RequestTimeout`` (no
        answer within ``timeout`` seconds; ``notifications/cancelled`` was sent),
        ``ConnectionClosed`` (the connection ended first), ``CapabilityNotSupported``
        (the peer or the revision lacks the feature; nothing was sent) and whatever the
        transport failed the request with (``fail_request``: a ``TransportError``). If
        the caller is cancelled, the request is cancelled on the peer too.
        """
        if self._closed:
            raise ConnectionClosed("the connection to the peer is closed")
        telemetry = self.telemetry
        if telemetry is None:
            return await self.asking.request(method, params, timeout, related, on_progress,
                                            on_sent)
        traced = telemetry.outgoing(self, method, params, self.session_id)
        try:
            result = await self.asking.request(method, traced.params, timeout, related,
                                              on_progress, traced.on_sent(on_sent))
        except BaseException as exc:
            traced.done(None, exc)
            raise
        traced.done(result, None)
        return result


def _internal(method: str) -> InternalError:
    return InternalError(
        f"Internal error while handling '{method}'. The server logged the details; retry "
        "later or report it to the server's operator."
    )


__all__ = ["DEFAULT_DRAIN_TIMEOUT", "ENDLESS_METHODS", "Output", "Session"]
