"""A rolling restart under load behind nginx loses no answer (issue #25).

Real processes: redis-server, three ``examples/everything.py --http --redis URL``
instances and nginx in front (``tests/support/deployment.py``: round-robin, no
stickiness, a request an instance could not take passed to the next). Clients call tools
without pause through nginx, JSON answers (``echo``) and SSE answers (``sleep`` with
progress), each session holding its GET stream open, as hosts do. Every instance in turn
gets SIGTERM, must exit 0 within its drain having logged nothing at WARNING or ERROR, and
is started again on its port before the next one goes.

What the clients see is checked as a client would live it: every call is answered exactly
once, with its own text; an SSE answer whose stream ends early is resumed with
``Last-Event-ID`` through nginx (on whichever instance), and a 503 of a draining instance
(the request was not processed) is sent again. Every stream, GET or POST, ends as a
complete response, never cut; every message is checked against the official schema.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

from tests.support.deployment import Deployment
from tests.support.http import McpHttp
from tests.support.shutdown import Exchange, exchange, exit_status, problems, terminate

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(150, method="thread")]

CLIENTS = 8
DRAIN_BOUND = 10.0 + 3.0  # the default drain, and a margin
RESUMES = 5  # resumptions of one answer stream at most
RESENDS = 10  # a refused (503) request sent again at most


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Tally:
    answers: Counter[tuple[int, int]] = field(default_factory=Counter)  # (client, id)
    asked: int = 0
    wrong: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    refused: int = 0
    resumed: int = 0
    cut: int = 0  # responses (GET or POST) that ended without their last chunk
    cuts: list[str] = field(default_factory=list)  # what each cut was, for the failure
    started: float = field(default_factory=time.monotonic)
    phase: str = "load"  # what the roll was doing (for a cut's report)

    def was_cut(self, what: str, got: Exchange) -> None:
        self.cut += 1
        ids = [e.id for e in got.events if e.id]
        self.cuts.append(f"{what} at {time.monotonic() - self.started:.2f} s during "
                         f"{self.phase}: status {got.status}, {len(got.events)} events, "
                         f"last id {ids[-1] if ids else None}, "
                         f"upstream {got.headers.get('x-upstream')}")
    get_ends: int = 0  # GET streams the server ended (cleanly)


class Caller:
    """One session through nginx: a GET stream kept open, calls without pause."""

    def __init__(self, number: int, http: httpx.AsyncClient, url: str, tally: Tally) -> None:
        self.number = number
        self.mcp = McpHttp(http, url)
        self.tally = tally
        self.ids = itertools.count(1)

    async def hold_get_stream(self, stop: anyio.Event) -> None:
        """The session's GET stream, resumed from its last event each time it ends."""
        last: str | None = None
        for _ in range(100):
            if stop.is_set():
                return
            got = await exchange(self.mcp, "GET", None, self.mcp.headers(
                accept="text/event-stream", content_type=None, last_event_id=last),
                limit=120)
            if got.status == 503:  # reached a draining instance: open it again
                self.tally.refused += 1
                await anyio.sleep(0.1)
                continue
            assert got.status == 200, (got.status, got.messages)
            last = next((e.id for e in reversed(got.events) if e.id), last)
            if got.clean:
                self.tally.get_ends += 1
            else:
                self.tally.was_cut(f"GET (from {last})", got)

    async def call(self, rid: int, message: dict[str, Any]) -> None:
        """Send one request until it is taken, then read its answer to the end."""
        self.tally.asked += 1
        got: Exchange | None = None
        for _ in range(RESENDS):
            self.mcp.checker.saw_peer(message)
            got = await exchange(self.mcp, "POST", orjson.dumps(message), self.mcp.headers())
            if got.status != 503:
                break
            self.tally.refused += 1  # draining: not processed; send it again
            assert got.headers.get("retry-after") == "1"
            await anyio.sleep(0.1)
        assert got is not None
        if got.clean is False:
            self.tally.was_cut(f"POST {rid}", got)
        answers = [m for m in got.messages if m.get("id") == rid and "method" not in m]
        last = next((e.id for e in reversed(got.events) if e.id), None)
        for _ in range(RESUMES):
            if answers or last is None:
                break
            self.tally.resumed += 1  # the stream ended before its answer: resume it
            again = await exchange(self.mcp, "GET", None, self.mcp.headers(
                accept="text/event-stream", content_type=None, last_event_id=last))
            if again.clean is False:
                self.tally.was_cut(f"GET resuming {rid}", again)
            answers += [m for m in again.messages if m.get("id") == rid and "method" not in m]
            last = next((e.id for e in reversed(again.events) if e.id), last)
        key = (self.number, rid)
        self.tally.answers[key] += len(answers)
        if not answers:
            self.tally.lost.append(f"{key}: HTTP {got.status} {got.messages[-1:]}")
        elif "error" in answers[0]:
            self.tally.wrong.append(f"{key}: {answers[0]['error']}")
        else:
            expected = (message["params"]["arguments"].get("text") or
                        f"Slept {message['params']['arguments']['seconds']} seconds.")
            text = answers[0]["result"]["content"][0]["text"]
            if expected not in text:
                self.tally.wrong.append(f"{key}: {text!r} for {expected!r}")

    async def run(self, stop: anyio.Event) -> None:
        await self.mcp.initialize()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.hold_get_stream, stop)
            while not stop.is_set():
                rid = next(self.ids)
                if rid % 2:
                    args: dict[str, Any] = {"text": f"c{self.number}-{rid}"}
                    params: dict[str, Any] = {"name": "echo", "arguments": args}
                else:  # progress, then the answer: SSE
                    params = {"name": "sleep", "arguments": {"seconds": 1.5 if rid % 4 else 0.3},
                              "_meta": {"progressToken": f"p{rid}"}}
                await self.call(rid, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                      "params": params})
            tg.cancel_scope.cancel()


