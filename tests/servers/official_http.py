"""A Streamable HTTP server written with the *official* ``mcp`` Python SDK (2.3.0), for
``tests/test_http_interop_official.py`` (part B: mcpkit's ``Client`` drives it).

    python tests/servers/official_http.py PORT [--tap LOGFILE] [--json | --sse]

Serves ``MCPServer.streamable_http_app()`` (stateful sessions, SSE answers unless
``--json``) with uvicorn on 127.0.0.1:PORT at ``/mcp``; with ``--sse`` the legacy HTTP+SSE
app instead (``/sse``, then POSTs to ``/messages/``). With ``--tap`` the app is wrapped
in ``tests/support/asgi_tap.AsgiTap``, which appends every HTTP exchange (request
bodies, JSON bodies and SSE events of the answers) to LOGFILE as JSON lines.

Features: tools (text, structured output, progress, logging on the request stream and
on the standalone GET stream, an error, an image, sleeping), and tools that call back
into the client over HTTP: sampling and form elicitation on the tool call's own SSE
stream, ``roots/list`` and ``ping`` both on the GET stream (no related request) and on
the request stream; a static resource, a resource template, a prompt with arguments,
completions, ``logging/setLevel`` and ``resources/(un)subscribe`` (the last two added on
the low-level server, which ``MCPServer`` leaves without handlers).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import ServerMessageMetadata
from official_common import add_common
from pydantic import BaseModel, Field

# Sampling, roots and logging are deprecated at 2026-07-28; this server speaks the
# handshake-era revisions, where they are current API.
warnings.simplefilter("ignore", MCPDeprecationWarning)

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)

server = MCPServer(
    "official-http",
    version="2.3.0-http",
    instructions="An official-SDK Streamable HTTP server, for mcpkit's client tests.",
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
        await anyio.sleep(0.01)
    return f"counted to {steps}"


@server.tool()
async def chatter(text: str, ctx: Context) -> str:
    """Log ``text`` at debug, info and warning (on this request's stream)."""
    await ctx.debug(f"debug: {text}")
    await ctx.info(f"info: {text}")
    await ctx.warning({"warning": text}, logger_name="chatter")
    return "logged"


@server.tool()
async def broadcast(text: str, ctx: Context) -> str:
    """Log ``text`` with no related request: it travels on the standalone GET stream."""
    await ctx.session.send_log_message("notice", f"broadcast: {text}", logger="broadcast")
    return "sent"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with ``reason``."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
async def nap(seconds: float) -> str:
    """Sleep ``seconds``."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def pixel() -> Image:
    """A 1x1 PNG image."""
    return Image(data=PNG, format="png")


@server.tool()
async def ask_llm(question: str, ctx: Context) -> str:
    """Ask the client's LLM (sampling/createMessage on this call's SSE stream)."""
    result = await ctx.session.create_message(
        messages=[types.SamplingMessage(role="user",
                                        content=types.TextContent(type="text", text=question))],
        max_tokens=64,
        system_prompt="Answer briefly.",
        temperature=0.25,
        metadata={"origin": "ask_llm"},
        related_request_id=ctx.request_id,
    )
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return json.dumps({"model": result.model, "role": result.role, "text": text,
                       "stopReason": result.stop_reason})


class Booking(BaseModel):
    name: str = Field(description="Who books")
    guests: int = Field(default=2, description="How many guests", ge=1, le=10)
    vegetarian: bool = Field(default=False, description="Vegetarian menu")


@server.tool()
async def book_table(date: str, ctx: Context) -> str:
    """Ask the user for booking details (form elicitation on this call's SSE stream)."""
    result = await ctx.elicit(f"Book a table on {date}?", Booking)
    if result.action == "accept":
        return json.dumps({"action": "accept", **result.data.model_dump()})
    return json.dumps({"action": result.action})


def _roots_json(result: types.ListRootsResult) -> str:
    return json.dumps([{"uri": str(r.uri), "name": r.name} for r in result.roots])


@server.tool()
async def show_roots(ctx: Context) -> str:
    """roots/list with no related request: it travels on the standalone GET stream."""
    return _roots_json(await ctx.session.list_roots())


@server.tool()
async def show_roots_here(ctx: Context) -> str:
    """roots/list on this call's own SSE stream (related to the tools/call)."""
    result = await ctx.session.send_request(
        types.ListRootsRequest(), types.ListRootsResult,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )
    return _roots_json(result)


@server.tool()
async def ping_client(ctx: Context) -> str:
    """A server->client ``ping`` (on the GET stream)."""
    await ctx.session.send_ping()
    return "pong"


# ---------------------------------------------------------------------- resources


@server.resource("info://server", name="server-info", title="Server info",
                 description="Static facts about this server", mime_type="application/json")
def server_info() -> str:
    return json.dumps({"sdk": "mcp", "transport": "streamable-http"})


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


def main(argv: list[str]) -> None:
    import uvicorn

    port = int(argv[0])
    if "--sse" in argv:  # the legacy 2024-11-05 HTTP+SSE transport at /sse
        app = server.sse_app(host="127.0.0.1")
    else:
        app = server.streamable_http_app(json_response="--json" in argv, host="127.0.0.1")
    if "--tap" in argv:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        from tests.support.asgi_tap import AsgiTap

        app = AsgiTap(app, log=argv[argv.index("--tap") + 1])  # type: ignore[assignment]
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False,
                lifespan="on")


if __name__ == "__main__":
    main(sys.argv[1:])
