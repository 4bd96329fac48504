"""Live tasks: the state machine, the running handler, and how a task talks to the client.

``TaskManager`` creates tasks (unguessable ids, bound to their owner, a limit of live
tasks per owner, the ttl the server grants), moves them between statuses only along the
allowed edges (R25-11.TASKS.6: a terminal status never changes; a cancel that races the
handler's completion is decided by whichever ``move`` comes first), writes every change
to the ``TaskStore`` before anyone can observe it, sends ``notifications/tasks/status``
(2025-11-25), and frees everything once a task expires.

``TaskRun`` is what a task's handler sees through its ``Context``: ``ask`` turns
``ctx.elicit``/``ctx.sample``/``ctx.list_roots`` into ``input_required`` — in 2025-11-25
the request then rides the stream of the client's ``tasks/result`` (R25-11.TASKS.9), in
2026-07-28 it waits in ``inputRequests`` for ``tasks/update``; ``progress`` and ``log``
keep the original progress token and carry the related-task ``_meta`` (2025-11-25; the
extension has neither for tasks: there progress becomes the task's ``statusMessage``).

A task's handler runs apart from the request that started it, on any anyio backend
(:func:`detach`): an asyncio task on asyncio (no task group owns it, so it outlives the
request and the connection), a system task in its own cancel scope on trio.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio

from ..protocol.errors import InvalidParams, ProtocolError, RequestTimeout
from ..protocol.jsonrpc import JSONObject, RequestId
from ..protocol.tasks import (
    CORE_STATUS_NOTIFICATION,
    WireForm,
    can_move,
    is_terminal,
    new_task_id,
    related_meta,
    task_fields,
    with_related,
)
from ..session import Session
from ..session.loop import running_asyncio_loop
from ..storage.cancels import stop_tasks
from ..storage.faults import OUTAGE_WAIT, StoreUnavailable, outlast
from ..storage.tasks import MemoryTaskStore, TaskRecord, TaskStore, failed_error
from .mrtr import check_answer

if TYPE_CHECKING:
    from .task_relay import TaskRelay

log = logging.getLogger("mcpkit.server.tasks")
RESTARTED = ("The server restarted while this task was running, so it did not finish; "
             "start the request again.")


def progress_message(progress: float, total: float | None, message: str | None) -> str:
    """A progress report in words, for an extension task's ``statusMessage``:
    ``progress 3/4 (75%): copying``."""
    text = f"progress {progress:g}"
    if total:
        text += f"/{total:g} ({min(1.0, max(0.0, progress / total)):.0%})"
    return f"{text}: {message}" if message else text


class Detached:
    """A coroutine running apart from any request on a backend other than asyncio (trio:
    a system task), stopped through its own cancel scope; the part of ``asyncio.Task``
    the task manager uses."""

    __slots__ = ("_callbacks", "_done", "_scope")

    def __init__(self) -> None:
        self._scope = anyio.CancelScope()
        self._done = False
        self._callbacks: list[Callable[[Detached], object]] = []

    def cancel(self) -> None:
        self._scope.cancel()

    def done(self) -> bool:
        return self._done

    def add_done_callback(self, fn: Callable[[Detached], object]) -> None:
        self._callbacks.append(fn)

    async def run(self, work: Coroutine[Any, Any, None]) -> None:
        try:
            with self._scope:
                await work
        finally:
            self._done = True
            for fn in self._callbacks:
                fn(self)


Handle: TypeAlias = "asyncio.Task[None] | Detached"
"""A task's running handler."""


def detach(work: Coroutine[Any, Any, None]) -> Handle:
    """Run ``work`` apart from the current request, in a copy of the current context.

    asyncio: a plain asyncio task, exactly as before (nothing else on this path). trio,
    the other backend anyio runs on, has no detached tasks but a system nursery: ``work``
    runs there in a :class:`Detached` scope; it must handle its own errors (the task
    handlers do: they end their task with them) and is cancelled when the run ends. trio
    is found among the loaded modules (it is running), never imported here."""
    loop = running_asyncio_loop()
    if loop is not None:
        return loop.create_task(work)  # type: ignore[no-any-return]
    trio = sys.modules.get("trio")
    if trio is None:
        work.close()
        raise RuntimeError("tasks run on asyncio or trio; no event loop of either is running")
    handle = Detached()
    trio.lowlevel.spawn_system_task(handle.run, work, context=contextvars.copy_context())
    return handle


