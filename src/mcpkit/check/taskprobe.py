"""Probing tasks: the 2025-11-25 in-core tasks and the 2026-07-28 extension
``io.modelcontextprotocol/tasks`` (the ``TASKS.*`` rules).

Tasks are judged only when the server declares them (``capabilities.tasks.requests.tools
.call`` in 2025-11-25; ``capabilities.extensions["io.modelcontextprotocol/tasks"]`` from
``server/discover`` in 2026-07-28), and only with the tools the user allowed:

* ``--call-tools none``: nothing;
* ``readonly`` (the default): nothing that runs a tool on a conformant server: an unknown
  task id, ``tasks/list`` and its cursor, and a plain call of a read-only tool whose
  ``execution.taskSupport`` is ``required`` (which the server must refuse);
* ``all``: besides, a task-augmented call of the first ``optional`` and the first
  ``required`` tool (one twice if only one exists, so two ids can be compared), polled with
  ``tasks/get`` until terminal within :data:`TASK_WAIT` seconds (then cancelled), then
  ``tasks/result`` / the inlined result compared with the plain call's, and a
  ``tasks/cancel`` of the terminal task; :mod:`~mcpkit.check.taskjudge` judges those.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from ..protocol.tasks import CORE, EXT, EXTENSION, is_terminal
from .argsgen import valid_arguments
from .facts import Facts
from .features import Speaker, tools_to_call
from .taskjudge import (
    NEED_RUN,
    TASK_WAIT,
    Started,
    TaskProbe,
    create_view,
    is_task,
    judge_run,
    what,
)
from .wire import Reply

MAX_TASK_PAGES = 20
UNKNOWN_TASK = "mcpkit-check-no-such-task-0000"
BAD_CURSOR = "mcpkit-check:not-a-task-cursor"
RULE_IDS = ("TASKS.create", "TASKS.fields", "TASKS.state-machine", "TASKS.ids",
            "TASKS.unknown-id", "TASKS.cancel-terminal", "TASKS.plain-call", "TASKS.result",
            "TASKS.list")
"""Every task rule, each judged once per era."""


def declared_tasks(facts: Facts) -> bool:
    """Whether the server declares task-augmented ``tools/call`` in this era."""
    caps = facts.capabilities
    if facts.era == "stateless":
        ext = caps.get("extensions")
        return isinstance(ext, dict) and isinstance(ext.get(EXTENSION), dict)
    tasks = caps.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    return isinstance(tools, dict) and isinstance(tools.get("call"), dict)


def task_support(tools: list[Any]) -> dict[str, str]:
    """``{tool: taskSupport}`` of the tools a 2025-11-25 listing marks ``optional`` or
    ``required`` (the 2026-07-28 listing has no ``execution``)."""
    out: dict[str, str] = {}
    for tool in tools:
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            ex = tool.get("execution")
            support = ex.get("taskSupport") if isinstance(ex, dict) else None
            if support in ("optional", "required"):
                out[tool["name"]] = support
    return out


async def probe_tasks(sp: Speaker, facts: Facts, mode: str,
                      hint: dict[str, str] | None = None) -> None:
    """Judge the ``TASKS.*`` rules for this era (see the module docstring); ``hint``: the
    handshake era's ``taskSupport`` per tool, for the stateless era whose listing has none."""
    probe = TaskProbe(facts, sp, EXT if facts.era == "stateless" else CORE)
    if not declared_tasks(facts):
        where = ("capabilities.extensions[\"io.modelcontextprotocol/tasks\"]" if probe.ext
                 else "capabilities.tasks.requests.tools.call")
        for rule in RULE_IDS:
            probe.add(rule, "n/a", f"The server does not declare tasks ({where}).")
        return
    if mode == "none":
        for rule in RULE_IDS:
            probe.add(rule, "n/a", "Not probed: --call-tools none forbids every tools/call.")
        return
    support = hint if probe.ext and hint is not None else task_support(facts.tools)
    allowed = [t for t in tools_to_call(facts, mode, None) if valid_arguments(t.get("inputSchema"))
               is not None]
    await _unknown_id(probe)
    await _plain_call(probe, [t for t in allowed if support.get(t["name"]) == "required"])
    if mode == "all":
        await _start(probe, allowed, support)
        await _poll(probe)
        await _after_terminal(probe)
    if probe.started:
        judge_run(probe)
    else:
        why = ("no tool with execution.taskSupport optional or required may be called; "
               "--call-tools all allows it" if mode != "all" else
               "no tool the checker may call answered with a task")
        for rule in NEED_RUN:
            probe.add(rule, "n/a", f"Not probed: {why}.")
    await _list(probe)


