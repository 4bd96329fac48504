"""Finding a mounted server's URL from the command line (issue #26, item 8).

A FastAPI app mounts the server at ``/tools`` (docs/http.md's recipe) on uvicorn
(loopback); its endpoint is ``/tools/mcp``. The commands a new user types on the way —
``/tools`` (FastAPI's slash redirect to ``/tools/``), ``/tools/`` (the server's 404, whose
body names the endpoint) — must show what the server said and suggest no URL nobody
tried: a redirect's target is tried once (on the same server only) and reported as it
answered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from mcpkit import Server

from .support.http import LiveServer, everything_server
from .test_cli import error_lines, mcpkit
from .test_http_client_redirects import SlashRedirect

LIMIT = 30


def mounted_app() -> FastAPI:
    server = Server("mounted")

    @server.tool
    def hi() -> str:
        """Says hi."""
        return "hi"

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with server.lifespan_scope():
            yield

    app = FastAPI(lifespan=lifespan)
    app.mount("/tools", server.asgi_app())
    return app


def said(*args: str) -> str:
    res = mcpkit(*args, timeout=LIMIT)
    assert res.returncode == 1, (res.stdout, res.stderr)
    (line,) = error_lines(res)
    return line


def test_the_mount_points_own_words_are_shown_and_no_untried_url_is_suggested() -> None:
    with LiveServer(mounted_app()) as live:
        base = live.base
        slash = said("list", "tools", f"{base}/tools/")
        assert slash == (
            "mcpkit: error: cannot start the session: HTTP 404 from the server: Not found: "
            "the MCP endpoint is /tools/mcp (and it has no HTTP+SSE (2024-11-05) endpoint "
            "either); check the URL's path: it must be the server's MCP endpoint")

        redirected = said("list", "tools", f"{base}/tools")
        assert redirected == (
            f"mcpkit: error: cannot start the session: HTTP 307 from the server: it "
            f"redirects to {base}/tools/; mcpkit does not follow redirects (they would carry "
            "the request and its credentials elsewhere): give the URL of the MCP endpoint "
            f"itself; tried {base}/tools/: cannot start the session: HTTP 404 from the "
            "server: Not found: the MCP endpoint is /tools/mcp (and it has no HTTP+SSE "
            "(2024-11-05) endpoint either); check the URL's path: it must be the server's "
            "MCP endpoint")
        for line in (slash, redirected):
            assert "as the server URL" not in line and "serves /mcp" not in line

        tasks = said("call", "--task", f"{base}/tools/", "hi")  # 2026-07-28 first: the same
        assert "Not found: the MCP endpoint is /tools/mcp" in tasks

        res = mcpkit("list", "tools", f"{base}/tools/mcp", timeout=LIMIT)  # what it named
        assert res.returncode == 0, res.stderr
        assert res.stdout.startswith("hi ")


def test_a_redirect_to_a_working_endpoint_is_tried_before_it_is_suggested() -> None:
    with LiveServer(SlashRedirect(everything_server().asgi_app())) as live:
        line = said("list", "tools", live.url)
    assert line.endswith(f"give the URL of the MCP endpoint itself; tried {live.base}/mcp/: "
                         "it answers as an MCP server; use it as the server URL")


def test_a_redirect_to_another_server_is_not_followed_nor_tried() -> None:
    seen: list[str] = []

    async def elsewhere(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 308,
                    "headers": [(b"location", b"http://127.0.0.1:9/mcp")]})
        await send({"type": "http.response.body", "body": b""})

    with LiveServer(elsewhere) as live:
        line = said("list", "tools", live.url, "--wait", "0")
    assert line.endswith("; http://127.0.0.1:9/mcp is on another server, which mcpkit did "
                         "not try")
    assert seen == ["/mcp"]


def test_a_bare_host_url_gets_the_default_path_hint_only_when_the_server_says_nothing(
) -> None:
    with LiveServer(mounted_app()) as live:
        line = said("list", "tools", live.base)
    assert line.endswith("check the URL's path: it must be the server's MCP endpoint (this "
                         "URL has no path; mcpkit run --http serves /mcp)")