class _Input:
    """One 2026-07-28 input request waiting for its ``tasks/update`` answer."""

    __slots__ = ("answer", "done", "method", "request")

    def __init__(self, method: str, params: JSONObject | None) -> None:
        self.method = method
        self.request: JSONObject = {"method": method, "params": params or {}}
        self.done = anyio.Event()
        self.answer: JSONObject | None = None


class TaskRun:
    """A task of this process: its record, handler, inputs and waiters."""

    def __init__(self, manager: TaskManager, record: TaskRecord, form: WireForm,
                 session: Session | None, progress_token: str | int | None) -> None:
        self.manager = manager
        self.record = record
        self.form = form
        self.session = session  # 2025-11-25: where status, progress and logs go
        self.progress_token = progress_token
        self.quota = record.owner  # whose max_live it counts against (quota_of)
        self.handle: Handle | None = None
        self.done = anyio.Event()
        self.inputs: dict[str, _Input] = {}  # 2026-07-28: outstanding input requests
        self.used_keys: set[str] = set()
        self.listeners: list[tuple[Session, RequestId]] = []  # 2025-11-25 tasks/result
        self.listening = anyio.Event()
        self.waiting = 0  # 2025-11-25 requests sent to the client, not yet answered
        self.lock = anyio.Lock(fast_acquire=True)  # no loop turn when uncontended
        self._last_progress: float | None = None
        self.next_save = 0.0  # extension: when a progress may be stored (and announced)

    @property
    def task_id(self) -> str:
        return self.record.task_id

    # ------------------------------------------------------------------ asking the client

    async def ask(self, method: str, params: JSONObject | None, timeout: float | None,
                  key: str | None) -> JSONObject:
        """A server->client request made by the task's handler (see the module
        docstring); ``RequestTimeout`` when unanswered within ``timeout`` seconds."""
        try:
            with anyio.fail_after(timeout):
                if self.form.extension:
                    return await self._ask_update(method, params, key)
                return await self._ask_stream(method, params)
        except TimeoutError:
            raise RequestTimeout(f"no answer to '{method}' within {timeout} seconds") from None

    async def _ask_update(self, method: str, params: JSONObject | None,
                          key: str | None) -> JSONObject:
        key = self._fresh_key(key or method.split("/")[0])
        pending = self.inputs[key] = _Input(method, params)
        try:
            if not await self.manager.move(self, "input_required"):
                await self.manager.save_inputs(self)  # already input_required: one more
            await pending.done.wait()
        finally:
            self.inputs.pop(key, None)
        if pending.answer is None:  # the task ended (cancelled, expired) meanwhile
            raise RequestTimeout(f"the task ended before the client answered '{method}'")
        if not self.inputs:
            await self.manager.move(self, "working")
        else:
            await self.manager.save_inputs(self)
        return pending.answer

    def _fresh_key(self, base: str) -> str:
        """A key never used before in this task (SEP-2663: keys are unique per task)."""
        key, n = base, 1
        while key in self.used_keys:
            n += 1
            key = f"{base}-{n}"
        self.used_keys.add(key)
        return key

    def answer(self, responses: JSONObject) -> None:
        """Deliver ``tasks/update`` ``inputResponses``: each answer to an outstanding key
        is checked (a malformed one: ``InvalidParams``, nothing delivered); keys not
        outstanding are ignored (SEP-2663)."""
        taken = {k: v for k, v in responses.items() if k in self.inputs}
        for key, value in taken.items():
            if not isinstance(value, dict):
                raise InvalidParams(f"Invalid params: inputResponses[{key!r}] must be a "
                                    "result object.")
            check_answer(key, self.inputs[key].method, value)
        for key, value in taken.items():
            pending = self.inputs.pop(key)
            pending.answer = value
            pending.done.set()

    def input_requests(self) -> JSONObject:
        return {key: pending.request for key, pending in self.inputs.items()}

    async def _ask_stream(self, method: str, params: JSONObject | None) -> JSONObject:
        self.waiting += 1
        try:
            await self.manager.move(self, "input_required")
            while not self.listeners:
                if self.listening.is_set():  # a stale one: every listener left since
                    self.listening = anyio.Event()
                await self.listening.wait()  # shared by every asker: listen() wakes all
            session, rid = self.listeners[-1]
            return await session.request(method, with_related(params or {}, self.task_id),
                                         timeout=None, related=rid)
        finally:
            self.waiting -= 1
            if not self.waiting:
                await self.manager.move(self, "working")

    def listen(self, session: Session, rid: RequestId) -> None:
        """A 2025-11-25 ``tasks/result`` is waiting: requests to the client can ride it."""
        self.listeners.append((session, rid))
        self.listening.set()

    def unlisten(self, session: Session, rid: RequestId) -> None:
        if (session, rid) in self.listeners:
            self.listeners.remove((session, rid))

    # ------------------------------------------------------------------ progress, logs

    async def progress(self, progress: float, total: float | None, message: str | None
                       ) -> None:
        """R25-11.PROG.2: the original token until the task is terminal, then nothing. The
        extension has no progress notifications for tasks: there progress becomes the
        task's ``statusMessage`` (``TaskManager.progressed``). Returns once the way to the
        client has room (``Session.congested``)."""
        if is_terminal(self.record.status):
            return
        if self._last_progress is not None and not progress > self._last_progress:
            return
        if self.form.extension:
            self._last_progress = progress
            await self.manager.progressed(self, progress_message(progress, total, message))
            return
        session = self.session
        if self.progress_token is None or session is None or session.closed:
            return
        self._last_progress = progress
        params: JSONObject = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        params["_meta"] = related_meta(self.task_id)
        if session.notify("notifications/progress", params):
            waiting = session.congested(None)
            if waiting is not None:
                await waiting

    def log(self, level: str, data: Any, logger: str | None) -> Awaitable[None] | None:
        """A log message of the task's handler (see ``progress``)."""
        session = self.session
        if session is None or session.closed or not session.wants_log(level):
            return None
        params: JSONObject = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        params["_meta"] = related_meta(self.task_id)
        return session.congested(None) if session.notify("notifications/message",
                                                         params) else None


