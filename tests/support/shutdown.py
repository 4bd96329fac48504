"""Helpers of the graceful-shutdown tests (``test_http_drain.py``, ``test_rolling_restart.py``):
an everything server with a drain, its exit waited for with a bound, its log judged, and
exchanges read to their end, telling a complete response from a cut one.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson

from mcpkit.protocol.sse import SSEEvent

from .daemon import Daemon
from .http import EVERYTHING, McpHttp, free_port

PROBLEMS = ("WARNING", "ERROR", "CRITICAL", "Traceback", "Exception")


def everything(log: Path, *options: str, port: int | None = None) -> Daemon:
    """``examples/everything.py --http`` on a free port (or ``port``), with INFO logging
    and ``options`` (``--drain S``, ``--sqlite FILE``, ``--redis URL``), started."""
    port = port or free_port()
    daemon = Daemon([sys.executable, str(EVERYTHING), "--http", "--port", str(port),
                     "--log-level", "INFO", *options], port, log)
    daemon.start()
    return daemon


def terminate(daemon: Daemon) -> float:
    """Send SIGTERM to the server process itself (by its id); the time it was sent."""
    assert daemon.proc is not None
    os.kill(daemon.proc.pid, signal.SIGTERM)
    return time.monotonic()


async def exit_status(daemon: Daemon, limit: float) -> tuple[int, float]:
    """(exit status, the time it exited), waiting ``limit`` seconds at most."""
    proc = daemon.proc
    assert proc is not None
    with anyio.fail_after(limit):
        while proc.poll() is None:  # noqa: ASYNC110 - a process, not an event
            await anyio.sleep(0.02)
    return proc.returncode, time.monotonic()


def problems(log: Path) -> list[str]:
    """The lines of a server's output that a normal drain must not produce."""
    text = log.read_text(errors="replace")
    return [line for line in text.splitlines() if any(word in line for word in PROBLEMS)]


@dataclass
class Exchange:
    """One HTTP exchange read to its end: its events (SSE) or body (JSON), and how it
    ended (``clean``: a complete response; False: the connection was cut)."""

    status: int = 0
    headers: httpx.Headers = field(default_factory=httpx.Headers)
    events: list[SSEEvent] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    clean: bool | None = None

    @property
    def last(self) -> Any:
        assert self.messages, f"no message (status {self.status})"
        return self.messages[-1]


async def exchange(mcp: McpHttp, method: str, content: bytes | None,
                   headers: dict[str, str], started: asyncio.Event | None = None,
                   limit: float = 30.0) -> Exchange:
    """Send a request and read its response to the end (at most ``limit`` seconds),
    validating every message; ``started`` is set once the response headers arrived."""
    out = Exchange()
    with anyio.fail_after(limit):
        async with mcp.stream(method, content, headers) as live:
            out.status, out.headers = live.status, live.resp.headers
            if started is not None:
                started.set()
            if live.content_type != "text/event-stream":
                out.messages = (await live.body()).messages
                out.clean = True
                return out
            try:
                while True:
                    event = await live.next_event(limit)
                    if event.data:
                        out.messages.append(orjson.loads(event.data))
            except EOFError:
                out.clean = True
            except httpx.RemoteProtocolError:  # ended without its last chunk: cut
                out.clean = False
            out.events = live.events
    return out


async def raw_response(reader: asyncio.StreamReader, limit: float = 10.0
                       ) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response with a Content-Length read from a raw connection."""
    with anyio.fail_after(limit):
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in
                   (line.partition(":") for line in lines[1:] if line)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers, body
