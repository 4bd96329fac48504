"""Stdio servers that misbehave at the transport level, for the checker's robustness tests.

``python tests/servers/check_hostile.py MODE``:

- ``silent``: reads stdin and never writes a byte;
- ``crash``: answers ``initialize``, then exits at the next message;
- ``flood``: answers ``initialize`` and ``ping`` but also writes notifications without pause;
- ``noline``: writes 20 MB without a newline, then nothing;
- ``garbage``: answers every line with binary junk.

The checker must finish in bounded time and report, never hang or crash.
"""

from __future__ import annotations

import json
import sys
import threading


def write(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def init_result(msg: dict) -> dict:
    return {"jsonrpc": "2.0", "id": msg.get("id"), "result": {
        "protocolVersion": "2025-11-25", "capabilities": {"logging": {}},
        "serverInfo": {"name": "hostile", "version": "1"}}}


def main(mode: str) -> None:
    if mode == "noline":
        sys.stdout.write("x" * 20_000_000)
        sys.stdout.flush()
    lock = threading.Lock()
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if mode == "silent" or mode == "noline":
            continue
        if mode == "garbage":
            sys.stdout.buffer.write(b"\x00\xff\xfe garbage \x1b[2J\n")
            sys.stdout.flush()
            continue
        if not isinstance(msg, dict) or "id" not in msg:
            continue
        if msg.get("method") == "initialize":
            with lock:
                write(init_result(msg))
            if mode == "flood":
                def flood() -> None:
                    n = 0
                    while True:
                        n += 1
                        with lock:
                            try:
                                write({"jsonrpc": "2.0", "method": "notifications/message",
                                       "params": {"level": "info", "data": f"spam {n}"}})
                            except (BrokenPipeError, ValueError):
                                return
                threading.Thread(target=flood, daemon=True).start()
            continue
        if mode == "crash":
            sys.exit(3)
        with lock:
            write({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32601, "message": f"Method not found: {msg.get('method')}"}})


if __name__ == "__main__":
    main(sys.argv[1])
