"""Tasks the client asked a server to run: ``Client.call_tool(..., task=True)``'s handle.

One handle serves both generations of tasks:

- 2025-11-25 (in core): the call carries ``task: {ttl?}`` and the server answers
  ``CreateTaskResult {task}``; the state comes from ``tasks/get`` (or the optional
  ``notifications/tasks/status``); when the task needs input (``input_required``) the
  client calls ``tasks/result``, on which the server sends its elicitation / sampling /
  roots requests (answered by the client's handlers) and which returns the result once
  the task has ended — exactly what the plain call would have returned, or its error.
- 2026-07-28 (extension ``io.modelcontextprotocol/tasks``): the server alone decides to
  answer ``resultType: "task"``; ``tasks/get`` carries the state and, once terminal, the
  ``result`` or ``error``; the ``inputRequests`` of an ``input_required`` task are
  answered with ``tasks/update {inputResponses}``; notifications (``notifications/tasks``)
  arrive only on a ``subscriptions/listen`` stream that asked for the task's id.

Waiting is always bounded (``wait(timeout)``, by default the client's ``task_timeout``)
and polls at the server's ``pollInterval`` (clamped to ``MIN_POLL``..``MAX_POLL``),
sooner when a status notification arrives. A server that breaks the state machine (a
terminal task that changes, an answer about another task, a malformed task) raises
``InvalidResult``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from ..protocol.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    CapabilityNotSupported,
    InvalidResult,
    MCPError,
    RemoteError,
    RequestTimeout,
    TaskCancelled,
    TaskTimeout,
)
from ..protocol.jsonrpc import JSONObject
from ..protocol.tasks import (
    CORE,
    CORE_STATUS_NOTIFICATION,
    EXT,
    EXTENSION,
    EXTENSION_STATUS_NOTIFICATION,
    can_move,
    client_accepts,
)
from ..session import ProgressCallback
from . import types as t
from .results import parse

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger("mcpkit.client")

MIN_POLL = 0.05
"""Seconds: the shortest pause between two ``tasks/get`` (a server asking for less)."""
MAX_POLL = 30.0
"""Seconds: the longest pause between two ``tasks/get`` (a server asking for more)."""
DEFAULT_POLL = 0.5
"""Seconds between polls when the server suggests no ``pollInterval``."""


def read_task(value: Any, method: str) -> t.Task:
    """A ``Task`` from either generation's wire form (``InvalidResult`` if malformed)."""
    if not isinstance(value, dict):
        raise InvalidResult(f"the server's answer to {method} is malformed: a task must be "
                            f"an object, got {type(value).__name__}")
    if CORE.ttl not in value and EXT.ttl not in value:  # (t.Task reads either name)
        raise InvalidResult(f"the server's answer to {method} is malformed: a task must "
                            "carry its ttl (null for unlimited)")
    return parse(t.Task, value, method)


def poll_seconds(task: t.Task | None) -> float:
    """How long to wait before the next ``tasks/get``: the server's ``pollInterval``,
    clamped to ``MIN_POLL``..``MAX_POLL``."""
    ms = task.poll_interval if task is not None else None
    if ms is None or ms < 0:
        return DEFAULT_POLL
    return min(MAX_POLL, max(MIN_POLL, ms / 1000))