# ------------------------------------------------------------------------------ probes


async def _unknown_id(probe: TaskProbe) -> None:
    methods = ("tasks/get", "tasks/cancel") if probe.ext else (
        "tasks/get", "tasks/result", "tasks/cancel")
    wrong: list[str] = []
    failing: list[Reply] = []
    for method in methods:
        reply = await probe.call(method, {"taskId": UNKNOWN_TASK})
        if reply.error_code != -32602:
            wrong.append(f"{method} answered {what(reply)}")
            failing.append(reply)
        last = reply
    if wrong:
        probe.add("TASKS.unknown-id", "fail",
                  f"A task id the server never issued: {'; '.join(wrong)}. Answer -32602 "
                  "(Invalid params) for an unknown or expired taskId.", failing[0], failing)
    else:
        probe.add("TASKS.unknown-id", "pass",
                  f"{', '.join(methods)} of an unknown task id answered -32602.", last)


async def _plain_call(probe: TaskProbe, required: list[dict[str, Any]]) -> None:
    """A plain call never gets a task; a ``required`` tool called plainly gets -32601
    (2025-11-25) or -32021 naming the extension (2026-07-28)."""
    facts = probe.facts
    bad: list[tuple[str, str | Reply]] = []
    good: list[str] = []
    for tool in required[:1]:
        args = valid_arguments(tool.get("inputSchema")) or {}
        reply = await probe.sp.call("tools/call", {"name": tool["name"], "arguments": args})
        name = tool["name"]
        if probe.ext and reply.error_code == -32021:
            data = reply.error.get("data") if isinstance(reply.error, dict) else None
            need = data.get("requiredCapabilities") if isinstance(data, dict) else None
            exts = need.get("extensions") if isinstance(need, dict) else None
            if isinstance(exts, dict) and EXTENSION in exts:
                good.append(f"{name}: -32021 naming {EXTENSION}")
            else:
                bad.append((f"{name}: -32021 without data.requiredCapabilities.extensions"
                            f"[\"{EXTENSION}\"]; name the extension so the client can retry",
                            reply))
        elif not probe.ext and reply.error_code == -32601:
            good.append(f"{name}: -32601")
        elif isinstance(reply.result, dict) and probe.ext and not is_task(reply.result, EXT):
            good.append(f"{name}: ran synchronously")
        else:
            want = ("-32021 naming the tasks extension (or a plain result)" if probe.ext
                    else "-32601")
            bad.append((f"{name} (taskSupport: required) called without a task answered "
                        f"{what(reply)}; answer {want}", reply))
    for call in facts.calls:  # no plain call may get a task
        if isinstance(call.result, dict) and is_task(call.result, probe.form):
            bad.append((f"{call.tool}: a call that did not ask for a task got one; run it "
                        "synchronously instead" + (f" ({EXTENSION} was not declared)"
                                                   if probe.ext else ""), call.evidence))
    if bad:
        probe.add("TASKS.plain-call", "fail", "; ".join(b[0] for b in bad[:3]) + ".", bad[0][1],
                  [b[1] for b in bad])
    elif good or facts.calls:
        probe.add("TASKS.plain-call", "pass", "; ".join(good) if good else
                  "No plain call got a task.")
    else:
        probe.add("TASKS.plain-call", "n/a", "Not probed: no tool with taskSupport required "
                  "may be called, and no plain call was made.")


async def _start(probe: TaskProbe, allowed: list[dict[str, Any]],
                 support: dict[str, str]) -> None:
    """Start the tasks: the first optional and the first required tool (one of them twice
    when there is only one, so that two ids can be compared); in
    2026-07-28 without a hint, the first callable tool that answers with a task."""
    optional = next((t for t in allowed if support.get(t["name"]) == "optional"), None)
    required = next((t for t in allowed if support.get(t["name"]) == "required"), None)
    plan = [t for t in (optional, required) if t is not None]
    if len(plan) == 1:
        plan *= 2  # two ids to compare
    if not plan and probe.ext and not support:
        plan = allowed[:3]
    for tool in plan:
        args = valid_arguments(tool.get("inputSchema")) or {}
        params: dict[str, Any] = {"name": tool["name"], "arguments": args}
        if not probe.ext:
            params["task"] = {"ttl": 60_000}
        reply = await probe.call("tools/call", params)
        s = Started(tool["name"], args, reply)
        view = create_view(reply.result, probe.form)
        if view is not None:
            s.task_id = view.get("taskId") if isinstance(view.get("taskId"), str) else None
            s.views.append(("tools/call", view, reply))
        elif probe.ext and not support and isinstance(reply.result, dict):
            continue  # the server ran it synchronously: it may decide so
        probe.started.append(s)
        if probe.ext and not support and s.task_id:
            break


