"""Judging what :mod:`mcpkit.check.taskprobe` saw of the tasks the checker started: the
``TASKS.*`` rules that need a task to run (create, fields, state machine, ids, cancel of a
terminal task, the result), and the shapes both probing and judging read.

The status sequence of a task is read from the answers to the checker's own requests,
which are sequential and so causally ordered; status notifications (which a requestor
must not rely on, R25-11.TASKS.13) are judged for their fields only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..protocol.stateless import CLIENT_CAPABILITIES as META_CAPS
from ..protocol.tasks import (
    CORE,
    CORE_STATUS_NOTIFICATION,
    EXT,
    EXTENSION,
    RELATED_TASK,
    STATUSES,
    WireForm,
    can_move,
    is_terminal,
)
from .facts import Facts
from .features import Speaker
from .model import Verdict
from .rules import finding
from .wire import Reply

TASK_WAIT = 10.0
"""Seconds the checker waits, in all, for the tasks it started to end before cancelling."""
MIN_ID_BITS = 64
"""The least estimated entropy of a task id that does not look guessable."""
NEED_RUN = ("TASKS.create", "TASKS.fields", "TASKS.state-machine", "TASKS.ids",
            "TASKS.cancel-terminal", "TASKS.result")
"""The rules that need a task to run (``--call-tools all``)."""
EXT_META: dict[str, Any] = {"_meta": {META_CAPS: {"extensions": {EXTENSION: {}}}}}


@dataclass(slots=True)
class Started:
    """One task the checker started: its tool, creation and polls."""

    tool: str
    arguments: dict[str, Any]
    created: Reply
    task_id: str | None = None
    views: list[tuple[str, dict[str, Any], Reply]] = field(default_factory=list)
    final: dict[str, Any] | None = None
    cancelled_by_checker: bool = False
    payload: Reply | None = None  # tasks/result (2025-11-25)
    cancel_terminal: Reply | None = None
    after_cancel: Reply | None = None


@dataclass(slots=True)
class TaskProbe:
    """One era's task probing: where findings go, how to speak, the tasks started."""

    facts: Facts
    sp: Speaker
    form: WireForm
    started: list[Started] = field(default_factory=list)

    @property
    def ext(self) -> bool:
        return self.form.extension

    def add(self, rule: str, verdict: Verdict, message: str, evidence: str | Reply = "",
            also: Iterable[str | Reply] = ()) -> None:
        """A finding for ``rule``; the evidence a :class:`Reply` or text. A failure blames
        the evidence's message and those of ``also`` (the other failing replies), so that
        ``WIRE.schema`` does not report them again."""
        if verdict == "fail":
            for reply in (evidence, *also):
                if isinstance(reply, Reply):
                    self.facts.blame(reply.msg)
        if isinstance(evidence, Reply):
            evidence = evidence.evidence
        self.facts.findings.append(finding(rule, verdict, message, evidence, self.facts.era))

    async def call(self, method: str, params: dict[str, Any]) -> Reply:
        """A request of a task method, declaring the extension in 2026-07-28."""
        return await self.sp.call(method, {**params, **EXT_META} if self.ext else params)


# ------------------------------------------------------------------------------ judging


def judge_run(probe: TaskProbe) -> None:
    made = [s for s in probe.started if s.task_id]
    refused = [s for s in probe.started if not s.task_id]
    form = probe.form
    # TASKS.create
    if refused:
        s = refused[0]
        probe.add("TASKS.create", "fail", f"{s.tool}: a task-augmented call answered "
                  f"{what(s.created)}, not a CreateTaskResult ("
                  + ("flat, resultType \"task\" with taskId" if probe.ext else "{task: Task}")
                  + ").", s.created)
    else:
        probe.add("TASKS.create", "pass", f"{len(made)} task-augmented call(s) answered with "
                  "a CreateTaskResult.", made[0].created.evidence)
    if not made:
        for rule in NEED_RUN[1:]:
            probe.add(rule, "n/a", "No task was created.")
        return
    # TASKS.fields: every Task the server sent for the checker's tasks, and notifications
    problems: list[tuple[str, str | Reply]] = []
    for s in made:
        for method, view, reply in s.views:
            problem = task_problem(view, form)
            if problem:
                problems.append((f"{s.tool}, {method}: {problem}", reply))
    for note in _notifications(probe):
        problem = task_problem(note, form)
        if problem:
            problems.append((f"{CORE_STATUS_NOTIFICATION}: {problem}", str(note)[:500]))
    if problems:
        said = list(dict.fromkeys(p[0] for p in problems))
        probe.add("TASKS.fields", "fail", "; ".join(said[:3]) + ".", problems[0][1],
                  [p[1] for p in problems])
    else:
        n = sum(len(s.views) for s in made)
        probe.add("TASKS.fields", "pass", f"{n} Task object(s) carried taskId, a valid "
                  f"status, createdAt/lastUpdatedAt and {form.ttl}.", made[0].created.evidence)
    _judge_machine(probe, made)
    _judge_ids(probe, made)
    _judge_cancel_terminal(probe, made)
    _judge_result(probe, made)