class TaskWatchers:
    """The latest pushed state of each task a handle is waiting on, by task id: status
    notifications wake the waiting handle instead of its next poll."""

    __slots__ = ("_events", "_latest", "progress")

    def __init__(self) -> None:
        self._latest: dict[str, t.Task] = {}
        self._events: dict[str, anyio.Event] = {}
        #: 2025-11-25: the progress callback of each task-augmented call, by its token
        #: (which stays valid for the task's lifetime, after the CreateTaskResult).
        self.progress: dict[str | int, ProgressCallback] = {}

    async def route(self, method: str, params: JSONObject) -> None:
        """Take ``notifications/tasks/status`` (2025-11-25) or ``notifications/tasks``
        (2026-07-28) for a watched task, and a task's progress; anything else, or a
        malformed one, is ignored."""
        if method == "notifications/progress":
            await self._progress(params)
            return
        if method not in (CORE_STATUS_NOTIFICATION, EXTENSION_STATUS_NOTIFICATION):
            return
        task_id = params.get("taskId")
        if not isinstance(task_id, str) or task_id not in self._events:
            return
        try:
            task = read_task(params, method)
        except InvalidResult as exc:
            log.warning("ignoring a malformed task notification: %s", exc)
            return
        self._latest[task_id] = task
        self._events[task_id].set()

    async def _progress(self, params: JSONObject) -> None:
        token, progress, total = (params.get("progressToken"), params.get("progress"),
                                  params.get("total"))
        callback = self.progress.get(token) if isinstance(token, str | int) else None
        if callback is None or type(progress) not in (int, float):
            return
        message = params.get("message")
        res = callback(float(progress),  # type: ignore[arg-type]
                       float(total) if type(total) in (int, float) else None,  # type: ignore[arg-type]
                       message if isinstance(message, str) else None)
        if res is not None:
            await res

    def watch(self, task_id: str) -> None:
        self._events.setdefault(task_id, anyio.Event())

    def unwatch(self, task_id: str) -> None:
        self._events.pop(task_id, None)
        self._latest.pop(task_id, None)

    async def next(self, task_id: str, seconds: float) -> t.Task | None:
        """The state pushed for ``task_id`` within ``seconds``, or None (time to poll)."""
        event = self._events.get(task_id)
        if event is None:
            await anyio.sleep(seconds)
            return None
        with anyio.move_on_after(seconds):
            await event.wait()
        task = self._latest.pop(task_id, None)
        if event.is_set():
            self._events[task_id] = anyio.Event()
        return task


ResultReader = Callable[[JSONObject], Awaitable[t.CallToolResult[Any]]]
"""Turns a ``tools/call`` result into what ``Client.call_tool`` returns (checks included)."""


async def read_plain(res: JSONObject) -> t.CallToolResult[Any]:
    """A ``tools/call`` result of a tool whose ``outputSchema`` is not known (``data``:
    its ``structured_content`` as is)."""
    result: t.CallToolResult[Any] = parse(t.CallToolResult, res, "tools/call")
    result._data = result.structured_content
    return result


