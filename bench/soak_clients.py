"""The clients of bench/soak.py: stateful sessions (2025-11-25 and 2025-03-26) and
stateless 2026-07-28 callers, each looping over a weighted mix of calls whose every answer
is checked, and the ``Tally`` that counts what happened.

A call's outcome is exactly one of: answered right (``ok``), ``wrong`` (another id, other
content, a schema violation, a notification that is not this call's), ``lost`` (no answer),
``empty`` (``200 text/event-stream`` that ended with no message and no event id to resume
from), an unexpected ``error`` (an HTTP status or JSON-RPC error the call should not get),
or ``excused``: in flight on an instance at the moment it was SIGKILLed (the spec lets a
crashed server lose its in-flight work; the host re-issues it). A second answer to one id
counts as ``duplicated``. ``503`` with ``Retry-After`` is legitimate while Redis is away or
an instance is at its limit: the call is sent again after the pause (counted in
``retried``), within the call's deadline.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from bench.soak_wire import (
    STATELESS,
    Conn,
    NoAnswer,
    Response,
    SSEParser,
    Validator,
    request,
    stateless_headers,
    stateless_meta,
)

Expect = Callable[[Any], bool]
"""Judges a call's ``result``."""

LINGER = 2.0
"""Seconds an SSE response may stay open after it carried its answer (the server SHOULD
end it then); past them it is counted and closed by the client."""


@dataclass
class Tally:
    """Everything the clients saw, by kind (see the module docstring)."""

    ok: Counter[str] = field(default_factory=Counter)
    wrong: Counter[str] = field(default_factory=Counter)
    lost: Counter[str] = field(default_factory=Counter)
    empty: int = 0
    duplicated: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    retried: Counter[str] = field(default_factory=Counter)
    excused: Counter[str] = field(default_factory=Counter)
    cancels: Counter[str] = field(default_factory=Counter)
    resumes: Counter[str] = field(default_factory=Counter)
    sessions: Counter[str] = field(default_factory=Counter)
    streams: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    validator: Validator = field(default_factory=Validator)
    t0: float = field(default_factory=time.monotonic)
    hangs_at: list[float] = field(default_factory=list)  # when cancels hung (s since t0)

    def note(self, what: str) -> None:
        """Keep the first few failures, word for word and when (seconds since ``t0``),
        for the report."""
        if len(self.examples) < 20:
            self.examples.append(f"{time.monotonic() - self.t0:.1f} s: {what[:300]}")

    def report(self) -> dict[str, Any]:
        return {"ok": sum(self.ok.values()), "ok_by_kind": dict(self.ok),
                "wrong": dict(self.wrong), "lost": dict(self.lost), "empty_sse": self.empty,
                "duplicated": self.duplicated, "errors": dict(self.errors),
                "retried": dict(self.retried), "excused": dict(self.excused),
                "cancels": dict(self.cancels), "resumes": dict(self.resumes),
                "sessions": dict(self.sessions), "streams": dict(self.streams),
                "schema_checked": self.tally_checked, "examples": self.examples,
                "cancel_hangs_at_s": self.hangs_at,
                "schema_violations": self.validator.violations}

    @property
    def tally_checked(self) -> int:
        return self.validator.checked


class Faults:
    """When instances were SIGKILLed (monotonic seconds): a call in flight at such a moment
    that got no answer is excused, not lost."""

    def __init__(self) -> None:
        self.kills: list[float] = []

    def excuses(self, started: float) -> bool:
        return any(started - 0.05 <= t <= time.monotonic() for t in self.kills)


@dataclass
class Knobs:
    """Settings every client shares."""

    port: int
    tally: Tally
    faults: Faults
    answer_seconds: float = 20.0  # a call with no answer by then is lost
    cancel_bound: float = 2.0  # a cancelled call's exchange must end within this
    cancel_delay: float = 0.3  # at most, between a call's first progress and its cancel
    #: Where a cancelled exchange that did not end is left open, as a host waiting for its
    #: own timeout leaves it (up to ``park_max``; then it is reset); closed by the caller.
    parked: list[Conn] = field(default_factory=list)
    park_max: int = 64


class Outcome:
    """What one exchange brought: the answers to our id, the other messages, how it
    ended, and the last SSE event id (for a resumption)."""

    def __init__(self) -> None:
        self.answers: list[Any] = []
        self.events = 0
        self.last_id: str | None = None
        self.ended = False  # the response ended (as opposed to being cut or abandoned)


