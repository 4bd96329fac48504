"""A stdio server for tests/test_stdio_backpressure.py: ``echo`` returns its text,
``blob`` a text of the size asked for (a short request, a long answer); ``flood`` sends
``count`` progress notifications, each with a message of ``size`` bytes, as fast as its
``await ctx.report_progress`` lets it, then returns (also as a task); ``log_flood`` does
the same with log messages. The first argument names the anyio backend (default asyncio).
"""

import sys

import anyio

from mcpkit import Context, Server

server = Server("flood", "1.0")


@server.tool
async def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool
async def blob(size: int) -> str:
    """Return size bytes of text: a short request, a long answer."""
    return "b" * size


@server.tool(task="optional")
async def flood(count: int, size: int, ctx: Context) -> str:
    """Report progress 1..count, each with a message of size bytes."""
    filler = "p" * size
    for i in range(1, count + 1):
        await ctx.report_progress(i, count, filler)
    return f"sent {count}"


@server.tool
async def log_flood(count: int, size: int, ctx: Context) -> str:
    """Log count messages of size bytes at level info."""
    filler = "l" * size
    for i in range(1, count + 1):
        await ctx.info(f"{i} {filler}")
    return f"logged {count}"


if __name__ == "__main__":
    anyio.run(server.serve_stdio, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