class TaskHandle:
    """A tool call running as a task on the server (see the module docstring).

    ``task_id`` is None when a 2026-07-28 server chose to answer at once (it decides):
    ``result()`` then returns that answer and there is no task to poll or cancel.
    ``task`` is the last state seen. Iterating (``async for task in handle``) yields
    each change of status or status message until a terminal one, answering the
    server's input requests on the way; ``wait()`` does the same silently.
    """

    __slots__ = ("_answered", "_client", "_failure", "_read", "_result", "_stateless",
                 "_token", "task", "task_id")

    def __init__(self, client: Client, task: t.Task | None, read: ResultReader, *,
                 stateless: bool, result: JSONObject | None = None,
                 progress: tuple[str | int, ProgressCallback] | None = None) -> None:
        self._client = client
        self._token: str | int | None = None
        if progress is not None and task is not None and not task.terminal:
            self._token = progress[0]  # its progress goes on until the task ends
            client.task_watchers.progress[progress[0]] = progress[1]
        self._read = read
        self._stateless = stateless
        self.task = task
        self.task_id = task.task_id if task is not None else None
        self._result = result  # the underlying request's result, once known
        self._failure: MCPError | None = None  # or its error
        self._answered: set[str] = set()  # inputRequests keys answered (2026-07-28)

    def __repr__(self) -> str:
        status = self.task.status if self.task is not None else "answered at once"
        return f"<TaskHandle {self.task_id!r} {status}>"

    @property
    def done(self) -> bool:
        """Whether the task has ended, as far as the client knows (its result fetched, or a
        terminal state seen; ``status()`` fetches the final state)."""
        return (self.task is None or self.task.terminal or self._result is not None
                or self._failure is not None)

    def _seen(self, task: t.Task, method: str) -> t.Task:
        """Record ``task`` as the latest state, after checking it is this task's and a
        move the state machine allows."""
        if task.task_id != self.task_id:
            raise InvalidResult(f"the server's answer to {method} is about task "
                                f"{task.task_id!r}, not {self.task_id!r}")
        last = self.task
        if last is not None and last.status != task.status and not can_move(last.status,
                                                                             task.status):
            raise InvalidResult(f"the server moved task {self.task_id!r} from status "
                                f"{last.status!r} to {task.status!r}, which the task state "
                                "machine does not allow (terminal states never change)")
        self.task = task
        if task.terminal:
            self._ended()
        return task

    def _ended(self) -> None:
        """The task is over: its progress token is released."""
        if self._token is not None:
            self._client.task_watchers.progress.pop(self._token, None)
            session = self._client._session
            if session is not None:
                session.conn.release_task_token(self._token)
            self._token = None

    async def status(self) -> t.Task | None:
        """The task's current state (``tasks/get``); None if no task was created."""
        if self.task_id is None:
            return None
        res = await self._client.request("tasks/get", {"taskId": self.task_id})
        return self._seen(read_task(res, "tasks/get"), "tasks/get")

    async def cancel(self) -> t.Task | None:
        """Ask the server to cancel the task (``tasks/cancel``); returns its state when the
        server reports one (2025-11-25; the 2026-07-28 acknowledgement is empty, and the
        task may still end otherwise). A task already ended is the server's
        ``RemoteError`` (-32602) in 2025-11-25; ``CapabilityNotSupported`` when a
        2025-11-25 server did not declare ``tasks.cancel``."""
        if self.task_id is None:
            return None
        res = await self._client.request("tasks/cancel", cancel_params(self._client,
                                                                      self.task_id))
        if self._stateless:
            return self.task
        return self._seen(read_task(res, "tasks/cancel"), "tasks/cancel")

    def __aiter__(self) -> AsyncIterator[t.Task]:
        return self.changes()

    async def changes(self, timeout: float | None = None) -> AsyncIterator[t.Task]:
        """Each new state (status or status message) until a terminal one; raises
        ``TaskTimeout`` after ``timeout`` seconds (default: the client's
        ``task_timeout``)."""
        if self.task_id is None:
            return
        limit = self._client.task_timeout if timeout is None else timeout
        deadline = anyio.current_time() + limit
        watchers = self._client.task_watchers
        watchers.watch(self.task_id)
        try:
            shown: tuple[str, str | None] | None = None
            task = self.task
            polled = False  # the first poll goes at once: a short task is done by then
            for _ in range(math.ceil(limit / MIN_POLL) + 2):  # bounded in time, too
                if task is not None and (task.status, task.status_message) != shown:
                    shown = (task.status, task.status_message)
                    yield task
                if task is not None and task.terminal:
                    return
                if task is not None and task.status == "input_required":
                    await self._give_input(task, deadline)
                else:
                    left = deadline - anyio.current_time()
                    if left <= 0:
                        break
                    if polled:
                        pushed = await watchers.next(self.task_id,
                                                     min(poll_seconds(task), left))
                        if pushed is not None:
                            task = self._seen(pushed, "notifications/tasks")
                            continue
                if anyio.current_time() >= deadline:
                    break
                task = await self.status()
                polled = True
            last = self.task.status if self.task is not None else "unknown"
            raise TaskTimeout(f"task {self.task_id!r} did not end within {limit:g}s (last "
                              f"status: {last}); it may still be running on the server: "
                              "wait again, or cancel it")
        finally:
            watchers.unwatch(self.task_id)

    async def wait(self, timeout: float | None = None) -> t.Task | None:
        """The task's terminal state, answering its input requests meanwhile; raises
        ``TaskTimeout`` after ``timeout`` seconds (default: the client's
        ``task_timeout``)."""
        async for _ in self.changes(timeout):
            pass
        return self.task

    async def result(self, timeout: float | None = None) -> t.CallToolResult[Any]:
        """Exactly what the plain call would have returned, once the task has ended (or
        the error it would have raised: a ``RemoteError``). A cancelled task raises
        ``TaskCancelled``; ``TaskTimeout`` as ``wait``."""
        if self._result is None and self._failure is None:
            if self._stateless:
                await self.wait(timeout)
                self._take_terminal()
            else:
                await self._fetch_result(timeout)
        if self._failure is not None:
            if self.task is not None and self.task.status == "cancelled":
                raise TaskCancelled(f"task {self.task_id!r} was cancelled"
                                    ) from self._failure  # (2025-11-25: the server's error)
            raise self._failure
        assert self._result is not None
        return await self._read(self._result)

    def _take_terminal(self) -> None:
        """2026-07-28: the result or error a terminal ``tasks/get`` carried."""
        task = self.task
        assert task is not None
        if task.status == "completed":
            if task.result is None:
                raise InvalidResult(f"task {self.task_id!r} completed without a result")
            self._result = task.result
        elif task.status == "failed":
            err = task.error or {}
            code, message = err.get("code"), err.get("message")
            self._failure = RemoteError(code if isinstance(code, int) else INTERNAL_ERROR,
                                        message if isinstance(message, str) else
                                        task.status_message or "the task failed",
                                        err.get("data"))
        else:
            self._failure = TaskCancelled(f"task {self.task_id!r} was cancelled"
                                          + (f": {task.status_message}"
                                             if task.status_message else ""))

    async def _fetch_result(self, timeout: float | None) -> None:
        """2025-11-25: ``tasks/result``, which blocks until the task ends; the server's
        requests for input arrive meanwhile and are answered by the client's handlers."""
        limit = self._client.task_timeout if timeout is None else timeout
        try:
            self._result = await self._client.request("tasks/result", {"taskId": self.task_id},
                                                      timeout=limit)
            self._ended()
        except RequestTimeout:
            raise TaskTimeout(f"task {self.task_id!r} did not end within {limit:g}s; it may "
                              "still be running on the server: wait again, or cancel it"
                              ) from None
        except RemoteError as exc:
            self._failure = exc  # the underlying request's error, as the plain call's
            self._ended()
            if self.task is not None and not self.task.terminal:
                try:  # was it cancelled meanwhile? (then result() says so)
                    await self.status()
                except MCPError as err:  # the error is what counts; the state a courtesy
                    log.debug("tasks/get after tasks/result failed: %s", err)

    async def _give_input(self, task: t.Task, deadline: float) -> None:
        """The task waits for the client: 2025-11-25 fetches ``tasks/result`` (which
        carries the server's requests); 2026-07-28 answers ``inputRequests`` it has not
        answered before with ``tasks/update``."""
        left = max(0.0, deadline - anyio.current_time())
        if not self._stateless:
            if self._result is None and self._failure is None:
                await self._fetch_result(left)
            else:  # answered already: the server has yet to report the end
                await anyio.sleep(min(poll_seconds(task), left))
            return
        fresh = {k: v for k, v in (task.input_requests or {}).items()
                 if k not in self._answered}
        if not fresh:  # all answered: the server has yet to move on
            await anyio.sleep(min(poll_seconds(task), left))
            return
        answers = {key: await self._client.stateless.answer_input(req)
                   for key, req in fresh.items()}
        self._answered.update(answers)
        await self._client.request("tasks/update",
                                   {"taskId": self.task_id, "inputResponses": answers})