def task_problem(view: dict[str, Any], form: WireForm) -> str:
    """What is wrong with one ``Task`` object in ``form`` ("" when nothing)."""
    if not view:
        return "no Task (an error or no answer)"
    if not isinstance(view.get("taskId"), str) or not view["taskId"]:
        return "taskId is missing or not a string"
    if view.get("status") not in STATUSES:
        return f"status {view.get('status')!r} is not one of {', '.join(STATUSES)}"
    stamps = []
    for key in ("createdAt", "lastUpdatedAt"):
        stamp = _instant(view.get(key))
        if stamp is None:
            return f"{key} {view.get(key)!r} is not an ISO 8601 date-time"
        stamps.append(stamp)
    if stamps[1] < stamps[0]:
        return "lastUpdatedAt is before createdAt"
    other = CORE if form.extension else EXT
    if form.ttl not in view:
        return f"{form.ttl} (the actual time to live, or null) is missing"
    ttl = view.get(form.ttl)
    if ttl is not None and not _whole(ttl):
        return f"{form.ttl} {ttl!r} is not a whole number of milliseconds or null"
    poll = view.get(form.poll_interval)
    if poll is not None and not _whole(poll):
        return f"{form.poll_interval} {poll!r} is not a whole number of milliseconds"
    for key in (other.ttl, other.poll_interval):
        if key in view:
            return f"{key} is the other generation's name; this revision uses " + (
                form.ttl if key == other.ttl else form.poll_interval)
    return ""


def _judge_machine(probe: TaskProbe, made: list[Started]) -> None:
    bad: list[tuple[str, Reply]] = []
    unfinished: list[str] = []
    for s in made:
        seq = [(m, v.get("status"), r) for m, v, r in s.views if v.get("status") in STATUSES]
        for (m0, a, _), (m1, b, r1) in itertools.pairwise(seq):
            if a != b and not can_move(str(a), str(b)):
                why = ("a terminal status never changes" if is_terminal(str(a))
                       else "not an allowed move")
                bad.append((f"{s.tool}: {a} ({m0}) then {b} ({m1}): {why}", r1))
                break
        if s.final is None:
            unfinished.append(s.tool)
        elif s.cancelled_by_checker and not probe.ext and s.final.get("status") not in (
                "cancelled", "completed", "failed"):
            bad.append((f"{s.tool}: still {s.final.get('status')} after tasks/cancel",
                        s.views[-1][2]))
    if bad:
        probe.add("TASKS.state-machine", "fail", "; ".join(b[0] for b in bad[:3]) + ". "
                  "Allowed: working -> input_required|completed|failed|cancelled, "
                  "input_required -> working|completed|failed|cancelled; terminal states "
                  "never change.", bad[0][1], [b[1] for b in bad])
    elif unfinished:
        probe.add("TASKS.state-machine", "untestable", f"{', '.join(unfinished)}: the task did "
                  f"not reach a terminal status within {TASK_WAIT:g} s, even after "
                  "tasks/cancel.", made[0].views[-1][2].evidence)
    else:
        moves = " / ".join(" -> ".join(_squeeze([str(v.get("status")) for _, v, _ in s.views
                                                 if v.get("status")])) for s in made)
        probe.add("TASKS.state-machine", "pass", f"Statuses seen: {moves}; terminal "
                  "statuses stayed.", made[0].views[-1][2].evidence)


