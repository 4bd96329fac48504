"""The benchmark peer: echo and add (+ 200 schema-heavy tools with --tools 200)."""

from __future__ import annotations

from mcpkit import Server

server = Server("mcpkit-bench", "0.1.0")


@server.tool
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run()
