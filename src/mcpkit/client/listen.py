"""Change notifications of the stateless revision (2026-07-28 ``subscriptions/listen``).

``Client.listen`` opens one ``subscriptions/listen`` request per block and hands the
notifications tagged with that request's id out as a ``ListenStream``; leaving the block
cancels the request (over HTTP by closing its stream, elsewhere with
``notifications/cancelled``). ``Listens`` keeps the open blocks and routes each tagged
notification to its own.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..protocol.connection import NotificationReceived
from ..protocol.errors import MCPError
from ..protocol.jsonrpc import JSONObject, RequestId
from ..protocol.stateless import SUBSCRIPTION_ID

log = logging.getLogger("mcpkit.client")

ListenRequest = Callable[[JSONObject, Callable[[RequestId], None]], Awaitable[Any]]
"""Sends ``subscriptions/listen`` with these params, telling the callback each id it got,
and returns when the subscription ends (raising its error, if any)."""


class ListenStream:
    """The notifications of one ``Client.listen`` block, as ``{"method", "params"}`` dicts.

    Read with ``await changes.receive()`` or ``async for note in changes``. When the
    subscription ends with an error (the server refused it, the connection closed), the
    read that finds nothing left raises that error; when it ends normally, ``receive``
    raises ``anyio.EndOfStream`` and iteration stops.
    """

    __slots__ = ("_receive", "error")

    def __init__(self, receive: MemoryObjectReceiveStream[JSONObject]) -> None:
        self._receive = receive
        self.error: MCPError | None = None

    async def receive(self) -> JSONObject:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            if self.error is not None:
                raise self.error from None
            raise

    def __aiter__(self) -> ListenStream:
        return self

    async def __anext__(self) -> JSONObject:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._receive.close()

    async def aclose(self) -> None:
        self._receive.close()


def wanted(tools: bool, prompts: bool, resources: bool,
           resource_uris: Sequence[str], task_ids: Sequence[str] = ()) -> JSONObject:
    """The ``notifications`` parameter of ``subscriptions/listen`` (``taskIds``: the
    tasks extension's ``notifications/tasks``, SEP-2663)."""
    out: JSONObject = {}
    if tools:
        out["toolsListChanged"] = True
    if prompts:
        out["promptsListChanged"] = True
    if resources:
        out["resourcesListChanged"] = True
    if resource_uris:
        out["resourceSubscriptions"] = list(resource_uris)
    if task_ids:
        out["taskIds"] = list(task_ids)
    return out


class Listens:
    """The open ``listen`` blocks of one client, by the id of their request."""

    __slots__ = ("_streams",)

    def __init__(self) -> None:
        self._streams: dict[RequestId, MemoryObjectSendStream[JSONObject]] = {}

    def route(self, event: NotificationReceived) -> None:
        """Hand a notification tagged with a subscription id to its block, if it is open."""
        meta = event.params.get("_meta")
        sub = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        stream = self._streams.get(sub) if isinstance(sub, str | int) else None
        if stream is None:
            return
        try:
            stream.send_nowait({"method": event.method, "params": event.params})
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.warning("a listen stream is not being read; a notification was dropped")

    @asynccontextmanager
    async def open(self, request: ListenRequest, notifications: JSONObject
                   ) -> AsyncIterator[ListenStream]:
        """Run one subscription (``request``) for as long as the block lasts; leaving the
        block cancels it. Raises nothing itself: the subscription's error, if it ends with
        one, is raised to the reader of the stream (see ``ListenStream``)."""
        send, receive = anyio.create_memory_object_stream[JSONObject](256)
        changes = ListenStream(receive)
        ids: list[RequestId] = []

        def sent(rid: RequestId) -> None:
            ids.append(rid)
            self._streams[rid] = send

        async def run() -> None:
            try:
                await request({"notifications": notifications}, sent)
            except MCPError as exc:
                log.debug("subscriptions/listen ended with an error: %s", exc)
                changes.error = exc  # raised to the reader once the stream is drained
            finally:
                send.close()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                yield changes
            finally:
                tg.cancel_scope.cancel()
                for rid in ids:
                    self._streams.pop(rid, None)
                receive.close()
