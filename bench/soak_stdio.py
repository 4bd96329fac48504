"""The stdio leg of bench/soak.py: ``examples/everything.py`` on stdio, as a host runs it.

1. **Cancels** (``notifications/cancelled``, the stdio way): rounds of ``slow_compute``
   calls; once each has reported progress (it runs), all are cancelled. Then no progress
   may come for them after ``cancel_bound`` (it would still be running: a hang past its
   cancel), a ``ping`` is answered, and every cancelled id is used again for an ``echo``.
2. **Flood with a stalled reader**: requests (2025-11-25 calls of the session and
   2026-07-28 self-describing ones, about 1 KB each) written as fast as the server takes
   them while nobody reads its stdout, for ``flood_seconds``; the server's RSS sampled.
   A server with backpressure stops reading once its output is stuck, so the writer
   stalls; one without it keeps taking requests and buffering their answers. Then stdout
   is read: every request answered exactly once, with its own text. The flood stops early
   when the RSS passes ``cap_mb`` (already a miss; the machine is spared).
3. **End of input**: stdin closed; the server must exit 0 within the drain bound.
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
from bench.soak_procs import EVERYTHING, rss_fds, spawn
from bench.soak_wire import Validator, initialize, notification, request, stateless_meta

VERSION = "2025-11-25"


class StdioPeer:
    """The server process and a thread reading its stdout (paused on demand)."""

    def __init__(self, python: str, log: Path) -> None:
        self.proc = spawn([python, str(EVERYTHING)], log, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin.fileno()
        os.set_blocking(self.stdin, False)
        self.reading = threading.Event()
        self.reading.set()
        self.cond = threading.Condition()
        self.answers: dict[Any, list[Any]] = {}
        self.progress: dict[str, float] = {}  # token -> when its last progress came
        self.other: Counter[str] = Counter()
        self.bytes_read = 0
        self.count = 0  # answers read
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        rest = b""
        while True:
            self.reading.wait()
            data = os.read(fd, 1 << 20)
            if not data:
                break
            self.bytes_read += len(data)
            lines = (rest + data).split(b"\n")
            rest = lines.pop()
            now = time.monotonic()
            with self.cond:
                for line in lines:
                    try:
                        msg = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        self.other["a line that is not JSON"] += 1
                        continue
                    if "method" not in msg:
                        self.count += 1
                        self.answers.setdefault(msg.get("id"), []).append(msg)
                    elif msg["method"] == "notifications/progress":
                        self.progress[str(msg["params"].get("progressToken"))] = now
                    else:
                        self.other[msg["method"]] += 1
                self.cond.notify_all()

    def write(self, data: bytes, deadline: float) -> int:
        """Write ``data`` as far as the server takes it before ``deadline``."""
        done = 0
        while done < len(data):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            _, ready, _ = select.select([], [self.stdin], [], min(left, 0.2))
            if ready:
                try:
                    done += os.write(self.stdin, data[done:done + (1 << 16)])
                except BlockingIOError:
                    continue
        return done

    def wait(self, predicate: Any, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(predicate, timeout)

    def ask(self, rid: Any, body: bytes, timeout: float) -> Any:
        """Send one request; its answer (None if none came in ``timeout``)."""
        self.write(body + b"\n", time.monotonic() + timeout)
        self.wait(lambda: rid in self.answers, timeout)
        with self.cond:
            got = self.answers.pop(rid, None)
        return got[0] if got else None


def echo(rid: Any, text: str, stateless: bool = False) -> bytes:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": text}}
    if stateless:
        params["_meta"] = stateless_meta()
    return request(rid, "tools/call", params)


def flood_text(rid: int) -> str:
    return f"f{rid}-" + "x" * 1000


def echoed(answer: Any, text: str) -> bool:
    return isinstance(answer, dict) and answer.get("result", {}).get("content") == [
        {"type": "text", "text": text}]


def run_stdio(python: str, log: Path, cancels: int, flood_seconds: float, cap_mb: float,
              cancel_bound: float, drain: float, answer_seconds: float) -> dict[str, Any]:
    peer = StdioPeer(python, log)
    out: dict[str, Any] = {"wrong": 0, "lost": 0, "duplicated": 0}
    validator = Validator()
    try:
        init = peer.ask(0, initialize(0, VERSION), answer_seconds)
        if init is None or "result" not in init:
            return {**out, "failed": f"initialize: {init!r}"}
        validator.check(VERSION, init, "initialize")
        peer.write(notification("notifications/initialized") + b"\n", time.monotonic() + 5)
        out["cancel"] = cancel_rounds(peer, cancels, cancel_bound, answer_seconds)
        out["flood"] = flood(peer, flood_seconds, cap_mb, answer_seconds, validator)
        for key in ("wrong", "lost", "duplicated"):
            out[key] += out["cancel"].pop(key) + out["flood"].pop(key)
        out["schema_checked"], out["schema_violations"] = validator.checked, \
            validator.violations
        out["wrong"] += len(validator.violations) + peer.other["a line that is not JSON"]
        out["exit"] = end_of_input(peer, drain)
        with peer.cond:  # every answer was taken by what it answered: anything left is not
            out["wrong"] += sum(map(len, peer.answers.values()))  # an answer to us
        out["notifications"] = dict(peer.other)
    finally:
        if peer.proc.poll() is None:
            os.killpg(peer.proc.pid, 9)
            peer.proc.wait(10)
    return out


def cancel_rounds(peer: StdioPeer, count: int, bound: float,
                  answer_seconds: float) -> dict[str, Any]:
    """Step 1 of the module docstring; ``count`` cancels in rounds of up to 50."""
    got: Counter[str] = Counter()
    ping_ms: list[float] = []
    base = 10**6
    done = 0
    while done < count:
        ids = [base + done + k for k in range(min(50, count - done))]
        done += len(ids)
        calls = b"".join(request(rid, "tools/call", {
            "name": "slow_compute", "arguments": {"seconds": 60},
            "_meta": {"progressToken": f"t{rid}"}}) + b"\n" for rid in ids)
        peer.write(calls, time.monotonic() + answer_seconds)
        if not peer.wait(lambda ids=ids: all(f"t{r}" in peer.progress for r in ids),
                         answer_seconds):
            got["no progress before the cancel"] += 1
        cancels = b"".join(notification("notifications/cancelled", {
            "requestId": rid, "reason": "stopped"}) + b"\n" for rid in ids)
        peer.write(cancels, time.monotonic() + answer_seconds)
        cancelled_at = time.monotonic()
        got["sent"] += len(ids)
        start = time.perf_counter()
        pong = peer.ask(f"ping{done}", request(f"ping{done}", "ping"), answer_seconds)
        ping_ms.append((time.perf_counter() - start) * 1e3)
        if pong is None:
            got["lost"] += 1
        time.sleep(max(0.0, cancelled_at + bound + 0.3 - time.monotonic()))
        with peer.cond:
            late = [r for r in ids if peer.progress.get(f"t{r}", 0) > cancelled_at + bound]
            answered = [r for r in ids if r in peer.answers]
        got["hang past cancel"] += len(late)
        got["answered anyway"] += len(answered)
        for rid in answered:  # the race was lost: the answer must be the call's
            answer = peer.answers.pop(rid)
            if len(answer) > 1 or "Computed" not in str(answer[0].get("result")):
                got["wrong"] += 1
        reuse = b"".join(echo(rid, f"again-{rid}") + b"\n" for rid in ids)
        peer.write(reuse, time.monotonic() + answer_seconds)
        peer.wait(lambda ids=ids: all(r in peer.answers for r in ids), answer_seconds)
        with peer.cond:
            for rid in ids:
                answer = peer.answers.pop(rid, None)
                if answer is None:
                    got["id reuse failed"] += 1
                elif len(answer) > 1:
                    got["duplicated"] += len(answer) - 1
                elif not echoed(answer[0], f"again-{rid}"):
                    got["id reuse failed"] += 1
                else:
                    got["id reused"] += 1
    return {"wrong": got.pop("wrong", 0), "lost": got.pop("lost", 0),
            "duplicated": got.pop("duplicated", 0), **got,
            "ping_after_cancels_max_ms": round(max(ping_ms), 1) if ping_ms else None}


def flood(peer: StdioPeer, seconds: float, cap_mb: float, answer_seconds: float,
          validator: Validator) -> dict[str, Any]:
    """Step 2 of the module docstring."""
    pid = peer.proc.pid
    base = (rss_fds(pid) or (0.0, 0))[0]
    peak = base
    peer.reading.clear()
    time.sleep(0.2)  # the reader thread is parked (at most one more read in flight)
    counted = peer.count
    queued: list[int] = []  # ids in the order of their lines (each text: flood_text)
    pending = b""  # lines not yet taken by the server
    written = lines = 0
    at_line_start = True
    rid = 2 * 10**6
    end = time.monotonic() + seconds
    capped = False
    while time.monotonic() < end and not capped:
        if len(pending) < 1 << 16:
            for _ in range(64):
                rid += 1
                queued.append(rid)
                pending += echo(rid, flood_text(rid), stateless=rid % 4 == 0) + b"\n"
        sent = peer.write(pending, min(end, time.monotonic() + 0.2))
        if sent:
            lines += pending.count(b"\n", 0, sent)
            at_line_start = pending[sent - 1:sent] == b"\n"
            written += sent
            pending = pending[sent:]
        rss = (rss_fds(pid) or (0.0, 0))[0]
        peak = max(peak, rss)
        capped = rss - base > cap_mb
    accepted_mb = written / 2**20
    peak = max(peak, (rss_fds(pid) or (0.0, 0))[0])
    peer.reading.set()  # read again: a server with backpressure takes the rest only now
    if not at_line_start:  # finish the line the server has begun to take
        cut = pending.index(b"\n") + 1
        peer.write(pending[:cut], time.monotonic() + answer_seconds)
        lines += 1
    del queued[lines:]  # never sent whole
    expected = counted + len(queued)
    peer.wait(lambda: peer.count >= expected, answer_seconds + 30)
    got: Counter[str] = Counter()
    with peer.cond:
        for r in queued:
            text = flood_text(r)
            answer = peer.answers.pop(r, None)
            if answer is None:
                got["lost"] += 1
                continue
            if len(answer) > 1:
                got["duplicated"] += len(answer) - 1
            if not echoed(answer[0], text):
                got["wrong"] += 1
            elif r % 97 == 0:
                validator.check("2026-07-28" if r % 4 == 0 else VERSION, answer[0],
                                "tools/call")
    return {"requests": len(queued), "accepted_mb": round(accepted_mb, 1),
            "rss_before_mb": round(base, 1), "rss_peak_mb": round(peak, 1),
            "rss_growth_mb": round(peak - base, 1), "capped": capped,
            "wrong": got["wrong"], "lost": got["lost"], "duplicated": got["duplicated"]}


def end_of_input(peer: StdioPeer, drain: float) -> dict[str, Any]:
    """Step 3: close stdin, measure the exit."""
    start = time.monotonic()
    os.close(peer.stdin)
    try:
        status = peer.proc.wait(drain + 10)
    except subprocess.TimeoutExpired:
        return {"exit": None, "seconds": round(time.monotonic() - start, 2),
                "why": "still running"}
    seconds = round(time.monotonic() - start, 2)
    peer.thread.join(5)  # what the server wrote before it exited is read
    return {"exit": status, "seconds": seconds}
