"""The byte pump of a session over a byte stream (stdio, an in-memory pipe).

One reader feeds what arrives to the session (``Session.receive_data``); one writer task
drains the connection's outbox, coalescing everything queued since its last write into
one ``send``. On asyncio, a stream that offers ``read_nowait``/``try_send`` is read inside
the loop's readiness callback and written without a task hop when the write does not
block. At end of input, running handlers get the session's drain window, then are
cancelled; answers produced until then are still written.

Failure modes: the peer closing its side ends ``run()`` normally; a broken transport ends
it with the transport's exception. Either way the session ends (pending outbound requests
fail with ``ConnectionClosed``, running handlers are cancelled).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import anyio
import anyio.abc

if TYPE_CHECKING:
    from .dispatch import Session


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

    __slots__ = ("_backlog", "_flush_scheduled", "_reader_scope", "_send_done", "_tg",
                 "_try_send", "_wakeup", "_writer_busy", "session", "stream")

    def __init__(self, session: Session, stream: ByteStream) -> None:
        self.session = session
        self.stream = stream
        self._wakeup: anyio.Event | _Unset = _UNSET  # created by run()
        self._tg: anyio.abc.TaskGroup | None = None
        self._reader_scope: anyio.CancelScope | None = None  # cancelled by stop_input()
        self._try_send: Callable[[bytes], int] | None = None
        self._flush_scheduled = False
        self._writer_busy = False
        self._send_done: anyio.Event | None = None  # set when the writer's last send ended
        self._backlog = b""

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED)\
            -> None:
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
                        session.receive_eof()
                        stopped = True
                    eof = True
                finally:
                    if eof:
                        await session.drain(stopped)
                    session.end()
                    await session.cancel_handlers()
                    with anyio.CancelScope(shield=True):
                        await self._flush_final()
                    tg.cancel_scope.cancel()
        finally:
            session.end()

    def stop_input(self) -> None:
        """Stop reading, as if the input had ended (see ``Session.stop_input``)."""
        if self._reader_scope is not None:
            self._reader_scope.cancel()

    async def _callback_reader(self, read_nowait: Callable[[], bytes | None]) -> None:
        """asyncio fast path: read and dispatch inside the loop's readiness callback.

        Saves the reader task's wake-up and the per-read registration of the descriptor;
        requests that need a task still get one, answered ones are written at once.
        """
        loop = self.session.asyncio_loop
        fd = self.stream.read_fd  # type: ignore[attr-defined]
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
                loop.remove_reader(fd)
                ended.set()
                session.receive_eof()
            else:
                session.receive_data(data)

        loop.add_reader(fd, on_readable)
        try:
            await ended.wait()
        finally:
            loop.remove_reader(fd)

    async def _reader(self) -> None:
        session, stream = self.session, self.stream
        while True:
            try:
                data = await stream.receive()
            except (anyio.EndOfStream, *_STREAM_GONE):
                session.receive_eof()
                return
            session.receive_data(data)

    async def _writer(self) -> None:
        conn, stream = self.session.conn, self.stream
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
                except _STREAM_GONE:
                    self.session.end()
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
        data = self._backlog + self.session.conn.data_to_send()
        self._backlog = b""
        if data:
            try:
                with anyio.move_on_after(5):
                    await self.stream.send(data)
            except _STREAM_GONE:
                pass  # the reader went away: nothing left to write to

    def wake(self, now: bool) -> None:
        """Arrange for queued output to be written soon, coalescing what piles up meanwhile
        (``now``: no handler is running, so write at once when that cannot block)."""
        if self._try_send is None or self._writer_busy:
            self._wakeup.set()
        elif now:
            self._flush_now()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self.session.asyncio_loop.call_soon(self._flush_now)

    def _flush_now(self) -> None:
        # Runs as a loop callback after the tasks made ready this iteration: one
        # non-blocking write for everything they queued; a remainder goes to the writer.
        self._flush_scheduled = False
        if self._writer_busy or self.session.closed:
            self._wakeup.set()
            return
        data = self.session.conn.data_to_send()
        if not data:
            return
        assert self._try_send is not None
        try:
            n = self._try_send(data)
        except _STREAM_GONE:
            self.session.end()
            if self._tg is not None:
                self._tg.cancel_scope.cancel()
            return
        if n < len(data):
            self._backlog = data[n:]
            self._writer_busy = True
            self._wakeup.set()


__all__ = ["BytePump", "ByteStream"]