class TaskManager:
    """Creates, runs, moves, finds and expires tasks (see the module docstring)."""

    def __init__(self, store: TaskStore | None = None, *, default_ttl_ms: int = 3_600_000,
                 max_ttl_ms: int = 86_400_000, poll_ms: int = 500,
                 max_live: int = 256, page_size: int = 50) -> None:
        """``default_ttl_ms``: kept this long when the request names no ttl; a requested
        ttl is capped at ``max_ttl_ms`` (R25-11.TASKS.7: the actual one is reported).
        ``max_live``: tasks not yet terminal per owner (more: refused)."""
        if default_ttl_ms <= 0 or max_ttl_ms <= 0 or poll_ms <= 0 or max_live <= 0:
            raise ValueError("task ttl, poll interval and limit must be positive")
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self.poll_ms = poll_ms
        self.max_live = max_live
        self.page_size = page_size
        self.runs: dict[str, TaskRun] = {}
        self._live: dict[str, int] = {}
        self._handles: set[Handle] = set()
        self._ready = False
        self._next_sweep = 0.0
        #: Called with an extension task after each status change (``notifications/tasks``
        #: on the listen streams watching it).
        self.on_change: Callable[[TaskRun], None] | None = None
        #: Shared deployments: carries tasks/update and tasks/cancel to the instance
        #: running a task (``task_relay.TaskRelay``); None: every task runs here.
        self.relay: TaskRelay | None = None

    def over(self, store: TaskStore) -> TaskManager:
        """A manager with this one's settings (as they are now) over ``store``: the tasks
        of an app that shares them with other instances (``Server.asgi_app(store=...)``),
        apart from this one's."""
        return TaskManager(store, default_ttl_ms=self.default_ttl_ms,
                           max_ttl_ms=self.max_ttl_ms, poll_ms=self.poll_ms,
                           max_live=self.max_live, page_size=self.page_size)

    async def _start(self) -> None:
        """Once per process: fail the tasks a previous process left unfinished."""
        if not self._ready:
            self._ready = True
            count = await self.store.abandon(RESTARTED)
            if count:
                log.warning("%d task(s) were running when the server stopped: now failed",
                            count)

    def ttl(self, requested: int | None) -> int:
        return self.default_ttl_ms if requested is None else max(
            1, min(requested, self.max_ttl_ms))

    def full(self, quota: str) -> bool:
        """Whether ``quota`` (an owner, or the address of an unauthenticated stateless
        caller) has ``max_live`` tasks not yet terminal."""
        return self._live.get(quota, 0) >= self.max_live

    async def create(self, owner: str, form: WireForm, method: str, ttl_ms: int | None,
                     session: Session | None, progress_token: str | int | None,
                     quota: str | None = None) -> TaskRun:
        """A new ``working`` task, durably stored before this returns (SEP-2663);
        ``quota``: whose ``max_live`` it counts against (None: its owner's)."""
        await self._start()
        now = time.time()
        if now >= self._next_sweep:
            self._next_sweep = now + 1.0
            await self.sweep(now)
        run = self._new_run(owner, form, method, ttl_ms, session, progress_token, now, quota)
        await outlast(lambda: self.store.put(run.record))  # a shared store: waited for
        return run

    def create_now(self, owner: str, form: WireForm, method: str, ttl_ms: int | None,
                   session: Session | None, progress_token: str | int | None,
                   quota: str | None = None) -> TaskRun | None:
        """``create`` without waiting, when nothing needs an await (the store keeps its
        records in memory, no sweep is due): the call is then answered inline. None:
        use ``create``."""
        now = time.time()
        store = self.store
        if not self._ready or now >= self._next_sweep or not isinstance(store,
                                                                       MemoryTaskStore):
            return None
        run = self._new_run(owner, form, method, ttl_ms, session, progress_token, now, quota)
        store.keep(run.record)
        return run

    def _new_run(self, owner: str, form: WireForm, method: str, ttl_ms: int | None,
                 session: Session | None, progress_token: str | int | None, now: float,
                 quota: str | None) -> TaskRun:
        record = TaskRecord(new_task_id(), owner, "ext" if form.extension
                            else "core", method, "working", now, now, self.ttl(ttl_ms),
                            self.poll_ms)
        run = TaskRun(self, record, form, session, progress_token)
        run.quota = owner if quota is None else quota
        self.runs[record.task_id] = run
        self._live[run.quota] = self._live.get(run.quota, 0) + 1
        return run

    def start(self, run: TaskRun, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` (the task's handler) on the event loop, apart from any request."""
        self.adopt(run, detach(work))

    def adopt(self, run: TaskRun, handle: Handle) -> None:
        """``handle`` runs ``run``'s handler (cancelled with it)."""
        run.handle = handle
        self._handles.add(handle)
        handle.add_done_callback(self._handles.discard)

    async def stop_handlers(self, seconds: float) -> None:
        """Cancel the handlers running here and wait (up to ``seconds``) while each stores
        its end (``failed``: the server stopped it); for an instance leaving a shared
        deployment, before its stores close. A handler on another backend than asyncio
        (trio's ``Detached``) is cancelled without the wait: the shared stores that need
        this run on asyncio only."""
        tasks = []
        for handle in list(self._handles):
            if isinstance(handle, asyncio.Task):
                tasks.append(handle)
            else:
                handle.cancel()
        await stop_tasks(tasks, seconds, "task handler")

    def view(self, record: TaskRecord, form: WireForm) -> JSONObject:
        """The ``Task`` object of ``record`` in ``form``."""
        return task_fields(record.task_id, record.status, record.created, record.updated,
                           record.ttl_ms, record.poll_ms, record.message, form)

    async def move(self, run: TaskRun, status: str, *, message: str | None = None,
                   result: JSONObject | None = None, error: JSONObject | None = None,
                   wait: bool = True) -> bool:
        """Move ``run`` to ``status`` if that edge is allowed (False: it is not, e.g. the
        task is already terminal); stored, then announced. A shared store that cannot be
        reached is waited for (``outlast``: a result is not lost to a short outage)
        unless ``wait`` is False (a handler stopped by shutdown: its instance's lapsing
        heartbeat reports the task failed anyway)."""
        record = run.record
        if not can_move(record.status, status):
            return False
        record.status, record.updated = status, time.time()
        if message is not None or is_terminal(status):
            record.message = message
        record.result, record.error = result, error
        live = run.form.extension and not is_terminal(status)
        record.inputs = (run.input_requests() or None) if live else None
        if is_terminal(status):
            self._finish(run)
        async with run.lock:
            await outlast(lambda: self.store.put(record), wait=OUTAGE_WAIT if wait else 0)
        if is_terminal(status):
            run.done.set()
        session = run.session
        if session is not None and not session.closed and not run.form.extension:
            session.notify(CORE_STATUS_NOTIFICATION, self.view(record, run.form))
        elif run.form.extension and self.on_change is not None:
            self.on_change(run)
        return True

    async def progressed(self, run: TaskRun, text: str) -> None:
        """An extension task's progress, as its ``statusMessage`` (SEP-2663 names progress
        descriptions as what the field carries while working): the next ``tasks/get``
        here sees it at once; a shared store gets it (and listen streams hear of it) at
        most once per poll interval, and not at all during an outage (the next status
        change is stored as usual)."""
        record = run.record
        record.message, record.updated = text, time.time()
        if record.updated < run.next_save:
            return
        run.next_save = record.updated + self.poll_ms / 1000
        if not isinstance(self.store, MemoryTaskStore):  # (in memory: the same record)
            try:
                async with run.lock:
                    await self.store.put(record)
            except StoreUnavailable as exc:
                log.debug("the progress of task %s is not stored: %s", run.task_id, exc)
                return
        if self.on_change is not None:
            self.on_change(run)

    async def save_inputs(self, run: TaskRun) -> None:
        """Store ``run``'s outstanding input requests (its status unchanged), so every
        instance answers ``tasks/get`` with them."""
        if run.form.extension and run.record.status == "input_required":
            run.record.inputs = run.input_requests() or None
            async with run.lock:
                await self.store.put(run.record)

    def _finish(self, run: TaskRun) -> None:
        quota = run.quota
        left = self._live.get(quota, 1) - 1
        if left > 0:
            self._live[quota] = left
        else:
            self._live.pop(quota, None)
        for pending in run.inputs.values():
            pending.done.set()  # (their handler is being cancelled or has finished)

    async def complete(self, run: TaskRun, result: JSONObject) -> None:
        """The handler returned ``result``: a tool error (``isError``) ends the task
        ``failed`` in 2025-11-25 (R25-11.TASKS.16) and ``completed`` in the extension."""
        status = ("failed" if result.get("isError") is True and not run.form.extension
                  else "completed")
        await self.move(run, status, result=result)

    async def fail(self, run: TaskRun, exc: ProtocolError) -> None:
        await self.move(run, "failed", message=exc.message, error=exc.to_error())

    async def cancel(self, run: TaskRun) -> bool:
        """Cancel a live task: ``cancelled`` is stored before its handler is stopped
        (R25-11.TASKS.11); False if it had already reached a terminal status."""
        if not await self.move(run, "cancelled", message="Cancelled at the client's request."):
            return False
        if run.handle is not None and not run.handle.done():
            run.handle.cancel()
        return True

    async def find(self, task_id: str, owner: str, form: WireForm
                   ) -> tuple[TaskRun | None, TaskRecord] | None:
        """The live run (if in this process) and record of ``task_id`` when ``owner``
        may see it through ``form``; None otherwise (the caller answers -32602)."""
        await self._start()
        run = self.runs.get(task_id)
        record = run.record if run is not None else await self.store.get(task_id)
        if record is None or not _visible(record, owner, form):
            return None
        if run is not None and record.expired(time.time()):
            await self.sweep(time.time())
            return None
        return run, record

    def find_now(self, task_id: str, owner: str, form: WireForm
                 ) -> tuple[TaskRun | None, TaskRecord] | Literal[False] | None:
        """``find`` without waiting when it needs no await: the task runs here, or the
        store keeps its records in memory; False when only ``find`` can tell (so polling
        a task is answered inline, without a task of its own, on the common path)."""
        if not self._ready:
            return False
        run = self.runs.get(task_id)
        if run is not None:
            record: TaskRecord | None = run.record
        elif isinstance(self.store, MemoryTaskStore):
            record = self.store.peek(task_id)
        else:
            return False
        if record is None:
            return None
        if record.expired(time.time()):
            return False  # find sweeps it
        return (run, record) if _visible(record, owner, form) else None

    async def page(self, owner: str, after: tuple[float, str] | None, limit: int
                   ) -> list[TaskRecord]:
        """Up to ``limit`` records of ``owner`` after the cursor position ``after``."""
        await self._start()
        return await self.store.page(owner, after, limit)

    async def sweep(self, now: float) -> None:
        """Forget expired tasks everywhere: store, live runs (their handlers cancelled)."""
        gone = await self.store.sweep(now)
        for task_id in gone:
            self._drop(task_id)
        for task_id in [t for t, r in self.runs.items() if r.record.expired(now)]:
            self._drop(task_id)

    def _drop(self, task_id: str) -> None:
        run = self.runs.pop(task_id, None)
        if run is None:
            return
        if not is_terminal(run.record.status):
            self._finish(run)
        if run.handle is not None and not run.handle.done():
            run.handle.cancel()
        run.done.set()

    def forget_finished(self, run: TaskRun) -> None:
        """A terminal run whose record is stored: memory need not keep it (the store
        answers for it from now on)."""
        if is_terminal(run.record.status) and not run.listeners:
            self.runs.pop(run.task_id, None)


def _visible(record: TaskRecord, owner: str, form: WireForm) -> bool:
    """Whether ``owner`` may see ``record`` through the generation ``form``."""
    return record.owner == owner and record.form == ("ext" if form.extension else "core")


def record_error(record: TaskRecord) -> JSONObject:
    """The JSON-RPC error a terminal record without a result answers with."""
    if record.error is not None:
        return record.error
    if record.status == "cancelled":
        return {"code": -32603, "message": f"Task {record.task_id} was cancelled before it "
                "finished, so it has no result."}
    return failed_error(record.message or "the task failed")