class Caller:
    """What both eras share: a connection, ids, checking every message of a response."""

    revision = STATELESS

    def __init__(self, number: int, knobs: Knobs, rng: random.Random) -> None:
        self.number = number
        self.knobs = knobs
        self.tally = knobs.tally
        self.rng = rng
        self.conn = Conn(knobs.port)
        self.side = Conn(knobs.port)  # notifications/cancelled, while the call's POST runs
        self.ids = itertools.count(1)
        self.answered: set[int | str] = set()

    def close(self) -> None:
        self.conn.close()
        self.side.close()

    def decode(self, data: bytes) -> Any:
        """A message's JSON (None, counted wrong, when it is not JSON)."""
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            self.tally.note(f"{self.revision}: not JSON: {data[:200]!r}")
            return None

    def judge(self, msg: Any, rid: int | str, method: str, token: str | None,
              outcome: Outcome) -> None:
        """Check one message of the response to ``rid`` (a ``method`` request)."""
        tally = self.tally
        if not isinstance(msg, dict):
            tally.wrong["not a JSON-RPC message"] += 1
            return
        if "method" in msg:
            params = msg.get("params") or {}
            if msg["method"] != "notifications/progress" or params.get("progressToken") != token:
                tally.wrong["a notification that is not this call's"] += 1
                tally.note(f"{self.revision} {method} {rid}: {orjson.dumps(msg)[:200]!r}")
            elif not tally.validator.check(self.revision, msg):
                tally.wrong["schema"] += 1
            return
        if msg.get("id") != rid:
            if "error" in msg and msg.get("id") is None:  # a refusal of the request
                outcome.answers.append(msg)
                return
            tally.wrong["an answer to another id"] += 1
            tally.note(f"{self.revision} {method} {rid}: got id {msg.get('id')!r}")
            return
        if not tally.validator.check(self.revision, msg, method):
            tally.wrong["schema"] += 1
        outcome.answers.append(msg)

    async def read(self, resp: Response, rid: int | str, method: str, token: str | None,
                   outcome: Outcome, parser: SSEParser | None = None,
                   until: Callable[[Outcome], bool] | None = None) -> None:
        """Read ``resp`` to its end (or until ``until(outcome)`` is true), judging each
        message; JSON bodies and SSE alike."""
        if not resp.is_sse:
            body = await resp.read()
            outcome.ended = True
            if body.strip():
                obj = self.decode(body)
                for msg in obj if isinstance(obj, list) else [obj]:
                    self.judge(msg, rid, method, token, outcome)
            return
        parser = parser or SSEParser()
        chunks = resp.chunks().__aiter__()
        while True:
            try:  # once answered, the stream should end: it gets LINGER seconds to
                chunk = await (asyncio.wait_for(chunks.__anext__(), LINGER)
                               if outcome.answers else chunks.__anext__())
            except StopAsyncIteration:
                break
            except TimeoutError:  # answered, but left open: counted, and closed here
                self.tally.streams["SSE stream left open after its answer"] += 1
                self.conn.abort()
                outcome.ended = True
                return
            for event in parser.feed(chunk):
                outcome.last_id = parser.last_event_id
                if event.data.strip():
                    outcome.events += 1
                    self.judge(self.decode(event.data), rid, method, token, outcome)
            if until is not None and until(outcome):
                return
        outcome.ended = True
        outcome.last_id = parser.last_event_id

    def settle(self, kind: str, rid: int | str, started: float, outcome: Outcome | None,
               expect: Expect, why: str = "no answer") -> bool:
        """Count the call: right, wrong, duplicated, lost (or excused), from ``outcome``;
        True if it was answered right."""
        tally = self.tally
        answers = outcome.answers if outcome else []
        if len(answers) > 1 or (answers and rid in self.answered):
            tally.duplicated += len(answers) - 1 + (rid in self.answered)
            tally.note(f"{self.revision} {kind} {rid}: answered {len(answers)}x")
        if not answers:
            if self.knobs.faults.excuses(started):
                tally.excused[kind] += 1
            else:
                tally.lost[why] += 1
                tally.note(f"{self.revision} {kind} {rid}: {why}")
            return False
        self.answered.add(rid)
        answer = answers[0]
        if "error" in answer:
            tally.errors[f"JSON-RPC {answer['error'].get('code')}"] += 1
            tally.note(f"{self.revision} {kind} {rid}: {orjson.dumps(answer)[:200]!r}")
            return False
        if expect(answer.get("result")):
            tally.ok[kind] += 1
            return True
        tally.wrong[f"{kind}: wrong result"] += 1
        tally.note(f"{self.revision} {kind} {rid}: {orjson.dumps(answer)[:200]!r}")
        return False

    async def pause_for(self, resp: Response, deadline: float) -> bool:
        """After a 503 with Retry-After (Redis away, a limit reached): wait and say True
        if the call may be sent again before ``deadline``."""
        await resp.read()
        if resp.status != 503 or "retry-after" not in resp.headers:
            return False
        self.tally.retried[f"HTTP {resp.status}"] += 1
        wait = min(float(resp.headers["retry-after"] or 1), 1.0) * self.rng.uniform(0.5, 1.0)
        if time.monotonic() + wait >= deadline:
            return False
        await asyncio.sleep(wait)
        return True


