"""redis-server (the Debian package) for the scale-out tests.

``RedisServer`` runs ``redis-server`` on a free port of 127.0.0.1 with a temporary
directory, in the foreground (``--daemonize no``) in its own process group, stopped by its
process id. Without persistence (``--save ""``, no append-only file) by default;
``appendonly=True`` keeps every write in an append-only file fsynced each second, so a
``restart()`` finds the data again. ``url`` is its ``redis://`` URL.
"""

from __future__ import annotations

import pytest

from .daemon import Daemon, InTempDir, require

BOUNDED = pytest.mark.timeout(60, method="thread")
"""The per-test bound of the Redis scale-out tests. pytest-timeout's default (signal)
method raises inside the event loop, and the anyio runner's teardown then waits on
whatever ignored the cancellation: a hang no timeout ends (as a task heartbeat that
lost its cancel once did). The thread method dumps every thread's stack and ends the
process, so a hang fails the run instead of blocking CI forever."""


def redis_binary() -> str:
    return require("redis-server", "redis-server", "the Redis scale-out tests")


class RedisServer(InTempDir):
    """One redis-server process; a context manager."""

    def __init__(self, *, appendonly: bool = False, port: int | None = None) -> None:
        self.binary = redis_binary()
        super().__init__("redis", port)
        argv = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                "--daemonize", "no", "--dir", str(self.dir), "--save", "",
                "--appendonly", "yes" if appendonly else "no", "--protected-mode", "yes",
                "--loglevel", "warning"]
        self.daemon = Daemon(argv, self.port, self.dir / "redis.log")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.daemon.stop()

    def start(self) -> None:
        self.daemon.start()

    def restart(self) -> None:
        """Stop (SIGTERM: an append-only file is flushed) and start again on the same port
        and directory."""
        self.daemon.stop()
        self.daemon.start()
