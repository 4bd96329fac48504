"""A hand-written stdio "server" that misbehaves on purpose, for the client tests.

    python tests/servers/client_raw.py MODE [LOGFILE]

It speaks raw JSON lines (no mcpkit), appends every line it receives to LOGFILE (flushed
before it answers, so once an answer arrived, everything sent before it is in the log),
and behaves according to MODE:

    normal    answer initialize (echoing the offered version), ping, tools/list, and
              tools/call "fast"; never answer tools/call "slow"; answer tools/call "bad"
              with a malformed result (a content block of an unknown type)
    late      like normal, but answer a "slow" call after it is cancelled (a late answer)
    version   answer initialize with protocolVersion "1999-01-01"
    cursor    tools/list always returns the same nextCursor
    bare      declare no capabilities at all
    garbage   write non-JSON lines to stdout before every answer
    noterm    ignore SIGTERM (and so does a child it starts in its process group); keep
              running after stdin closes; write "pid PID" / "child PID" to LOGFILE
    orphan    like normal, but first start a child (in its process group, stdio detached)
              that it leaves behind when it exits; write "child PID" to LOGFILE
    crash     write a few lines to stderr (one not UTF-8) and exit 3 before reading anything
    deep      like normal, plus a tool "deep" declaring an outputSchema (``a``: a string)
              whose call answers structuredContent with ``a`` nested 300 levels deep
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
LOG = open(sys.argv[2], "a", encoding="utf-8") if len(sys.argv) > 2 else None

TOOLS = [
    {"name": "fast", "description": "answers at once", "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "never answers", "inputSchema": {"type": "object"}},
    {"name": "bad", "description": "answers malformed", "inputSchema": {"type": "object"}},
]


DEEP_TOOL = {"name": "deep", "description": "answers deeply nested structuredContent",
             "inputSchema": {"type": "object"},
             "outputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}}


def nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


def log(text: str) -> None:
    if LOG is not None:
        LOG.write(text.rstrip("\n") + "\n")
        LOG.flush()


def send(msg: dict[str, Any]) -> None:
    out = sys.stdout.buffer
    if MODE == "garbage":
        out.write(b"this is not JSON\n{\"half\": \n\x00\xff binary junk\n")
    out.write(json.dumps(msg).encode() + b"\n")
    out.flush()


def result(rid: Any, value: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": value})


def main() -> int:
    if MODE == "crash":
        sys.stderr.write("starting the crashy server\n")
        sys.stderr.flush()
        sys.stderr.buffer.write(b"a line that is not UTF-8: \xff\xfe\n")
        sys.stderr.buffer.flush()
        sys.stderr.write("RuntimeError: the database is on fire\n")
        sys.stderr.flush()
        return 3
    if MODE == "noterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([
            sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "time.sleep(120)",
        ])
        log(f"pid {os.getpid()}")
        log(f"child {child.pid}")
    if MODE == "orphan":
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        )
        log(f"child {child.pid}")
    slow: set[Any] = set()
    for raw in sys.stdin.buffer:
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            continue
        log(line)
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method is None or (rid is None and method != "notifications/cancelled"):
            continue  # responses and other notifications: nothing to do
        if method == "initialize":
            version = "1999-01-01" if MODE == "version" else params.get("protocolVersion")
            caps: dict[str, Any] = {} if MODE == "bare" else {"tools": {}}
            result(rid, {"protocolVersion": version, "capabilities": caps,
                         "serverInfo": {"name": f"raw-{MODE}", "version": "0"}})
        elif method == "ping":
            result(rid, {})
        elif method == "tools/list":
            if MODE == "cursor":
                result(rid, {"tools": TOOLS[:1], "nextCursor": "same"})
            else:
                result(rid, {"tools": TOOLS + ([DEEP_TOOL] if MODE == "deep" else [])})
        elif method == "tools/call":
            if params.get("name") == "slow":
                slow.add(rid)
            elif params.get("name") == "deep":
                result(rid, {"content": [{"type": "text", "text": "deep"}], "isError": False,
                             "structuredContent": {"a": nested(300)}})
            elif params.get("name") == "bad":
                result(rid, {"content": [{"type": "hologram", "data": "?"}], "isError": False})
            else:
                result(rid, {"content": [{"type": "text", "text": "FAST"}], "isError": False})
        elif method == "notifications/cancelled":
            cancelled = params.get("requestId")
            if MODE == "late" and cancelled in slow:
                slow.discard(cancelled)
                result(cancelled, {"content": [{"type": "text", "text": "LATE"}],
                                   "isError": False})
        else:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32601, "message": f"Method not found: {method}"}})
    log("stdin closed")
    if MODE == "noterm":
        while True:
            time.sleep(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
