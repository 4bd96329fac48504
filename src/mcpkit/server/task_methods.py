"""The ``tasks/*`` methods a server answers, in both generations.

2025-11-25 (stateful session): ``tasks/get`` (the ``Task``), ``tasks/result`` (blocks
until terminal, then exactly what the plain request would have answered, with the
related-task ``_meta``; requests the task makes of the client meanwhile ride its
stream), ``tasks/list`` (the caller's tasks, paginated), ``tasks/cancel`` (a terminal
task: -32602; else ``cancelled`` before the answer, which is the ``Task``).

2026-07-28 (stateless request, extension ``io.modelcontextprotocol/tasks``): a request
that does not declare the extension gets -32021; ``tasks/get`` answers the
``DetailedTask``; ``tasks/update`` delivers ``inputResponses``; ``tasks/cancel`` is an empty
ack, also for a terminal task. (``tasks/result`` and ``tasks/list`` do not exist there:
the revision table answers -32601.)

An id the caller may not see is answered exactly like an unknown one: -32602.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine
from typing import Any

import anyio

from ..protocol.connection import RequestReceived
from ..protocol.errors import InvalidParams, MissingClientCapability
from ..protocol.jsonrpc import JSONObject
from ..protocol.tasks import (
    CORE,
    EXT,
    WireForm,
    declares_extension,
    detailed,
    extension_required,
    is_terminal,
    task_id_param,
    unknown_task,
    with_related,
)
from ..session import HandlerResult, Ready, Session
from ..storage.tasks import TaskRecord, decode_cursor, encode_cursor
from .mrtr import check_depth
from .task_calls import owner_of
from .task_relay import NO_REPLY, ReplayedError
from .task_runs import TaskManager, TaskRun, record_error


class TaskMethods:
    """``tasks/get|result|list|cancel|update`` over a ``TaskManager``."""

    def __init__(self, manager: TaskManager) -> None:
        self.manager = manager
        self.table = {
            "tasks/get": self.get,
            "tasks/result": self.result,
            "tasks/list": self.list,
            "tasks/cancel": self.cancel,
            "tasks/update": self.update,
        }

    def _form(self, event: RequestReceived) -> WireForm:
        """The generation of this request; an extension request must declare it."""
        if event.stateless is None:
            return CORE
        if not declares_extension(event.stateless.client_capabilities):
            raise MissingClientCapability(
                f"Missing required client capability: {event.method} belongs to the "
                "io.modelcontextprotocol/tasks extension; declare it in _meta "
                "clientCapabilities.extensions and retry.", extension_required())
        return EXT

    async def _find(self, session: Session, event: RequestReceived, form: WireForm
                    ) -> tuple[TaskRun | None, TaskRecord]:
        task_id = task_id_param(event.params)
        found = await self.manager.find(task_id, owner_of(session, event),
                                        form)
        if found is None:
            raise unknown_task(task_id)
        return found

    def _now(self, session: Session, event: RequestReceived, form: WireForm
             ) -> tuple[TaskRun | None, TaskRecord] | None:
        """The task, when it can be found without waiting (None: only ``_find`` can)."""
        task_id = task_id_param(event.params)
        found = self.manager.find_now(task_id, owner_of(session, event),
                                      form)
        if found is None:
            raise unknown_task(task_id)
        return found or None

    def watchable(self, session: Session, event: RequestReceived, ids: list[Any]
                  ) -> list[str] | Coroutine[Any, Any, list[str]]:
        """The ``taskIds`` of a ``subscriptions/listen`` the server agrees to report on:
        the caller's tasks (at most 1000); the extension must be declared (-32021). A
        coroutine when some are known only to the shared store."""
        form = self._form(event)
        owner = owner_of(session, event)
        found = {i: self.manager.find_now(i, owner, form) for i in ids[:1000]
                 if isinstance(i, str)}
        if all(f is not False for f in found.values()):
            return [i for i, f in found.items() if isinstance(f, tuple)]
        return self._watchable(found, owner, form)

    async def _watchable(self, found: dict[str, Any], owner: str, form: WireForm
                         ) -> list[str]:
        out = []
        for task_id, known in found.items():
            if known is False:
                known = await self.manager.find(task_id, owner, form)
            if known:
                out.append(task_id)
        return out

    def notice(self, run: TaskRun) -> JSONObject:
        """``notifications/tasks`` params: the DetailedTask ``tasks/get`` would answer."""
        return self._view(EXT, run, run.record)

    def get(self, session: Session, event: RequestReceived) -> HandlerResult:
        form = self._form(event)
        found = self._now(session, event, form)
        if found is not None:
            return Ready(self._view(form, *found))
        return self._get(session, event, form)

    async def _get(self, session: Session, event: RequestReceived, form: WireForm
                   ) -> JSONObject:
        return self._view(form, *await self._find(session, event, form))

    def _view(self, form: WireForm, run: TaskRun | None, record: TaskRecord) -> JSONObject:
        """``tasks/get``'s answer: the Task, or the extension's DetailedTask."""
        task = self.manager.view(record, form)
        if not form.extension:
            return task
        return detailed(task, result=record.result, error=record.error,
                        input_requests=run.input_requests() if run is not None
                        else record.inputs)

    def result(self, session: Session, event: RequestReceived) -> HandlerResult:
        form = self._form(event)
        found = self._now(session, event, form)
        if found is not None and is_terminal(found[1].status):
            return Ready(_payload(found[1]))
        return self._result(session, event, form)

    async def _result(self, session: Session, event: RequestReceived, form: WireForm
                      ) -> JSONObject:
        run, record = await self._find(session, event, form)
        if run is not None and not is_terminal(record.status):
            run.listen(session, event.id)
            try:
                await run.done.wait()
            finally:
                run.unlisten(session, event.id)
            record = run.record
        elif not is_terminal(record.status):  # another instance runs it: poll the store
            record = await self._poll(record)
        if not is_terminal(record.status):
            raise unknown_task(record.task_id)  # expired while waiting
        return _payload(record)

    async def _poll(self, record: TaskRecord) -> TaskRecord:
        """Wait for a record another process updates, polling the store at its interval
        until it is terminal or gone."""
        interval = (record.poll_ms or 1000) / 1000
        while record.expires is None or time.time() < record.expires:
            await anyio.sleep(interval)
            fresh = await self.manager.store.get(record.task_id)
            if fresh is None or is_terminal(fresh.status):
                return fresh or record
            record = fresh
        return record

    def list(self, session: Session, event: RequestReceived) -> HandlerResult:
        self._form(event)
        return self._list(session, event)

    async def _list(self, session: Session, event: RequestReceived) -> JSONObject:
        after = decode_cursor(event.params.get("cursor"))
        size = self.manager.page_size
        records = await self.manager.page(owner_of(session, event), after, size + 1)
        out: JSONObject = {"tasks": [self.manager.view(r, CORE) for r in records[:size]]}
        if len(records) > size:
            out["nextCursor"] = encode_cursor(records[size - 1])
        return out

    def cancel(self, session: Session, event: RequestReceived) -> HandlerResult:
        return self._cancel(session, event, self._form(event))

    async def _cancel(self, session: Session, event: RequestReceived, form: WireForm
                      ) -> JSONObject:
        run, record = await self._find(session, event, form)
        cancelled: Any = False
        relay = self.manager.relay
        if run is not None:
            cancelled = await self.manager.cancel(run)
        elif not is_terminal(record.status) and relay is not None:  # runs elsewhere
            cancelled = await relay.call("cancel", record.task_id, None)
            record = await self.manager.store.get(record.task_id) or record
        if cancelled is NO_REPLY or (run is None and not cancelled
                                     and not is_terminal(record.status)):
            # no live handler anywhere: the record alone (a terminal one is kept)
            record.status, record.updated = "cancelled", time.time()
            record.message, record.inputs = "Cancelled at the client's request.", None
            await self.manager.store.put(record)
            record = await self.manager.store.get(record.task_id) or record
            cancelled = record.status == "cancelled"
        if form.extension:
            return {}  # an empty ack, terminal or not (SEP-2663)
        if not cancelled:
            raise InvalidParams(
                f"Invalid params: task {record.task_id!r} is already {record.status}; a "
                "task in a terminal status cannot be cancelled.")
        return self.manager.view(record, form)

    def update(self, session: Session, event: RequestReceived) -> HandlerResult:
        form = self._form(event)
        responses = event.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParams("Invalid params: tasks/update needs 'inputResponses' (an "
                                "object mapping each input request key to its result).")
        for key, value in responses.items():  # before it is relayed or checked
            check_depth(key, value)
        return self._update(session, event, form, responses)

    async def _update(self, session: Session, event: RequestReceived, form: WireForm,
                      responses: JSONObject) -> JSONObject:
        run, record = await self._find(session, event, form)
        if run is not None:
            run.answer(responses)
        elif self.manager.relay is not None and record.status == "input_required":
            await self.manager.relay.call("update", record.task_id, responses)
        return {}


def _payload(record: TaskRecord) -> JSONObject:
    """``tasks/result`` of a terminal task: exactly the plain request's answer, with the
    related-task ``_meta`` (R25-11.TASKS.8); an error is raised as it was."""
    if record.result is not None:
        return with_related(record.result, record.task_id)
    raise ReplayedError(record_error(record))