def text_is(text: str) -> Expect:
    return lambda result: isinstance(result, dict) and result.get("content") == [
        {"type": "text", "text": text}] and not result.get("isError")


def tools_listed(result: Any) -> bool:
    return isinstance(result, dict) and any(
        t.get("name") == "echo" for t in result.get("tools") or [])


class Calls:
    """The mix of one client: each entry a (weight, coroutine method name)."""

    STATEFUL = (("echo", 66), ("progress", 15), ("add", 5), ("cancel", 5), ("drop", 2),
                ("ping", 3), ("list", 2), ("batch", 2))
    STATELESS = (("echo", 72), ("progress", 15), ("add", 6), ("cancel", 5), ("list", 2))

    @staticmethod
    def pick(rng: random.Random, mix: tuple[tuple[str, int], ...]) -> str:
        names, weights = zip(*mix, strict=True)
        return rng.choices(names, weights)[0]


class StatelessClient(Caller):
    """A 2026-07-28 caller: no session; every request carries its ``_meta``."""

    async def call(self, kind: str, tool: str | None, arguments: dict[str, Any] | None,
                   expect: Expect | None, progress: bool = False,
                   cancel: bool = False) -> None:
        """One request (``tools/list`` when ``tool`` is None); ``expect`` None: the result
        is the call's progress token (``test_tool_with_progress``)."""
        rid = next(self.ids)
        token = f"p{self.number}-{rid}" if progress else None
        expect = expect or text_is(str(token))
        method = "tools/call" if tool else "tools/list"
        params: dict[str, Any] = {"_meta": stateless_meta(token)}
        if tool:
            params.update(name=tool, arguments=arguments or {})
        body = request(rid, method, params)
        headers = stateless_headers(method, tool)
        started = time.monotonic()
        deadline = started + self.knobs.answer_seconds
        outcome = Outcome()
        try:
            while True:
                resp = await asyncio.wait_for(self.conn.send("POST", headers, body),
                                              deadline - time.monotonic())
                if resp.status == 200:
                    break
                if not await self.pause_for(resp, deadline):
                    self.tally.errors[f"HTTP {resp.status}"] += 1
                    return
            if cancel:  # the first progress shows it runs; closing the stream cancels it
                await asyncio.wait_for(self.read(resp, rid, method, token, outcome,
                                                 until=lambda o: o.events > 0),
                                       deadline - time.monotonic())
                if outcome.answers:
                    self.tally.cancels["stateless: answered first"] += 1
                else:
                    self.conn.abort()
                    self.tally.cancels["stateless: stream closed"] += 1
                return
            await asyncio.wait_for(self.read(resp, rid, method, token, outcome),
                                   deadline - time.monotonic())
        except (NoAnswer, TimeoutError) as exc:
            self.conn.close()
            self.settle(kind, rid, started, None, expect, f"{type(exc).__name__}")
            return
        if resp.is_sse and not outcome.answers and not outcome.events:
            self.tally.empty += 1
            self.tally.note(f"{STATELESS} {kind} {rid}: empty SSE answer")
            return
        self.settle(kind, rid, started, outcome, expect, "ended without its answer")

    async def step(self) -> None:
        kind = Calls.pick(self.rng, Calls.STATELESS)
        text = f"l{self.number}-{self.rng.getrandbits(40):x}"
        if kind == "echo":
            await self.call(kind, "echo", {"text": text}, text_is(text))
        elif kind == "add":
            a, b = self.rng.randrange(10**6), self.rng.randrange(10**6)
            await self.call(kind, "add", {"a": a, "b": b}, text_is(str(a + b)))
        elif kind == "progress":
            await self.call(kind, "test_tool_with_progress", None, None, progress=True)
        elif kind == "cancel":
            await self.call(kind, "sleep", {"seconds": 5}, text_is("Slept 5 seconds."),
                            progress=True, cancel=True)
        else:
            await self.call(kind, None, None, tools_listed)

