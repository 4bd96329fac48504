"""A server process for tests (redis-server, nginx, an mcpkit instance): started in its own
process group, waited for with a bounded deadline until its TCP port answers, and stopped
by its process id (SIGTERM, then SIGKILL).

``require(binary, why)`` finds a program on PATH (and in the sbin directories, where
Debian puts nginx); when it is missing the test is skipped locally but fails under CI
(``CI`` set), so a CI run cannot skip these tests silently (as the oidc tests do).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import pytest

START_SECONDS = 20.0
STOP_SECONDS = 10.0


def require(binary: str, package: str, why: str) -> str:
    """The path of ``binary``; else skip (fail under CI) saying which Debian ``package``
    to install."""
    path = shutil.which(binary) or shutil.which(
        binary, path=os.pathsep.join((os.environ.get("PATH", ""), "/usr/sbin", "/sbin")))
    if path is not None:
        return path
    message = f"{why} needs {binary}: apt-get install -y {package}"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Daemon:
    """One process listening on ``port`` of 127.0.0.1; ``log`` collects its output."""

    def __init__(self, argv: Sequence[str], port: int, log: Path,
                 env: dict[str, str] | None = None) -> None:
        self.argv = list(argv)
        self.port = port
        self.log = log
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the process and wait (bounded) until its port accepts connections."""
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         env=self.env)
        deadline = time.monotonic() + START_SECONDS
        while not port_open(self.port):
            status = self.proc.poll()
            if status is not None or time.monotonic() > deadline:
                self.stop()
                why = (f"exited with status {status}" if status is not None
                       else f"did not listen within {START_SECONDS} s")
                raise RuntimeError(f"{self.argv[0]} {why}: {self.output()}")
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """End the process group (``sig``, then SIGKILL after ``STOP_SECONDS``)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_SECONDS)

    def kill(self) -> None:
        """Kill it at once (a crash: nothing flushed, no goodbye to clients)."""
        self.stop(signal.SIGKILL)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


class InTempDir:
    """A ``Daemon`` (made by the subclass) with a temporary directory of its own, both
    gone on exit; a context manager. ``port``: a free one of 127.0.0.1 unless given."""

    daemon: Daemon

    def __init__(self, name: str, port: int | None = None) -> None:
        from .http import free_port

        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=f"mcpkit-{name}."))

    def __enter__(self) -> Self:
        self.daemon.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.daemon.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
