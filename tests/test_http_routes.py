"""HTTP routes beside the MCP endpoint (issue #29 item 2): ``@server.route`` (and FastMCP's
``custom_route``), ``asgi_app(health=True)``'s ``/health`` and ``/ready``.

Real parts: each app runs under uvicorn on loopback (``tests/support/http.LiveServer``),
requests are raw httpx; the MCP endpoint keeps answering beside the routes (a session
is opened and a tool called, every message checked against the official schema); the
readiness route follows a real redis-server stopped and started again, and a drain.
A protected app's public and protected routes: ``tests/auth/test_routes_auth.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from mcpkit import Server
from mcpkit.storage import SQLiteTaskStore
from tests.support.http import LiveServer, McpHttp
from tests.support.modules import modules_after
from tests.support.redis import BOUNDED, RedisServer

pytestmark = [pytest.mark.anyio, BOUNDED]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make_server(**options: Any) -> Server:
    server = Server("routed", **options)
    hits: list[str] = []

    @server.tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    @server.custom_route("/health", methods=["GET"])  # FastMCP's spelling, unchanged
    async def health(request: Request) -> Response:
        return PlainTextResponse("OK")

    @server.route("/items/{item_id}", methods=["GET", "DELETE"])
    async def item(request: Request) -> Response:
        hits.append(request.method)
        return JSONResponse({"id": request.path_params["item_id"],
                             "method": request.method})

    @server.route("/sync", methods=["POST"])
    def sync(request: Request) -> Response:  # a sync route runs in a worker thread
        return PlainTextResponse(f"{request.method} in a thread")

    return server


async def test_routes_answer_beside_the_mcp_endpoint() -> None:
    with LiveServer(make_server().asgi_app()) as live:
        async with httpx.AsyncClient(base_url=live.base, timeout=10) as http:
            ok = await http.get("/health")
            assert (ok.status_code, ok.text) == (200, "OK")
            got = await http.delete("/items/42")
            assert got.json() == {"id": "42", "method": "DELETE"}
            assert (await http.post("/sync")).text == "POST in a thread"
            wrong = await http.post("/health")  # a route's other methods: 405
            assert wrong.status_code == 405 and "GET" in wrong.headers["allow"]
            missing = await http.get("/nowhere")  # any other path: the endpoint's 404
            assert missing.status_code == 404
            assert missing.json()["error"]["message"] == (
                "Not found: the MCP endpoint is /mcp")
            mcp = McpHttp(http, live.url)
            await mcp.initialize()
            reply = await mcp.call_tool("echo", {"text": "still here"})
            assert reply.json["result"]["content"][0]["text"] == "still here"


def test_a_route_on_an_endpoint_path_or_declared_twice_is_refused_when_built() -> None:
    server = make_server()

    @server.route("/mcp")
    async def clash(request: Request) -> Response:
        return Response()

    with pytest.raises(ValueError, match="route /mcp is a path the MCP endpoint serves"):
        server.asgi_app()
    assert server.asgi_app("/api").routes is not None  # elsewhere: served
    other = make_server()
    other.route("/sse")(clash)
    with pytest.raises(ValueError, match="route /sse is a path the MCP endpoint serves"):
        other.asgi_app()  # the legacy SSE path
    other.asgi_app(legacy_sse=False)
    twice = make_server()
    twice.route("/health/")(clash)
    with pytest.raises(ValueError, match="route /health/ is declared twice"):
        twice.asgi_app()
    with pytest.raises(ValueError, match="starts with '/'"):
        twice.route("health")
    with pytest.raises(ValueError, match="methods must be HTTP methods"):
        twice.route("/x", methods=["FETCH"])


async def test_health_and_readiness_follow_the_stores_and_the_drain(tmp_path: Path) -> None:
    tasks = SQLiteTaskStore(str(tmp_path / "tasks.db"))
    server = Server("healthy", task_store=tasks)
    with RedisServer() as redis:
        app = server.asgi_app(store=redis.url, health=True)
        with LiveServer(app) as live:
            async with httpx.AsyncClient(base_url=live.base, timeout=10) as http:
                assert (await http.get("/health")).json() == {"status": "ok"}
                ready = await http.get("/ready")
                assert ready.status_code == 200, ready.text
                assert ready.json() == {"status": "ready",
                                        "checks": {"redis": "ok", "tasks": "ok"}}
                redis.stop()
                try:
                    down = await http.get("/ready")
                    assert down.status_code == 503 and down.headers["retry-after"] == "1"
                    body = down.json()
                    assert body["status"] == "unavailable" and body["checks"]["tasks"] == "ok"
                    assert "Redis" in body["checks"]["redis"], body
                    assert (await http.get("/health")).status_code == 200  # alive
                finally:
                    redis.start()
                for _ in range(100):  # bounded: 10 s; ready again by itself
                    if (await http.get("/ready")).status_code == 200:
                        break
                    await anyio.sleep(0.1)
                assert (await http.get("/ready")).status_code == 200
                assert live.loop is not None  # a shutdown begins: no longer ready
                live.loop.call_soon_threadsafe(app.drain.begin, "test")
                await anyio.sleep(0.2)
                draining = await http.get("/ready")
                assert (draining.status_code, draining.json()) == (503, {"status": "draining"})
    tasks.close()


async def test_without_routes_or_health_nothing_is_served() -> None:
    app = Server("bare").asgi_app()
    assert app.routes is None
    with LiveServer(app) as live:
        async with httpx.AsyncClient(base_url=live.base, timeout=10) as http:
            assert (await http.get("/health")).status_code == 404


def test_without_routes_starlette_is_not_loaded() -> None:
    loaded = modules_after("from mcpkit import Server\nServer('bare').asgi_app()\n")
    assert "starlette" not in loaded