def _judge_ids(probe: TaskProbe, made: list[Started]) -> None:
    ids = [s.task_id for s in made if s.task_id]
    problem = ""
    if len(set(ids)) != len(ids):
        problem = f"the id {next(i for i in ids if ids.count(i) > 1)!r} was given twice"
    for tid in ids:
        if not problem and id_bits(tid) < MIN_ID_BITS:
            problem = (f"the id {tid!r} carries about {id_bits(tid):.0f} bits; use at least "
                       "128 random bits (e.g. secrets.token_urlsafe(16))")
    for a, b in itertools.pairwise(ids):
        common = len(_prefix(a, b))
        if not problem and common * 2 > min(len(a), len(b)):
            problem = (f"the ids {a!r} and {b!r} share a prefix of {common} characters "
                       "(they look sequential)")
    if problem:
        probe.add("TASKS.ids", "fail", f"{problem}. Task ids must be unique and "
                  "unguessable when tasks are not bound to an authorization context.",
                  made[0].created.evidence)
    else:
        probe.add("TASKS.ids", "pass", f"{len(ids)} distinct id(s), each of at least "
                  f"{min(id_bits(i) for i in ids):.0f} estimated bits.", made[0].created.evidence)


def _judge_cancel_terminal(probe: TaskProbe, made: list[Started]) -> None:
    tried = [s for s in made if s.cancel_terminal is not None]
    if not tried:
        probe.add("TASKS.cancel-terminal", "n/a", "No task the checker started ended by "
                  "itself within the wait.")
        return
    failed: list[tuple[str, Reply]] = []
    for s in tried:
        reply = s.cancel_terminal
        assert reply is not None
        status = (s.final or {}).get("status")
        if probe.ext:  # whether the status then stayed is TASKS.state-machine's
            ok = isinstance(reply.result, dict) and not {"taskId", "status"} & set(reply.result)
            want = "an empty acknowledgement (the extension's cancel is idempotent)"
        else:
            ok = reply.error_code == -32602
            want = "-32602 (Invalid params)"
        if not ok:
            failed.append((f"{s.tool}: tasks/cancel of a {status} task answered "
                           f"{what(reply)}; answer {want} and leave the task {status}.", reply))
    if failed:
        probe.add("TASKS.cancel-terminal", "fail", failed[0][0], failed[0][1],
                  [f[1] for f in failed])
        return
    probe.add("TASKS.cancel-terminal", "pass", "tasks/cancel of a terminal task answered "
              + ("an acknowledgement" if probe.ext else "-32602")
              + ".", tried[0].cancel_terminal.evidence
              if tried[0].cancel_terminal else "")


def _judge_result(probe: TaskProbe, made: list[Started]) -> None:
    done = [s for s in made if s.final is not None and not s.cancelled_by_checker]
    if not done:
        probe.add("TASKS.result", "n/a", "No task the checker started ended by itself within "
                  "the wait.")
        return
    for s in done:
        problem, evidence = _payload_problem(probe, s)
        if problem and evidence is not None:
            probe.add("TASKS.result", "fail", f"{s.tool}: {problem}.", evidence)
            return
    probe.add("TASKS.result", "pass", f"{len(done)} finished task(s) gave "
              + ("their result inlined in tasks/get" if probe.ext else
                 "their payload through tasks/result with the related-task _meta")
              + ", the same as a plain call where one was made.",
              done[0].payload.evidence if done[0].payload else done[0].views[-1][2].evidence)


