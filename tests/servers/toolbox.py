"""A purpose-built stdio server for ``tests/test_stdio_server.py``.

Tools that misbehave in the ways real tools do (print to stdout, raise, block the thread
they run on) and tools that poke the server (register a tool, report a resource update).

Environment:
    MCPKIT_TEST_MAX_MESSAGE_SIZE  ``Server(max_message_size=...)`` (default: mcpkit's)
    MCPKIT_TEST_PAGE_SIZE         ``Server(page_size=...)`` (default: mcpkit's)
    MCPKIT_TEST_LIFESPAN_MARKER   a file the lifespan appends "enter <pid>" / "exit <pid>" to
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcpkit import Context, Server

MARKER = os.environ.get("MCPKIT_TEST_LIFESPAN_MARKER")


def _mark(what: str) -> None:
    if MARKER:
        with open(MARKER, "a") as f:
            f.write(f"{what} {os.getpid()}\n")


@asynccontextmanager
async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
    _mark("enter")
    try:
        yield {"greeting": "hello from the lifespan"}
    finally:
        _mark("exit")


options: dict[str, Any] = {}
if size := os.environ.get("MCPKIT_TEST_MAX_MESSAGE_SIZE"):
    options["max_message_size"] = int(size)
if page := os.environ.get("MCPKIT_TEST_PAGE_SIZE"):
    options["page_size"] = int(page)

server = Server("toolbox", "1.0.0", lifespan=lifespan, **options)


@server.tool
async def echo(text: str) -> str:
    """Echo the text back unchanged."""
    return text


@server.tool
def chatty(text: str) -> str:
    """Writes ``text`` to stdout four ways (print, sys.stdout, fd 1, a child process)."""
    print(f"print:{text}")
    sys.stdout.write(f"sys.stdout:{text}\n")
    sys.stdout.flush()
    os.write(1, f"fd1:{text}\n".encode())
    subprocess.run([sys.executable, "-c", f"print('child:{text}')"], check=True)
    return "chatty done"


@server.tool
def boom() -> str:
    """Always raises a plain exception whose message holds a secret."""
    raise ValueError("secret-token-123")


@server.tool
def block(seconds: float) -> str:
    """A synchronous tool that blocks its thread with time.sleep."""
    time.sleep(seconds)
    return f"blocked {seconds}s"


@server.tool
async def grow(name: str) -> str:
    """Registers a new tool called ``name`` at runtime."""

    async def dynamic() -> str:
        return f"I am {name}"

    server.add_tool(dynamic, name=name, description=f"Added at runtime by grow({name!r}).")
    return f"registered {name}"


@server.tool
async def touch(uri: str) -> str:
    """Reports the resource at ``uri`` as updated to subscribed sessions."""
    server.notify_resource_updated(uri)
    return f"touched {uri}"


@server.tool
def touch_and_block(uri: str, seconds: float) -> str:
    """A synchronous tool: reports ``uri`` updated, then blocks its thread."""
    server.notify_resource_updated(uri)
    time.sleep(seconds)
    return f"touched {uri}, then blocked {seconds}s"


@server.tool
async def lifespan_state(ctx: Context) -> str:
    """Returns what the lifespan yielded."""
    return str(ctx.lifespan["greeting"])


server.add_resource("watched content", "test://watched", name="watched")
server.add_resource("other content", "test://other", name="other")


if __name__ == "__main__":
    server.run()
