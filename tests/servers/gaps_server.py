"""A purpose-built stdio server for ``tests/test_compliance_gaps.py``.

Tools that make server->client requests (several in a row, or one the client never
answers) and a tool that changes the resource and prompt registries of the live server.
"""

from __future__ import annotations

from typing import Any

from mcpkit import Context, RequestTimeout, Server

server = Server("gaps", "1.0.0")

NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


@server.tool
async def ask_many(ctx: Context) -> str:
    """Asks the client five times: sample, elicit, list roots, a sample that times out,
    and one more sample."""
    await ctx.sample("one", timeout=10)
    await ctx.elicit("What is your name?", NAME_SCHEMA, timeout=10)
    await ctx.list_roots(timeout=10)
    try:
        await ctx.sample("never", timeout=0.3)
    except RequestTimeout:
        pass
    await ctx.sample("two", timeout=10)
    return "asked five times"


@server.tool
async def unanswered(kind: str, ctx: Context) -> str:
    """Sends one server->client request (``kind``: sample, elicit or roots) with a 0.5 s
    timeout, and returns only if the client answers it."""
    if kind == "sample":
        await ctx.sample("nobody will answer this", timeout=0.5)
    elif kind == "elicit":
        await ctx.elicit("Nobody will answer this", NAME_SCHEMA, timeout=0.5)
    else:
        await ctx.list_roots(timeout=0.5)
    return "answered"


def _dynamic_template(id: str) -> str:
    return f"dynamic {id}"


def _dynamic_prompt(topic: str) -> str:
    """A prompt added at runtime."""
    return f"Talk about {topic}."


@server.tool
async def change(kind: str, action: str) -> str:
    """Adds or removes (``action``) a ``kind`` of registration: resource, template or
    prompt."""
    if kind == "resource":
        if action == "add":
            server.add_resource("dynamic content", "test://dynamic", name="dynamic")
        else:
            server.remove_resource("test://dynamic")
    elif kind == "template":
        if action == "add":
            server.add_resource(_dynamic_template, "test://dynamic/{id}", name="dyn_template")
        else:
            server.remove_resource("test://dynamic/{id}")
    elif action == "add":
        server.add_prompt(_dynamic_prompt, name="dynamic_prompt")
    else:
        server.remove_prompt("dynamic_prompt")
    return f"{action} {kind}"


if __name__ == "__main__":
    server.run()
