"""stdio: the server side of the MCP stdio transport, on raw file descriptors.

``StdioStream.for_server()`` takes the process's stdin/stdout for MCP alone: it keeps
private duplicates of fds 0 and 1 for the protocol, points fd 0 at ``/dev/null`` and fd 1
(and ``sys.stdout``) at stderr. A tool that calls ``print()``, or a subprocess it starts,
therefore writes to stderr and can never corrupt the message stream, and nothing but
the session reads the client's messages.

Pipes and sockets are read and written without threads (non-blocking fds woken by the
event loop); a terminal on stdin is watched by the event loop too but read in blocking
mode (its file description is the shell's: it is never made non-blocking), so SIGINT
stops a server run by hand at once instead of waiting at exit for a thread stuck in a
read; a regular file falls back to a worker thread.

Failure modes: ``receive`` raises ``anyio.EndOfStream`` at end of input; ``send`` raises
``anyio.BrokenResourceError`` when the reader went away (EPIPE); both raise
``anyio.ClosedResourceError`` after ``aclose``.
"""

from __future__ import annotations

import io
import os
import stat
import sys

import anyio
import anyio.to_thread

_READ_SIZE = 1 << 18


def _pollable(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


_F_SETPIPE_SZ = 1031  # Linux fcntl: resize a pipe's buffer


def _grow_pipe(fd: int, size: int = 1 << 20) -> None:
    """Ask for a 1 MiB pipe buffer (Linux; unprivileged up to /proc/sys/fs/pipe-max-size),
    so a large answer such as a 200-tool ``tools/list`` goes out in one write instead of
    sixteen 64 KiB rounds through the event loop. Elsewhere, or if refused, nothing changes."""
    if sys.platform != "linux" or not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, size)
    except OSError:
        pass


class StdioStream:
    """A byte stream over a pair of file descriptors that it owns."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._rfd = read_fd
        self._wfd = write_fd
        self._closed = False
        self._read_poll = _pollable(read_fd)
        self._read_tty = not self._read_poll and sys.platform != "win32" and os.isatty(read_fd)
        if self._read_poll:
            os.set_blocking(read_fd, False)
        self._write_poll = _pollable(write_fd)
        if self._write_poll:
            os.set_blocking(write_fd, False)
        for fd in (read_fd, write_fd):
            _grow_pipe(fd)

    @classmethod
    def for_server(cls) -> StdioStream:
        """Take over this process's stdin/stdout for MCP (see the module docstring)."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        read_fd = os.dup(0)
        write_fd = os.dup(1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        sys.stdout = sys.stderr
        return cls(read_fd, write_fd)

    async def receive(self) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        fd = self._rfd
        if self._read_poll:
            while True:
                try:
                    data = os.read(fd, _READ_SIZE)
                    break
                except BlockingIOError:
                    await anyio.wait_readable(fd)
                except OSError as exc:
                    raise anyio.BrokenResourceError from exc
        elif self._read_tty:  # readable: a line (or end of input) is there, read at once
            await anyio.wait_readable(fd)
            try:
                data = os.read(fd, _READ_SIZE)
            except OSError as exc:  # EIO: the terminal went away
                raise anyio.BrokenResourceError from exc
        else:
            data = await anyio.to_thread.run_sync(os.read, fd, _READ_SIZE, abandon_on_cancel=True)
        if not data:
            raise anyio.EndOfStream
        return data

    async def send(self, data: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        view = memoryview(data)
        fd = self._wfd
        while view:
            try:
                if self._write_poll:
                    n = os.write(fd, view)
                else:
                    n = await anyio.to_thread.run_sync(os.write, fd, view)
            except BlockingIOError:
                await anyio.wait_writable(fd)
                continue
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise anyio.BrokenResourceError from exc
            view = view[n:]

    @property
    def pollable(self) -> bool:
        """Whether the read side can be watched by the event loop (a pipe or socket)."""
        return self._read_poll

    @property
    def read_fd(self) -> int:
        return self._rfd

    def read_nowait(self) -> bytes | None:
        """What can be read without waiting: bytes, ``b""`` at end of input, or None when
        nothing is ready. Only for pipes and sockets (see ``pollable``)."""
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            return os.read(self._rfd, _READ_SIZE)
        except BlockingIOError:
            return None
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    def try_send(self, data: bytes) -> int:
        """Write what fits without waiting; returns the byte count written (may be short).

        Raises ``anyio.BrokenResourceError`` when the reader went away.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        if not self._write_poll:
            return 0
        try:
            return os.write(self._wfd, data)
        except BlockingIOError:
            return 0
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fd in (self._rfd, self._wfd):
            try:
                os.close(fd)
            except OSError:
                pass
