"""A stdio server written with the *official* ``mcp`` Python SDK (2.3.0), for
``tests/test_client_interop_official.py``: mcpkit's ``Client`` drives it.

Every feature a client meets: tools (plain text, structured output, progress, logging,
errors, an image, a slow one, and tools that call back into the client: sampling, sampling
with tools, form and URL elicitation, roots, ping), a static resource, a resource
template, a prompt with arguments, completions, ``logging/setLevel`` and
``resources/subscribe``/``unsubscribe`` (with ``notifications/resources/updated``).

``MCPServer`` does not register ``logging/setLevel`` or ``resources/(un)subscribe``
handlers itself, so they are added on its low-level server; ``run_stdio_async`` is
replaced by a loop that advertises ``listChanged`` so the capabilities are realistic.

Run: ``python tests/servers/official_everything.py`` (stdio; logs go to stderr).
"""

from __future__ import annotations

import json
import os
import warnings

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPDeprecationWarning
from official_common import add_common
from pydantic import BaseModel, Field

if os.environ.get("OFFICIAL_LEGACY_ONLY"):  # a handshake-only server (tests of auto mode)
    import mcp.server.runner as _runner

    # every request is then judged by the handshake rules (refused before initialize)
    _runner._has_modern_envelope = lambda params: False

    _runner.MODERN_PROTOCOL_VERSIONS = ()  # type: ignore[assignment]


# Sampling, roots and logging are deprecated at 2026-07-28; this server speaks the
# handshake-era revisions, where they are current API.
warnings.simplefilter("ignore", MCPDeprecationWarning)

# 1x1 transparent PNG
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)

server = MCPServer(
    "official-everything",
    version="2.3.0-test",
    instructions="A server built with the official MCP SDK, for mcpkit's client tests.",
)
STATE: dict[str, object] = {"level": None, "subscriptions": set()}


# ---------------------------------------------------------------------- tools


@server.tool()
def echo(text: str) -> str:
    """Echo the text back unchanged."""
    return text


class Sum(BaseModel):
    a: int
    b: int
    sum: int


@server.tool(title="Add two integers")
def add(a: int, b: int) -> Sum:
    """Add two integers; the result is structured."""
    return Sum(a=a, b=b, sum=a + b)


@server.tool()
async def slow_count(steps: int, ctx: Context) -> str:
    """Count to ``steps``, reporting progress after each step."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"counted to {steps}"


@server.tool()
async def chatter(text: str, ctx: Context) -> str:
    """Log ``text`` at debug, info and warning, with a logger name on the last."""
    await ctx.debug(f"debug: {text}")
    await ctx.info(f"info: {text}")
    await ctx.warning({"warning": text}, logger_name="chatter")
    return "logged"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with ``reason`` (a ``ToolError``: the message reaches the client)."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
def crash() -> str:
    """Raises an unexpected exception (the SDK masks its message)."""
    raise RuntimeError("internal detail")


@server.tool()
async def nap(seconds: float) -> str:
    """Sleep ``seconds`` (for client-side timeouts and cancellation)."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def pixel() -> Image:
    """A 1x1 PNG image."""
    return Image(data=PNG, format="png")


@server.tool()
async def ask_llm(question: str, ctx: Context) -> str:
    """Ask the client's LLM (sampling/createMessage) and return its answer."""
    result = await ctx.session.create_message(
        messages=[
            types.SamplingMessage(
                role="user", content=types.TextContent(type="text", text=question)
            )
        ],
        max_tokens=64,
        system_prompt="Answer briefly.",
        temperature=0.25,
        stop_sequences=["\n\n"],
        metadata={"origin": "ask_llm"},
        model_preferences=types.ModelPreferences(
            hints=[types.ModelHint(name="claude")], speed_priority=0.5
        ),
        related_request_id=ctx.request_id,
    )
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return json.dumps({"model": result.model, "role": result.role, "text": text,
                       "stopReason": result.stop_reason})