async def _poll(probe: TaskProbe) -> None:
    deadline = time.monotonic() + TASK_WAIT
    live = [s for s in probe.started if s.task_id]
    while live and time.monotonic() < deadline:
        interval = 0.5
        for s in list(live):
            reply = await probe.call("tasks/get", {"taskId": s.task_id})
            view = reply.result if isinstance(reply.result, dict) else None
            if view is None:
                s.views.append(("tasks/get", {}, reply))
                live.remove(s)
                continue
            s.views.append(("tasks/get", view, reply))
            status = view.get("status")
            poll = view.get(probe.form.poll_interval)
            if isinstance(poll, (int, float)) and not isinstance(poll, bool):
                interval = min(interval, max(0.05, poll / 1000))
            if isinstance(status, str) and is_terminal(status):
                s.final = view
                live.remove(s)
            elif status == "input_required":  # the checker answers no input: cancel
                await _cancel(probe, s)
                live.remove(s)
        if live:
            await anyio.sleep(interval)
    for s in live:
        await _cancel(probe, s)


async def _cancel(probe: TaskProbe, s: Started) -> None:
    s.cancelled_by_checker = True
    reply = await probe.call("tasks/cancel", {"taskId": s.task_id})
    if not probe.ext and isinstance(reply.result, dict):
        s.views.append(("tasks/cancel", reply.result, reply))
    after = await probe.call("tasks/get", {"taskId": s.task_id})
    if isinstance(after.result, dict):
        s.views.append(("tasks/get", after.result, after))
        if is_terminal(str(after.result.get("status"))):
            s.final = after.result


async def _after_terminal(probe: TaskProbe) -> None:
    for s in probe.started:
        if s.final is None or s.cancelled_by_checker:
            continue
        if not probe.ext:
            s.payload = await probe.call("tasks/result", {"taskId": s.task_id})
        s.cancel_terminal = await probe.call("tasks/cancel", {"taskId": s.task_id})
        s.after_cancel = await probe.call("tasks/get", {"taskId": s.task_id})
        if isinstance(s.after_cancel.result, dict):
            s.views.append(("tasks/get", s.after_cancel.result, s.after_cancel))


async def _list(probe: TaskProbe) -> None:
    caps = probe.facts.capabilities.get("tasks")
    if probe.ext:
        probe.add("TASKS.list", "n/a", "The tasks extension has no tasks/list.")
        return
    if not (isinstance(caps, dict) and isinstance(caps.get("list"), dict)):
        probe.add("TASKS.list", "n/a", "The server does not declare capabilities.tasks.list.")
        return
    seen: list[str] = []
    cursors: set[str] = set()
    cursor: Any = None
    problem = ""
    evidence: Reply | None = None
    for _ in range(MAX_TASK_PAGES):
        reply = await probe.call("tasks/list", {"cursor": cursor} if cursor is not None else {})
        evidence = evidence or reply
        result = reply.result
        if not isinstance(result, dict) or not isinstance(result.get("tasks"), list):
            problem, evidence = f"tasks/list answered {what(reply)}", reply
            break
        for view in result["tasks"]:
            if isinstance(view, dict):
                tid = view.get("taskId")
                if tid in seen:
                    problem, evidence = f"task {tid!r} is listed twice", reply
                seen.append(str(tid))
        cursor = result.get("nextCursor")
        if cursor is None or problem:
            break
        if str(cursor) in cursors:
            problem, evidence = f"nextCursor {cursor!r} repeats", reply
            break
        cursors.add(str(cursor))
    else:
        problem = f"still returning nextCursor after {MAX_TASK_PAGES} pages"
    missing = [s.task_id for s in probe.started if s.task_id and s.task_id not in seen]
    if not problem and missing:
        problem = f"the task {missing[0]!r} the checker created is not listed"
    bad = await probe.call("tasks/list", {"cursor": BAD_CURSOR})
    if not problem and bad.error_code != -32602:
        problem, evidence = (f"a cursor tasks/list never issued answered {what(bad)} "
                             "instead of -32602"), bad
    if problem:
        probe.add("TASKS.list", "fail", f"{problem}. tasks/list pages with nextCursor, lists "
                  "every task tasks/get would return, and answers -32602 to a bad cursor.",
                  evidence or "")
    else:
        probe.add("TASKS.list", "pass", f"tasks/list followed to the end ({len(seen)} "
                  "task(s), every task the checker created); a bad cursor got -32602.",
                  evidence or "")
