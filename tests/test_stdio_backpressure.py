"""stdio backpressure (issue #25, item 7): a client that does not read stdout.

The server holds at most ``output_buffer`` (1 MiB) of unread output plus the answers to one
slice of input: above it, it stops reading requests and paces handlers that report
(``await ctx.report_progress``/``ctx.log``), and it waits for the reader rather than exit.
Each case runs ``tests/servers/flood.py`` as a real subprocess on asyncio (the pump's
readiness-callback path) and on trio (the reader task), samples its ``VmRSS`` from
``/proc`` while the client does not read, then reads and checks that every message
arrives, in order, exactly once (each one schema-checked). Every loop is bounded in count
and time.

RSS_BOUND_MB, the growth allowed over the idle server: 1 MiB of queued output, the answers
to one 64 KiB slice of requests (about 600 of these 4 KiB answers, 2.5 MB, each message
held twice for a moment while queued and joined), up to 256 KiB of input held back, and
the allocator's slack: about 10 MB at worst, measured 2-9 MB; 32 MB leaves room for a
loaded machine. Before the bound existed, the same runs grew by 90-320 MB.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcpkit import Context, Server
from tests.support.stdio import ServerProcess

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads VmRSS from /proc")

FLOOD = Path(__file__).resolve().parent / "servers" / "flood.py"
BACKENDS = ["asyncio", "trio"]
RSS_BOUND_MB = 32
REQUESTS = 20_000  # blob calls written while not reading: ~2.1 MB asking for ~80 MB
ANSWER = 4096  # bytes of text per blob answer
NOTES = 10_000  # notifications a flooding tool sends: ~11 MB
NOTE_SIZE = 1000


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


class RssWatch:
    """The peak of a process's RSS, sampled every 10 ms in a thread (at most 5 minutes)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.base = rss_mb(pid)
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 300
        while not self._stop.wait(0.01) and time.monotonic() < deadline:
            try:
                self.peak = max(self.peak, rss_mb(self.pid))
            except (OSError, AssertionError):
                return  # the process ended

    @property
    def grown(self) -> float:
        return self.peak - self.base

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.fixture
def watches() -> Iterator[list[RssWatch]]:
    made: list[RssWatch] = []
    yield made
    for watch in made:
        watch.stop()


def start(backend: str, watches: list[RssWatch]) -> tuple[ServerProcess, RssWatch]:
    s = ServerProcess(FLOOD, backend)
    s.initialize()
    watch = RssWatch(s.proc.pid)
    watches.append(watch)
    return s, watch


