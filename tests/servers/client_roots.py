"""A purpose-built server for the client tests: tools that ask the client for its roots.

    python tests/servers/client_roots.py         # serve on stdio

``roots`` calls ``ctx.list_roots()`` and returns the URIs; ``roots_changed`` returns how
many ``notifications/roots/list_changed`` this process has received.
"""

from __future__ import annotations

from mcpkit import Context, Server

server = Server("client-roots", "0.1.0")
changes = {"count": 0}


async def _on_roots_changed(ctx: Context) -> None:
    changes["count"] += 1


server.on_roots_changed = _on_roots_changed


@server.tool
async def roots(ctx: Context) -> list[str]:
    """The client's root URIs, as the client reported them (roots/list)."""
    return [r["uri"] for r in await ctx.list_roots(timeout=5)]


@server.tool
async def roots_changed() -> int:
    """How many roots/list_changed notifications this server received."""
    return changes["count"]


if __name__ == "__main__":
    server.run()
