"""The client OAuth flow end to end, through httpx's asynchronous pump.

Two real uvicorn servers on loopback: the test authorization server (tests/auth/oauth_as.py)
and an mcpkit server behind ``BearerAuth`` that verifies the JWTs it issues.
``mcpkit.client.Client(url, auth=OAuth(FollowRedirect(...)))`` connects, lists and calls
a tool; a second client reuses the token kept in a ``FileTokenStore``; a refusal
reaches the caller as ``AuthorizationFailed``.
"""

from __future__ import annotations

import socket
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcpkit import HandshakeError, ServerUnreachable
from mcpkit.auth import (
    AuthorizationFailed,
    BearerAuth,
    FileTokenStore,
    FollowRedirect,
    OAuth,
    ProtectedResource,
)
from mcpkit.client import Client, Http
from tests.support.http import LiveServer

from .notes_server import adding_server, verified_at_own_url
from .oauth_as import AuthServer

pytestmark = pytest.mark.anyio

REDIRECT = "http://127.0.0.1:9/callback"  # never served: FollowRedirect reads the Location


@dataclass
class Setup:
    auth: AuthServer
    url: str


@pytest.fixture
def setup() -> Iterator[Setup]:
    auth = AuthServer()
    with LiveServer(auth) as idp:
        auth.base = idp.base
        with verified_at_own_url(auth.issuer, lambda url, verifier: BearerAuth(
                adding_server().asgi_app(),
                resource=ProtectedResource(url, [auth.issuer], scopes_supported=["notes:read"]),
                verifier=verifier, required_scopes=["notes:read"]),
                jwks_uri=f"{auth.base}/jwks") as live:
            yield Setup(auth, live.url)


async def test_client_authorizes_then_reuses_the_stored_token(setup: Setup,
                                                              tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    oauth = OAuth(FollowRedirect(REDIRECT), store=store, client_name="e2e")
    async with Client(Http(setup.url, auth=oauth)) as client:
        assert [t.name for t in await client.list_tools()] == ["add"]
        assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"
    auth = setup.auth
    assert [auth.hits[p] for p in ("/register", "/authorize", "/token")] == [1, 1, 1]
    (query,) = auth.authorizations
    assert query["resource"] == setup.url and query["scope"] == "notes:read"
    assert query["redirect_uri"] == REDIRECT
    assert auth.registrations[0]["client_name"] == "e2e"
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600

    # a new process (a new OAuth over the same file) uses the stored token
    again = OAuth(FollowRedirect(REDIRECT), store=FileTokenStore(tmp_path / "tokens.json"))
    async with Client(Http(setup.url, auth=again)) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 1})).text == "2"
    assert [auth.hits[p] for p in ("/register", "/authorize", "/token")] == [1, 1, 1]


@pytest.mark.parametrize(("mode", "version"), [("stateful", None), ("auto", None),
                                               ("auto", "2026-07-28")])
async def test_a_refusal_reaches_the_caller_once_as_authorization_failed(
        setup: Setup, mode: str, version: str | None) -> None:
    """The handshake, auto mode's server/discover probe and a 2026-07-28 server/discover
    all raise the flow's own exception, after one attempt: auto mode does not try the
    stateful revision after the probe failed for want of a token."""
    setup.auth.pkce_methods = None  # no S256 in the metadata: the client must stop
    oauth = OAuth(FollowRedirect(REDIRECT))
    with pytest.raises(AuthorizationFailed, match="PKCE S256"):
        async with Client(Http(setup.url, auth=oauth), mode=mode, protocol_version=version):
            pass
    assert setup.auth.hits["/.well-known/oauth-authorization-server"] == 1
    assert setup.auth.authorizations == []


async def test_an_unreachable_authorization_server_is_named_not_the_mcp_server() -> None:
    """The MCP server answers (401) but its authorization server does not listen: the
    error names the authorization server, and is no ``ServerUnreachable``."""
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with verified_at_own_url(dead, lambda url, verifier: BearerAuth(
            adding_server().asgi_app(), resource=ProtectedResource(url, [dead]),
            verifier=verifier), jwks_uri=f"{dead}/jwks") as live:
        oauth = OAuth(FollowRedirect(REDIRECT))
        with pytest.raises(HandshakeError) as caught:
            async with Client(Http(live.url, auth=oauth)):
                pass
    assert not isinstance(caught.value, ServerUnreachable)
    message = str(caught.value)
    assert f"{dead}/.well-known/oauth-authorization-server" in message
    assert "nothing is listening" in message