async def start_tool_call(client: Client, params: JSONObject, want: bool | JSONObject, *,
                          timeout: float | None, on_progress: ProgressCallback | None,
                          read: ResultReader) -> TaskHandle:
    """Send ``tools/call`` (``params``), as a task when ``want`` (True, or the 2025-11-25
    ``TaskMetadata`` such as ``{"ttl": 60000}``) or when the tool requires it; the
    handle of what the server answered (``task_id`` None: it answered at once).

    2025-11-25: raises ``CapabilityNotSupported`` when a task is wanted but the server
    did not declare ``tasks.requests.tools.call`` or the tool's ``execution.taskSupport``
    is ``forbidden`` (absent); a ``required`` tool is always called as a task. Before
    2025-11-25 there are no tasks. 2026-07-28: the server decides; ``want`` only asks
    for the handle (a ttl cannot be requested there)."""
    name = params["name"]
    if client.stateless_version is not None:
        if want and not client.handlers.tasks:
            raise CapabilityNotSupported("task= needs a Client created with tasks=True (it "
                                         f"then declares the {EXTENSION} extension)")
        res = await client.request("tools/call", params, timeout=timeout,
                                   on_progress=on_progress)
        if res.get("resultType") == "task":
            return TaskHandle(client, read_task(res, "tools/call"), read, stateless=True)
        return TaskHandle(client, None, read, stateless=True, result=res)
    rev = client.revision
    if not rev.has("tool_execution"):
        if want:
            raise CapabilityNotSupported(f"tasks exist from protocol revision 2025-11-25; "
                                         f"this session speaks {rev.version}")
        return await _plain(client, params, timeout, on_progress, read)
    if not client_accepts(client.server_capabilities, "tools/call"):
        if want:
            raise CapabilityNotSupported("the server did not declare tasks.requests.tools.call:"
                                         " it runs no tool as a task; call it without task=")
        return await _plain(client, params, timeout, on_progress, read)
    # A wanted task needs the tool's taskSupport first; a plain call uses what is known,
    # and learns it only when the server refuses it (a required tool: -32601).
    support = await client.task_support(name, fetch=bool(want))
    if support == "forbidden" and want:
        raise CapabilityNotSupported(f"tool {name!r} cannot run as a task (its "
                                     "execution.taskSupport is 'forbidden' or absent); "
                                     "call it without task=")
    if support == "required" or (want and support == "optional"):
        return await _as_task(client, params, want, timeout, on_progress, read)
    try:
        return await _plain(client, params, timeout, on_progress, read)
    except RemoteError as exc:
        if exc.code != METHOD_NOT_FOUND or support is not None:
            raise
        try:
            support = await client.task_support(name)
        except MCPError:
            raise exc from None
        if support != "required":
            raise
    return await _as_task(client, params, want, timeout, on_progress, read)


