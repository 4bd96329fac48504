"""Token revocation on logout (RFC 7009): ``revoke_tokens`` and ``OAuth.logout``.

Real servers on loopback: the test authorization server (tests/auth/oauth_as.py, with
its ``/revoke`` endpoint on or off, or behind a wrapper that hangs or answers junk) under
uvicorn, an mcpkit server protected by its JWTs, and oidc-provider (the ``oidc``
fixture), where a revoked refresh token must stop working. Whatever the server answers,
the tokens are deleted locally and the problem is reported, in bounded time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mcpkit.auth import (
    BearerAuth,
    ClientCredentials,
    FollowRedirect,
    MemoryTokenStore,
    OAuth,
    ProtectedResource,
    Tokens,
    revoke_tokens,
)
from mcpkit.client import Client, Http
from tests.support.http import LiveServer
from tests.support.oidc import RESOURCE, SECRET, OidcProvider

from .notes_server import adding_server, verified_at_own_url
from .oauth_as import AuthServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

MCP = "http://127.0.0.1:9/mcp"  # a loopback resource: the test AS on loopback is allowed


class Misbehaving:
    """The test AS, except that ``/revoke`` hangs (``mode="hang"``) or answers junk."""

    def __init__(self, auth: AuthServer, mode: str) -> None:
        self.auth, self.mode = auth, mode

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/revoke":
            if self.mode == "hang":
                await asyncio.sleep(30)
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"text/html")]})
            await send({"type": "http.response.body", "body": b"<html>oops</html>"})
            return
        await self.auth(scope, receive, send)


@dataclass
class Held:
    auth: AuthServer
    store: MemoryTokenStore
    tokens: Tokens


def held(auth: AuthServer, **knobs: Any) -> Held:
    """``auth`` knows the client ``svc`` and a refresh token; the store keeps both."""
    auth.revocation = knobs.get("revocation", True)
    auth.clients["svc"] = ("pw", "client_secret_basic")
    store = MemoryTokenStore()
    tokens = Tokens("access-1", expires_at=time.time() + 60, refresh_token="refresh-1")
    store.set_tokens(auth.issuer, MCP, tokens)
    store.set_client(auth.issuer, ClientCredentials("svc", "pw"))
    return Held(auth, store, tokens)


@pytest.fixture
def auth_server() -> Iterator[AuthServer]:
    auth = AuthServer(auth_methods=["client_secret_basic"])
    with LiveServer(auth) as live:
        auth.base = live.base
        yield auth


async def test_refresh_then_access_token_revoked_with_the_clients_auth(
        auth_server: AuthServer) -> None:
    h = held(auth_server)
    auth_server.refresh_tokens["refresh-1"] = object()  # type: ignore[assignment]
    outcome = await revoke_tokens(h.store, auth_server.issuer, MCP)
    assert outcome.revoked == ["refresh_token", "access_token"] and outcome.problems == []
    assert auth_server.revoked == [("refresh_token", "refresh-1"),
                                   ("access_token", "access-1")]
    assert "refresh-1" not in auth_server.refresh_tokens
    assert auth_server.request_headers[-1]["authorization"].startswith("Basic ")
    assert h.store.get_tokens(auth_server.issuer, MCP) is None and outcome.deleted


async def test_no_revocation_endpoint_is_reported_and_the_tokens_deleted(
        auth_server: AuthServer) -> None:
    h = held(auth_server, revocation=False)
    outcome = await revoke_tokens(h.store, auth_server.issuer, MCP)
    assert outcome.revoked == []
    assert outcome.problems == [f"{auth_server.issuer!r} has no revocation_endpoint: the "
                                "tokens stay valid there until they expire"]
    assert h.store.get_tokens(auth_server.issuer, MCP) is None


async def test_a_refused_client_is_reported_per_token(auth_server: AuthServer) -> None:
    h = held(auth_server)
    outcome = await revoke_tokens(h.store, auth_server.issuer, MCP,
                                  client=ClientCredentials("svc", "wrong"))
    assert outcome.revoked == []
    assert [p.split(" failed: ")[1] for p in outcome.problems] == ["invalid_client"] * 2
    assert not any("refresh-1" in p or "access-1" in p for p in outcome.problems)
    assert h.store.get_tokens(auth_server.issuer, MCP) is None


@pytest.mark.parametrize("mode", ["hang", "junk"])
async def test_a_hanging_or_broken_endpoint_is_bounded_and_reported(mode: str) -> None:
    auth = AuthServer(auth_methods=["client_secret_basic"])
    with LiveServer(Misbehaving(auth, mode)) as live:
        auth.base = live.base
        h = held(auth)
        started = time.monotonic()
        outcome = await revoke_tokens(h.store, auth.issuer, MCP, timeout=1.5)
        elapsed = time.monotonic() - started
    assert elapsed < 5
    assert outcome.revoked == []
    if mode == "hang":
        assert outcome.problems == [f"revocation at {auth.issuer!r} took more than 1.5 s"]
    else:
        assert [p.split(" failed: ")[1] for p in outcome.problems] == [
            f"{auth.issuer}/revoke answered HTTP 500, not JSON"] * 2
    assert h.store.get_tokens(auth.issuer, MCP) is None


async def test_an_unreachable_server_is_reported() -> None:
    store = MemoryTokenStore()
    store.set_tokens("http://127.0.0.1:1", MCP, Tokens("a", refresh_token="r"))
    outcome = await revoke_tokens(store, "http://127.0.0.1:1", MCP, timeout=5)
    assert outcome.revoked == [] and len(outcome.problems) == 1
    assert outcome.problems[0].startswith("revocation at 'http://127.0.0.1:1' failed")
    assert store.get_tokens("http://127.0.0.1:1", MCP) is None


async def test_nothing_stored_is_nothing_sent(auth_server: AuthServer) -> None:
    outcome = await revoke_tokens(MemoryTokenStore(), auth_server.issuer, MCP)
    assert (outcome.revoked, outcome.problems, outcome.deleted) == ([], [], False)
    assert auth_server.paths == []


async def test_oauth_logout_after_a_real_authorization(auth_server: AuthServer) -> None:
    auth_server.revocation = True
    with verified_at_own_url(auth_server.issuer, lambda url, verifier: BearerAuth(
            adding_server().asgi_app(), verifier=verifier,
            resource=ProtectedResource(url, [auth_server.issuer])),
            jwks_uri=f"{auth_server.base}/jwks") as live:
        oauth = OAuth(FollowRedirect("http://127.0.0.1:9/callback"))
        async with Client(Http(live.url, auth=oauth)) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"
        tokens = oauth.store.get_tokens(auth_server.issuer, live.url)
        assert tokens is not None and tokens.refresh_token in auth_server.refresh_tokens
        outcome = await oauth.logout(live.url)
        assert outcome.revoked == ["refresh_token", "access_token"], outcome.problems
        assert tokens.refresh_token not in auth_server.refresh_tokens
        assert oauth.store.get_tokens(auth_server.issuer, live.url) is None
        # the registered client (dynamic registration, "none") authenticated with its id
        assert auth_server.revoked[0] == ("refresh_token", tokens.refresh_token)
        with pytest.raises(ValueError, match="no authorization"):
            await oauth.logout("http://127.0.0.1:9/elsewhere")


async def test_a_revoked_refresh_token_no_longer_works_at_oidc_provider(
        oidc: OidcProvider) -> None:
    answer = oidc.authorization_code()
    refresh = answer["refresh_token"]
    store = MemoryTokenStore()
    store.set_tokens(oidc.issuer, RESOURCE, Tokens(answer["access_token"],
                                                   refresh_token=refresh))
    store.set_client(oidc.issuer, ClientCredentials("app", SECRET))
    outcome = await revoke_tokens(store, oidc.issuer, RESOURCE, allow_private_networks=True)
    assert "refresh_token" in outcome.revoked, outcome.problems
    # a JWT access token cannot be revoked there: RFC 7009 §2.2.1 unsupported_token_type
    assert all("unsupported_token_type" in p for p in outcome.problems), outcome.problems
    dead = oidc.http.post(oidc.token_endpoint, auth=("app", SECRET), data={
        "grant_type": "refresh_token", "refresh_token": refresh, "resource": RESOURCE})
    assert (dead.status_code, dead.json()["error"]) == (400, "invalid_grant")
    assert store.get_tokens(oidc.issuer, RESOURCE) is None
