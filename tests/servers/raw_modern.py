"""A raw stdio 2026-07-28 server with deliberately odd results: for client-side tests.

It answers ``server/discover`` (2026-07-28), ``tools/list`` (the tools below, no output
schemas) and ``tools/call`` of:

- ``no_result_type``: a complete-looking result *without* ``resultType`` (as an older
  server would send); the client must read it as complete;
- ``task_result``: ``resultType: "task"``, never negotiated; the client must reject it;
- ``state_only``: first an ``input_required`` result with only a ``requestState`` (no
  ``inputRequests``), then, when retried with exactly that state, a complete result.

Anything else gets -32601. Every line it reads is appended to the file named by
``MCPKIT_RAW_LOG`` (when set). It exits when stdin ends.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

LOG = os.environ.get("MCPKIT_RAW_LOG")
VERSION = "2026-07-28"
INFO = {"io.modelcontextprotocol/serverInfo": {"name": "raw-modern", "version": "1.0.0"}}
STATE = "opaque-state-0001"
TOOLS = [{"name": name, "inputSchema": {"type": "object"}}
         for name in ("no_result_type", "task_result", "state_only")]


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


def answer(rid: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "server/discover":
        return {"resultType": "complete", "supportedVersions": [VERSION],
                "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "public",
                "_meta": INFO}
    if method == "tools/list":
        return {"resultType": "complete", "tools": TOOLS, "ttlMs": 0, "cacheScope": "public"}
    name = params.get("name")
    if name == "no_result_type":
        return {"content": text("no resultType here")}
    if name == "task_result":
        return {"resultType": "task", "taskId": "t-1", "status": "working"}
    if name == "state_only":
        if params.get("requestState") == STATE:
            return {"resultType": "complete", "content": text("state honoured")}
        return {"resultType": "input_required", "requestState": STATE}
    raise LookupError(method)


def main() -> None:
    for line in sys.stdin.buffer:
        if LOG:
            with open(LOG, "ab") as f:
                f.write(line if line.endswith(b"\n") else line + b"\n")
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
            continue
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        try:
            out: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"],
                                   "result": answer(msg["id"], msg["method"], params)}
        except LookupError:
            out = {"jsonrpc": "2.0", "id": msg["id"],
                   "error": {"code": -32601, "message": f"Method not found: {msg['method']}"}}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
