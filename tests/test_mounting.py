"""Mounting ``Server.asgi_app()`` inside a host app (issue #15, item 6).

Host apps (Starlette's ``Mount``, FastAPI's ``app.mount``) put their prefix in
``root_path`` and keep it in ``path``; they answer the ASGI lifespan themselves and do
not forward it. mcpkit's endpoints match the path below the mount point (both the
Streamable HTTP endpoint and the legacy HTTP+SSE pair, whose ``endpoint`` event names the
mounted messages URL), and the server's lifespan is entered on the first request when
nobody started it (once, however many sessions), or by the host's own lifespan through
``Server.lifespan_scope()`` (the documented recipe). A lifespan that cannot start fails
each request with a 500 that says so, instead of handlers failing one by one.

Everything runs for real: the host app on uvicorn (loopback), mcpkit's client and the
official ``mcp`` client's HTTP+SSE transport.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from fastapi import FastAPI
from mcp import ClientSession
from mcp.client.sse import sse_client
from starlette.applications import Starlette
from starlette.routing import Mount

from mcpkit import Context, Server
from mcpkit.client import Client, HandshakeError
from mcpkit.transports.asgi import local_path
from tests.support.http import LiveServer

LIMIT = 10


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def counting_server(fail: bool = False) -> tuple[Server, list[str]]:
    """A server whose lifespan records its entries/exits and whose tool reads it."""
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, str]]:
        if fail:
            raise RuntimeError("database unreachable (password=hunter2)")
        events.append("enter")
        try:
            yield {"db": "open"}
        finally:
            events.append("exit")

    server = Server("mounted", lifespan=lifespan)

    @server.tool
    async def db_state(ctx: Context) -> str:
        """The database state the lifespan opened."""
        return str(ctx.lifespan["db"])

    return server, events


@pytest.mark.anyio
async def test_starlette_mount_serves_the_endpoint_and_starts_the_lifespan_once() -> None:
    server, events = counting_server()
    host = Starlette(routes=[Mount("/api", app=server.asgi_app())])
    with LiveServer(host) as live:
        url = f"{live.base}/api/mcp"
        with anyio.fail_after(LIMIT):
            for mode in ("stateful", "stateless", "stateful"):
                async with Client(url, mode=mode, timeout=LIMIT) as client:
                    assert (await client.call_tool("db_state")).text == "open"
            async with httpx.AsyncClient() as http:
                lost = await http.post(f"{live.base}/api/elsewhere", json={})
        assert events == ["enter"]  # entered on first use, once for all sessions
        assert lost.status_code == 404
        assert "the MCP endpoint is /api/mcp" in lost.json()["error"]["message"]
    assert events == ["enter", "exit"]  # left when the server shut down


@pytest.mark.anyio
async def test_fastapi_recipe_enters_the_lifespan_in_the_hosts_lifespan() -> None:
    server, events = counting_server()

    @asynccontextmanager
    async def host_lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with server.lifespan_scope():
            yield

    host = FastAPI(lifespan=host_lifespan)

    @host.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    host.mount("/tools", server.asgi_app())
    with LiveServer(host) as live:
        assert events == ["enter"]  # by the host, before any request
        with anyio.fail_after(LIMIT):
            async with Client(f"{live.base}/tools/mcp", timeout=LIMIT) as client:
                assert (await client.call_tool("db_state")).text == "open"
            async with httpx.AsyncClient() as http:
                assert (await http.get(f"{live.base}/health")).json() == {"status": "ok"}
        assert events == ["enter"]  # not entered a second time by the first request
    assert events == ["enter", "exit"]


@pytest.mark.anyio
async def test_legacy_sse_endpoint_names_the_mounted_messages_url() -> None:
    server, _events = counting_server()
    host = Starlette(routes=[Mount("/api", app=server.asgi_app())])
    with LiveServer(host) as live, anyio.fail_after(LIMIT):
        async with sse_client(f"{live.base}/api/sse", timeout=LIMIT) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("db_state", {})
            assert result.content[0].text == "open"  # type: ignore[union-attr]
        async with httpx.AsyncClient() as http, http.stream(
                "GET", f"{live.base}/api/sse") as resp:
            async for line in resp.aiter_lines():
                if line.startswith("data: "):
                    assert line.startswith("data: /api/messages?session_id=")
                    break


@pytest.mark.anyio
async def test_a_lifespan_that_cannot_start_fails_requests_clearly() -> None:
    server, _events = counting_server(fail=True)
    host = Starlette(routes=[Mount("/api", app=server.asgi_app())])
    with LiveServer(host) as live, anyio.fail_after(LIMIT):
        async with httpx.AsyncClient() as http:
            for _ in range(2):  # every request, not just the first
                resp = await http.post(f"{live.base}/api/mcp", json={
                    "jsonrpc": "2.0", "id": 1, "method": "ping"})
                assert resp.status_code == 500
                message = resp.json()["error"]["message"]
                assert "its lifespan failed" in message and "restart" in message
                assert "hunter2" not in message  # the details stay in the server's log
        with pytest.raises(HandshakeError, match="lifespan failed"):
            async with Client(f"{live.base}/api/mcp", timeout=LIMIT):
                pass


@pytest.mark.parametrize(("path", "root", "local"), [
    ("/api/mcp", "/api", "/mcp"),      # ASGI today: the prefix in both
    ("/mcp", "/api", "/mcp"),          # older servers: already stripped
    ("/api", "/api", "/"),
    ("/apiary/mcp", "/api", "/apiary/mcp"),  # a longer segment is not the prefix
    ("/mcp", "", "/mcp"),
])
def test_local_path(path: str, root: str, local: str) -> None:
    scope: dict[str, Any] = {"path": path, "root_path": root}
    assert local_path(scope) == local
