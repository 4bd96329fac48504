"""The byte pump of a session over a byte stream (stdio, an in-memory pipe).

One reader feeds what arrives to the session (``Session.receive_data``); one writer task
drains the connection's outbox, coalescing everything queued since its last write into
one ``send``. On asyncio, a stream that offers ``read_nowait``/``try_send`` is read inside
the loop's readiness callback and written without a task hop when the write does not
block. At end of input, running handlers get the session's drain window, then are
cancelled; answers produced until then are still written.

Output is bounded in bytes (backpressure): what the peer has not read yet is counted
from the moment the writer cannot hand it to the stream at once. Above ``high_water``
bytes, a server stops reading (requests stop producing answers; what was read is still
processed, in order: a large read is fed in 64 KiB slices and the rest of it waits) and
handlers that await ``congested`` wait; at ``low_water`` it reads again and they go on.
So a peer that stops reading costs about ``high_water`` plus the answers to one slice of
input (one message larger than that is still written whole, never cut). A client never
stops reading: the answers it reads free its waiters, and two peers that both stopped
reading while writing to each other would wait forever. A stalled reader is waited for,
never dropped: over stdio the host owns the process, and exiting would look like a crash.

Failure modes: the peer closing its side ends ``run()`` normally (its input at end of
input; its reading end at the first write that fails); a broken transport ends it with
the transport's exception. Either way the session ends (pending outbound requests
fail with ``ConnectionClosed``, running handlers are cancelled).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, Protocol

import anyio
import anyio.abc

from ..protocol.jsonrpc import RequestId
from ..protocol.lifecycle import Role

if TYPE_CHECKING:
    from .dispatch import Session

DEFAULT_OUTPUT_BUFFER: Final = 1 << 20
"""Unwritten output (bytes) above which a byte-stream server stops reading and paces its
handlers: 1 MiB, the size stdio asks for its pipe (``transports.stdio``), so a reader that
comes back finds about 2 MiB ready while memory stays a few MiB whatever the peer does."""
DEFAULT_LOW_WATER_RATIO: Final = 4
"""Reading resumes once the unwritten output is down to ``high_water // 4`` (256 KiB by
default): far enough below the mark that a pause lasts more than one write, and enough
left queued that the pipe never runs dry while input is read again."""
_FEED_SLICE: Final = 1 << 16
"""A larger read is fed in slices of this size, so that a server can stop between them
(64 KiB of requests: some hundreds, whose answers are what one read may add)."""
_PACE_MESSAGES: Final = 64
"""A handler that queued this many messages within one loop turn has them counted at once
(``congested``), so one that never waits for anything else is paced too."""


class ByteStream(Protocol):
    """What a stream transport gives a session.

    ``receive`` returns the next chunk of bytes and raises ``anyio.EndOfStream`` when the
    peer closed its side, ``anyio.BrokenResourceError`` when the transport broke;
    ``send`` writes all of ``data`` (same errors); ``aclose`` releases the transport.
    A stream may also offer the asyncio fast path: ``pollable``, ``read_fd``,
    ``read_nowait() -> bytes | None`` and ``try_send(data) -> int``.
    """

    async def receive(self) -> bytes: ...

    async def send(self, data: bytes) -> None: ...

    async def aclose(self) -> None: ...


class _Unset:
    """Stands in for the writer's wake-up event until ``run()`` creates it."""

    __slots__ = ()

    def set(self) -> None:
        return None


_UNSET = _Unset()
_STREAM_GONE = (anyio.ClosedResourceError, anyio.BrokenResourceError)


