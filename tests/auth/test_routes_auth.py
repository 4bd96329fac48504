"""A protected app's routes (issue #29 item 2): public by default, so a load balancer's
health check needs no token; ``auth=True`` asks for the endpoint's bearer token. Real
parts: uvicorn on loopback, the loopback authorization server's signed JWTs."""

from __future__ import annotations

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mcpkit import Server
from tests.support.http import LiveServer

from .idp import IdP
from .test_server_auth import auth_for, bearer, token

pytestmark = pytest.mark.anyio


def routed() -> Server:
    server = Server("protected-routes")

    @server.route("/status/{part}")
    async def status(request: Request) -> Response:
        return JSONResponse({"part": request.path_params["part"]})

    @server.route("/admin", methods=["GET", "POST"], auth=True)
    async def admin(request: Request) -> Response:
        return JSONResponse({"admin": True})

    return server


async def test_public_routes_need_no_token_and_protected_ones_do(idp: IdP) -> None:
    app = routed().asgi_app(auth=auth_for(idp), health=True)
    with LiveServer(app) as live:
        async with httpx.AsyncClient(base_url=live.base, timeout=10) as http:
            assert (await http.get("/health")).json() == {"status": "ok"}
            assert (await http.get("/ready")).json() == {"status": "ready"}
            assert (await http.get("/status/db")).json() == {"part": "db"}
            refused = await http.get("/admin")
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"].startswith("Bearer ")
            allowed = await http.post("/admin", headers=bearer(token(idp)))
            assert allowed.json() == {"admin": True}
            endpoint = await http.post("/mcp", json={})  # the endpoint stays protected
            assert endpoint.status_code == 401
            unknown = await http.get("/elsewhere")  # not a public route: a token first
            assert unknown.status_code == 401


def test_a_route_on_a_metadata_path_is_refused(idp: IdP) -> None:
    server = routed()

    @server.route("/.well-known/oauth-protected-resource/mcp")
    async def clash(request: Request) -> Response:
        return Response()

    with pytest.raises(ValueError, match="a path the MCP endpoint serves"):
        server.asgi_app(auth=auth_for(idp))
