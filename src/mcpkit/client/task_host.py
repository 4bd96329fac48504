"""The client as a task receiver (2025-11-25): task-augmented sampling and elicitation.

A client that declares ``tasks.requests.sampling.createMessage`` (or
``elicitation.create``) lets the server send that request with ``task: {ttl?}``. The
client then answers at once with ``CreateTaskResult {task}``, runs its handler in the
background, and serves the server's ``tasks/get``, ``tasks/result`` (blocking until the
task ends, then exactly what the plain request would have returned, or its error),
``tasks/list`` and ``tasks/cancel`` for it, sending ``notifications/tasks/status`` when
the status changes. Ids are unguessable; a task is kept ``ttl`` ms after its creation
(the server's request, capped at ``MAX_TTL_MS``) and at most ``MAX_TASKS`` are kept.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Coroutine
from typing import Any

import anyio

from ..protocol.errors import InternalError, InvalidParams, InvalidRequest, ProtocolError
from ..protocol.jsonrpc import JSONObject
from ..protocol.tasks import (
    CORE,
    CORE_STATUS_NOTIFICATION,
    create_result,
    is_terminal,
    new_task_id,
    requested_ttl,
    task_fields,
    task_id_param,
    unknown_task,
    with_related,
)
from ..session import Session

log = logging.getLogger("mcpkit.client")

MAX_TTL_MS = 3_600_000
"""The longest a hosted task is kept (ms), whatever the server asks."""
DEFAULT_TTL_MS = 600_000
"""How long a hosted task is kept when the server names no ttl (ms)."""
MAX_TASKS = 100
"""Hosted tasks kept at once; a request beyond it is refused (-32600)."""
POLL_MS = 500
"""The ``pollInterval`` suggested to the server."""
PAGE = 50
"""Tasks per ``tasks/list`` page."""


class HostedTask:
    """One task the client runs for the server."""

    __slots__ = ("created", "done", "error", "id", "message", "result", "scope", "status",
                 "ttl", "updated")

    def __init__(self, task_id: str, ttl: int) -> None:
        self.id = task_id
        self.status = "working"
        self.message: str | None = None
        self.created = self.updated = time.time()
        self.ttl = ttl
        self.result: JSONObject | None = None
        self.error: ProtocolError | None = None
        self.done = anyio.Event()
        self.scope = anyio.CancelScope()

    def wire(self) -> JSONObject:
        return task_fields(self.id, self.status, self.created, self.updated, self.ttl,
                           POLL_MS, self.message, CORE)

    def expired(self, now: float) -> bool:
        return now > self.created + self.ttl / 1000


class TaskHost:
    """The tasks this client runs for the server, and its answers to the ``tasks/*``
    requests about them (see the module docstring)."""

    __slots__ = ("_tasks",)

    def __init__(self) -> None:
        self._tasks: dict[str, HostedTask] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    def start(self, session: Session, method: str, params: JSONObject,
              work: Coroutine[Any, Any, JSONObject]) -> JSONObject:
        """Run ``work`` (the handler's answer to ``method``) as a task; returns the
        ``CreateTaskResult``. Raises ``InvalidParams`` for a malformed ``task`` and
        ``InvalidRequest`` when ``MAX_TASKS`` are kept already."""
        try:
            _, ttl = requested_ttl(params)
            self._sweep()
            if len(self._tasks) >= MAX_TASKS:
                raise InvalidRequest(f"Invalid Request: this client already keeps {MAX_TASKS} "
                                     "tasks; wait for some to end or expire, or send the "
                                     "request without 'task'.")
        except BaseException:
            work.close()
            raise
        task = HostedTask(new_task_id(18),
                          DEFAULT_TTL_MS if ttl is None else min(ttl, MAX_TTL_MS))
        self._tasks[task.id] = task
        session.spawn(lambda: self._run(session, task, method, work))
        return create_result(task.wire(), CORE)

    async def _run(self, session: Session, task: HostedTask, method: str,
                   work: Coroutine[Any, Any, JSONObject]) -> None:
        try:
            with task.scope:
                try:
                    task.result = await work
                except ProtocolError as exc:
                    task.error = exc
                except Exception:
                    log.exception("the %s handler failed (task %s)", method, task.id)
                    task.error = InternalError(f"Internal error while handling '{method}'.")
        finally:
            work.close()
            if not is_terminal(task.status):  # (cancelled already: stays cancelled)
                failed = task.error is not None
                self._move(session, task, "failed" if failed else "completed",
                           str(task.error) if failed else None)
            task.done.set()

    def _move(self, session: Session, task: HostedTask, status: str,
              message: str | None) -> None:
        task.status, task.message, task.updated = status, message, time.time()
        session.notify(CORE_STATUS_NOTIFICATION, task.wire())

    def _sweep(self) -> None:
        """Forget the tasks whose ttl has passed (a running one is cancelled)."""
        now = time.time()
        for task_id in [k for k, v in self._tasks.items() if v.expired(now)]:
            self._tasks.pop(task_id).scope.cancel()

    def _get(self, params: JSONObject) -> HostedTask:
        self._sweep()
        task_id = task_id_param(params)
        task = self._tasks.get(task_id)
        if task is None:
            raise unknown_task(task_id)
        return task

    def answer(self, session: Session, method: str, params: JSONObject
               ) -> Coroutine[Any, Any, JSONObject] | None:
        """The answer to a ``tasks/*`` request, to be awaited; None for another method."""
        if method == "tasks/get":
            return self._status(params)
        if method == "tasks/result":
            return self._result(params)
        if method == "tasks/list":
            return self._list(params)
        if method == "tasks/cancel":
            return self._cancel(session, params)
        return None

    async def _status(self, params: JSONObject) -> JSONObject:
        return self._get(params).wire()

    async def _result(self, params: JSONObject) -> JSONObject:
        task = self._get(params)
        await task.done.wait()
        if task.error is not None:
            raise task.error
        if task.result is None:  # cancelled before it answered
            raise InvalidParams(f"Invalid params: task {task.id!r} was cancelled; it has no "
                                "result.")
        return with_related(task.result, task.id)

    async def _list(self, params: JSONObject) -> JSONObject:
        self._sweep()
        cursor = params.get("cursor")
        ids = sorted(self._tasks, key=lambda k: (self._tasks[k].created, k))
        start = 0
        if cursor is not None:
            if not isinstance(cursor, str) or cursor not in self._tasks:
                raise InvalidParams("Invalid params: unknown cursor; list again from the "
                                    "start (no cursor).")
            start = ids.index(cursor)
        page = ids[start:start + PAGE]
        out: JSONObject = {"tasks": [self._tasks[k].wire() for k in page]}
        if start + PAGE < len(ids):
            out["nextCursor"] = ids[start + PAGE]
        return out

    async def _cancel(self, session: Session, params: JSONObject) -> JSONObject:
        task = self._get(params)
        if is_terminal(task.status):
            raise InvalidParams(f"Invalid params: task {task.id!r} is already {task.status}; "
                                "a task that ended cannot be cancelled.")
        self._move(session, task, "cancelled", "cancelled at the server's request")
        task.scope.cancel()
        return task.wire()
