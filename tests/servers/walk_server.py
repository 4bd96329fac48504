"""A plain server whose tools trace a ``tools/call`` through mcpkit (tests/test_walk.py).

``start_walk`` turns on ``sys.setprofile`` in the event loop's thread; from then on every
mcpkit module a function is entered in is noted, in the order first reached, until
``stop_walk`` turns it off and returns the list. Between the two the client calls
``add``: the walk of docs/architecture.md. Run as ``walk_server.py`` (stdio) or
``walk_server.py PORT`` (Streamable HTTP on 127.0.0.1:PORT).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import mcpkit
from mcpkit import Server

PACKAGE = str(Path(mcpkit.__file__).parent) + "/"
seen: dict[str, None] = {}


def _note(frame: FrameType, event: str, arg: Any) -> None:
    if event == "call":
        name = frame.f_code.co_filename
        if name.startswith(PACKAGE):
            seen.setdefault(name[len(PACKAGE):], None)


server = Server("walk")


@server.tool
async def start_walk() -> str:
    """Start noting the modules entered (async: it runs in the event loop's thread, where
    the profile hook is set)."""
    seen.clear()
    sys.setprofile(_note)
    return "tracing"


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
async def stop_walk() -> list[str]:
    """Stop, and return the modules entered since start_walk, in order."""
    sys.setprofile(None)
    return list(seen)


if __name__ == "__main__":
    if len(sys.argv) > 1:  # the housekeeping sweep must not run during the walk
        server.run("http", port=int(sys.argv[1]), sweep_interval=3600)
    else:
        server.run()
