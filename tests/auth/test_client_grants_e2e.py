"""Workload identity end to end, through httpx's asynchronous pump.

Real uvicorn servers on loopback: the test authorization server (tests/auth/oauth_as.py,
trusting a workload issuer's key for the jwt-bearer grant) and an mcpkit server behind
``BearerAuth`` verifying its JWTs. ``Client(url, auth=JWTBearerAuth(provider))`` with an
async provider connects and calls a tool; a token endpoint that never answers ends the
request within the fetch deadline instead of hanging it; with ``dpop=True`` the grant
carries a DPoP proof and the token is bound to the key (a server with
``Auth(dpop=...)`` checks the proofs).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from joserfc import jwk, jwt

from mcpkit import HandshakeError
from mcpkit.auth import (
    Auth,
    AuthorizationFailed,
    BearerAuth,
    DPoPChecker,
    JWTBearerAuth,
    ProtectedResource,
)
from mcpkit.client import Client, Http
from tests.support.http import LiveServer

from .notes_server import adding_server, verified_at_own_url
from .oauth_as import JWT_BEARER, AuthServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

ISSUER = "https://token.actions.example.com"


class HangingToken:
    """The test AS, except that its token endpoint does not answer until released
    (at most 60 s)."""

    def __init__(self, auth: AuthServer) -> None:
        self.auth = auth
        self.released = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/token":
            for _ in range(1200):
                if self.released:
                    break
                await asyncio.sleep(0.05)
        await self.auth(scope, receive, send)


@dataclass
class Setup:
    auth: AuthServer
    url: str
    key: jwk.ECKey

    def workload_jwt(self) -> str:
        now = int(time.time())
        return jwt.encode({"alg": "ES256"}, {"iss": ISSUER, "sub": "repo:acme/app",
                                             "aud": self.auth.issuer, "iat": now,
                                             "exp": now + 300}, self.key,
                          algorithms=["ES256"])


def serve(hang: bool) -> Iterator[Setup]:
    auth = AuthServer(grant_types=[JWT_BEARER])
    key = jwk.ECKey.generate_key("P-256", private=True)
    auth.assertion_keys[ISSUER] = key
    app = HangingToken(auth)
    with LiveServer(app if hang else auth) as as_live:
        auth.base = as_live.base
        with verified_at_own_url(auth.issuer, lambda url, verifier: BearerAuth(
                adding_server().asgi_app(), verifier=verifier,
                resource=ProtectedResource(url, [auth.issuer], scopes_supported=["notes:read"]),
                required_scopes=["notes:read"]), jwks_uri=f"{auth.base}/jwks") as live:
            yield Setup(auth, live.url, key)
            app.released = True


@pytest.fixture
def setup() -> Iterator[Setup]:
    yield from serve(hang=False)


@pytest.fixture
def hanging() -> Iterator[Setup]:
    yield from serve(hang=True)


async def test_an_async_provider_gets_the_workload_a_token(setup: Setup) -> None:
    calls = 0

    async def provider() -> str:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)
        return setup.workload_jwt()

    auth = JWTBearerAuth(provider)
    async with Client(Http(setup.url, auth=auth)) as client:
        assert (await client.call_tool("add", {"a": 2, "b": 5})).text == "7"
    (form,) = setup.auth.token_requests
    assert (form["grant_type"], form["resource"], form["scope"]) == (
        JWT_BEARER, setup.url, "notes:read")
    assert calls == 1


async def test_a_slow_async_provider_is_cut_off(setup: Setup) -> None:
    async def stuck() -> str:
        await asyncio.sleep(60)
        return "never"

    auth = JWTBearerAuth(stuck)
    started = time.monotonic()
    with pytest.raises(AuthorizationFailed, match="did not answer within"):
        async with Client(Http(setup.url, auth=auth)):
            pass
    assert time.monotonic() - started < 30
    assert setup.auth.token_requests == []


async def test_a_token_endpoint_that_hangs_ends_the_request(hanging: Setup) -> None:
    auth = JWTBearerAuth(hanging.workload_jwt())
    started = time.monotonic()
    with pytest.raises(HandshakeError, match="ReadTimeout"):  # the fetch deadline (10 s)
        async with Client(Http(hanging.url, auth=auth)):
            pass
    assert time.monotonic() - started < 30
    assert auth.store.get_tokens(hanging.auth.issuer, hanging.url) is None


async def test_a_workload_gets_a_dpop_bound_token(tmp_path: Any) -> None:
    """JWTBearerAuth(dpop=True): the jwt-bearer request carries a proof (retried once
    with the AS's nonce), the token is bound to the key, and a server with
    Auth(dpop=...) accepts it only with its proofs."""
    auth = AuthServer(grant_types=[JWT_BEARER], dpop_algs=["ES256"], dpop_nonce="n-1")
    key = jwk.ECKey.generate_key("P-256", private=True)
    auth.assertion_keys[ISSUER] = key
    with LiveServer(auth) as as_live:
        auth.base = as_live.base
        with verified_at_own_url(auth.issuer, lambda url, verifier: adding_server().asgi_app(
                auth=Auth(verifier, resource=ProtectedResource(url, [auth.issuer]),
                          dpop=DPoPChecker())), jwks_uri=f"{auth.base}/jwks") as live:
            setup = Setup(auth, live.url, key)
            flow = JWTBearerAuth(setup.workload_jwt(), dpop=True)
            async with Client(Http(live.url, auth=flow)) as client:
                assert (await client.call_tool("add", {"a": 4, "b": 4})).text == "8"
    held = flow.store.get_tokens(auth.issuer, live.url)
    assert held is not None and held.token_type == "DPoP"
    assert [c.get("nonce") for _, c in auth.dpop_proofs] == [None, "n-1"]
    assert [f["grant_type"] for f in auth.token_requests] == [JWT_BEARER] * 2