def line(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


def blob_call(rid: int) -> bytes:
    return line({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                 "params": {"name": "blob", "arguments": {"size": ANSWER}}})


def write_while_accepted(s: ServerProcess, data: bytes, limit: float = 5.0) -> memoryview:
    """Write ``data`` without waiting on a full pipe: until all of it went in, or nothing
    went in for 1 s (the server stopped reading), or ``limit`` seconds. Returns the rest."""
    assert s.proc.stdin is not None
    fd = s.proc.stdin.fileno()
    os.set_blocking(fd, False)
    rest = memoryview(data)
    began = last = time.monotonic()
    while rest and time.monotonic() - began < limit and time.monotonic() - last < 1.0:
        try:
            rest = rest[os.write(fd, rest[:1 << 16]):]
            last = time.monotonic()
        except BlockingIOError:
            select.select([], [fd], [], 0.05)
    return rest


def finish_then_close(s: ServerProcess, rest: memoryview) -> threading.Thread:
    """In a thread: write ``rest`` (blocking: as the server reads it), then close stdin."""
    assert s.proc.stdin is not None
    stdin = s.proc.stdin

    def run() -> None:
        fd = stdin.fileno()
        os.set_blocking(fd, True)
        view = rest
        while view:
            view = view[os.write(fd, view):]
        stdin.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def read_messages(s: ServerProcess, done: Callable[[dict[str, Any]], bool], *,
                  limit: float = 60.0, chunk: int = 1 << 16,
                  pause: float = 0.0) -> Iterator[dict[str, Any]]:
    """Each message the server writes, schema-checked, until ``done(msg)`` (included);
    ``chunk`` bytes per read, ``pause`` seconds between reads (a slow reader)."""
    assert s.proc.stdout is not None and s.checker is not None
    fd = s.proc.stdout.fileno()
    deadline = time.monotonic() + limit
    buf = s._buf  # what ServerProcess.recv already read
    while True:
        while b"\n" in buf:
            raw, buf = buf.split(b"\n", 1)
            msg = json.loads(raw)
            s.checker.check(msg)
            yield msg
            if done(msg):
                s._buf = buf
                return
        left = deadline - time.monotonic()
        assert left > 0, f"the server stopped writing; stderr: {s.stderr()[-2000:]}"
        if select.select([fd], [], [], min(left, 1.0))[0]:
            data = os.read(fd, chunk)
            assert data, f"the server closed stdout; stderr: {s.stderr()[-2000:]}"
            buf += data
            if pause:
                time.sleep(pause)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unread_answers_stop_the_reading_and_all_arrive_once_read(
        backend: str, watches: list[RssWatch]) -> None:
    """A client writes 20,000 calls asking for 4 KiB each and reads nothing: the server
    stops reading once 1 MiB of answers waits (the client's writes block), its memory stays
    within the bound and it waits instead of exiting; then the client reads, and every
    answer arrives exactly once; end of input after that still ends the server with 0."""
    s, watch = start(backend, watches)
    with s:
        rest = write_while_accepted(s, b"".join(blob_call(i) for i in range(1, REQUESTS + 1)))
        time.sleep(1.0)  # what the server took is processed meanwhile
        assert watch.grown < RSS_BOUND_MB, (
            f"RSS grew by {watch.grown:.0f} MB while the client did not read")
        assert rest, "the server read all the requests although no answer was read"
        assert s.proc.poll() is None, "a stalled reader must be waited for, not dropped"
        writer = finish_then_close(s, rest)
        seen: Counter[Any] = Counter()
        for msg in read_messages(s, lambda m: sum(seen.values()) >= REQUESTS, limit=90):
            seen[msg.get("id")] += 1
            assert msg["result"]["content"][0]["text"] == "b" * ANSWER, msg
        writer.join(10)
        assert sorted(seen) == list(range(1, REQUESTS + 1))
        assert set(seen.values()) == {1}
        assert watch.grown < RSS_BOUND_MB, (
            f"RSS grew by {watch.grown:.0f} MB while the answers were read")
        assert s.proc.wait(15) == 0


@pytest.mark.parametrize(("backend", "tool"), [
    ("asyncio", "flood"), ("trio", "flood"), ("asyncio", "log_flood"), ("trio", "log_flood"),
])
def test_a_flooding_handler_is_paced_by_a_slow_reader(
        backend: str, tool: str, watches: list[RssWatch]) -> None:
    """A tool sends 10,000 progress notifications (or log messages) of 1 KB as fast as its
    ``await`` lets it while the client reads nothing for 2 s, then reads slowly: the
    handler waits for the reader (memory stays within the bound), and every notification
    arrives in order, exactly once, then the result."""
    s, watch = start(backend, watches)
    with s:
        if tool == "log_flood":
            s.request("logging/setLevel", {"level": "info"})
        s.send({"jsonrpc": "2.0", "id": "flood", "method": "tools/call",
                "params": {"name": tool, "arguments": {"count": NOTES, "size": NOTE_SIZE},
                           "_meta": {"progressToken": "tok"}}})
        time.sleep(2.0)
        assert watch.grown < RSS_BOUND_MB, (
            f"RSS grew by {watch.grown:.0f} MB while the client did not read")
        msgs = list(read_messages(s, lambda m: m.get("id") == "flood", chunk=1 << 15,
                                  pause=0.001))
        assert watch.grown < RSS_BOUND_MB, (
            f"RSS grew by {watch.grown:.0f} MB while the client read slowly")
        *notes, result = msgs
        assert result["result"]["content"][0]["text"] == (
            f"sent {NOTES}" if tool == "flood" else f"logged {NOTES}")
        if tool == "flood":
            assert [n["params"]["progress"] for n in notes] == list(range(1, NOTES + 1))
            assert all(n["params"]["message"] == "p" * NOTE_SIZE for n in notes)
        else:
            data = [n["params"]["data"].split(" ") for n in notes]
            assert [int(number) for number, _ in data] == list(range(1, NOTES + 1))
            assert all(filler == "l" * NOTE_SIZE for _, filler in data)
        assert s.request("ping")["result"] == {}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_task_flooding_progress_is_paced(backend: str, watches: list[RssWatch]) -> None:
    """The same flood run as a 2025-11-25 task (its progress goes the task's way, with
    related-task ``_meta``): paced the same; all of it arrives in order, then the result
    through ``tasks/result``."""
    s, watch = start(backend, watches)
    with s:
        created = s.request("tools/call", {
            "name": "flood", "arguments": {"count": NOTES, "size": NOTE_SIZE},
            "task": {}, "_meta": {"progressToken": "tok"}})
        task_id = created["result"]["task"]["taskId"]
        time.sleep(2.0)
        assert watch.grown < RSS_BOUND_MB, (
            f"RSS grew by {watch.grown:.0f} MB while the client did not read")
        count = 0

        def last_progress(msg: dict[str, Any]) -> bool:
            return msg.get("method") == "notifications/progress" and (
                msg["params"]["progress"] == NOTES)

        for msg in read_messages(s, last_progress, chunk=1 << 15, pause=0.001):
            if msg.get("method") != "notifications/progress":
                continue  # the task's status notifications
            count += 1
            assert msg["params"]["progress"] == count
            assert msg["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {
                "taskId": task_id}
        assert count == NOTES
        assert watch.grown < RSS_BOUND_MB
        result = s.request("tasks/result", {"taskId": task_id}, timeout=30)
        assert result["result"]["content"][0]["text"] == f"sent {NOTES}"


def test_sigterm_while_the_reader_is_stuck_still_exits(watches: list[RssWatch]) -> None:
    """Stopping reading must not stop the server from stopping: with the reading paused
    (and a handler waiting for room), SIGTERM drains, cancels and exits 0 within the drain
    window plus the 5 s the last write may take."""
    s, _ = start("asyncio", watches)
    with s:
        s.send({"jsonrpc": "2.0", "id": "flood", "method": "tools/call",
                "params": {"name": "flood", "arguments": {"count": NOTES, "size": NOTE_SIZE},
                           "_meta": {"progressToken": "tok"}}})
        rest = write_while_accepted(s, b"".join(blob_call(i) for i in range(1, REQUESTS + 1)))
        assert rest
        began = time.monotonic()
        os.kill(s.proc.pid, signal.SIGTERM)
        assert s.proc.wait(15) == 0
        assert time.monotonic() - began < 12


# ------------------------------------------------- the same in one process, both backends
# A stream whose peer reads nothing until the test says so shows the mechanism without
# timing: once every task is blocked, how much input the server took and how far a
# flooding handler got are exact (Server(output_buffer=...) sets the bound).

INIT = line({"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"}}}) + line(
    {"jsonrpc": "2.0", "method": "notifications/initialized"})


