"""A raw stdio "server" that answers ``initialize`` and then ignores everything.

Stands in for a server that hung after the handshake: it reads every line (and appends
it to the file named by ``MCPKIT_GAPS_LOG``, when set) but never answers anything else,
not even ``ping``. It exits when its stdin ends.
"""

from __future__ import annotations

import json
import os
import sys

KNOWN = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LOG = os.environ.get("MCPKIT_GAPS_LOG")


def main() -> None:
    for line in sys.stdin.buffer:
        if LOG:
            with open(LOG, "ab") as f:
                f.write(line if line.endswith(b"\n") else line + b"\n")
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("method") == "initialize" and "id" in msg:
            wanted = (msg.get("params") or {}).get("protocolVersion")
            answer = {
                "jsonrpc": "2.0",
                "id": msg["id"],
                "result": {
                    "protocolVersion": wanted if wanted in KNOWN else KNOWN[-1],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "silent", "version": "0"},
                },
            }
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
