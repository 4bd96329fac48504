#!/usr/bin/env python3
"""Issue #14's load test: 64 clients through nginx against 1 instance with memory stores,
1 instance on Redis and 3 instances on Redis; Redis memory per open session; one instance
killed and restarted under load.

    .venv/bin/python bench/scaleout.py [--rounds 3] [--clients 64] [--calls 500]
        [--seconds 10] [--sessions 1000] [--kill-seconds 12] [--python PATH]
        [--no-retry] [--signal KILL|TERM] [--json OUT]

The bench itself runs in the dev venv (it uses the fixtures of ``tests/support`` and
redis-py); it needs the Debian packages ``redis-server`` and ``nginx``. Everything runs on
loopback and is stopped by process id: one ``redis-server`` (the Debian package,
append-only file as docs/deployment.md recommends, in a temporary directory),
the mcpkit instances (``examples/everything.py --http --port P [--redis URL]``, run by
``bench/.venv-redis``: ``pip install '.[redis]'``, the way a user installs it, made or
refreshed on each run; ``--python`` runs them with another interpreter instead), and one
nginx per configuration (``tests/support/nginx.py``: round-robin, no stickiness,
keepalive to the instances), so the proxy hop is the same in each:

* ``memory``: 1 instance, memory stores (the default);
* ``redis1``: 1 instance, ``--redis``;
* ``redis3``: 3 instances, ``--redis``.

Load: ``--clients`` clients, each its own HTTP/1.1 keep-alive connection to nginx and its
own MCP session (``initialize``, ``notifications/initialized``), then ``tools/call echo``
with a text unique to the call, ``--calls`` per client or ``--seconds``, whichever ends
first. Every answer is checked: the id answered exactly once, with the text sent. Rounds
alternate the configurations (the order rotated each round); figures are medians: req/s,
p50/p99 latency, and the CPU time (user + system, /proc) per answered call of the
instances, nginx and Redis, which a shared machine skews less than req/s.

Memory, first (Redis still empty): ``INFO memory`` ``used_memory`` before and after
``--sessions`` sessions opened (initialize + initialized) through ``redis1`` and left
open, per session; and the mean ``MEMORY USAGE`` of a session record.

Kill: the load runs on ``redis3`` for ``--kill-seconds``; at a third of it one instance
gets SIGKILL, and is restarted a second later. Counted: errors (an HTTP status other
than 200, a JSON-RPC error, a wrong text), lost (no answer: connection closed or 10 s
without one) and duplicated answers. nginx here passes a request to another instance
when the killed one cannot answer it (``proxy_next_upstream error timeout
non_idempotent`` within 5 s: see docs/deployment.md, "nginx", for why and when);
``--no-retry`` measures with nginx's default for POSTs (passed on only when they could not
be sent) instead. ``--signal TERM`` stops the instance gracefully instead (a rolling
restart: it finishes what it has in flight).

Goals (issue #14): ``redis1`` keeps >= 70% of ``memory``'s req/s; zero errors, lost and
duplicated answers under the kill. Prints PASS/MISS lines and one JSON line (also to
``--json``); exit 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.goals import _verdict  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402
from tests.support.http import free_port  # noqa: E402
from tests.support.nginx import RETRY_POSTS, RETRY_UNSENT, Nginx  # noqa: E402
from tests.support.redis import RedisServer  # noqa: E402

VENV = ROOT / "bench" / ".venv-redis"
EVERYTHING = ROOT / "examples" / "everything.py"
VERSION = "2025-11-25"
RATIO_GOAL = 0.70
ANSWER_SECONDS = 10.0  # a request with no answer by then is counted lost
CONFIGS = ("memory", "redis1", "redis3")


class NoAnswer(Exception):
    """The connection closed or timed out before a whole response arrived."""


class Conn:
    """One HTTP/1.1 keep-alive connection to nginx: POST a body, read the whole response
    (Content-Length, chunked or close-delimited), reconnecting after a failure."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json"
                     b"\r\nAccept: application/json, text/event-stream\r\n" % port)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def post(self, body: bytes, extra: bytes = b"") -> tuple[int, dict[bytes, bytes], bytes]:
        try:
            return await asyncio.wait_for(self._post(body, extra), ANSWER_SECONDS)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                TimeoutError, ValueError, IndexError) as exc:
            self.close()
            raise NoAnswer(f"{type(exc).__name__}: {exc}") from None

    async def _post(self, body: bytes, extra: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        self.writer.write(b"%s%sContent-Length: %d\r\n\r\n%s" % (self.head, extra, len(body), body))
        lines = (await self.reader.readuntil(b"\r\n\r\n"))[:-4].split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        headers = {k.strip().lower(): v.strip()
                   for k, _, v in (line.partition(b":") for line in lines[1:])}
        if b"content-length" in headers:
            payload = await self.reader.readexactly(int(headers[b"content-length"]))
        elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            parts = []
            while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
                parts.append((await self.reader.readexactly(size + 2))[:-2])
            await self.reader.readuntil(b"\r\n")
            payload = b"".join(parts)
        elif status in (202, 204):
            payload = b""
        else:
            payload = await self.reader.read()
            self.close()
        if headers.get(b"connection", b"").lower() == b"close":
            self.close()
        return status, headers, payload


def messages(headers: dict[bytes, bytes], payload: bytes) -> list[Any]:
    """The JSON-RPC messages of a response: a JSON body or the ``data:`` of SSE events."""
    if not headers.get(b"content-type", b"").startswith(b"text/event-stream"):
        return [orjson.loads(payload)] if payload else []
    out = []
    for event in payload.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(line[5:].lstrip(b" ") for line in event.split(b"\n")
                          if line.startswith(b"data:"))
        if data.strip():
            out.append(orjson.loads(data))
    return out


@dataclass
class Tally:
    """What a run of calls got: latencies of the good answers and every kind of failure."""

    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    answers: Counter[tuple[int, int]] = field(default_factory=Counter)  # (client, id) -> count

    @property
    def duplicated(self) -> int:
        return sum(n - 1 for n in self.answers.values() if n > 1)


class Client:
    """One MCP session on its own connection: initialize, then ``tools/call echo``."""

    def __init__(self, number: int, port: int) -> None:
        self.number = number
        self.conn = Conn(port)
        self.extra = b""
        self.ids = itertools.count(1)

    async def open(self) -> None:
        body = orjson.dumps({"jsonrpc": "2.0", "id": next(self.ids), "method": "initialize",
                             "params": {"protocolVersion": VERSION, "capabilities": {},
                                        "clientInfo": {"name": "scaleout", "version": "1"}}})
        status, headers, payload = await self.conn.post(body)
        if status != 200 or b"mcp-session-id" not in headers:
            raise RuntimeError(f"initialize: HTTP {status} {payload[:300]!r}")
        self.extra = (b"Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n"
                      % (headers[b"mcp-session-id"], VERSION.encode()))
        status, _, payload = await self.conn.post(
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}', self.extra)
        if status != 202:
            raise RuntimeError(f"notifications/initialized: HTTP {status} {payload[:300]!r}")

    async def call(self, tally: Tally) -> None:
        """One ``tools/call echo``; its outcome goes into ``tally``."""
        rid = next(self.ids)
        text = f"c{self.number}-{rid}"
        body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                             "params": {"name": "echo", "arguments": {"text": text}}})
        start = time.perf_counter()
        try:
            status, headers, payload = await self.conn.post(body, self.extra)
        except NoAnswer:
            tally.lost += 1
            return
        elapsed = time.perf_counter() - start
        if status != 200:
            tally.errors[f"HTTP {status}"] += 1
            return
        try:
            replies = [m for m in messages(headers, payload) if "method" not in m]
        except orjson.JSONDecodeError:
            tally.errors["unparsable body"] += 1
            return
        for reply in replies:
            tally.answers[(self.number, reply.get("id"))] += 1
        mine = [r for r in replies if r.get("id") == rid]
        if not mine:
            tally.lost += 1
        elif "error" in mine[0]:
            tally.errors[f"JSON-RPC {mine[0]['error'].get('code')}"] += 1
        elif mine[0]["result"].get("content") != [{"type": "text", "text": text}]:
            tally.errors["wrong result"] += 1
        else:
            tally.latencies.append(elapsed)


