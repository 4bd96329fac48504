"""2026-07-28 has no stream resumption: when the answer stream of a request breaks before
the answer, mcpkit's client sends the request again as a new request of its connection
(a fresh id, not a rewritten one) and hands that request's answer to the caller."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest

from mcpkit.client import Client
from tests.support.http import LiveServer

META_KEY = "io.modelcontextprotocol/protocolVersion"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class CuttingServer:
    """A raw ASGI 2026-07-28 server whose first tools/call answer stream breaks early."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        msg = orjson.loads(body)
        method, rid = msg.get("method"), msg.get("id")
        assert META_KEY in msg["params"]["_meta"]
        if method == "server/discover":
            result = {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                      "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private"}
            await self._json(send, {"jsonrpc": "2.0", "id": rid, "result": result})
            return
        assert method == "tools/call"
        self.calls.append(rid)
        if len(self.calls) == 1:  # progress, then the stream ends without the answer
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")]})
            note = {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": "x", "progress": 1}}
            await send({"type": "http.response.body", "more_body": False,
                        "body": b"event: message\ndata: " + orjson.dumps(note) + b"\n\n"})
            return
        result = {"resultType": "complete", "isError": False,
                  "content": [{"type": "text", "text": f"answered as {rid}"}]}
        await self._json(send, {"jsonrpc": "2.0", "id": rid, "result": result})

    async def _json(self, send: Any, obj: Any) -> None:
        data = orjson.dumps(obj)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})


@pytest.mark.anyio
async def test_broken_answer_stream_is_reissued_with_a_new_id() -> None:
    app = CuttingServer()
    with LiveServer(app) as live:
        with anyio.fail_after(20):
            async with Client(live.url, mode="stateless") as client:
                result = await client.call_tool("work", {})
    first, second = app.calls
    assert second != first
    assert result.text == f"answered as {second}"
