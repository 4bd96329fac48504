"""stdio, client side: launch a server as a subprocess and talk to it over its pipes.

The child runs in its own process group. Closing follows the spec's shutdown order:
close the child's stdin, wait ``grace`` seconds, SIGTERM the whole group, wait again,
then SIGKILL the group, so a server that ignores SIGTERM (or left children behind) never
outlives the client.

Failure modes: ``receive`` raises ``anyio.EndOfStream`` when the child closed stdout (it
exited or crashed); ``send`` raises ``anyio.BrokenResourceError`` when the child is gone;
``ProcessStream.open`` raises ``OSError`` (e.g. ``FileNotFoundError``) when the command
cannot be started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

import anyio
from anyio.abc import Process

from ..session.loop import running_asyncio_loop


class ProcessStream:
    """A byte stream over a child process's stdin/stdout."""

    def __init__(self, process: Process, grace: float,
                 command: Sequence[str] = ()) -> None:
        self.process = process
        self.command = list(command)
        self.grace = grace
        self._closed = False

    @classmethod
    async def open(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: IO[Any] | int | None = None,
        grace: float = 2.0,
    ) -> ProcessStream:
        """Start ``command``; ``stderr`` defaults to this process's stderr."""
        full_env = {**os.environ, **env} if env is not None else None
        process = await anyio.open_process(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else _default_stderr(),
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
        return cls(process, grace, command)

    @property
    def pid(self) -> int:
        return self.process.pid

    async def receive(self) -> bytes:
        assert self.process.stdout is not None
        return await self.process.stdout.receive(65536)

    async def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def aclose(self) -> None:
        """Shut the child down: stdin closed -> wait -> SIGTERM -> wait -> SIGKILL (all to
        the group; a child that exited by itself gets its leftover group SIGTERMed)."""
        if self._closed:
            return
        self._closed = True
        proc = self.process
        with anyio.CancelScope(shield=True):
            if proc.stdin is not None:
                try:
                    await proc.stdin.aclose()
                except (anyio.BrokenResourceError, OSError):
                    pass
            if not await self._wait(self.grace):
                self._signal(signal.SIGTERM)
                if not await self._wait(self.grace):
                    self._signal(signal.SIGKILL)
                    await self._wait(self.grace)
            else:
                # It exited by itself: children it left behind in its group go too.
                self._signal(signal.SIGTERM)
            if proc.stdout is not None and running_asyncio_loop() is not None:
                # What it wrote and nobody read (a child stopped mid-answer) is read to
                # the end of the pipe: a pipe paused with data in it is never closed
                # (asyncio keeps the transport, and its file, until garbage collection;
                # trio closes the file itself).
                with anyio.move_on_after(self.grace):
                    try:
                        while await proc.stdout.receive(1 << 20):
                            pass
                    except (anyio.EndOfStream, anyio.ClosedResourceError,
                            anyio.BrokenResourceError, OSError):
                        pass
                    except RuntimeError:  # a reader of the stream's own is still at it
                        pass
                await proc.stdout.aclose()

    async def _wait(self, timeout: float) -> bool:
        with anyio.move_on_after(timeout):
            await self.process.wait()
            return True
        return False

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _default_stderr() -> IO[Any] | None:
    """This process's stderr if it is a real file, else ``None`` (inherit fd 2): under
    Jupyter, pytest's ``--capture=sys`` or a redirect to ``io.StringIO`` it has no fileno."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return sys.stderr
