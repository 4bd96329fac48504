"""The load of bench/soak.py around the clients' mix: session churn, GET streams that are
read and GET streams that are not, list-changed triggers, and a canary measuring ping
latency (event-loop stalls). ``Load`` starts them all and stops them, bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import statistics
import time
from dataclasses import dataclass
from typing import Any

import orjson
from bench.soak_clients import Knobs, StatelessClient, text_is
from bench.soak_sessions import StatefulClient
from bench.soak_wire import (
    Conn,
    NoAnswer,
    SSEParser,
    raw_request,
    raw_socket,
    request,
    stateless_headers,
    stateless_meta,
)

LISTENED = {"notifications/tools/list_changed", "notifications/prompts/list_changed",
            "notifications/resources/list_changed", "notifications/resources/updated",
            "notifications/message"}
"""What a session's GET stream may carry here (the canary and the mix log nothing)."""


@dataclass
class Shape:
    """How much of each kind of load (bench/soak.py's flags)."""

    stateful: int = 40
    legacy_share: float = 0.2  # of the stateful clients, on 2025-03-26
    stateless: int = 8
    churners: int = 2
    readers: int = 8  # stateful clients whose GET stream is open and read
    unread: int = 8  # GET streams (and listen streams) opened and never read
    rotate: float = 2.0  # seconds between closing one unread stream and opening another
    triggers: float = 100.0  # list-changed triggers per second
    storm: int = 40_000  # triggers at once, at 30% of the run
    canary: float = 0.05  # seconds between two canary pings


