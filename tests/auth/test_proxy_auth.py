"""The proxy with authorization on both sides: the remote (the notes server of
test_server_auth, a real OAuth resource server) reached with the upstream's bearer
token, and the proxy's own endpoint protected with ``asgi_app(auth=...)`` by the same
kind of verifier. Real uvicorn servers on loopback, the test IdP's signed JWTs.
"""

from __future__ import annotations

import anyio
import httpx
import pytest

from mcpkit.bridge import proxy
from mcpkit.client import Client, Http
from mcpkit.protocol.errors import HandshakeError
from tests.support.http import LiveServer

from .idp import IdP
from .test_server_auth import auth_for, bearer, serving, token

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # HTTP is asyncio-only


async def test_auth_on_both_sides(idp: IdP) -> None:
    upstream_token = token(idp, sub="proxy-service")
    with serving(idp) as remote, anyio.fail_after(30):
        front = proxy(remote.url, headers=bearer(upstream_token), timeout=10)
        with LiveServer(front.asgi_app(auth=auth_for(idp))) as live:
            async with httpx.AsyncClient() as http:  # no token: refused at the door
                refused = await http.post(live.url, json={
                    "jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={
                    "accept": "application/json, text/event-stream"})
            assert refused.status_code == 401
            assert "resource_metadata" in refused.headers["www-authenticate"]
            user_token = token(idp, sub="alice")
            async with Client(Http(live.url, headers=bearer(user_token)), timeout=10) as client:
                result = await client.call_tool("whoami")
                # the remote sees the proxy's own credentials, not the user's
                assert result.structured_content is not None
                assert result.structured_content["subject"] == "proxy-service"


async def test_remote_refusing_the_proxy_fails_its_start(idp: IdP) -> None:
    with serving(idp) as remote, anyio.fail_after(30):
        front = proxy(remote.url, timeout=10)  # no credentials for the remote
        with pytest.raises(HandshakeError, match="401"):
            async with front.lifespan_scope():
                pass