async def _plain(client: Client, params: JSONObject, timeout: float | None,
                 on_progress: ProgressCallback | None, read: ResultReader) -> TaskHandle:
    res = await client.request("tools/call", params, timeout=timeout, on_progress=on_progress)
    return TaskHandle(client, None, read, stateless=False, result=res)


async def _as_task(client: Client, params: JSONObject, want: bool | JSONObject,
                   timeout: float | None, on_progress: ProgressCallback | None,
                   read: ResultReader) -> TaskHandle:
    """2025-11-25: ``tools/call`` with ``task`` (the ttl ``want`` names, if any)."""
    params = {**params, "task": dict(want) if isinstance(want, dict) else {}}
    token = client.progress_token()  # our own, to follow the task's progress after the answer
    if on_progress is not None:
        params["_meta"] = {"progressToken": token}
    res = await client.request("tools/call", params, timeout=timeout, on_progress=on_progress)
    if "task" not in res:  # the server ran it at once (R25-11.TASKS.14 allows it)
        return TaskHandle(client, None, read, stateless=False, result=res)
    return TaskHandle(client, read_task(res["task"], "tools/call"), read, stateless=False,
                      progress=(token, on_progress) if on_progress is not None else None)


def offers(capabilities: JSONObject, what: str) -> bool:
    """Whether 2025-11-25 server ``capabilities`` declare ``tasks.<what>`` (``list`` or
    ``cancel``: an object, empty or not)."""
    tasks = capabilities.get("tasks")
    return isinstance(tasks, dict) and isinstance(tasks.get(what), dict)


def cancel_params(client: Client, task_id: str) -> JSONObject:
    """The params of ``tasks/cancel``, once the server is known to take it (2025-11-25:
    ``tasks.cancel`` declared; R25-11.TASKS.1)."""
    if client.stateless_version is None and not offers(client.server_capabilities, "cancel"):
        raise CapabilityNotSupported("the server did not declare tasks.cancel: its tasks "
                                     "cannot be cancelled")
    return {"taskId": task_id}
