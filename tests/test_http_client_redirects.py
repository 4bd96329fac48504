"""A redirect is an immediate, clear error naming where it points (issue #15, item 6).

A host app that mounts an MCP server answers the URL without its trailing slash with a
307 to the one with it (Starlette's slash redirect); a proxy may send a 301/308. mcpkit's
client follows none of them (that would resend the body and credentials elsewhere) and
fails at once, naming where the ``Location`` points, in every era and on a later request of a
running session too. The server is ``examples/everything.py``'s on uvicorn (loopback),
behind ``SlashRedirect``, a small ASGI app doing what such hosts do.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpkit import TransportError
from mcpkit.client import Client, HandshakeError
from mcpkit.protocol.errors import TRANSPORT_ERROR
from tests.support.http import LiveServer, everything_server, read_body, replaying

LIMIT = 10


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class SlashRedirect:
    """Serves the MCP app at ``/mcp/``; ``/mcp`` gets ``status`` with a ``Location`` (or
    none when ``location`` is False), like a host app's slash redirect. ``moving``: the
    name of a tool whose calls are redirected even at ``/mcp/``."""

    def __init__(self, app: Any, status: int = 307, location: bool = True) -> None:
        self.app, self.status, self.location = app, status, location
        self.moving: str | None = None

    async def redirect(self, send: Any, target: bytes) -> None:
        headers = [(b"location", target)] if self.location else []
        await send({"type": "http.response.start", "status": self.status,
                    "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/mcp":
            await self.redirect(send, b"/mcp/")
            return
        if scope["type"] == "http" and scope["method"] == "POST" and self.moving:
            body = await read_body(receive)
            if self.moving.encode() in body:
                await self.redirect(send, b"https://elsewhere.example/mcp")
                return
            receive = replaying(body, receive)
        if scope["type"] == "http":
            scope = {**scope, "path": "/mcp"}  # the app itself serves /mcp
        await self.app(scope, receive, send)


@pytest.mark.anyio
@pytest.mark.parametrize("status", [301, 307, 308])
@pytest.mark.parametrize("mode", ["stateful", "stateless"])
async def test_a_redirected_endpoint_fails_at_once_naming_the_location(
        status: int, mode: str) -> None:
    with LiveServer(SlashRedirect(everything_server().asgi_app(), status)) as live:
        started = anyio.current_time()
        with anyio.fail_after(LIMIT), pytest.raises(HandshakeError) as err:
            async with Client(live.url, mode=mode, timeout=LIMIT):
                pass
        assert anyio.current_time() - started < 2  # not at a timeout
        text = str(err.value)
        assert f"HTTP {status}" in text and "does not follow redirects" in text
        assert f"it redirects to {live.base}/mcp/;" in text
        assert "as the server URL" not in text  # (untried: mcpkit's CLI tries it first)
        assert err.value.__cause__.location == f"{live.base}/mcp/"  # type: ignore[union-attr]
        # The URL it names works.
        with anyio.fail_after(LIMIT):
            async with Client(f"{live.base}/mcp/", mode=mode, timeout=LIMIT) as client:
                assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"


@pytest.mark.anyio
async def test_a_redirect_without_location_says_to_check_the_url() -> None:
    with LiveServer(SlashRedirect(everything_server().asgi_app(), 302, False)) as live:
        with anyio.fail_after(LIMIT), pytest.raises(HandshakeError,
                                                    match="without a Location; mcpkit"):
            async with Client(live.url, timeout=LIMIT):
                pass


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["stateful", "stateless"])
async def test_a_redirected_call_fails_only_that_request(mode: str) -> None:
    host = SlashRedirect(everything_server().asgi_app())
    with LiveServer(host) as live:
        with anyio.fail_after(LIMIT):
            async with Client(f"{live.base}/mcp/", mode=mode, timeout=LIMIT) as client:
                host.moving = "add"
                with pytest.raises(TransportError) as err:
                    await client.call_tool("add", {"a": 1, "b": 2})
                assert err.value.code == TRANSPORT_ERROR and err.value.status == 307
                assert "https://elsewhere.example/mcp" in str(err.value)
                assert (await client.call_tool("echo", {"text": "on"})).text == "on"
