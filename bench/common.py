"""What several bench scripts need alike: a free loopback port, an HTTP server started
in its own process group and stopped by pid, and their figures merged into one
mcpbench result file (``bench/run.sh``'s ``results.json``, read by ``bench/goals.py``).

The scripts run as ``python bench/NAME.py``, so this is imported as ``common``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

START_SECONDS = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(argv: list[str], port: int, who: str) -> Iterator[str]:
    """Start ``argv`` in its own process group; its URL once it answers; stopped by pid
    (SIGTERM to the group, SIGKILL after 10 s). ``who`` names the script in errors."""
    url = f"http://127.0.0.1:{port}/mcp"
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if proc.poll() is not None:
                sys.exit(f"{who}: {argv} exited with status {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(url, timeout=1.0)
                break
            if time.monotonic() > deadline:
                sys.exit(f"{who}: {argv} did not answer within {START_SECONDS}s")
            time.sleep(0.1)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def merge(path: str, key: str, figures: dict[str, Any]) -> None:
    """Write ``figures`` under ``key`` into the JSON file at ``path`` (created if absent),
    keeping everything else in it."""
    file = Path(path)
    data = json.loads(file.read_text()) if file.exists() else {}
    data[key] = figures
    file.write_text(json.dumps(data, indent=1))