def cpu_seconds(pids: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds (user + system) each group of processes has used so far (Linux)."""
    out = {}
    for name, group in pids.items():
        ticks = 0
        for pid in group:
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                ticks += int(fields[11]) + int(fields[12])
            except OSError:  # gone (the killed instance)
                pass
        out[name] = ticks / os.sysconf("SC_CLK_TCK")
    return out


async def drive(port: int, clients: int, calls: int, seconds: float,
                during: Any = None, pids: dict[str, list[int]] | None = None) -> dict[str, Any]:
    """``clients`` sessions through nginx on ``port``, ``calls`` each or ``seconds``; the
    coroutine ``during`` (the kill) runs beside the load. ``pids``: groups of processes
    whose CPU time per answered call is reported (microseconds)."""
    sessions = [Client(n, port) for n in range(clients)]
    try:
        await asyncio.gather(*(s.open() for s in sessions))
        warm = Tally()
        await asyncio.gather(*(s.call(warm) for s in sessions))
        tally = Tally()
        deadline = time.perf_counter() + seconds

        async def worker(session: Client) -> None:
            for _ in range(calls):
                if time.perf_counter() > deadline:
                    break
                await session.call(tally)

        start, cpu = time.perf_counter(), cpu_seconds(pids or {})
        jobs = [worker(s) for s in sessions] + ([during] if during is not None else [])
        await asyncio.gather(*jobs)
        elapsed = time.perf_counter() - start
        cpu = {name: used - cpu[name] for name, used in cpu_seconds(pids or {}).items()}
    finally:
        for s in sessions:
            s.conn.close()
    lat = sorted(tally.latencies)

    def pct(q: float) -> float:
        return round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3, 2) if lat else 0.0

    sent = len(lat) + sum(tally.errors.values()) + tally.lost
    return {"rps": round(len(lat) / elapsed, 1), "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "calls": sent, "ok": len(lat), "errors": dict(tally.errors), "lost": tally.lost,
            "duplicated": tally.duplicated,
            "warmup_failures": sum(warm.errors.values()) + warm.lost,
            "cpu_us_per_call": {name: round(used / max(1, len(lat)) * 1e6)
                                for name, used in cpu.items()}}


def instance_python(given: str | None) -> str:
    """``--python``, else bench/.venv-redis with this checkout installed as a user would
    (``pip install '.[redis]'``), refreshed so it runs the current code."""
    if given:
        return given
    python = VENV / "bin" / "python"
    if not python.is_file():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--force-reinstall", "--no-deps", "."], cwd=ROOT, check=True)
    subprocess.run([*pip, ".[redis]"], cwd=ROOT, check=True)
    return str(python)


class Deployment:
    """redis-server, the instances of the three configurations, one nginx per
    configuration; every process stopped by id when ``stack`` closes."""

    def __init__(self, stack: ExitStack, python: str, retry: bool) -> None:
        self.redis = stack.enter_context(RedisServer(appendonly=True))
        self.logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcpkit-scale.")))
        self.instances: dict[str, list[Daemon]] = {}
        self.ports: dict[str, int] = {}
        self.nginx_pids: dict[str, list[int]] = {}
        self.nginx: dict[str, Nginx] = {}
        for name, count in (("memory", 1), ("redis1", 1), ("redis3", 3)):
            group = []
            for n in range(count):
                port = free_port()
                argv = [python, str(EVERYTHING), "--http", "--port", str(port)]
                if name != "memory":
                    argv += ["--redis", self.redis.url]
                daemon = Daemon(argv, port, self.logs / f"{name}-{n}.log")
                stack.callback(daemon.stop)
                daemon.start()
                group.append(daemon)
            self.instances[name] = group
            nginx = stack.enter_context(Nginx([d.port for d in group],
                                              RETRY_POSTS if retry else RETRY_UNSENT))
            self.ports[name] = nginx.port
            self.nginx_pids[name] = [nginx.daemon.proc.pid] if nginx.daemon.proc else []
            self.nginx[name] = nginx

    def pids(self, name: str) -> dict[str, list[int]]:
        """The processes serving configuration ``name``: its instances, nginx, Redis."""
        def of(daemons: list[Daemon]) -> list[int]:
            return [d.proc.pid for d in daemons if d.proc is not None]

        return {"instances": of(self.instances[name]), "nginx": self.nginx_pids[name],
                "redis": of([self.redis.daemon]) if name != "memory" else []}

    def redis_memory(self) -> tuple[int, float]:
        """Redis's ``used_memory``, and the mean ``MEMORY USAGE`` of up to 100 session
        records (``mcpkit:s:*``; 0 when there are none)."""
        import redis

        client = redis.Redis.from_url(self.redis.url)
        try:
            keys = list(itertools.islice(client.scan_iter("mcpkit:s:*", count=500), 100))
            sizes = [int(client.memory_usage(key) or 0) for key in keys]
            used = int(client.info("memory")["used_memory"])
            return used, statistics.mean(sizes) if sizes else 0.0
        finally:
            client.close()


async def session_bytes(deployment: Deployment, sessions: int) -> dict[str, float]:
    """Redis bytes per open session: ``used_memory`` before and after ``sessions`` were
    opened through ``redis1`` (16 at a time) and left open, per session (the record, its
    key's expiry, the instance's pub/sub channel for it, the dictionaries' growth); and
    the mean ``MEMORY USAGE`` of a session record alone."""
    before, _ = deployment.redis_memory()
    port = deployment.ports["redis1"]
    numbers = iter(range(sessions))

    async def opener() -> None:
        for n in numbers:
            client = Client(n, port)
            try:
                await client.open()
            finally:
                client.conn.close()

    await asyncio.wait_for(asyncio.gather(*(opener() for _ in range(16))), 120)
    after, record = deployment.redis_memory()
    return {"used_memory_per_session": round((after - before) / sessions),
            "record_bytes": round(record)}


def upstream_errors(log: str) -> dict[str, int]:
    """What nginx logged about its upstreams (the kill's trace), counted by message: the
    text after the connection's details, e.g. "connect() failed (111: Connection refused)
    while connecting to upstream"."""
    found: Counter[str] = Counter()
    for line in log.splitlines():
        if "upstream" in line and "*" in line:
            found[line.split("*", 1)[1].split(" ", 1)[-1].split(", client:")[0]] += 1
    return dict(found)


async def kill_restart(victim: Daemon, after: float, sig: signal.Signals) -> dict[str, float]:
    """Stop ``victim`` with ``sig`` after ``after`` seconds (waiting, bounded, for it to
    exit); start it again a second later (waiting, bounded, until it listens); when each
    happened."""
    t0 = time.perf_counter()
    await asyncio.sleep(after)
    await asyncio.to_thread(victim.stop, sig)
    killed = time.perf_counter() - t0
    await asyncio.sleep(1.0)
    await asyncio.to_thread(victim.start)
    return {"killed_at_s": round(killed, 2), "listening_at_s": round(time.perf_counter() - t0, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, choices=range(1, 100),
                        metavar="N")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--calls", type=int, default=500, help="calls per client per round")
    parser.add_argument("--seconds", type=float, default=10.0, help="at most, per round")
    parser.add_argument("--sessions", type=int, default=1000, help="for Redis memory")
    parser.add_argument("--kill-seconds", type=float, default=12.0)
    parser.add_argument("--python", help="run the instances with this interpreter")
    parser.add_argument("--no-retry", action="store_true",
                        help="nginx without non_idempotent: a killed instance's POSTs fail")
    parser.add_argument("--signal", choices=("KILL", "TERM"), default="KILL",
                        help="how the instance is stopped under load")
    parser.add_argument("--json", help="also write the result here")
    opts = parser.parse_args()
    # SIGTERM ends the run like Ctrl-C does: every process it started is stopped by id
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    python = instance_python(opts.python)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGS}
    with ExitStack() as stack:
        deployment = Deployment(stack, python, not opts.no_retry)
        per_session = asyncio.run(session_bytes(deployment, opts.sessions))  # Redis still empty
        for r in range(opts.rounds):
            for name in CONFIGS[r % 3:] + CONFIGS[:r % 3]:
                load = drive(deployment.ports[name], opts.clients, opts.calls, opts.seconds,
                             pids=deployment.pids(name))
                runs[name].append(asyncio.run(asyncio.wait_for(load, opts.seconds + 60)))
                print(f"round {r + 1} {name}: {runs[name][-1]}", file=sys.stderr, flush=True)
        victim = deployment.instances["redis3"][1]
        kill = drive(deployment.ports["redis3"], opts.clients, sys.maxsize, opts.kill_seconds,
                     kill_restart(victim, opts.kill_seconds / 3,
                                  signal.Signals[f"SIG{opts.signal}"]))
        under_kill = asyncio.run(asyncio.wait_for(kill, opts.kill_seconds + 60))
        under_kill["restarted_ok"] = victim.running
        under_kill["nginx_log"] = upstream_errors(
            (deployment.nginx["redis3"].dir / "error.log").read_text(errors="replace"))
    summary = {name: {key: statistics.median(run[key] for run in runs[name])
                      for key in ("rps", "p50_ms", "p99_ms")} for name in CONFIGS}
    for name in CONFIGS:
        summary[name]["cpu_us_per_call"] = {
            group: statistics.median(run["cpu_us_per_call"][group] for run in runs[name])
            for group in runs[name][0]["cpu_us_per_call"]}
    failed_in_rounds = {name: sum(sum(run["errors"].values()) + run["lost"] + run["duplicated"]
                                  for run in runs[name]) for name in CONFIGS}
    ratio_b = summary["redis1"]["rps"] / summary["memory"]["rps"]
    ratio_c = summary["redis3"]["rps"] / summary["memory"]["rps"]
    cpu = {name: summary[name]["cpu_us_per_call"]["instances"] for name in CONFIGS}
    kill_failures = (sum(under_kill["errors"].values()) + under_kill["lost"]
                     + under_kill["duplicated"])
    missed = _verdict("1 instance on Redis / memory stores, req/s", ratio_b, ">=", RATIO_GOAL, "")
    print(f"info  3 instances on Redis / memory stores, req/s  {ratio_c:8.2f}")
    print(f"info  Redis per open session: {per_session['used_memory_per_session']} B "
          f"(used_memory), record {per_session['record_bytes']} B (MEMORY USAGE)")
    print(f"info  instance CPU per call, memory/redis1/redis3  "
          f"{cpu['memory']:.0f}/{cpu['redis1']:.0f}/{cpu['redis3']:.0f} us")
    missed += _verdict("failures in the measured rounds", sum(failed_in_rounds.values()),
                       "<=", 0, "")
    missed += _verdict(f"errors+lost+duplicated, SIG{opts.signal}+restart 1 of 3", kill_failures,
                       "<=", 0, "")
    result = {"clients": opts.clients, "rounds": opts.rounds, "cpus": os.cpu_count(),
              "load_avg": [round(x, 2) for x in os.getloadavg()],
              "nginx_retry": RETRY_UNSENT if opts.no_retry else RETRY_POSTS,
              "signal": opts.signal,
              "summary": summary, "ratio_redis1_memory": round(ratio_b, 3),
              "ratio_redis3_memory": round(ratio_c, 3), "goal": RATIO_GOAL,
              "redis_per_session": per_session, "sessions": opts.sessions,
              "failures_in_rounds": failed_in_rounds, "kill": under_kill, "runs": runs}
    line = json.dumps(result)
    print(line)
    if opts.json:
        Path(opts.json).write_text(line + "\n")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