async def test_a_rolling_restart_under_load_loses_no_answer(tmp_path: Path) -> None:
    tally = Tally()
    with ExitStack() as stack:
        deployment = Deployment(stack, tmp_path, options=("--log-level", "INFO"))
        stop = anyio.Event()
        restarted: list[float] = []

        async def roll() -> None:
            try:
                for n, daemon in enumerate(deployment.instances):
                    await anyio.sleep(1.5)  # load on all three
                    tally.phase = f"instance {n} ({daemon.port}) draining"
                    signalled = terminate(daemon)
                    code, exited = await exit_status(daemon, DRAIN_BOUND)
                    assert code == 0, daemon.output()
                    restarted.append(exited - signalled)
                    tally.phase = f"instance {n} ({daemon.port}) starting again"
                    await anyio.to_thread.run_sync(daemon.start)
                    tally.phase = "load"
                await anyio.sleep(1.5)  # load on the restarted ones
            finally:
                stop.set()

        limits = httpx.Limits(max_connections=4 * CLIENTS)
        async with httpx.AsyncClient(timeout=httpx.Timeout(20, read=None),
                                     limits=limits) as http:
            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    for n in range(CLIENTS):
                        tg.start_soon(Caller(n, http, deployment.url, tally).run, stop)
                    tg.start_soon(roll)
        logs = {d.log.name: problems(d.log) for d in deployment.instances}
        nginx_errors = deployment.nginx.errors()
        drained = [d.log.read_text().count("SIGTERM: draining") for d in deployment.instances]
    assert len(restarted) == 3 and max(restarted) < DRAIN_BOUND, restarted
    assert drained == [1, 1, 1]
    assert logs == {name: [] for name in logs}, logs
    assert tally.asked > 50, tally  # the load ran throughout
    assert tally.lost == [] and tally.wrong == [], tally
    assert set(tally.answers.values()) == {1}, [k for k, v in tally.answers.items() if v != 1]
    assert len(tally.answers) == tally.asked
    assert tally.cut == 0, (tally.cuts, nginx_errors)
    assert tally.get_ends >= 1, tally  # GET streams were ended (and resumed) by the drains
    print(f"rolling restart: {tally.asked} calls, {tally.refused} refused and sent again, "
          f"{tally.resumed} resumed, {tally.get_ends} GET streams ended and resumed; "
          f"exits {[round(t, 2) for t in restarted]} s after SIGTERM "
          f"({time.strftime('%H:%M:%S')})")


async def test_what_a_drain_ends_is_resumed_on_another_instance(tmp_path: Path) -> None:
    """Instance A drains (1 s) with a GET stream and a call longer than the drain open:
    the GET stream ends at once and is taken over on B, which then delivers the session's
    notifications; the call is cut at the deadline with its error as the last event, and
    a resumption on B replays that error from Redis. A exits 0, logging no problem."""
    with ExitStack() as stack:
        deployment = Deployment(stack, tmp_path, options=("--drain", "1", "--log-level",
                                                          "INFO"))
        async with httpx.AsyncClient(timeout=httpx.Timeout(20, read=None)) as http:
            on_a = McpHttp(http, deployment.direct(0))
            await on_a.initialize()
            on_b = McpHttp(http, deployment.direct(1))
            on_b.session_id, on_b.version, on_b.checker = (on_a.session_id, on_a.version,
                                                           on_a.checker)
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "sleep", "arguments": {"seconds": 30}, "_meta": {"progressToken": "t"}}}
            on_a.checker.saw_peer(call)
            async with on_a.open_get() as get, on_a.open_post(call) as long:
                priming = await get.next_event()
                _, progress = await long.next_message(5)
                assert progress["method"] == "notifications/progress"
                signalled = terminate(deployment.instances[0])
                with anyio.fail_after(1.0), pytest.raises(EOFError):  # at once, complete
                    await get.next_event()
                rest = await long.until_end(5)  # complete, with the cut's error last
                assert time.monotonic() - signalled >= 0.9
            cut = rest[-1][1]
            assert cut["id"] == 7 and cut["error"]["code"] == -32603, cut
            before_cut = [e.id for e in long.events if e.id][-2]
            resumed = await exchange(on_b, "GET", None, on_b.headers(
                accept="text/event-stream", content_type=None, last_event_id=before_cut))
            assert resumed.status == 200 and resumed.clean and resumed.messages == [cut]
            code, _ = await exit_status(deployment.instances[0], 1 + 4)
            assert code == 0
            assert problems(deployment.instances[0].log) == []
            taken: list[Any] = []
            open_on_b = anyio.Event()

            async def read_taken_over() -> None:
                async with on_b.open_get(last_event_id=priming.id) as again:
                    assert again.status == 200  # (B took the stream over before answering)
                    open_on_b.set()
                    taken.append(await again.next_message(10))

            async with anyio.create_task_group() as tg:
                tg.start_soon(read_taken_over)
                with anyio.fail_after(10):
                    await open_on_b.wait()
                changed = await on_b.call_tool("test_trigger_tool_change")
                assert changed.status == 200
            (_, note), = taken
            assert note["method"] == "notifications/tools/list_changed"