class BytePump:
    """Moves bytes between a ``ByteStream`` and a ``Session`` (the session's ``Output``)."""

    __slots__ = ("_congested", "_final", "_flush_scheduled", "_held", "_on_readable",
                 "_pause_input", "_queue", "_read_fd", "_reader_scope", "_room", "_sending",
                 "_tg", "_try_send", "_unwritten", "_wakeup", "_writer_busy", "high_water",
                 "low_water", "session", "stream")

    def __init__(self, session: Session, stream: ByteStream) -> None:
        self.session = session
        self.stream = stream
        self._wakeup: anyio.Event | _Unset = _UNSET  # created by run()
        self._tg: anyio.abc.TaskGroup | None = None
        self._reader_scope: anyio.CancelScope | None = None  # cancelled by stop_input()
        self._try_send: Callable[[bytes], int] | None = None
        self._flush_scheduled = False
        self._writer_busy = False  # the writer owns the output (sending, or bytes queued)
        self._sending: anyio.Event | None = None  # set when the writer's sends ended
        self._final = False  # the final flush took over: the writer takes nothing more
        self._queue: list[bytes] = []  # output taken from the connection, not yet sent
        self._unwritten = 0  # bytes in _queue and in the writer's current send
        self.high_water = DEFAULT_OUTPUT_BUFFER
        self.low_water = DEFAULT_OUTPUT_BUFFER // DEFAULT_LOW_WATER_RATIO
        self._congested = False  # over high_water, until down to low_water
        self._room: anyio.Event | None = None  # set when the congestion ends
        self._pause_input = session.conn.role is Role.SERVER
        self._read_fd = -1
        self._on_readable: Callable[[], None] | None = None  # while the fd is watched
        self._held = b""  # input read, fed once the congestion ends (_feed)

    def limit_output(self, high: int, low: int | None = None) -> None:
        """Stop reading and pace handlers above ``high`` unwritten bytes, until at most
        ``low`` (default: a quarter of ``high``) are left (see the module docstring)."""
        low = high // DEFAULT_LOW_WATER_RATIO if low is None else low
        if not 0 <= low < high:
            raise ValueError("the output bound must be a positive number of bytes above its "
                             f"low mark, got high={high}, low={low}")
        self.high_water, self.low_water = high, low

    async def run(
            self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve until the peer closes its side or the transport breaks."""
        session = self.session
        self._wakeup = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                session.attach(tg)
                if session.asyncio_loop is not None:
                    self._try_send = getattr(self.stream, "try_send", None)
                tg.start_soon(self._writer)
                task_status.started()
                eof = stopped = False
                try:
                    read_nowait = getattr(self.stream, "read_nowait", None)
                    with anyio.CancelScope() as self._reader_scope:
                        if (
                            session.asyncio_loop is not None
                            and read_nowait is not None
                            and getattr(self.stream, "pollable", False)
                        ):
                            await self._callback_reader(read_nowait)
                        else:
                            await self._reader()
                    if self._reader_scope.cancel_called:  # stop_input(): as if input ended
                        held, self._held = self._held, b""
                        if held:  # read before the stop: processed, as everything read is
                            session.receive_data(held)
                        session.receive_eof()
                        stopped = True
                    eof = True
                finally:
                    if eof:
                        await session.drain(stopped)
                    session.end()
                    self._release()
                    await session.cancel_handlers()
                    with anyio.CancelScope(shield=True):
                        await self._flush_final()
                    tg.cancel_scope.cancel()
        finally:
            session.end()
            self._release()

    def stop_input(self) -> None:
        """Stop reading, as if the input had ended (see ``Session.stop_input``)."""
        if self._reader_scope is not None:
            self._reader_scope.cancel()

    # ------------------------------------------------------------------ input

    async def _callback_reader(self, read_nowait: Callable[[], bytes | None]) -> None:
        """asyncio fast path: read and dispatch inside the loop's readiness callback.

        Saves the reader task's wake-up and the per-read registration of the descriptor;
        requests that need a task still get one, answered ones are written at once.
        Congestion takes the descriptor off the loop (``_congest``) and puts it back.
        """
        loop = self.session.asyncio_loop
        fd = self._read_fd = self.stream.read_fd  # type: ignore[attr-defined]
        ended = anyio.Event()
        session = self.session

        def on_readable() -> None:
            try:
                data = read_nowait()
            except _STREAM_GONE:
                data = b""
            if data is None:
                return
            if not data:
                self._on_readable = None
                loop.remove_reader(fd)
                ended.set()
                session.receive_eof()
            elif len(data) <= _FEED_SLICE:
                session.receive_data(data)
            else:
                self._feed(data)

        self._on_readable = on_readable
        if not (self._congested and self._pause_input):
            loop.add_reader(fd, on_readable)
        try:
            await ended.wait()
        finally:
            self._on_readable = None
            loop.remove_reader(fd)

    async def _reader(self) -> None:
        session, stream = self.session, self.stream
        while True:
            if self._congested and self._pause_input:
                await self._wait_room()
                continue
            if self._held:
                data, self._held = self._held, b""
                self._feed(data)
                continue
            try:
                data = await stream.receive()
            except (anyio.EndOfStream, *_STREAM_GONE):
                session.receive_eof()
                return
            self._feed(data)
            self._take()  # counted now: the next read may come without a loop turn

    def _feed(self, data: bytes) -> None:
        """Feed what was read to the session: at once when it is small (the common case);
        else in slices of ``_FEED_SLICE``, counting the output of each, so that once the
        output is over ``high_water`` the rest waits in ``_held`` (in order) and one read
        cannot add more than the answers to one slice."""
        if len(data) <= _FEED_SLICE or not self._pause_input:
            self.session.receive_data(data)
            return
        for start in range(0, len(data), _FEED_SLICE):
            if self._congested:
                self._held = data[start:]
                return
            self.session.receive_data(data[start:start + _FEED_SLICE])
            self._spill()

    # ------------------------------------------------------------------ output

    def wake(self, now: bool) -> None:
        """Arrange for queued output to be written soon, coalescing what piles up meanwhile
        (``now``: no handler is running, so write at once when that cannot block)."""
        if self._writer_busy:
            self._take()  # counted at once: this is where output piles up
        elif self._try_send is None:
            self._wakeup.set()
        elif now:
            self._flush_now()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self.session.asyncio_loop.call_soon(self._flush_now)

    def congested(self, related: RequestId | None) -> Awaitable[None] | None:
        """``Output``: None while the unwritten output is within ``high_water``; else an
        awaitable that completes once it is down to ``low_water`` (or the session ended).
        One stream carries everything, so ``related`` does not matter here."""
        if not self._congested:
            if self.session.conn.queued < _PACE_MESSAGES:
                return None
            self._spill()
            if not self._congested:
                return None
        return self._wait_room()

    def _spill(self) -> None:
        """Count what the connection queued now: write it if that cannot block, else hand
        it to the writer (instead of waiting for the end of the loop turn)."""
        if self._try_send is None or self._writer_busy:
            self._take()
        else:
            self._flush_now()

    def _take(self) -> None:
        """Move what the connection queued to the writer, counting it (the writer owns the
        output: a send may be under way, so bytes must wait their turn)."""
        data = self.session.conn.data_to_send()
        if data:
            self._queue.append(data)
            self._unwritten += len(data)
            if self._unwritten > self.high_water and not self._congested:
                self._congest()
        self._wakeup.set()

    def _flush_now(self) -> None:
        # Runs as a loop callback after the tasks made ready this iteration: one
        # non-blocking write for everything they queued; a remainder goes to the writer.
        self._flush_scheduled = False
        if self._writer_busy or self.session.closed:
            self._take()
            return
        data = self.session.conn.data_to_send()
        if not data:
            return
        assert self._try_send is not None
        try:
            n = self._try_send(data)
        except _STREAM_GONE:
            self._gone()
            return
        if n < len(data):
            rest = data[n:]
            self._queue.append(rest)
            self._unwritten += len(rest)
            self._writer_busy = True
            if self._unwritten > self.high_water and not self._congested:
                self._congest()
            self._wakeup.set()

    async def _writer(self) -> None:
        stream = self.stream
        while True:
            wakeup = self._wakeup
            assert isinstance(wakeup, anyio.Event)
            await wakeup.wait()
            self._wakeup = anyio.Event()
            data = b"" if self._final else self._take_all()
            if not data:
                self._writer_busy = False
                continue
            sending = self._sending = anyio.Event()
            self._writer_busy = True
            try:
                while data:
                    await stream.send(data)
                    self._unwritten -= len(data)
                    if self._congested and self._unwritten <= self.low_water:
                        self._relieve()
                    data = b"" if self._final else self._take_all()
            except _STREAM_GONE:
                self._gone()
                return
            finally:
                self._writer_busy = False
                self._sending = None
                sending.set()

    def _take_all(self) -> bytes:
        """Everything queued for the writer, as one chunk (what the connection still held
        is counted now)."""
        queue = self._queue
        rest = self.session.conn.data_to_send()
        self._unwritten += len(rest)
        if not queue:
            return rest
        self._queue = []
        if rest:
            queue.append(rest)
        return queue[0] if len(queue) == 1 else b"".join(queue)

    async def _flush_final(self) -> None:
        self._final = True
        sending = self._sending
        if sending is not None:
            # Bytes the writer took may still be being written: let it finish, or
            # cancelling it next would lose them. If the peer does not read them within
            # the bound, nothing more can be written either.
            with anyio.move_on_after(5):
                await sending.wait()
            if not sending.is_set():
                return
        data = self._take_all()
        if data:
            try:
                with anyio.move_on_after(5):
                    await self.stream.send(data)
            except _STREAM_GONE:
                pass  # the reader went away: nothing left to write to

    # ------------------------------------------------------------------ backpressure

    def _congest(self) -> None:
        """Over ``high_water``: a server stops reading; ``congested`` makes handlers wait."""
        if self.session.closed:
            return  # nothing is waited for any more (handlers are being cancelled)
        self._congested = True
        if self._pause_input and self._on_readable is not None:
            self.session.asyncio_loop.remove_reader(self._read_fd)

    def _relieve(self) -> None:
        """Down to ``low_water``: let waiting handlers go on, and read again (what was
        held first; the anyio reader does that itself once it wakes)."""
        self._release()
        on_readable = self._on_readable
        if not self._pause_input or on_readable is None:
            return
        held, self._held = self._held, b""
        if held:
            self._feed(held)
        if not self._congested and self._on_readable is not None:
            self.session.asyncio_loop.add_reader(self._read_fd, on_readable)

    def _gone(self) -> None:
        """The peer stopped reading for good (its side is closed): end the session."""
        self.session.end()
        self._release()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    def _release(self) -> None:
        """No more waiting: the congestion ended, or the stream or session did."""
        self._congested = False
        room, self._room = self._room, None
        if room is not None:
            room.set()

    def _wait_room(self) -> Awaitable[None]:
        room = self._room
        if room is None:
            room = self._room = anyio.Event()
        return room.wait()


__all__ = ["DEFAULT_OUTPUT_BUFFER", "BytePump", "ByteStream"]
