"""The processes bench/soak.py runs and watches: the HTTP targets (one everything server on
memory stores; three on Redis behind nginx), their memory and open files sampled from
/proc, the faults (SIGKILL, SIGTERM, Redis stopped) and the measured SIGTERM exit.

Every process is started in its own process group and stopped by its id
(``tests/support/daemon.py``); nothing outside loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.daemon import Daemon  # noqa: E402
from tests.support.http import free_port  # noqa: E402
from tests.support.nginx import Nginx  # noqa: E402
from tests.support.redis import RedisServer  # noqa: E402

EVERYTHING = ROOT / "examples" / "everything.py"
SOAK_SERVER = ROOT / "bench" / "soak_server.py"


def rss_fds(pid: int) -> tuple[float, int] | None:
    """(VmRSS in MB, open file descriptors) of a live process, else None."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith(b"VmRSS:"))
        return rss / 1024, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration, ValueError):
        return None


class Target:
    """The servers of one HTTP target: ``port`` is where clients connect; ``watched``
    the processes whose RSS and fds are sampled, by name."""

    def __init__(self, name: str, stack: ExitStack, python: str, logs: Path,
                 drain: float) -> None:
        self.name = name
        self.python = python
        self.logs = logs
        self.drain = drain
        self.redis: RedisServer | None = None
        self.nginx: Nginx | None = None
        self.instances: list[Daemon] = []
        if name == "single":
            daemon = self._instance(stack, 0, [])
            self.port = daemon.port
        else:
            self.redis = stack.enter_context(RedisServer(appendonly=True))
            for n in range(3):
                self._instance(stack, n, ["--redis", self.redis.url])
            self.nginx = stack.enter_context(Nginx([d.port for d in self.instances]))
            self.port = self.nginx.port

    def _instance(self, stack: ExitStack, n: int, extra: list[str]) -> Daemon:
        port = free_port()
        argv = [self.python, str(EVERYTHING), "--http", "--port", str(port), *extra,
                "--drain", f"{self.drain:g}"]
        daemon = Daemon(argv, port, self.logs / f"{self.name}-{n}.log")
        stack.callback(daemon.stop, signal.SIGKILL)
        daemon.start()
        self.instances.append(daemon)
        return daemon

    def watched(self) -> dict[str, int]:
        out = {f"instance{n}": d.proc.pid for n, d in enumerate(self.instances)
               if d.proc is not None}
        if self.nginx is not None and self.nginx.daemon.proc is not None:
            out["nginx"] = self.nginx.daemon.proc.pid
        if self.redis is not None and self.redis.daemon.proc is not None:
            out["redis"] = self.redis.daemon.proc.pid
        return out

    def snapshot(self) -> dict[str, dict[str, float]]:
        out = {}
        for name, pid in self.watched().items():
            got = rss_fds(pid)
            if got is not None:
                out[name] = {"rss_mb": round(got[0], 1), "fds": got[1]}
        return out


async def terminate(daemon: Daemon, drain: float, sig: int = signal.SIGTERM) -> dict[str, Any]:
    """Send ``sig`` (SIGTERM: a graceful stop) and measure how long the process takes to
    exit and with what status; after ``drain`` + 10 s it is killed (``exit`` None)."""
    proc = daemon.proc
    if proc is None:
        return {"exit": None, "seconds": None, "why": "not running"}
    start = time.monotonic()
    os.killpg(proc.pid, sig)
    with contextlib.suppress(subprocess.TimeoutExpired):
        await asyncio.to_thread(proc.wait, drain + 10)
    seconds = round(time.monotonic() - start, 2)
    status = proc.poll()
    if status is None:
        await asyncio.to_thread(daemon.stop, signal.SIGKILL)
        return {"exit": None, "seconds": seconds, "why": f"still running {seconds} s later"}
    daemon.proc = None
    return {"exit": status, "seconds": seconds}


def exited_well(stop: dict[str, Any], drain: float) -> bool:
    return stop.get("exit") == 0 and stop.get("seconds") is not None and (
        stop["seconds"] <= drain)


class Sampler:
    """RSS and fds of a target's processes every ``every`` seconds (a series per process),
    and a safety cap: past ``cap_mb`` of RSS in one process ``tripped`` is set (the run
    is already a miss; the load that grows it stops, so the machine is spared)."""

    def __init__(self, target: Target, every: float, cap_mb: float) -> None:
        self.target = target
        self.every = every
        self.cap_mb = cap_mb
        self.series: dict[str, list[list[float]]] = {}
        self.peak: dict[str, float] = {}
        self.tripped: str | None = None
        self.t0 = time.monotonic()
        self.marks: dict[str, float] = {}

    def mark(self, what: str) -> None:
        self.marks[what] = round(time.monotonic() - self.t0, 2)

    def sample(self) -> dict[str, dict[str, float]]:
        snap = self.target.snapshot()
        t = round(time.monotonic() - self.t0, 1)
        for name, got in snap.items():
            self.series.setdefault(name, []).append([t, got["rss_mb"], got["fds"]])
            self.peak[name] = max(self.peak.get(name, 0.0), got["rss_mb"])
            if got["rss_mb"] > self.cap_mb and self.tripped is None:
                self.tripped = f"{name} at {got['rss_mb']} MB after {t} s"
        return snap

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.sample()
            try:
                await asyncio.wait_for(stop.wait(), self.every)
            except TimeoutError:
                pass


async def kill_restart(daemon: Daemon, sig: int, drain: float, down: float) -> dict[str, Any]:
    """Stop ``daemon`` with ``sig`` (SIGKILL: a crash; SIGTERM: a rolling restart, its exit
    measured), start it again ``down`` seconds later on the same port."""
    if sig == signal.SIGKILL:
        await asyncio.to_thread(daemon.stop, signal.SIGKILL)
        stop: dict[str, Any] = {"signal": "KILL"}
    else:
        stop = {"signal": "TERM", **await terminate(daemon, drain)}
    await asyncio.sleep(down)
    await asyncio.to_thread(daemon.start)
    return stop


def subprocess_env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def spawn(argv: list[str], log: Path, **kw: Any) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(argv, stderr=out, start_new_session=True,
                                env=subprocess_env(), **kw)
