"""Task traffic between the instances of a deployment sharing a ``RedisTaskStore``.

A task's handler, its pending input requests and its cancellation live only on the
instance running it (``tr`` in the store names it), while the next request about it may
reach any instance. ``tasks/get`` (and ``tasks/list``) are answered from the shared store
by whichever instance gets them; ``tasks/update`` and ``tasks/cancel`` reaching an
instance that does not run the task are carried to the one that does over the bus, on
that instance's own channel (``\\ttask:<instance>``), and its reply comes back on the
asker's channel within ``timeout`` seconds.

Wire (one bus message, kind ``TASK`` + JSON): a call ``{"op": "update"|"cancel", "id",
"task", "body", "to"}`` and its reply ``{"op": "reply", "id", "value"|"error"}``. When the
running instance does not answer in time (stopped, or Redis lost the message), ``call``
returns ``None`` and the caller falls back to the record alone (see ``task_methods``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

import orjson

from ..protocol.errors import ProtocolError
from ..protocol.jsonrpc import JSONObject
from ..storage.bus import TASK
from ..storage.cancels import stop_tasks
from ..storage.faults import StoreUnavailable

if TYPE_CHECKING:
    from ..storage.bus import SessionBus
    from ..storage.redis_tasks import RedisTaskStore
    from .task_runs import TaskManager

log = logging.getLogger("mcpkit.server.tasks")

NO_REPLY = object()
"""What ``call`` hands back when the running instance did not answer."""


def channel(instance: str) -> str:
    """The bus "session id" of one instance's task channel (no session id has a tab)."""
    return f"\ttask:{instance}"


class TaskRelay:
    """Carries ``tasks/update`` and ``tasks/cancel`` to the instance running the task."""

    def __init__(self, bus: SessionBus, store: RedisTaskStore, manager: TaskManager, *,
                 timeout: float = 5.0) -> None:
        self.bus = bus
        self.store = store
        self.manager = manager
        self.timeout = timeout
        self._waiting: dict[str, asyncio.Future[JSONObject]] = {}
        self._work: set[asyncio.Task[None]] = set()

    @property
    def instance(self) -> str:
        return self.store.instance

    async def start(self) -> None:
        """Listen on this instance's channel (``StoreUnavailable``: try again later)."""
        await self.bus.listen(channel(self.instance), self.heard)

    async def stop(self) -> None:
        """Stop the calls being done here and stop listening."""
        await stop_tasks(list(self._work), self.timeout, "task relay")
        with contextlib.suppress(StoreUnavailable):
            await self.bus.unlisten(channel(self.instance))

    async def call(self, op: str, task_id: str, body: Any) -> Any:
        """``op`` done by the instance running ``task_id``: its value, a raised
        ``ReplayedError``, or ``NO_REPLY`` (no live instance runs it, or none answered
        within ``timeout``)."""
        import secrets  # here, not at import: a server that shares no tasks never needs it

        runner = await self.store.runner(task_id)
        if runner is None or runner == self.instance:
            return NO_REPLY
        rid = secrets.token_hex(8)
        future: asyncio.Future[JSONObject] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = future
        try:
            await self.bus.publish(channel(runner), TASK + orjson.dumps(
                {"op": op, "id": rid, "task": task_id, "body": body, "to": self.instance}))
            async with asyncio.timeout(self.timeout):
                reply = await future
        except TimeoutError:
            log.warning("task %s: instance %s did not answer %s within %ss", task_id, runner,
                        op, self.timeout)
            return NO_REPLY
        finally:
            self._waiting.pop(rid, None)
        if "error" in reply:
            raise ReplayedError(reply["error"])
        return reply.get("value")

    def heard(self, message: bytes) -> None:
        """A message on this instance's channel: a call to do, or a reply awaited."""
        if message[:1] != TASK:
            return
        try:
            body = orjson.loads(message[1:])
            op = body["op"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            log.warning("task relay: an unreadable message was ignored")
            return
        if op == "reply":
            future = self._waiting.get(str(body.get("id")))
            if future is not None and not future.done():
                future.set_result(body)
            return
        work = asyncio.get_running_loop().create_task(self._do(body))
        self._work.add(work)
        work.add_done_callback(self._work.discard)

    async def _do(self, call: dict[str, Any]) -> None:
        reply: JSONObject = {"op": "reply", "id": call.get("id")}
        run = self.manager.runs.get(str(call.get("task")))
        try:
            if run is None:
                reply["value"] = None  # finished or forgotten here: the record tells
            elif call["op"] == "update" and isinstance(call.get("body"), dict):
                run.answer(call["body"])
                reply["value"] = True
            elif call["op"] == "cancel":
                reply["value"] = await self.manager.cancel(run)
            else:
                reply["value"] = None
        except ProtocolError as exc:
            reply["error"] = exc.to_error()
        try:
            await self.bus.publish(channel(str(call.get("to"))), TASK + orjson.dumps(reply))
        except StoreUnavailable as exc:
            log.warning("task relay: a reply was lost: %s", exc)


class ReplayedError(ProtocolError):
    """A JSON-RPC error answered again as it was: stored (``tasks/result``), or what the
    running instance answered (``call``)."""

    def __init__(self, error: JSONObject) -> None:
        super().__init__(str(error.get("message", "")), error.get("data"))
        self._error = error

    def to_error(self) -> dict[str, Any]:
        return dict(self._error)