def _payload_problem(probe: TaskProbe, s: Started) -> tuple[str, Reply | None]:
    """What is wrong with a finished task's payload ("" when nothing), and the reply."""
    final = s.final or {}
    if probe.ext:
        evidence = s.views[-1][2]
        if final.get("status") == "completed" and not isinstance(final.get("result"), dict):
            return "a completed task's tasks/get carries no inlined result", evidence
        if final.get("status") == "failed":
            err = final.get("error")
            if not (isinstance(err, dict) and isinstance(err.get("code"), int)
                    and isinstance(err.get("message"), str)):
                return "a failed task's tasks/get carries no error {code, message}", evidence
            if "result" in final:
                return "a failed task's tasks/get carries a result", evidence
        payload = final.get("result")
        if isinstance(payload, dict) and RELATED_TASK in (payload.get("_meta") or {}):
            return f"the inlined result carries the 2025-11-25 {RELATED_TASK} _meta", evidence
    else:
        reply = s.payload
        assert reply is not None
        evidence = reply
        if isinstance(reply.result, dict):
            payload = reply.result
            related = (payload.get("_meta") or {}).get(RELATED_TASK)
            if not (isinstance(related, dict) and related.get("taskId") == s.task_id):
                return (f"the tasks/result result lacks _meta[\"{RELATED_TASK}\"] = "
                        f"{{taskId: {s.task_id!r}}}"), evidence
        elif reply.error is None:
            return f"tasks/result of a {final.get('status')} task answered nothing", evidence
        else:
            return "", None
    plain = _plain_result(probe, s)
    if plain is not None and isinstance(payload, dict):
        differs = _differs(plain, payload)
        if differs:
            return (f"the task's result differs from the plain call's ({differs}); it must "
                    "be exactly what the call would have returned"), evidence
    return "", None


def _plain_result(probe: TaskProbe, s: Started) -> dict[str, Any] | None:
    for call in probe.facts.calls:
        if call.tool == s.tool and call.arguments == s.arguments and call.result is not None:
            return call.result
    return None


def _differs(a: dict[str, Any], b: dict[str, Any]) -> str:
    """How two ``CallToolResult`` differ in shape ("" when alike): keys, ``isError``, the
    kinds of content blocks. Text may differ: a tool's output need not be deterministic."""
    skip = {"_meta", "resultType"}
    ka, kb = set(a) - skip, set(b) - skip
    if ka != kb:
        return f"keys {sorted(ka)} then {sorted(kb)}"
    if bool(a.get("isError")) != bool(b.get("isError")):
        return f"isError {a.get('isError')!r} then {b.get('isError')!r}"
    kinds = [[c.get("type") for c in x.get("content") or [] if isinstance(c, dict)]
             for x in (a, b)]
    if kinds[0] != kinds[1]:
        return f"content {kinds[0]} then {kinds[1]}"
    return ""


# ------------------------------------------------------------------------------ helpers


def create_view(result: Any, form: WireForm) -> dict[str, Any] | None:
    if not isinstance(result, dict):
        return None
    if form.extension:
        return result if is_task(result, form) else None
    task = result.get("task")
    return task if isinstance(task, dict) else None


def is_task(result: dict[str, Any], form: WireForm) -> bool:
    return result.get("resultType") == "task" if form.extension else isinstance(
        result.get("task"), dict)


def _notifications(probe: TaskProbe) -> Iterator[dict[str, Any]]:
    ids = {s.task_id for s in probe.started if s.task_id}
    for rec in probe.facts.log.received:
        msg = rec.msg
        if isinstance(msg, dict) and msg.get("method") == CORE_STATUS_NOTIFICATION:
            params = msg.get("params")
            if isinstance(params, dict) and params.get("taskId") in ids:
                yield params


def what(reply: Reply) -> str:
    if reply.error is not None:
        return f"error {reply.error_code}"
    if reply.result is not None:
        return "a result"
    return "nothing"


def _instant(value: Any) -> datetime | None:
    if not isinstance(value, str) or "T" not in value:
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _squeeze(statuses: list[str]) -> list[str]:
    return [s for i, s in enumerate(statuses) if i == 0 or statuses[i - 1] != s]


def _prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def id_bits(task_id: str) -> float:
    """The entropy a task id can carry, estimated from its length and alphabet: digits
    3.3 bits a character, hexadecimal 4, one case of letters and digits 5.2, both cases
    (base64) 6; separators count for nothing."""
    body = [c for c in task_id if c.isalnum()]
    if not body:
        return 0.0
    if all(c.isdigit() for c in body):
        size = 10
    elif all(c in "0123456789abcdef" for c in body) or all(
            c in "0123456789ABCDEF" for c in body):
        size = 16
    elif all(not c.isupper() for c in body) or all(not c.islower() for c in body):
        size = 36
    else:
        size = 64
    return len(body) * math.log2(size)
