"""A raw HTTP server whose SSE stream misbehaves, for the legacy HTTP+SSE probe's tests.

    python tests/servers/check_sse_hostile.py MODE --port N

``/sse`` answers with an event stream whose first event is, by MODE:

- ``foreign``: ``endpoint`` naming another origin (``http://mcpkit-check.invalid/messages``),
  which the checker must not follow;
- ``silent``: nothing at all (the stream stays open), so no endpoint is ever named;
- ``message``: a ``message`` event first, so this is not a legacy SSE server.

Everything else is 404. It runs until killed.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import uvicorn

MODE = sys.argv[1]
FIRST = {
    "foreign": b"event: endpoint\ndata: http://mcpkit-check.invalid/messages\n\n",
    "silent": b": nothing\n\n",
    "message": b'event: message\ndata: {"jsonrpc":"2.0","method":"x"}\n\n',
}[MODE]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] != "/sse":
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b"not found"})
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "body": FIRST, "more_body": True})
    with anyio.move_on_after(30):
        while (await receive())["type"] != "http.disconnect":
            pass


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[sys.argv.index("--port") + 1]),
                log_level="warning")
