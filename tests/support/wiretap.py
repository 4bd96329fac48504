"""Sit between a stdio MCP client and the real server and record both directions.

    python tests/support/wiretap.py LOGFILE -- python examples/everything.py

Spawns the command after ``--``, forwards this process's stdin to the child's stdin and
the child's stdout to this process's stdout byte for byte (line by line, flushed at
once), lets the child's stderr through untouched, and appends every line to LOGFILE as
a JSON line ``{"dir": "c2s" | "s2c", "msg": <the parsed message>}`` (``"raw"`` with the
undecoded text instead of ``"msg"`` when a line is not JSON). A line is logged *before*
it is forwarded, so the log's order is causal: a request always precedes its answer.

When the client closes stdin, the child's stdin is closed; when the child closes its
stdout, this process waits for it and exits with its exit status.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import IO, Any


class _Log:
    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def record(self, direction: str, line: bytes) -> None:
        text = line.decode("utf-8", errors="replace").rstrip("\r\n")
        if not text.strip():
            return
        entry: dict[str, Any] = {"dir": direction}
        try:
            entry["msg"] = json.loads(text)
        except ValueError:
            entry["raw"] = text
        with self._lock:
            self._file.write(json.dumps(entry) + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _pump(src: IO[bytes], dst: IO[bytes], direction: str, log: _Log) -> None:
    """Copy ``src`` to ``dst`` line by line, logging each line first; close ``dst`` at EOF."""
    try:
        while line := src.readline():
            log.record(direction, line)
            dst.write(line)
            dst.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass  # the other end went away: nothing left to forward
    finally:
        try:
            dst.close()
        except (BrokenPipeError, OSError):
            pass


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: wiretap.py LOGFILE -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    log = _Log(argv[0])
    child = subprocess.Popen(argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    c2s = threading.Thread(
        target=_pump, args=(sys.stdin.buffer, child.stdin, "c2s", log), daemon=True
    )
    c2s.start()
    _pump(child.stdout, sys.stdout.buffer, "s2c", log)
    code = child.wait()
    log.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
