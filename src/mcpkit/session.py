"""Drive a sans-I/O ``Connection`` over a byte stream with anyio: read, dispatch, write.

One reader loop feeds the connection; protocol methods answered by the core or by a
synchronous handler are answered inline, without a task; only handlers that may wait run
in their own task (a plain ``asyncio`` task on asyncio, a task-group child elsewhere), so
a cancellation can stop exactly that request. One writer task drains the connection's
outbox, coalescing everything queued since its last write into one ``send``.

Failure modes: the peer closing its side ends ``run()`` normally; a broken transport ends
it with the transport's exception. Either way every pending outbound request fails with
``ConnectionClosed`` and every running handler is cancelled.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel

from .protocol.connection import (
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
    SessionReady,
    SessionStarted,
)
from .protocol.errors import (
    ConnectionClosed,
    InternalError,
    ProtocolError,
    RemoteError,
    RequestTimeout,
)
from .protocol.jsonrpc import JSONObject, RequestId
from .protocol.record import Record

log = logging.getLogger("mcpkit")


class ByteStream(Protocol):
    """What a stream transport gives a session.

    ``receive`` returns the next chunk of bytes and raises ``anyio.EndOfStream`` when the
    peer closed its side, ``anyio.BrokenResourceError`` when the transport broke;
    ``send`` writes all of ``data`` (same errors); ``aclose`` releases the transport.
    """

    async def receive(self) -> bytes: ...

    async def send(self, data: bytes) -> None: ...

    async def aclose(self) -> None: ...


HandlerResult = JSONObject | Coroutine[Any, Any, JSONObject]
RequestHandler = Callable[["Session", RequestReceived], HandlerResult]
"""Answers an inbound request: a result now, or a coroutine producing it (run in a task).
Raising ``ProtocolError`` answers with that error."""
NotificationHandler = Callable[["Session", NotificationReceived], Awaitable[None] | None]
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]


DEFAULT_DRAIN_TIMEOUT = 1.0
"""Seconds in-flight handlers may run on after the input ended, before they are cancelled.
Short on purpose: MCP clients wait about 2 s after closing stdin before they SIGTERM."""


def _running_asyncio_loop() -> Any:
    """The running asyncio event loop, or ``None`` under another event loop (trio)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _Waiter(Record):
    __slots__ = ("done", "error", "on_progress", "result")

    def __init__(
        self,
        done: anyio.Event | None = None,
        result: JSONObject | None = None,
        error: Exception | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> None:
        self.done = anyio.Event() if done is None else done
        self.result = result
        self.error = error
        self.on_progress = on_progress


class _Unset:
    """Stands in for the writer's wake-up event until ``run()`` creates it."""

    __slots__ = ()

    def set(self) -> None:
        return None


_UNSET = _Unset()


class Session:
    """One MCP session over one byte stream, for either role."""

    # Slots keep an idle session small (HTTP servers hold thousands of them).
    __slots__ = (
        "__weakref__",
        "_asyncio_loop",
        "_backlog",
        "_closed",
        "_coros",
        "_flush_scheduled",
        "_handles",
        "_handshake_done",
        "_idle",
        "_loop_thread",
        "_loop_token",
        "_on_event",
        "_on_notification",
        "_on_request",
        "_reader_scope",
        "_send_done",
        "_started",
        "_tasks",
        "_tg",
        "_try_send",
        "_waiters",
        "_wakeup",
        "_writer_busy",
        "conn",
        "drain_timeout",
        "handshake_error",
        "state",
        "stream",
    )

    def __init__(
        self,
        conn: Connection,
        stream: ByteStream,
        *,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        on_event: Callable[[Session, Event], None] | None = None,
    ) -> None:
        self.conn = conn
        self.stream = stream
        self._on_request = on_request
        self._on_notification = on_notification
        self._on_event = on_event
        self._handles: dict[RequestId, Any] = {}  # inbound id -> task or cancel scope
        self._coros: dict[RequestId, Coroutine[Any, Any, JSONObject]] = {}
        self.drain_timeout = DEFAULT_DRAIN_TIMEOUT  # seconds handlers may finish after EOF
        self._reader_scope: anyio.CancelScope | None = None  # cancelled by stop_input()
        self._idle: anyio.Event | None = None  # set when the last handler finishes
        self._waiters: dict[RequestId, _Waiter] = {}
        self._wakeup: anyio.Event | _Unset = _UNSET  # created by run()
        self._closed = False
        self._tg: anyio.abc.TaskGroup | None = None
        self._asyncio_loop: Any = None
        self._loop_thread: int | None = None  # thread running the event loop (see notify)
        self._loop_token: Any = None
        self._tasks: set[Any] | None = None  # helper tasks (created on first use)
        self._try_send: Callable[[bytes], int] | None = None
        self._flush_scheduled = False
        self._writer_busy = False
        self._send_done: anyio.Event | None = None  # set when the writer's last send ended
        self._backlog = b""
        self._started: anyio.Event | None = None
        self._handshake_done = False
        self.handshake_error: str | None = None
        self.state: dict[str, Any] = {}  # per-session data for the layers above

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

    # ------------------------------------------------------------------ running

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED)\
            -> None:
        """Serve until the peer closes its side or the transport breaks."""
        self._wakeup = anyio.Event()
        self._loop_thread = threading.get_ident()
        self._loop_token = anyio.lowlevel.current_token()
        loop = _running_asyncio_loop()
        if loop is not None:
            self._asyncio_loop = loop
            self._try_send = getattr(self.stream, "try_send", None)
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._writer)
                task_status.started()
                eof = False
                try:
                    read_nowait = getattr(self.stream, "read_nowait", None)
                    with anyio.CancelScope() as self._reader_scope:
                        if (
                            self._asyncio_loop is not None
                            and read_nowait is not None
                            and getattr(self.stream, "pollable", False)
                        ):
                            await self._callback_reader(read_nowait)
                        else:
                            await self._reader()
                    if self._reader_scope.cancel_called:  # stop_input(): as if input ended
                        self._feed(self.conn.receive_eof)
                    eof = True
                finally:
                    if eof:
                        await self._drain()
                    self._shutdown()
                    await self._cancel_handlers()
                    with anyio.CancelScope(shield=True):
                        await self._flush_final()
                    tg.cancel_scope.cancel()
        finally:
            self._closed = True
            self._fail_waiters()

    async def _callback_reader(self, read_nowait: Callable[[], bytes | None]) -> None:
        """asyncio fast path: read and dispatch inside the loop's readiness callback.

        Saves the reader task's wake-up and the per-read registration of the descriptor;
        requests that need a task still get one, answered ones are written at once.
        """
        loop = self._asyncio_loop
        fd = self.stream.read_fd  # type: ignore[attr-defined]
        ended = anyio.Event()
        conn = self.conn

        def on_readable() -> None:
            try:
                data = read_nowait()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                data = b""
            if data is None:
                return
            if not data:
                loop.remove_reader(fd)
                ended.set()
                self._feed(conn.receive_eof)
            else:
                self._feed(conn.receive_data, data)

        loop.add_reader(fd, on_readable)
        try:
            await ended.wait()
        finally:
            loop.remove_reader(fd)

    def _feed(self, receive: Callable[..., list[Event]], *args: Any) -> None:
        """Process input; a bug met while doing so is logged and the session goes on
        (one bad message must not take the server down)."""
        try:
            for event in receive(*args):
                self._handle(event)
        except Exception:
            log.exception("internal error while processing input; the input was dropped")
        self._kick()

    async def _reader(self) -> None:
        conn, stream = self.conn, self.stream
        while True:
            try:
                data = await stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._feed(conn.receive_eof)
                return
            self._feed(conn.receive_data, data)

    def stop_input(self) -> None:
        """Stop reading, as if the input had ended: running handlers get the drain window
        (``drain_timeout``), then are cancelled; finished answers are still written. For a
        graceful stop on SIGTERM; safe to call more than once, or before ``run``."""
        if self._reader_scope is not None:
            self._reader_scope.cancel()

    async def _drain(self) -> None:
        """At end of input, let running handlers finish (up to ``drain_timeout``); a
        ``subscriptions/listen`` stream only ends when its client ends it, so it ends now."""
        inbound = self.conn._inbound
        for rid in [r for r in self._handles if getattr(inbound.get(r), "method", None)
                    == "subscriptions/listen"]:
            self._cancel(rid, self._handles.pop(rid))
        if not self._handles:
            return
        self._idle = anyio.Event()
        with anyio.move_on_after(self.drain_timeout):
            await self._idle.wait()

    async def _writer(self) -> None:
        conn, stream = self.conn, self.stream
        while True:
            wakeup = self._wakeup
            assert isinstance(wakeup, anyio.Event)
            await wakeup.wait()
            self._wakeup = anyio.Event()
            data = self._backlog + conn.data_to_send()
            self._backlog = b""
            if data:
                done = self._send_done = anyio.Event()
                try:
                    await stream.send(data)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    self._shutdown()
                    return
                finally:
                    done.set()
            self._writer_busy = False

    async def _flush_final(self) -> None:
        if self._send_done is not None:
            # Bytes the writer took may still be being written: let it finish, or
            # cancelling it next would lose them.
            with anyio.move_on_after(5):
                await self._send_done.wait()
        data = self._backlog + self.conn.data_to_send()
        self._backlog = b""
        if data:
            try:
                with anyio.move_on_after(5):
                    await self.stream.send(data)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

    def _kick(self) -> None:
        """Arrange for queued output to be written soon, coalescing what piles up meanwhile."""
        if self._try_send is None or self._writer_busy:
            self._wakeup.set()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._asyncio_loop.call_soon(self._flush_now)

    def _flush_now(self) -> None:
        # Runs as a loop callback after the tasks made ready this iteration: one
        # non-blocking write for everything they queued; a remainder goes to the writer.
        self._flush_scheduled = False
        if self._writer_busy or self._closed:
            self._wakeup.set()
            return
        data = self.conn.data_to_send()
        if not data:
            return
        assert self._try_send is not None
        try:
            n = self._try_send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._shutdown()
            if self._tg is not None:
                self._tg.cancel_scope.cancel()
            return
        if n < len(data):
            self._backlog = data[n:]
            self._writer_busy = True
            self._wakeup.set()

    def _shutdown(self) -> None:
        if not self._closed:
            self._closed = True
            self._fail_waiters()

    def _fail_waiters(self) -> None:
        self.conn.fail_pending()
        for waiter in self._waiters.values():
            if waiter.result is None and waiter.error is None:
                waiter.error = ConnectionClosed("the connection to the peer closed")
            waiter.done.set()
        self._waiters.clear()
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
        coro = self._coros.pop(rid, None)
        if coro is not None and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
            coro.close()  # never started: close it so it is not reported as un-awaited

    async def _cancel_handlers(self) -> None:
        for rid, handle in list(self._handles.items()):
            self._cancel(rid, handle)
        tasks = list(self._tasks or ())
        if tasks:
            with anyio.CancelScope(shield=True):
                for task in tasks:
                    try:
                        await task
                    except BaseException:
                        pass

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
            waiter = self._waiters.pop(event.id, None)
            if waiter is not None:
                if isinstance(event, ResponseReceived):
                    waiter.result = event.result
                else:
                    waiter.error = event.error
                waiter.done.set()
        elif t is ProgressReceived:
            assert isinstance(event, ProgressReceived)
            waiter = self._waiters.get(event.request_id)
            if waiter is not None and waiter.on_progress is not None:
                self._spawn_callback(
                    waiter.on_progress, event.progress, event.total, event.message
                )
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
            elif isinstance(event, SessionReady):
                pass

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
        if type(outcome) is dict:
            conn.send_result(event.id, outcome)
            return
        assert not isinstance(outcome, dict)
        self._spawn_request(event, outcome)

    def _spawn_request(self, event: RequestReceived, coro: Coroutine[Any, Any, JSONObject]) -> None:
        loop = self._asyncio_loop
        if loop is not None:
            task = loop.create_task(self._run_handler(event, coro, None))
            self._handles[event.id] = task
            self._coros[event.id] = coro
            self._track(task)
        else:
            scope = anyio.CancelScope()
            self._handles[event.id] = scope
            self._coros[event.id] = coro
            assert self._tg is not None
            self._tg.start_soon(self._run_handler, event, coro, scope)

    async def _run_handler(
        self,
        event: RequestReceived,
        coro: Coroutine[Any, Any, JSONObject],
        scope: anyio.CancelScope | None,
    ) -> None:
        rid = event.id
        conn = self.conn
        try:
            if scope is not None:
                with scope:
                    result = await coro
                if scope.cancelled_caught:
                    return
            else:
                result = await coro
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
            coro.close()
            if not self._handles and self._try_send is not None and not self._writer_busy:
                self._flush_now()  # nothing else running: write now, no extra loop turn
            else:
                self._kick()
            if self._idle is not None and not self._handles:
                self._idle.set()

    def _spawn_callback(self, fn: Callable[..., Any], *args: Any) -> None:
        async def call() -> None:
            try:
                res = fn(*args)
                if res is not None and hasattr(res, "__await__"):
                    await res
            except Exception:
                log.exception("callback %r failed", fn)

        loop = self._asyncio_loop
        if loop is not None:
            task = loop.create_task(call())
            self._track(task)
        elif self._tg is not None:
            self._tg.start_soon(call)

    # ------------------------------------------------------------------ API for handlers

    @property
    def closed(self) -> bool:
        return self._closed

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
            try:
                return anyio.from_thread.run_sync(
                    functools.partial(self.notify, method, params, related=related),
                    token=self._loop_token,
                )
            except RuntimeError:  # the event loop is gone
                return False
        sent = self.conn.send_notification(method, params, related=related)
        if sent:
            self._kick()
        return sent

    def progress(
        self, rid: RequestId, progress: float, total: float | None, message: str | None
    ) -> bool:
        if self._closed:
            return False
        sent = self.conn.send_progress(rid, progress, total, message)
        if sent:
            self._kick()
        return sent

    def log(self, level: str, data: Any, logger: str | None, related: RequestId | None) -> bool:
        if self._closed:
            return False
        sent = self.conn.send_log(level, data, logger, related=related)
        if sent:
            self._kick()
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
        ``ConnectionClosed`` (the connection ended first) and ``CapabilityNotSupported``
        (the peer or the revision lacks the feature; nothing was sent). If the caller is
        cancelled, the request is cancelled on the peer too.
        """
        if self._closed:
            raise ConnectionClosed("the connection to the peer is closed")
        rid = self.conn.send_request(method, params, related=related)
        if on_sent is not None:
            on_sent(rid)
        waiter = _Waiter(on_progress=on_progress)
        self._waiters[rid] = waiter
        self._kick()
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
                    self._kick()
        if not completed:
            raise RequestTimeout(f"no answer to '{method}' within {timeout} seconds")
        if waiter.error is not None:
            raise waiter.error
        assert waiter.result is not None
        return waiter.result


def _internal(method: str) -> InternalError:
    return InternalError(
        f"Internal error while handling '{method}'. The server logged the details; retry "
        "later or report it to the server's operator."
    )


__all__ = ["ByteStream", "RemoteError", "Session"]