class Load:
    """Everything that runs against one endpoint until ``stop()``."""

    def __init__(self, knobs: Knobs, shape: Shape, seed: int) -> None:
        """The clients are made here; ``prefill`` then ``start`` them."""
        self.knobs = knobs
        self.shape = shape
        self.rng = random.Random(seed)
        self.stopping = asyncio.Event()
        self.halt_triggers = False  # set when a server's RSS passed the safety cap
        self.tasks: list[asyncio.Task[None]] = []
        self.readers: list[asyncio.Task[None]] = []  # cancelled at once on stop
        self.clients: list[Any] = []
        self.sockets: list[socket.socket] = []
        self.canary_ms: list[float] = []
        self.triggered = 0
        self.stormed = 0
        self.storm_seconds = 0.0

        legacy = round(shape.stateful * shape.legacy_share)
        for n in range(shape.stateful):
            version = "2025-03-26" if n < legacy else "2025-11-25"
            self.clients.append(StatefulClient(n, knobs, self._rng(), version=version))
        self.sessions = list(self.clients)
        for n in range(shape.stateless):
            self.clients.append(StatelessClient(1000 + n, knobs, self._rng()))
        self.callers = list(self.clients)
        # The read GET streams have sessions of their own: a session's event log is
        # bounded (1,000 events), and a storm of list changes on its GET stream would
        # evict the events a dropped POST stream of the same session resumes from.
        self.readers_of = [StatefulClient(3500 + n, knobs, self._rng())
                           for n in range(shape.readers)]

    async def prefill(self, calls: int) -> None:
        """Before the load: fill each session's event log (``StatefulClient.fill``), so
        that what the servers hold after the warm-up is their steady state rather than
        logs still filling."""

        async def fill(client: StatefulClient) -> None:
            if await client.open(time.monotonic() + self.knobs.answer_seconds):
                await client.fill(calls)

        await asyncio.gather(*(fill(c) for c in self.sessions))

    def start(self) -> None:
        """Start every worker (each runs until ``stop``)."""
        for client in self.callers:
            self._spawn(self._loop(client))
        for client in self.readers_of:
            self.readers.append(asyncio.ensure_future(self._reader(client)))
        for n in range(self.shape.churners):
            self._spawn(self._churn(2000 + n * 100_000))
        if self.shape.unread:
            self._spawn(self._unread())
        if self.shape.triggers:
            self._spawn(self._triggers())
        if self.shape.canary:
            self._spawn(self._canary())

    async def burst(self, count: int) -> None:
        """``count`` list-changed triggers at once: every GET and listen stream's event
        log fills, the unread ones included (waited for, up to 5 s)."""
        tally = self.knobs.tally
        for _ in range(100):
            if tally.streams["unread streams opened"] >= self.shape.unread:
                break
            await asyncio.sleep(0.05)
        client = StatefulClient(4100, self.knobs, self._rng(), version="2025-03-26")
        try:
            for _ in range(-(-count // 100)):
                await self._trigger(client, 100)
        finally:
            client.close()

    async def storm(self, count: int) -> None:
        """``count`` triggers as fast as the server answers them (batches of 100, the
        server's ``max_batch``): a
        burst of changes that fills the unread streams' socket buffers (a few MB each)
        within seconds, after which a server without backpressure buffers the rest."""
        client = StatefulClient(4200, self.knobs, self._rng(), version="2025-03-26")
        started = time.monotonic()
        try:
            for _ in range(-(-count // 100)):
                if self.stopping.is_set() or self.halt_triggers:
                    break
                await self._trigger(client, 100)
                self.stormed += 100
        finally:
            client.close()
            self.storm_seconds = round(time.monotonic() - started, 1)

    async def _trigger(self, client: StatefulClient, count: int) -> None:
        """``count`` calls of ``test_trigger_tool_change`` in one batch (2025-03-26)."""
        deadline = time.monotonic() + self.knobs.answer_seconds
        if client.session is None and not await client.open(deadline):
            await asyncio.sleep(0.5)
            return
        trigger = ("test_trigger_tool_change", {}, "Mutation triggered")
        await client.batch("trigger", [trigger] * count, deadline)
        self.triggered += count

    async def stop(self) -> None:
        """Stop the load: each worker ends its current step (bounded by the answer
        deadline), then every connection and unread stream is closed (no DELETE: the
        clients just leave)."""
        self.stopping.set()
        for task in self.readers:
            task.cancel()
        await asyncio.gather(*self.readers, return_exceptions=True)
        _, late = await asyncio.wait(self.tasks, timeout=self.knobs.answer_seconds + 10)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        for client in self.clients:
            client.close()
        for sock in self.sockets:
            sock.close()
        self.sockets.clear()
        self.knobs.tally.streams["workers stopped late"] += len(late)

    def report(self) -> dict[str, Any]:
        lat = sorted(self.canary_ms)
        return {"canary_pings": len(lat),
                "canary_p50_ms": round(statistics.median(lat), 2) if lat else None,
                "canary_p99_ms": round(lat[int(0.99 * (len(lat) - 1))], 2) if lat else None,
                "canary_max_ms": round(lat[-1], 2) if lat else None,
                "triggers": self.triggered, "storm_triggers": self.stormed,
                "storm_seconds": self.storm_seconds}

    # ------------------------------------------------------------------ workers

    def _rng(self) -> random.Random:
        return random.Random(self.rng.getrandbits(64))

    def _spawn(self, job: Any) -> None:
        self.tasks.append(asyncio.ensure_future(job))

    async def _loop(self, client: Any) -> None:
        crashes = 0
        while not self.stopping.is_set():
            try:
                await client.step()
            except Exception as exc:  # the soak's own fault: counted (a miss), not hidden
                crashes += 1
                self.knobs.tally.errors[f"soak client failed: {type(exc).__name__}"] += 1
                self.knobs.tally.note(f"soak client {client.number}: {exc!r}")
                client.close()
                if crashes >= 10:
                    return
                await asyncio.sleep(0.5)

    async def _churn(self, base: int) -> None:
        """Sessions opened, used once and ended with DELETE, in a loop."""
        rng = self._rng()
        n = 0
        while not self.stopping.is_set():
            n += 1
            version = "2025-03-26" if n % 3 == 0 else "2025-11-25"
            client = StatefulClient(base + n, self.knobs, rng, version=version)
            try:
                deadline = time.monotonic() + self.knobs.answer_seconds
                if await client.open(deadline):
                    text = f"churn-{base + n}"
                    await client.call("churn echo", "tools/call", {
                        "name": "echo", "arguments": {"text": text}}, text_is(text))
                    await client.delete()
                else:
                    await asyncio.sleep(0.5)
            finally:
                client.close()

    async def _reader(self, client: StatefulClient) -> None:
        """``client``'s GET stream, read and checked: only notifications, no answer;
        opened again (resumed with ``Last-Event-ID``) whenever it ends; cancelled when the
        load stops."""
        tally = self.knobs.tally
        conn = Conn(self.knobs.port)
        parser = SSEParser()
        session: bytes | None = None
        try:
            while not self.stopping.is_set():
                if client.session is None:
                    opened = await client.open(time.monotonic() + self.knobs.answer_seconds)
                    client.close()
                    if not opened:
                        await asyncio.sleep(0.5)
                        continue
                if client.session != session:
                    session, parser = client.session, SSEParser()
                headers = client.headers(b"text/event-stream")
                if parser.last_event_id:
                    headers.append((b"Last-Event-ID", parser.last_event_id.encode()))
                try:
                    resp = await asyncio.wait_for(conn.send("GET", headers), 10)
                    if resp.status != 200:
                        await resp.read()
                        tally.streams[f"GET: HTTP {resp.status}"] += 1
                        if resp.status == 400 and parser.last_event_id:  # aged out of the
                            parser = SSEParser()  # bounded log: a new stream instead
                        elif resp.status == 404:
                            client.session = None
                        await asyncio.sleep(0.5)
                        continue
                    tally.streams["GET opened"] += 1
                    parser.buffer = b""
                    async for chunk in resp.chunks():
                        for event in parser.feed(chunk):
                            if event.data.strip():
                                self._heard(client, client.decode(event.data))
                    tally.streams["GET ended"] += 1
                except (NoAnswer, TimeoutError):
                    tally.streams["GET cut"] += 1
                conn.close()
                await asyncio.sleep(0.2)
        finally:
            conn.close()

    def _heard(self, client: StatefulClient, msg: Any) -> None:
        tally = self.knobs.tally
        if not isinstance(msg, dict) or msg.get("method") not in LISTENED or "id" in msg:
            tally.wrong["GET stream: not a notification it may carry"] += 1
            tally.note(f"GET stream: {orjson.dumps(msg)[:200]!r}")
        elif not tally.validator.check(client.revision, msg):
            tally.wrong["schema"] += 1
        else:
            tally.streams["notifications read"] += 1

    async def _unread(self) -> None:
        """``unread`` streams that are never read: GET streams of sessions of their own
        (one in four a 2026-07-28 ``subscriptions/listen`` instead); every ``rotate``
        seconds the oldest is closed (its client leaves, no DELETE) and opened again."""
        shape, tally = self.shape, self.knobs.tally
        owners: list[StatefulClient | None] = []
        for n in range(shape.unread):
            if n % 4 == 3:
                owners.append(None)
                continue
            client = StatefulClient(3000 + n, self.knobs, self._rng())
            if await client.open(time.monotonic() + self.knobs.answer_seconds):
                owners.append(client)
            client.close()
        opened: list[tuple[int, socket.socket]] = []
        turn = 0
        while not self.stopping.is_set():
            for n, owner in enumerate(owners):
                if any(k == n for k, _ in opened):
                    continue
                try:
                    sock = await asyncio.to_thread(raw_socket, self.knobs.port,
                                                   self._unread_request(owner))
                except OSError:
                    tally.streams["unread stream: could not connect"] += 1
                    continue
                opened.append((n, sock))
                self.sockets.append(sock)
                tally.streams["unread streams opened"] += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), shape.rotate)
            if opened and not self.stopping.is_set():
                n, sock = opened.pop(turn % len(opened))
                turn += 1
                sock.close()
                self.sockets.remove(sock)
                tally.streams["unread streams closed"] += 1

    def _unread_request(self, owner: StatefulClient | None) -> bytes:
        port = self.knobs.port
        if owner is None:
            body = request(1, "subscriptions/listen", {
                "notifications": {"toolsListChanged": True, "promptsListChanged": True},
                "_meta": stateless_meta()})
            return raw_request(port, "POST", stateless_headers("subscriptions/listen", None),
                               body)
        return raw_request(port, "GET", owner.headers(b"text/event-stream"))

    async def _triggers(self) -> None:
        """``test_trigger_tool_change`` at ``triggers`` per second, in 2025-03-26 batches
        every 50 ms: each trigger sends ``tools/list_changed`` to every GET and listen
        stream (an unread one fills its socket's buffers within seconds, as a host whose
        reader stalled does during a burst of changes)."""
        client = StatefulClient(4000, self.knobs, self._rng(), version="2025-03-26")
        self.clients.append(client)
        size = max(1, round(self.shape.triggers / 20))
        every = size / self.shape.triggers
        next_at = time.monotonic()
        while not self.stopping.is_set() and not self.halt_triggers:
            await self._trigger(client, size)
            next_at = max(next_at + every, time.monotonic() - 1.0)
            delay = next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)

    async def _canary(self) -> None:
        """A session that only pings, every ``canary`` seconds: its latency shows how long
        the server's event loop is held up."""
        client = StatefulClient(5000, self.knobs, self._rng())
        self.clients.append(client)
        while not self.stopping.is_set():
            if client.session is None and not await client.open(
                    time.monotonic() + self.knobs.answer_seconds):
                await asyncio.sleep(0.5)
                continue
            start = time.perf_counter()
            if await client.call("canary ping", "ping", None, lambda r: isinstance(r, dict)) \
                    and len(self.canary_ms) < 100_000:
                self.canary_ms.append((time.perf_counter() - start) * 1e3)
            await asyncio.sleep(self.shape.canary)
