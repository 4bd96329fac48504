"""A raw JSON-RPC peer for a ``Server`` in the same process, over an in-memory stream.

The tests of tasks speak the wire directly (``request``/``notify`` with any params, the
answers and the server's own requests and notifications as plain dicts), so nothing of
mcpkit's client stands between a test and what the server sent. Every message the server
sends is validated against the official schema of the revision in use (``WireChecker``,
which also knows a task-augmented call answered by ``CreateTaskResult``;
``expect_result`` names a result definition it cannot infer, such as a 2026-07-28
extension shape the schema lacks). Requests the server makes are
answered by ``on_request`` (default: a JSON-RPC error), after recording them.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson

from mcpkit import Server
from mcpkit.transports.memory import memory_pair
from tests.support.schemas import WireChecker, validate

JSON = dict[str, Any]


class RawPeer:
    """One end of a connection to a ``Server`` (see the module docstring)."""

    def __init__(self, stream: Any, checker: WireChecker) -> None:
        self._stream = stream
        self.checker = checker
        self._ids = itertools.count(1)
        self._waiting: dict[Any, tuple[anyio.Event, list[JSON]]] = {}
        self._result_defs: dict[Any, str] = {}
        self.notifications: list[JSON] = []
        self.requests: list[JSON] = []
        self.on_request: Callable[[JSON], Awaitable[JSON] | JSON] | None = None
        #: Methods whose messages the schema does not define (an extension's): not
        #: schema-checked here, the test checks their fields itself.
        self.unchecked: set[str] = set()
        self.changed = anyio.Event()
        self._buffer = b""
        self._tg: Any = None

    async def _send(self, msg: JSON) -> None:
        self.checker.saw_peer(msg)
        await self._stream.send(orjson.dumps(msg) + b"\n")

    async def request(self, method: str, params: JSON | None = None, *,
                      expect_result: str | None = None, timeout: float = 10.0) -> JSON:
        """Send a request; its whole answer (``{"result": ...}`` or ``{"error": ...}``)."""
        rid = next(self._ids)
        done = anyio.Event()
        box: list[JSON] = []
        self._waiting[rid] = (done, box)
        if expect_result is not None:
            self._result_defs[rid] = expect_result
        msg: JSON = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        await self._send(msg)
        with anyio.fail_after(timeout):
            await done.wait()
        return box[0]

    async def result(self, method: str, params: JSON | None = None, **kw: Any) -> JSON:
        """A request's result (an error answer fails the test)."""
        answer = await self.request(method, params, **kw)
        assert "result" in answer, answer
        result: JSON = answer["result"]
        return result

    async def error(self, method: str, params: JSON | None = None, **kw: Any) -> JSON:
        """A request's error object (a result fails the test)."""
        answer = await self.request(method, params, **kw)
        assert "error" in answer, answer
        error: JSON = answer["error"]
        return error

    async def notify(self, method: str, params: JSON | None = None) -> None:
        msg: JSON = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        await self._send(msg)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        """Until ``predicate()`` holds (re-checked whenever a message arrives)."""
        with anyio.fail_after(timeout):
            while not predicate():
                self.changed = anyio.Event()
                await self.changed.wait()

    async def _read(self) -> None:
        while True:
            try:
                chunk = await self._stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return
            self._buffer += chunk
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                if line.strip():
                    await self._on_message(orjson.loads(line))

    async def _on_message(self, msg: JSON) -> None:
        rid = msg.get("id")
        definition = self._result_defs.pop(rid, None) if "method" not in msg else None
        if msg.get("method") in self.unchecked:
            pass
        elif definition is not None and "result" in msg:
            self.checker._peer_requests.pop(rid, None)  # validated here instead
            validate(self.checker.revision or "2025-11-25", definition, msg["result"])
        else:
            self.checker.check(msg)
        if "method" not in msg:
            waiting = self._waiting.pop(rid, None)
            if waiting is not None:
                waiting[1].append(msg)
                waiting[0].set()
        elif "id" in msg:
            self.requests.append(msg)
            self._tg.start_soon(self._answer, msg)
        else:
            self.notifications.append(msg)
        self.changed.set()

    async def _answer(self, msg: JSON) -> None:
        handler = self.on_request
        reply: JSON
        if handler is None:
            reply = {"jsonrpc": "2.0", "id": msg["id"],
                     "error": {"code": -32601, "message": "not handled by this test"}}
        else:
            out = handler(msg)
            result = out if isinstance(out, dict) else await out
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        await self._send(reply)

    async def initialize(self, version: str = "2025-11-25", capabilities: JSON | None = None
                         ) -> JSON:
        result = await self.result("initialize", {
            "protocolVersion": version, "capabilities": capabilities or {},
            "clientInfo": {"name": "raw-peer", "version": "1"}})
        await self.notify("notifications/initialized")
        return result


@asynccontextmanager
async def raw_peer(server: Server, revision: str | None = None) -> AsyncIterator[RawPeer]:
    """A ``RawPeer`` connected to ``server`` (served in a task until the block ends)."""
    client_end, server_end = memory_pair()
    peer = RawPeer(client_end, WireChecker("server", revision))
    async with anyio.create_task_group() as tg:
        peer._tg = tg
        tg.start_soon(server.serve, server_end)
        tg.start_soon(peer._read)
        try:
            yield peer
        finally:
            await client_end.aclose()
            await server_end.aclose()
            tg.cancel_scope.cancel()
