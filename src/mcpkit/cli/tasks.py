"""``mcpkit call --task`` and ``mcpkit tasks list|get|cancel|result``.

A tool called with ``--task`` runs as a task on the server (docs/tasks.md); while it
runs, its status changes and progress are shown on stderr — a progress bar redrawn in
place on a terminal, one plain line per change otherwise (a log, a pipe, CI) — and its
result is printed like a plain call's. ``tasks`` looks at tasks by id: ``list`` (the
2025-11-25 ``tasks/list``), ``get``, ``cancel``, and ``result`` (waits for the end).
"""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any, TextIO

from ..protocol.text import visible

BAR = 24
"""Width of the progress bar, in characters."""


class Live:
    """Where a running call's progress (and a task's status) is shown on ``out`` (see the
    module docstring); a plain call (``name`` given) shows ``name`` where a task shows
    its status. Server text goes through ``visible`` (it cannot drive the terminal)."""

    def __init__(self, out: TextIO, task_id: str | None = None, name: str | None = None
                 ) -> None:
        self.out = out
        self.tty = out.isatty()
        self.task_id = task_id
        self.name = name
        self.status = "working"
        self.bar = ""
        self.said = ""  # the task's status message
        self._drawn = False

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if total:
            frac = min(1.0, max(0.0, progress / total))
            filled = round(frac * BAR)
            self.bar = f"[{'#' * filled}{'-' * (BAR - filled)}] {frac:4.0%}"
            plain = f"progress {progress:g}/{total:g}"
        else:
            self.bar = plain = f"progress {progress:g}"
        if message:
            message = " ".join(visible(message).split())
            self.bar, plain = f"{self.bar} {message}", f"{plain} {message}"
        self._show(plain)

    def changed(self, status: str, message: str | None) -> None:
        """A new status or status message (where the 2026-07-28 extension, which has no
        progress notifications for tasks, carries progress)."""
        self.status = status
        self.said = said = " ".join(visible(message).split()) if message else ""
        self._show(f"status {status}" + (f": {said}" if said else ""))

    def _show(self, plain: str) -> None:
        if self.tty:
            head = self.name if self.name is not None else f"task {self.status:<14}"
            width = shutil.get_terminal_size((100, 20)).columns - 1
            line = " ".join(part for part in (head, self.bar, self.said) if part)
            self.out.write("\r\x1b[2K" + line[:width])
            self._drawn = True
        else:
            head = self.name if self.name is not None else f"task {self.task_id or '?'}"
            self.out.write(f"{head}: {plain}\n")
        self.out.flush()

    def end(self) -> None:
        """End the line drawn in place, if any (before other output, and at the end)."""
        if self._drawn:
            self.out.write("\n")
            self.out.flush()
            self._drawn = False


async def call_as_task(client: Any, name: str, arguments: dict[str, Any], ttl: int | None,
                       live: Live | None = None, again: str | None = None) -> Any:
    """Call tool ``name`` as a task, showing its life on ``live`` (default: on stderr);
    returns the result, as ``call_tool`` would (or raises its error: for a tool that
    cannot run as a task, ``CapabilityNotSupported``, see :func:`not_a_task`). Interrupted (Ctrl-C)
    while the task runs, it says what becomes of the task: ``again`` (the target as typed)
    when the task outlives this command (the 2026-07-28 extension over HTTP), so the
    result can be fetched later."""
    import anyio

    live = live or Live(sys.stderr)
    handle = await client.call_tool(name, arguments, task={"ttl": ttl} if ttl else True,
                                    on_progress=live.progress)
    live.task_id = handle.task_id
    try:
        if handle.task_id is not None:
            live.out.write(f"task {handle.task_id}: created\n")
            live.out.flush()
            async for task in handle:
                live.changed(task.status, task.status_message)
        return await handle.result()
    except anyio.get_cancelled_exc_class():
        if handle.task_id is not None and not handle.done:
            live.end()
            live.out.write(_interrupted(handle.task_id, again))
            live.out.flush()
        raise
    finally:
        live.end()


def not_a_task(exc: Exception) -> str:
    """The client's refusal to call a tool as a task, in the command's words."""
    reason = str(exc).split("; call it without task=")[0]
    return f"{reason}; call it without --task"


def _interrupted(task_id: str, again: str | None) -> str:
    """What becomes of a task whose ``call --task`` was interrupted."""
    if again is None:
        return (f"mcpkit: interrupted; task {task_id} was bound to this command's session, "
                "which ends now: no other command can reach it\n")
    return (f"mcpkit: interrupted; task {task_id} goes on on the server. Its result: "
            f"mcpkit tasks result {again} {task_id} (its state: mcpkit tasks get ...; to "
            "stop it: mcpkit tasks cancel ...)\n")


def _task_row(task: Any) -> tuple[str, str]:
    detail = task.status + (f": {task.status_message}" if task.status_message else "")
    return task.task_id, f"{detail}  (created {task.created_at})"


async def tasks_command(client: Any, action: str, rest: list[str], as_json: bool,
                        table: Any, again: str = "TARGET") -> tuple[int, Any]:
    """Run ``mcpkit tasks ACTION``; returns (exit status, a result to print or None);
    ``again``: the target as typed, for hints. A usage mistake raises ``ValueError``."""
    out = sys.stdout
    if action == "list":
        if client.stateless_version is not None:
            raise ValueError("this server's tasks (the 2026-07-28 tasks extension) cannot be "
                             "listed: the extension has no tasks/list. A task is reached by "
                             "its id, which mcpkit call --task prints ('task ID: created'): "
                             f"mcpkit tasks get|result|cancel {again} TASK_ID")
        items = await client.list_tasks()
        if as_json:
            json.dump([t.to_wire() for t in items], out,
                      indent=2)
            out.write("\n")
        else:
            print(table([_task_row(t) for t in items]))
        return 0, None
    if len(rest) != 1:
        raise ValueError(f"give one task id: mcpkit tasks {action} TARGET TASK_ID")
    task_id = rest[0]
    if action == "result":
        handle = await client.follow_task(task_id)
        return 0, await handle.result()
    task = await (client.get_task(task_id) if action == "get" else client.cancel_task(task_id))
    if task is None and as_json:  # 2026-07-28: an acknowledgement only
        json.dump({"taskId": task_id, "cancelRequested": True}, out, indent=2)
        out.write("\n")
    elif task is None:
        print(f"cancellation of task {task_id} requested")
    elif as_json:
        json.dump(task.to_wire(), out, indent=2)
        out.write("\n")
    else:
        print(table([_task_row(task)]))
    return 0, None