class UnreadPipe:
    """A ``ByteStream`` whose peer has written ``chunks`` (one per read) and reads nothing
    until ``opened`` is set; input ends when ``ended`` is set."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.reads = 0
        self.out = bytearray()
        self.opened = anyio.Event()
        self.ended = anyio.Event()
        self.wanted = 0
        self.arrived = anyio.Event()  # set once ``wanted`` messages were written

    async def receive(self) -> bytes:
        await anyio.lowlevel.checkpoint()
        if self.reads == len(self.chunks):
            await self.ended.wait()
            raise anyio.EndOfStream
        self.reads += 1
        return self.chunks[self.reads - 1]

    async def send(self, data: bytes) -> None:
        await self.opened.wait()
        self.out += data
        if self.out.count(b"\n") >= self.wanted:
            self.arrived.set()
        await anyio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        return None

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in bytes(self.out).splitlines()]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def small_server(reached: list[int]) -> Server:
    server = Server("paced", output_buffer=8192)

    @server.tool
    async def blob(size: int) -> str:
        return "b" * size

    @server.tool
    async def flood(count: int, size: int, ctx: Context) -> str:
        for i in range(1, count + 1):
            reached[0] = i
            await ctx.report_progress(i, count, "p" * size)
        return f"sent {count}"

    return server


async def read_until(pipe: UnreadPipe, count: int) -> list[dict[str, Any]]:
    """The messages written once at least ``count`` arrived (bounded: 10 s)."""
    pipe.wanted = count
    if pipe.out.count(b"\n") < count:
        with anyio.fail_after(10):
            await pipe.arrived.wait()
    return pipe.messages()


@pytest.mark.anyio
async def test_unread_output_stops_the_input_in_process() -> None:
    """200 calls of 1 KiB answers, one per read, with an 8 KiB bound and nothing read: the
    server stops reading after about 8 of them; once the peer reads, all are answered."""
    pipe = UnreadPipe([INIT] + [line({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                      "params": {"name": "blob", "arguments": {"size": 1024}}})
                                 for i in range(1, 201)])
    server = small_server([0])
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, pipe)
        await anyio.wait_all_tasks_blocked()
        taken = pipe.reads
        assert taken < 20, f"{taken} of 201 reads taken while nothing was read"
        pipe.opened.set()
        msgs = await read_until(pipe, 201)
        pipe.ended.set()
    assert sorted(m["id"] for m in msgs) == list(range(201))
    assert all(m["result"]["content"][0]["text"] == "b" * 1024 for m in msgs if m["id"])


@pytest.mark.anyio
async def test_a_flooding_handler_waits_for_the_reader_in_process() -> None:
    """A tool reporting 1,000 progress notifications of 100 bytes with an 8 KiB bound: it
    gets about 80 of them out, then waits until the peer reads; then all arrive in order,
    then its result."""
    reached = [0]
    pipe = UnreadPipe([INIT + line({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "flood", "arguments": {"count": 1000, "size": 100},
                   "_meta": {"progressToken": "t"}}})])
    server = small_server(reached)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, pipe)
        await anyio.wait_all_tasks_blocked()
        assert reached[0] < 200, f"the handler reported {reached[0]} of 1000 unread"
        pipe.opened.set()
        msgs = await read_until(pipe, 1002)
        pipe.ended.set()
    assert [m["params"]["progress"] for m in msgs[1:-1]] == list(range(1, 1001))
    assert msgs[-1]["result"]["content"][0]["text"] == "sent 1000"


def test_output_buffer_must_leave_a_low_mark() -> None:
    from mcpkit.session import BytePump, Session

    pump = Session(Server("x").connection(), UnreadPipe([])).pump
    assert isinstance(pump, BytePump)
    with pytest.raises(ValueError, match="output"):
        pump.limit_output(0)
    pump.limit_output(4096)
    assert (pump.high_water, pump.low_water) == (4096, 1024)
