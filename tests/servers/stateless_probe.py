"""A small mcpkit server for the 2026-07-28 tests: its handlers record what happened to them.

``slow(tag, seconds)`` waits (reporting progress first when the request asked for it) and
records ``started``, then ``finished`` or ``cancelled``; ``events(tag)`` answers with that
record as JSON text, so a test can see over the wire whether a handler was cancelled.
``EVENTS`` is the same record for in-process tests.

    python tests/servers/stateless_probe.py            # stdio
    python tests/servers/stateless_probe.py --http N   # Streamable HTTP on 127.0.0.1:N
"""

from __future__ import annotations

import json
import sys

import anyio

from mcpkit import Context, Server

EVENTS: dict[str, list[str]] = {}

server = Server("stateless-probe", "1.0.0")


@server.tool
async def slow(tag: str, seconds: float, ctx: Context) -> str:
    """Wait ``seconds``; records started / finished / cancelled under ``tag``."""
    record = EVENTS.setdefault(tag, [])
    record.append("started")
    try:
        await ctx.report_progress(0, seconds, "started")
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        record.append("cancelled")
        raise
    record.append("finished")
    return f"slept {seconds}"


@server.tool
async def events(tag: str) -> str:
    """What happened to the ``slow`` calls tagged ``tag`` (a JSON array of strings)."""
    return json.dumps(EVENTS.get(tag, []))


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run()
