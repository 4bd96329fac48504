"""A raw stdio server of the handshake era only (no 2026-07-28): for era-detection tests.

Until ``initialize`` it refuses every request with -32600 (whatever ``_meta`` it carries,
so ``server/discover`` gets -32600 too); ``initialize`` negotiates among 2024-11-05 …
2025-11-25; afterwards it answers ``ping``, ``tools/list`` (one ``echo`` tool) and
``tools/call`` of ``echo``, and -32601 for anything else. Every line it reads is appended
to the file named by ``MCPKIT_LEGACY_LOG`` (when set). It exits when stdin ends.
``MCPKIT_LEGACY_VERSIONS`` (space-separated) narrows the revisions it speaks.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

KNOWN = tuple(os.environ.get("MCPKIT_LEGACY_VERSIONS",
                            "2024-11-05 2025-03-26 2025-06-18 2025-11-25").split())
LOG = os.environ.get("MCPKIT_LEGACY_LOG")
ECHO = {"name": "echo", "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                        "required": ["text"]}}


def answer(msg: dict[str, Any], initialized: bool) -> dict[str, Any]:
    rid, method = msg["id"], msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        wanted = params.get("protocolVersion")
        return {"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": wanted if wanted in KNOWN else KNOWN[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy-only", "version": "1.0.0"}}}
    if not initialized:
        return {"jsonrpc": "2.0", "id": rid, "error": {
            "code": -32600, "message": "Invalid Request: send 'initialize' first."}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": rid, "result": {}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": rid, "result": {"tools": [ECHO]}}
    if method == "tools/call" and params.get("name") == "echo":
        text = str((params.get("arguments") or {}).get("text", ""))
        return {"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": text}], "isError": False}}
    return {"jsonrpc": "2.0", "id": rid, "error": {
        "code": -32601, "message": f"Method not found: {method}"}}


def main() -> None:
    initialized = False
    for line in sys.stdin.buffer:
        if LOG:
            with open(LOG, "ab") as f:
                f.write(line if line.endswith(b"\n") else line + b"\n")
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
            continue  # notifications (initialized, cancelled) need no answer
        out = answer(msg, initialized)
        if msg["method"] == "initialize" and "result" in out:
            initialized = True
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