WEATHER_TOOL = types.Tool(
    name="get_weather",
    description="Current weather for a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}},
                  "required": ["city"]},
)


@server.tool()
async def agent(question: str, ctx: Context) -> str:
    """Sampling with tools (2025-11-25): the client's LLM may call ``get_weather``; the
    server runs it and samples again with the tool result."""
    messages = [types.SamplingMessage(role="user",
                                      content=types.TextContent(type="text", text=question))]
    first = await ctx.session.create_message(
        messages=messages, max_tokens=100, tools=[WEATHER_TOOL],
        tool_choice=types.ToolChoice(mode="auto"), related_request_id=ctx.request_id,
    )
    uses = [b for b in first.content_as_list if isinstance(b, types.ToolUseContent)]
    rounds = [{"stopReason": first.stop_reason, "toolUses": [u.name for u in uses]}]
    if uses:
        messages.append(types.SamplingMessage(role="assistant", content=first.content_as_list))
        messages.append(types.SamplingMessage(role="user", content=[
            types.ToolResultContent(
                type="tool_result", tool_use_id=u.id,
                content=[types.TextContent(type="text", text=f"sunny in {u.input['city']}")],
            ) for u in uses
        ]))
        second = await ctx.session.create_message(
            messages=messages, max_tokens=100, tools=[WEATHER_TOOL],
            related_request_id=ctx.request_id,
        )
        texts = [b.text for b in second.content_as_list if isinstance(b, types.TextContent)]
        rounds.append({"stopReason": second.stop_reason, "text": " ".join(texts)})
    return json.dumps(rounds)


class Booking(BaseModel):
    name: str = Field(description="Who books")
    guests: int = Field(default=2, description="How many guests", ge=1, le=10)
    vegetarian: bool = Field(default=False, description="Vegetarian menu")


@server.tool()
async def book_table(date: str, ctx: Context) -> str:
    """Ask the user for booking details (form elicitation)."""
    result = await ctx.elicit(f"Book a table on {date}?", Booking)
    if result.action == "accept":
        return json.dumps({"action": "accept", **result.data.model_dump()})
    return json.dumps({"action": result.action})


@server.tool()
async def connect(service: str, ctx: Context) -> str:
    """URL-mode elicitation (2025-11-25), then ``notifications/elicitation/complete``."""
    result = await ctx.elicit_url(f"Sign in to {service}", f"https://auth.example/{service}",
                                  elicitation_id=f"connect-{service}")
    if result.action == "accept":
        await ctx.session.send_elicit_complete(f"connect-{service}")
    return json.dumps({"action": result.action})


@server.tool()
async def ping_client(ctx: Context) -> str:
    """Ping the client (a server->client ``ping``)."""
    await ctx.session.send_ping()
    return "pong"


@server.tool()
async def show_roots(ctx: Context) -> str:
    """List the client's roots (roots/list)."""
    result = await ctx.session.list_roots()
    return json.dumps([{"uri": str(r.uri), "name": r.name} for r in result.roots])


# ---------------------------------------------------------------------- resources


@server.resource("info://server", name="server-info", title="Server info",
                 description="Static facts about this server", mime_type="application/json")
def server_info() -> str:
    return json.dumps({"sdk": "mcp", "version": "2.3.0"})


@server.resource("greeting://{name}", name="greeting", description="A greeting for {name}",
                 mime_type="text/plain")
def greeting(name: str) -> str:
    return f"Hello, {name}!"


# ---------------------------------------------------------------------- prompts


@server.prompt(title="Review code")
def review(code: str, language: str = "python") -> list[Message]:
    """Ask for a review of ``code``."""
    return [
        UserMessage(f"Please review this {language} code:\n{code}"),
        AssistantMessage("Sure, looking at it now."),
    ]


# ---------------------------------------------------------------------- shared handlers

add_common(server, STATE)
lowlevel = server._lowlevel_server


async def main() -> None:
    options = lowlevel.create_initialization_options(
        NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
    )
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
