"""What the floor peers answer: initialize, server/discover (the 2026-07-28 opening), and
tools/call echo (the harness's only call)."""

from typing import Any

import orjson

INIT_RESULT = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
               "serverInfo": {"name": "floor", "version": "0"}}
DISCOVER_RESULT = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                   "serverInfo": {"name": "floor", "version": "0"}}


def answer(line: bytes) -> bytes | None:
    """The JSON-RPC answer line to one request line (None for a notification)."""
    msg: dict[str, Any] = orjson.loads(line)
    if "id" not in msg:
        return None
    if msg["method"] == "initialize":
        result: dict[str, Any] = INIT_RESULT
    elif msg["method"] == "server/discover":
        result = DISCOVER_RESULT
    else:
        text = msg["params"]["arguments"].get("text", "")
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    return orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + b"\n"
