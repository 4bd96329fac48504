"""What a handler can see and touch of the server.

``ctx.session_state`` is the application's alone: a tool that writes, overwrites or clears
any key in it (the key mcpkit once kept subscriptions under included) breaks neither
resource subscriptions, nor the log level, nor list_changed, in process and over
Streamable HTTP. ``Context.stateless`` is the 2026-07-28 request's own metadata
(``modern`` is its deprecated read-only alias).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcpkit import Context, Server
from mcpkit.client import Client
from mcpkit.protocol.stateless import RequestMeta

from .support.http import LiveServer

LIMIT = 10  # seconds any test may take

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_context_stateless_and_its_deprecated_alias() -> None:
    server = Server("alias")
    seen: list[Context] = []

    @server.tool
    async def which(ctx: Context) -> str:
        seen.append(ctx)
        return "seen"

    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            assert (await client.call_tool("which")).text == "seen"
        async with Client(server, mode="stateless") as client:
            assert (await client.call_tool("which")).text == "seen"
    stateful, stateless = seen
    assert stateful.stateless is None and stateful.modern is None
    assert isinstance(stateless.stateless, RequestMeta)
    assert stateless.stateless.revision.version == "2026-07-28"
    assert stateless.modern is stateless.stateless
    with pytest.raises(AttributeError):
        stateless.modern = None  # type: ignore[misc]


# ---------------------------------------------------------------------- session_state

WATCHED = "test://watched"
CLOBBER: dict[str, Any] = {
    "subscriptions": None,  # where mcpkit kept resources/subscribe before
    "log_level": "emergency",
    "listeners": 42,
    "lifespan": "mine",
    "state": {},
}


def clobbering_server() -> Server:
    server = Server("clobber")
    server.add_resource("watched", WATCHED)

    @server.tool
    async def clobber(ctx: Context) -> str:
        """Overwrite every key mcpkit could use, clear the dict, then overwrite again."""
        ctx.session_state.update(CLOBBER)
        ctx.session_state["subscriptions"] = "test://watched is not a set"
        ctx.session_state.clear()
        ctx.session_state.update(CLOBBER)
        return "clobbered"

    @server.tool
    async def recall(ctx: Context) -> str:
        return repr(sorted(ctx.session_state.items(), key=str))

    @server.tool
    async def touch(ctx: Context) -> str:
        ctx.server.notify_resource_updated(WATCHED)
        return "touched"

    @server.tool
    async def speak(ctx: Context) -> str:
        await ctx.info("quiet")
        await ctx.warning("loud")
        return "spoke"

    @server.tool
    async def grow(ctx: Context) -> str:
        ctx.server.add_tool(lambda: "new", name="grown")
        return "grew"

    return server


@asynccontextmanager
async def connected(server: Server, transport: str,
                    on_notification: Callable[[str, dict[str, Any]], None]
                    ) -> AsyncIterator[Client]:
    if transport == "memory":
        async with Client(server, on_notification=on_notification) as client:
            yield client
        return
    with LiveServer(server.asgi_app()) as live:
        async with Client(live.url, on_notification=on_notification) as client:
            yield client


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_session_state_cannot_break_server_bookkeeping(transport: str) -> None:
    notes: list[tuple[str, dict[str, Any]]] = []  # what arrived, as far as waited for
    send, receive = anyio.create_memory_object_stream[tuple[str, dict[str, Any]]](100)

    def seen(method: str, params: dict[str, Any]) -> None:
        send.send_nowait((method, params))

    def of(method: str) -> list[dict[str, Any]]:
        return [p for m, p in notes if m == method]

    async def until(method: str, count: int) -> None:
        while len(of(method)) < count:
            notes.append(await receive.receive())

    with anyio.fail_after(LIMIT), send, receive:
        async with connected(clobbering_server(), transport, seen) as client:
            await client.subscribe(WATCHED)
            await client.set_logging_level("warning")
            assert (await client.call_tool("clobber")).text == "clobbered"
            assert (await client.call_tool("recall")).text == repr(
                sorted(CLOBBER.items(), key=str))

            await client.call_tool("touch")
            await until("notifications/resources/updated", 1)
            assert of("notifications/resources/updated") == [{"uri": WATCHED}]

            await client.call_tool("speak")
            await until("notifications/message", 1)
            await client.call_tool("grow")
            await until("notifications/tools/list_changed", 1)
            assert [p["data"] for p in of("notifications/message")] == ["loud"]
            assert "grown" in {t.name for t in await client.list_tools()}

            await client.unsubscribe(WATCHED)
            await client.call_tool("touch")
            await client.call_tool("speak")  # a later notification: the touch had its turn
            await until("notifications/message", 2)
            assert len(of("notifications/resources/updated")) == 1
