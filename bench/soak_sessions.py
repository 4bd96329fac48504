"""Stateful clients of bench/soak.py: one MCP session each (2025-11-25, or 2025-03-26),
looping over a weighted mix (``Calls.STATEFUL``) whose every answer is checked.

What the mix holds besides plain calls:

* **cancel**: ``sleep`` (5 s, with a progress token); once its first progress shows it
  runs, ``notifications/cancelled`` for its id is POSTed on a second connection. The
  call's exchange must then end within ``cancel_bound`` (its answer, if the race was lost,
  must be right); otherwise it is a *hang past cancel* and the connection is dropped. The
  id is then used again for an ``echo``, which must be answered.
* **drop**: ``test_tool_with_progress`` answered as SSE; after its first event with an id
  the connection is reset, and the stream resumed with ``GET`` + ``Last-Event-ID``: the
  answer must arrive exactly once, through the resumption.
* any other SSE answer cut (an instance killed or stopped) is resumed the same way.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import orjson
from bench.soak_clients import Caller, Calls, Expect, Outcome, text_is, tools_listed
from bench.soak_wire import ACCEPT_BOTH, Conn, NoAnswer, Response, SSEParser, initialize, request

RESUMES = 3
"""Resumptions of one cut stream before the call is given up (lost)."""


class SessionGone(Exception):
    """The server answered 404: the session ended (it is opened again). ``retried``: the
    request had been refused with 503 first (a DELETE's first attempt may have been done
    by then, its answer lost to the outage)."""

    def __init__(self, retried: bool = False) -> None:
        super().__init__("session gone")
        self.retried = retried


class StatefulClient(Caller):
    """One session; ``version`` its revision (2025-11-25 or 2025-03-26)."""

    def __init__(self, *args: Any, version: str = "2025-11-25") -> None:
        super().__init__(*args)
        self.revision = version
        self.session: bytes | None = None

    def sibling(self, k: int) -> StatefulClient:
        """Another client on this session: its own connections, ids from ``k`` * 10**7."""
        other = StatefulClient(self.number, self.knobs, self.rng, version=self.revision)
        other.session = self.session
        other.ids = itertools.count(k * 10**7)
        return other

    async def fill(self, calls: int, width: int = 16) -> None:
        """``calls`` answers as SSE (4-5 stored events each), ``width`` at a time: the
        session's event log reaches its steady size (1,000 events) before a measurement."""

        async def some(client: StatefulClient, count: int) -> None:
            for _ in range(count):
                await client.call("prefill", "tools/call", {
                    "name": "test_tool_with_progress", "arguments": {}}, None, progress=True)

        helpers = [self.sibling(k + 1) for k in range(width)]
        try:
            await asyncio.gather(*(some(h, -(-calls // width)) for h in helpers))
        finally:
            for helper in helpers:
                helper.close()

    # ------------------------------------------------------------------ session

    def headers(self, accept: bytes = ACCEPT_BOTH) -> list[tuple[bytes, bytes]]:
        out = [(b"Accept", accept), (b"Content-Type", b"application/json")]
        if self.session is not None:
            out += [(b"Mcp-Session-Id", self.session),
                    (b"MCP-Protocol-Version", self.revision.encode())]
        return out

    async def open(self, deadline: float) -> bool:
        """``initialize`` + ``notifications/initialized`` (503s waited out); False if the
        session could not be opened before ``deadline``."""
        self.session = None
        self.answered.clear()
        rid = next(self.ids)
        try:
            while True:
                resp = await asyncio.wait_for(
                    self.conn.send("POST", self.headers(), initialize(rid, self.revision)),
                    max(0.01, deadline - time.monotonic()))
                if resp.status == 200:
                    break
                if not await self.pause_for(resp, deadline):
                    self.tally.errors[f"initialize: HTTP {resp.status}"] += 1
                    return False
            answer = orjson.loads(await resp.read())
            if answer.get("result", {}).get("protocolVersion") != self.revision:
                self.tally.wrong["initialize: another revision"] += 1
                return False
            self.tally.validator.check(self.revision, answer, "initialize")
            self.session = resp.headers["mcp-session-id"].encode()
            note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
            while True:
                resp = await asyncio.wait_for(self.conn.send("POST", self.headers(), note),
                                              max(0.01, deadline - time.monotonic()))
                if resp.status == 202:
                    await resp.read()
                    break
                if not await self.pause_for(resp, deadline):
                    self.tally.errors[f"initialized: HTTP {resp.status}"] += 1
                    return False
        except (NoAnswer, TimeoutError, KeyError, orjson.JSONDecodeError) as exc:
            self.conn.close()
            self.tally.errors[f"initialize: {type(exc).__name__}"] += 1
            return False
        self.tally.sessions["opened"] += 1
        return True

    async def delete(self) -> None:
        """End the session (DELETE); then it must be unknown (404). 503s are waited out
        (Redis away)."""
        started = time.monotonic()
        deadline = started + self.knobs.answer_seconds
        try:
            resp = await self.send(b"", deadline, method="DELETE")
            if resp is None:
                return
            await resp.read()
            for late in (False, True):  # other instances learn of it over the bus: a
                try:  # request that outruns the news is answered up to ``recheck`` (1 s)
                    resp = await self.send(request(next(self.ids), "ping"), deadline)
                except SessionGone:
                    self.tally.sessions["deleted (404 after a second)" if late
                                        else "deleted"] += 1
                    return
                if resp is None:
                    return
                await resp.read()
                await asyncio.sleep(1.5)
            self.tally.errors[f"a request after DELETE: HTTP {resp.status}"] += 1
        except SessionGone as gone:  # after a SIGKILL, nginx may pass a DELETE done on to
            if gone.retried:  # another; a DELETE sent again after a 503 may have been
                self.tally.sessions["deleted (404 when sent again after a 503)"] += 1
            elif self.knobs.faults.excuses(started):  # done the first time
                self.tally.excused["DELETE"] += 1
            else:
                self.tally.errors["DELETE: HTTP 404"] += 1
        except (NoAnswer, TimeoutError):
            self.conn.close()
            self.tally.lost["DELETE"] += 1

    # ------------------------------------------------------------------ calls

    async def send(self, body: bytes, deadline: float,
                   accept: bytes = ACCEPT_BOTH, method: str = "POST",
                   extra: tuple[tuple[bytes, bytes], ...] = ()) -> Response | None:
        """Send ``body`` until it is not refused with 503 (None: another refusal, counted;
        ``SessionGone`` on 404)."""
        retried = False
        while True:
            resp = await asyncio.wait_for(
                self.conn.send(method, self.headers(accept) + list(extra), body),
                max(0.01, deadline - time.monotonic()))
            if resp.status in (200, 202, 204):
                return resp
            if resp.status == 404:
                await resp.read()
                raise SessionGone(retried)
            retried = retried or resp.status == 503
            if not await self.pause_for(resp, deadline):
                self.tally.errors[f"HTTP {resp.status}"] += 1
                return None

    async def call(self, kind: str, method: str, params: dict[str, Any] | None,
                   expect: Expect | None, *, progress: bool = False, cancel: bool = False,
                   drop: bool = False, rid: int | None = None) -> bool:
        """One request, judged (``expect`` None: the result is the progress token); True
        if it was answered right."""
        rid = next(self.ids) if rid is None else rid
        token = f"p{self.number}-{rid}" if progress else None
        if token is not None:
            params = {**(params or {}), "_meta": {"progressToken": token}}
        expect = expect or text_is(str(token))
        started = time.monotonic()
        deadline = started + self.knobs.answer_seconds
        outcome = Outcome()
        parser = SSEParser()
        try:
            resp = await self.send(request(rid, method, params), deadline)
            if resp is None:
                return False
            cut = False
            try:  # a cancel waits for the first progress (it runs); a drop for an event id
                until = ((lambda o: o.events > 0) if cancel else
                         (lambda o: o.last_id is not None) if drop else None)
                await asyncio.wait_for(self.read(resp, rid, method, token, outcome, parser,
                                                 until),
                                       max(0.01, deadline - time.monotonic()))
            except NoAnswer:  # cut: resumed below if it can be
                cut = True
                self.tally.streams["answer stream cut"] += 1
            if cancel and not cut and not outcome.ended:
                if not outcome.answers:
                    await self.cancelled(resp, rid, method, token, outcome, parser, expect)
                    return False
                self.tally.cancels["answered before the cancel"] += 1
                await asyncio.wait_for(self.read(resp, rid, method, token, outcome, parser),
                                       max(0.01, deadline - time.monotonic()))
            elif drop and not cut and not outcome.ended:  # after its first event with an id
                self.conn.abort()
                if not outcome.answers:
                    self.tally.resumes["dropped"] += 1
            if not outcome.answers and resp.is_sse:
                if outcome.last_id is not None:
                    await self.resume(rid, method, token, outcome, parser, deadline, drop)
                elif not outcome.events and outcome.ended:
                    self.tally.empty += 1
                    self.tally.note(f"{self.revision} {kind} {rid}: empty SSE answer")
                    return False
        except SessionGone:
            self.tally.errors["HTTP 404: the session is gone"] += 1
            await self.open(deadline)
            return False
        except (NoAnswer, TimeoutError) as exc:
            self.conn.close()
            return self.settle(kind, rid, started, outcome, expect, type(exc).__name__)
        return self.settle(kind, rid, started, outcome, expect, "ended without its answer")

    async def resume(self, rid: int, method: str, token: str | None, outcome: Outcome,
                     parser: SSEParser, deadline: float, dropped: bool) -> None:
        """``GET`` + ``Last-Event-ID`` until the answer came (at most ``RESUMES`` times)."""
        for _ in range(RESUMES):
            assert outcome.last_id is not None
            extra = ((b"Last-Event-ID", outcome.last_id.encode()),)
            try:
                resp = await self.send(b"", deadline, b"text/event-stream", "GET", extra)
                if resp is None:
                    return
                parser.buffer = b""
                await asyncio.wait_for(self.read(resp, rid, method, token, outcome, parser),
                                       max(0.01, deadline - time.monotonic()))
            except NoAnswer:
                self.conn.close()
            if outcome.answers:
                self.tally.resumes["answered through a resumption" if dropped
                                   else "cut stream resumed"] += 1
                return

    async def cancelled(self, resp: Response, rid: int, method: str, token: str | None,
                        outcome: Outcome, parser: SSEParser, expect: Expect) -> None:
        """The cancel case of ``call``, once the call runs (see the module docstring)."""
        tally = self.tally
        first = time.monotonic() + self.knobs.answer_seconds
        await asyncio.sleep(self.rng.uniform(0, self.knobs.cancel_delay))
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": rid, "reason": "the user stopped it"}})
        try:  # on the second connection, as a host does while the call's POST is open
            while True:
                sent = await asyncio.wait_for(self.side.send("POST", self.headers(), note), 10)
                if sent.status == 202 or not await self.pause_for(sent, first):
                    break
            await sent.read()
            if sent.status != 202:
                tally.errors[f"notifications/cancelled: HTTP {sent.status}"] += 1
        except (NoAnswer, TimeoutError):
            self.side.close()
            tally.lost["notifications/cancelled"] += 1
        tally.cancels["sent"] += 1
        try:
            await asyncio.wait_for(self.read(resp, rid, method, token, outcome, parser),
                                   self.knobs.cancel_bound)
            tally.cancels["exchange ended"] += 1
        except TimeoutError:
            tally.cancels["hang past cancel"] += 1
            tally.note(f"{self.revision} cancel {rid}: the exchange did not end")
            if len(tally.hangs_at) < 1000:
                tally.hangs_at.append(round(time.monotonic() - tally.t0, 1))
            if len(self.knobs.parked) < self.knobs.park_max:
                self.knobs.parked.append(self.conn)
                self.conn = Conn(self.knobs.port)
            else:
                self.conn.abort()
        except NoAnswer:
            tally.cancels["exchange ended (connection closed)"] += 1
        if outcome.answers and "error" in outcome.answers[0]:  # not a result: allowed
            tally.cancels["error answer after the cancel"] += 1
        elif outcome.answers:  # the race was lost: the answer must still be right
            tally.cancels["answered anyway"] += 1
            self.settle("cancel", rid, time.monotonic(), outcome, expect)
        text = f"reuse-{self.number}-{rid}"
        self.answered.discard(rid)
        reused = await self.call("id reused after cancel", "tools/call", {
            "name": "echo", "arguments": {"text": text}}, text_is(text), rid=rid)
        tally.cancels["id reused" if reused else "id reuse failed"] += 1

    async def batch(self, kind: str, calls: list[tuple[str, dict[str, Any], str]],
                    deadline: float) -> None:
        """``tools/call`` of each (tool, arguments, expected text) in one JSON-RPC batch
        (2025-03-26): a JSON array answering each id once, with its text."""
        rids = [next(self.ids) for _ in calls]
        body = b"[%s]" % b",".join(request(r, "tools/call", {"name": name, "arguments": args})
                                   for r, (name, args, _) in zip(rids, calls, strict=True))
        started = time.monotonic()
        try:
            resp = await self.send(body, deadline)
            if resp is None:
                return
            obj = orjson.loads(await asyncio.wait_for(resp.read(), deadline - started))
        except SessionGone:
            self.tally.errors["HTTP 404: the session is gone"] += 1
            await self.open(deadline)
            return
        except (NoAnswer, TimeoutError, orjson.JSONDecodeError) as exc:
            self.conn.close()
            self.tally.lost[f"{kind}: {type(exc).__name__}"] += len(calls)
            return
        answers = obj if isinstance(obj, list) else [obj]
        by_id: dict[Any, list[Any]] = {}
        for answer in answers:
            if isinstance(answer, dict):
                by_id.setdefault(answer.get("id"), []).append(answer)
        for rid, (_, _, text) in zip(rids, calls, strict=True):
            outcome = Outcome()
            outcome.answers = by_id.pop(rid, [])
            self.settle(kind, rid, started, outcome, text_is(text))
        if by_id:
            self.tally.wrong[f"{kind}: answers to other ids"] += sum(map(len, by_id.values()))

    async def step(self) -> None:
        kind = Calls.pick(self.rng, Calls.STATEFUL)
        deadline = time.monotonic() + self.knobs.answer_seconds
        if self.session is None and not await self.open(deadline):
            await asyncio.sleep(0.5)
            return
        text = f"s{self.number}-{self.rng.getrandbits(40):x}"
        if kind == "batch" and self.revision == "2025-03-26":
            texts = [f"{text}-{k}" for k in range(2)]
            await self.batch(kind, [("echo", {"text": t}, t) for t in texts], deadline)
        elif kind in ("echo", "batch"):
            await self.call(kind, "tools/call", {"name": "echo", "arguments": {"text": text}},
                            text_is(text))
        elif kind == "add":
            a, b = self.rng.randrange(10**6), self.rng.randrange(10**6)
            await self.call(kind, "tools/call", {"name": "add", "arguments": {"a": a, "b": b}},
                            text_is(str(a + b)))
        elif kind in ("progress", "drop"):
            await self.call(kind, "tools/call", {"name": "test_tool_with_progress",
                                                 "arguments": {}}, None, progress=True,
                            drop=kind == "drop")
        elif kind == "cancel":
            await self.call(kind, "tools/call", {"name": "sleep", "arguments": {"seconds": 5}},
                            text_is("Slept 5 seconds."), progress=True, cancel=True)
        elif kind == "ping":
            await self.call(kind, "ping", None, lambda r: isinstance(r, dict))
        else:
            await self.call(kind, "tools/list", None, tools_listed)
