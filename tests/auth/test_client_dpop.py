"""The client's DPoP (RFC 9449) end to end: ``OAuth(dpop=True)`` / ``DPoPKey``.

Two real uvicorn servers on loopback: the test authorization server (tests/auth/oauth_as.py,
binding tokens to the key of the proof sent with the token request, its ``dpop_*`` knobs
making it ask for nonces, answer Bearer or list other algorithms) and an mcpkit server
whose ``Auth(dpop=DPoPChecker(nonces=True))`` checks every proof and asks for its own
nonce. ``mcpkit.client.Client`` authorizes (code + PKCE) and calls a tool; the proofs the
authorization server saw are inspected. Refusals: an algorithm the server does not list
(nothing sent), nonce demands that never end (one retry, then the error), a resource
server that keeps asking for a nonce (bounded requests).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest
from joserfc import jwk, jws

from mcpkit.auth import (
    Auth,
    AuthorizationFailed,
    DPoPChecker,
    DPoPKey,
    FollowRedirect,
    JWTVerifier,
    MemoryTokenStore,
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
    hits: list[str]  # the Authorization scheme of each request to /mcp ("" for none)
    nonce_always: list[bool]


@pytest.fixture
def setup() -> Iterator[Setup]:
    auth = AuthServer(dpop_algs=["ES256", "RS256"], dpop_nonce="as-nonce-1")
    with LiveServer(auth) as idp:
        auth.base = idp.base

        def build(url: str, verifier: JWTVerifier) -> Any:
            protected = adding_server().asgi_app(auth=Auth(
                verifier, resource=ProtectedResource(url, [auth.issuer],
                                                     scopes_supported=["notes:read"]),
                dpop=DPoPChecker(nonces=True)))

            async def counted(scope: dict[str, Any], receive: Any, send: Any) -> None:
                if scope["type"] == "http" and scope["path"] == "/mcp":
                    header = dict(scope["headers"]).get(b"authorization", b"")
                    setup.hits.append(header.decode().partition(" ")[0])
                    if setup.nonce_always[0] and header.startswith(b"DPoP "):
                        await _use_nonce(send)
                        return
                await protected(scope, receive, send)

            return counted

        with verified_at_own_url(auth.issuer, build, jwks_uri=f"{auth.base}/jwks") as live:
            setup = Setup(auth, live.url, [], [False])  # read by counted, at requests
            yield setup


async def _use_nonce(send: Any) -> None:
    """A resource server that asks for a new nonce whatever it is sent."""
    await send({"type": "http.response.start", "status": 401, "headers": [
        (b"www-authenticate", b'DPoP error="use_dpop_nonce", algs="ES256"'),
        (b"dpop-nonce", f"n{time.monotonic_ns()}".encode()), (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


async def test_authorization_code_with_dpop_and_nonces_on_both_sides(setup: Setup) -> None:
    store = MemoryTokenStore()
    oauth = OAuth(FollowRedirect(REDIRECT), store=store, dpop=True)
    async with Client(Http(setup.url, auth=oauth)) as client:
        assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"
        assert (await client.call_tool("add", {"a": 1, "b": 1})).text == "2"
    assert oauth.dpop is not None
    ((_, _, tokens),) = store.all_tokens()
    assert tokens.token_type == "DPoP" and tokens.dpop_jwk is not None
    # the token endpoint: a proof, a use_dpop_nonce answer, the same request with it
    first, second = setup.auth.dpop_proofs
    for header, claims in (first, second):
        assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256"
        assert "d" not in header["jwk"] and jwk.import_key(
            header["jwk"]).thumbprint() == oauth.dpop.thumbprint
        assert claims["htm"] == "POST" and claims["htu"] == f"{setup.auth.base}/token"
        assert abs(claims["iat"] - time.time()) < 60 and "ath" not in claims
    assert "nonce" not in first[1] and second[1]["nonce"] == "as-nonce-1"
    assert first[1]["jti"] != second[1]["jti"]
    assert setup.auth.hits["/token"] == 2
    # the resource server: every authorized request with the DPoP scheme, and only the
    # first one answered use_dpop_nonce (the nonce is remembered for the origin)
    assert set(setup.hits[1:]) == {"DPoP"} and setup.hits[0] == ""
    assert oauth.dpop_nonces.get(setup.url) is not None


async def test_a_bearer_answer_to_a_dpop_request_is_a_bearer_token(setup: Setup) -> None:
    setup.auth.dpop_bearer = True  # RFC 9449 §5: the server may issue a bearer token
    store = MemoryTokenStore()
    oauth = OAuth(FollowRedirect(REDIRECT), store=store, dpop=True)
    async with Client(Http(setup.url, auth=oauth)) as client:
        assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"
    ((_, _, tokens),) = store.all_tokens()
    assert tokens.token_type == "Bearer" and tokens.dpop_jwk is None
    assert set(setup.hits[1:]) == {"Bearer"}


@pytest.mark.parametrize("algs", [["RS256"], [], "ES256", {"ES256": True}])
async def test_a_server_not_listing_the_alg_is_refused_before_any_token_request(
        setup: Setup, algs: Any) -> None:
    setup.auth.dpop_algs = algs
    oauth = OAuth(FollowRedirect(REDIRECT), dpop=True)
    with pytest.raises(AuthorizationFailed, match="dpop_signing_alg_values_supported"):
        async with Client(Http(setup.url, auth=oauth)):
            pass
    assert setup.auth.hits["/token"] == 0


async def test_an_rsa_dpop_key_the_server_lists(setup: Setup) -> None:
    rsa = jwk.RSAKey.generate_key(2048, private=True).as_dict(private=True)
    oauth = OAuth(FollowRedirect(REDIRECT), dpop=DPoPKey(rsa))
    async with Client(Http(setup.url, auth=oauth)) as client:
        assert (await client.call_tool("add", {"a": 2, "b": 2})).text == "4"
    assert {h["alg"] for h, _ in setup.auth.dpop_proofs} == {"RS256"}


async def test_nonce_demands_that_never_end_are_retried_once(setup: Setup) -> None:
    setup.auth.dpop_nonce_always = True
    oauth = OAuth(FollowRedirect(REDIRECT), dpop=True)
    with pytest.raises(AuthorizationFailed, match="use_dpop_nonce"):
        async with Client(Http(setup.url, auth=oauth)):
            pass
    assert setup.auth.hits["/token"] == 2


async def test_a_resource_server_that_keeps_asking_for_a_nonce_is_bounded(
        setup: Setup) -> None:
    setup.nonce_always[0] = True
    oauth = OAuth(FollowRedirect(REDIRECT), dpop=True)
    async with httpx.AsyncClient(auth=oauth, timeout=10) as http:
        reply = await http.post(setup.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert reply.status_code == 401
    # no token (401: authorize), the new token, the same with the nonce: one renewal
    # per request was spent, so the 401 is the caller's
    assert setup.hits == ["", "DPoP", "DPoP"]
    assert setup.auth.hits["/authorize"] == 1


# ------------------------------------------------------------------ DPoPKey


def test_a_proof_s_claims() -> None:
    key = DPoPKey()
    token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"  # RFC 9449 §7.1's example
    proof = key.proof("post", "https://mcp.example.com/mcp?x=1#f", access_token=token,
                      nonce="n-1")
    signed = jws.extract_compact(proof.encode())
    public = jwk.import_key(signed.headers()["jwk"])
    assert jws.validate_compact(signed, public, algorithms=["ES256"])
    claims = orjson.loads(signed.payload)
    assert claims["htm"] == "POST" and claims["htu"] == "https://mcp.example.com/mcp"
    assert claims["ath"] == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"  # its ath
    assert claims["nonce"] == "n-1" and len(claims["jti"]) >= 22
    assert key.proof("GET", "https://a.example/") != key.proof("GET", "https://a.example/")
    assert "d" not in signed.headers()["jwk"] and "DPoPKey(alg='ES256'" in repr(key)


@pytest.mark.parametrize("key, alg, reason", [
    ({"kty": "oct", "k": "c2VjcmV0"}, None, "symmetric"),
    (jwk.ECKey.generate_key("P-256", private=True).as_dict(private=False), None, "private"),
    (jwk.ECKey.generate_key("P-256", private=True).as_dict(private=True), "HS256",
     "does not fit"),
    (jwk.ECKey.generate_key("P-256", private=True).as_dict(private=True), "none",
     "does not fit"),
])
def test_a_dpop_key_must_be_a_private_asymmetric_key(key: Any, alg: str | None,
                                                     reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        DPoPKey(key, alg=alg)
