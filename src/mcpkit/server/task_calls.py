"""``tools/call`` of a task tool: whether it runs as a task, and running it as one.

Only calls of tools registered with ``task="optional"|"required"`` (and, in 2025-11-25,
calls that carry ``task`` for another tool, to refuse them) come here; every other call
stays on the plain path untouched.

* 2025-11-25 (R25-11.TASKS.3/4): the client asks with ``params.task {ttl?}``. Asked for a
  ``forbidden`` tool: -32601; not asked for a ``required`` one: -32601; asked for an
  allowed one: the answer is ``CreateTaskResult {task}`` at once. Earlier revisions know no
  tasks: the call runs plainly.
* 2026-07-28 (SEP-2663): the server decides. A request that declares the extension in its
  ``clientCapabilities`` gets ``resultType: "task"``; one that does not runs plainly,
  except for a ``required`` tool: -32021 naming the extension.

A task is bound to its owner: the principal's identity when the request was
authenticated, and on a stateful session that session too (``owner_of``); it counts
against its owner's ``max_tasks``, an unauthenticated stateless caller's against its
address's (``quota_of``). The handler
runs apart from the request, with the same ``Context`` (its ``task`` set); what it returns
or raises ends the task: a result (tool errors included), or a JSON-RPC error.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING

import anyio

from ..protocol.connection import RequestReceived
from ..protocol.errors import InternalError, MethodNotFound, MissingClientCapability, ProtocolError
from ..protocol.jsonrpc import JSONObject
from ..protocol.tasks import (
    CORE,
    EXT,
    WireForm,
    create_result,
    declares_extension,
    extension_required,
    requested_ttl,
)
from ..session import HandlerResult, Ready, Session
from .context import Context
from .task_runs import TaskManager, TaskRun, detach
from .tools import Tool, error_result

if TYPE_CHECKING:
    from .mrtr import StateSeal

log = logging.getLogger("mcpkit.server.tasks")
_session_keys: weakref.WeakKeyDictionary[Session, str] = weakref.WeakKeyDictionary()


def owner_of(session: Session, event: RequestReceived) -> str:
    """Who may see a task this request creates: the principal's identity (if any) and,
    on a stateful session, the session (its HTTP session id, else a random key kept for
    the session's life). A stateless request without a principal: anyone holding the
    unguessable id (R25-11.TASKS.15)."""
    principal = event.origin.principal
    who = "" if principal is None else principal.identity
    if event.stateless is not None:
        return f"{who}\n"
    where = session.session_id
    if where is None:
        where = _session_keys.get(session)
        if where is None:
            import secrets

            where = _session_keys[session] = secrets.token_urlsafe(16)
    return f"{who}\n{where}"


def quota_of(event: RequestReceived, owner: str) -> str:
    """Whose share of ``max_tasks`` a new task takes: its owner's, except that
    unauthenticated stateless callers, who share one owner (anyone holding a task's id
    may read it), are told apart by their address (``Session.peer``, as the rate limits
    key them), so one client cannot take every slot. Without an address (stdio, in
    memory) they share one."""
    address = event.origin.address
    if owner == "\n" and address is not None:
        return "\n@" + address
    return owner


class TaskCalls:
    """Runs task tools' calls (see the module docstring)."""

    def __init__(self, manager: TaskManager, seal: StateSeal) -> None:
        self.manager = manager
        self._seal = seal

    def call(self, session: Session, event: RequestReceived, tool: Tool, arguments: JSONObject,
             ctx: Context) -> HandlerResult:
        """The answer to ``tools/call`` of ``tool`` (arguments already valid)."""
        meta = event.stateless
        if meta is None:
            rev = event.revision
            if rev is None or not rev.has("tool_execution"):
                return self._plain(event, tool, arguments, ctx)
            wanted, ttl = requested_ttl(event.params)
            if tool.task is None and wanted:
                raise MethodNotFound(f"Method not found: tool '{tool.name}' does not run as a "
                                     "task (its execution.taskSupport is forbidden); call it "
                                     "without 'task'.")
            if not wanted:
                if tool.task == "required":
                    raise MethodNotFound(f"Method not found: tool '{tool.name}' runs only as "
                                         "a task (execution.taskSupport: required); call it "
                                         "with 'task': {} in params.")
                return self._plain(event, tool, arguments, ctx)
            return self._as_task(session, event, tool, arguments, ctx, CORE, ttl)
        if tool.task is None:
            return self._plain(event, tool, arguments, ctx)
        if not declares_extension(meta.client_capabilities):
            if tool.task == "required":
                raise MissingClientCapability(
                    f"Missing required client capability: tool '{tool.name}' runs only as a "
                    "task; declare the io.modelcontextprotocol/tasks extension in _meta "
                    "clientCapabilities.extensions and retry.", extension_required())
            return self._plain(event, tool, arguments, ctx)
        return self._as_task(session, event, tool, arguments, ctx, EXT, None)

    def _plain(self, event: RequestReceived, tool: Tool, arguments: JSONObject,
               ctx: Context) -> HandlerResult:
        return self._seal.run(event, ctx, tool.call(arguments, ctx))

    def _as_task(self, session: Session, event: RequestReceived, tool: Tool,
                 arguments: JSONObject, ctx: Context, form: WireForm,
                 ttl: int | None) -> HandlerResult:
        owner = owner_of(session, event)
        quota = quota_of(event, owner)
        if self.manager.full(quota):
            return Ready(error_result(
                f"Too many tasks are running for this caller (the limit is "
                f"{self.manager.max_live}); wait for some to finish or cancel them with "
                "tasks/cancel, then call again."))
        token = ctx.progress_token if form is CORE else None
        if tool.task_start == "explicit":
            return self._seal.run(event, ctx, self._explicit(session, tool, arguments, ctx,
                                                             form, (owner, quota), token))
        run = self.manager.create_now(owner, form, "tools/call", ttl,
                                      _notified(session, form), token, quota)
        if run is not None:  # answered inline: no task of its own for the request
            return Ready(self._begin(run, tool, arguments, ctx))
        return self._eager(session, tool, arguments, ctx, form, (owner, quota), ttl, token)

    async def _eager(self, session: Session, tool: Tool, arguments: JSONObject, ctx: Context,
                     form: WireForm, whose: tuple[str, str], ttl: int | None,
                     token: str | int | None) -> JSONObject:
        run = await self.manager.create(whose[0], form, "tools/call", ttl,
                                        _notified(session, form), token, whose[1])
        return self._begin(run, tool, arguments, ctx)

    def _begin(self, run: TaskRun, tool: Tool, arguments: JSONObject, ctx: Context
               ) -> JSONObject:
        """Start ``run``'s handler; the ``CreateTaskResult`` that answers the call."""
        ctx.task = run
        self.manager.start(run, self._run(ctx, tool.call(arguments, ctx)))
        return create_result(self.manager.view(run.record, run.form), run.form)

    async def _explicit(self, session: Session, tool: Tool, arguments: JSONObject,
                        ctx: Context, form: WireForm, whose: tuple[str, str],
                        token: str | int | None) -> JSONObject:
        """Run the handler apart from the request at once; the request is answered by
        whatever comes first: ``ctx.start_task()`` (the task), or the handler's own end
        (its result, error, or MRTR input request) if it never starts one."""
        answer = _Answer()

        async def start(ctx: Context) -> None:
            run = await self.manager.create(whose[0], form, "tools/call", None,
                                            _notified(session, form), token, whose[1])
            ctx.task = run
            self.manager.adopt(run, handle)
            if not answer.done():
                answer.set_result(create_result(self.manager.view(run.record, form), form))

        ctx._starter = start
        handle = detach(self._run(ctx, tool.call(arguments, ctx), answer))
        try:
            await answer.event.wait()
        except anyio.get_cancelled_exc_class():
            if ctx.task is None:
                handle.cancel()  # the request went away before any task existed
            raise
        return answer.get()

    async def _run(self, ctx: Context, work: HandlerResult,
                   answer: _Answer | None = None) -> None:
        """The handler, and how it ends: the status of its task (``ctx.task``), or, while
        no task was started (``task_start="explicit"``), the request's ``answer``."""
        try:
            result = await work
        except BaseException as exc:
            if ctx.task is not None:
                await self._end(ctx.task, None, exc)
            elif answer is not None and not answer.done():
                answer.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        if ctx.task is not None:
            await self._end(ctx.task, result, None)
        elif answer is not None and not answer.done():
            answer.set_result(result)

    async def _end(self, run: TaskRun, result: JSONObject | None,
                   exc: BaseException | None) -> None:
        manager = self.manager
        try:
            if exc is None:
                assert result is not None
                await manager.complete(run, result)
            elif isinstance(exc, ProtocolError):
                await manager.fail(run, exc)
            elif isinstance(exc, anyio.get_cancelled_exc_class()):
                # tasks/cancel (already cancelled), expiry, or the server shutting down;
                # shielded: on trio the cancelled scope would stop the store write too
                with anyio.CancelScope(shield=True):
                    await manager.move(run, "failed", message="The server stopped this task "
                                       "before it finished.", error=InternalError(
                                           "Internal error: the task was stopped before it "
                                           "finished; start the request again.").to_error(),
                                       wait=False)
            else:
                log.error("task %s failed", run.task_id, exc_info=exc)
                await manager.fail(run, InternalError(
                    "Internal error while running the task; the server logged the details."))
        finally:
            manager.forget_finished(run)


class _Answer:
    """The answer to a ``task_start="explicit"`` call: the task once started, or the
    handler's own end (its result or error) if it never starts one."""

    __slots__ = ("error", "event", "value")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.value: JSONObject | None = None
        self.error: BaseException | None = None

    def done(self) -> bool:
        return self.event.is_set()

    def set_result(self, value: JSONObject) -> None:
        self.value = value
        self.event.set()

    def set_exception(self, exc: BaseException) -> None:
        # a handler stopped (not failed) before it started a task: the request is
        # answered with an error, never with the stopping signal itself
        self.error = exc if isinstance(exc, Exception) else InternalError(
            "Internal error: the call was stopped before it finished; start it again.")
        self.event.set()

    def get(self) -> JSONObject:
        if self.error is not None:
            raise self.error
        assert self.value is not None
        return self.value


def _notified(session: Session, form: WireForm) -> Session | None:
    """Where a task's status, progress and logs go: its session (2025-11-25); nowhere
    for the extension (SEP-2663: no progress or logs for tasks)."""
    return None if form.extension else session
