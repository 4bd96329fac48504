"""DPoP at the resource server (RFC 9449 §4.3, §7, §9): ``BearerAuth(dpop=DPoPChecker())``.

A real ``JWTVerifier`` (keys from the loopback IdP, tests/auth/idp.py) or
``IntrospectionVerifier`` judges the tokens; the proofs are written here with joserfc,
independently of mcpkit's client, so each can be wrong in exactly one way. Requests go
through ``httpx.ASGITransport`` (raw headers kept, so two ``DPoP`` headers arrive as
two) and once through uvicorn. Covered: a bound token with its proof reaches the app;
every hostile proof (wrong htu/htm, replayed jti, stale or future iat, ath mismatch,
another key, ``alg: none``, HS256, a private or symmetric jwk, wrong typ, huge, missing,
two headers) is 401 ``invalid_dpop_proof``; a bound token as ``Bearer`` and a bearer
token as ``DPoP`` are 401 ``invalid_token``; the challenges (``DPoP algs`` beside
``Bearer``); server nonces; the URL checked is the public one whatever the Host header.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
from joserfc import jwk, jws

from mcpkit.auth import (
    AccessToken,
    Auth,
    BearerAuth,
    DPoPChecker,
    Fetcher,
    IntrospectionVerifier,
    JWTVerifier,
    ProtectedResource,
    parse_bearer_challenge,
)
from tests.support.http import LiveServer

from .idp import CLIENT_ID, CLIENT_SECRET, RESOURCE, IdP
from .test_middleware import Echo

pytestmark = pytest.mark.anyio

PUBLIC = "https://mcp.example.com"
KEY = jwk.ECKey.generate_key("P-256", private=True)
OTHER = jwk.ECKey.generate_key("P-256", private=True)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def ath(token: str) -> str:
    return b64url(hashlib.sha256(token.encode()).digest())


def proof(token: str, *, key: jwk.Key = KEY, method: str = "POST", url: str = RESOURCE,
          alg: str = "ES256", header: dict[str, Any] | None = None,
          **claims: Any) -> str:
    """A proof for ``method url`` presenting ``token``; ``claims``/``header`` override
    (a value None drops the claim)."""
    head = {"typ": "dpop+jwt", "alg": alg, "jwk": key.as_dict(private=False),
            **(header or {})}
    body = {"jti": str(uuid.uuid4()), "htm": method, "htu": url, "iat": int(time.time()),
            "ath": ath(token), **claims}
    body = {k: v for k, v in body.items() if v is not None}
    return jws.serialize_compact(head, orjson.dumps(body), key, algorithms=[alg])


def unsigned(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    return ".".join(b64url(p) for p in (orjson.dumps(header), orjson.dumps(claims), signature))


def bound(idp: IdP, key: jwk.Key = KEY) -> str:
    """A JWT access token bound to ``key`` (``cnf.jkt``, RFC 9449 §6.1)."""
    return idp.sign(idp.claims(cnf={"jkt": key.thumbprint()}))


def dpop(token: str, the_proof: str | None = None) -> list[tuple[str, str]]:
    headers = [("authorization", f"DPoP {token}")]
    if the_proof is not None:
        headers.append(("dpop", the_proof))
    return headers


@asynccontextmanager
async def protected(idp: IdP, checker: DPoPChecker | None = None, *, verifier: Any = None,
                    base_url: str = PUBLIC, reuse_seconds: float = 1.0,
                    required_scopes: tuple[str, ...] = (),
                    ) -> AsyncIterator[tuple[httpx.AsyncClient, Echo]]:
    fetcher = Fetcher(timeout=2.0)
    echo = Echo()
    app = BearerAuth(
        echo, resource=ProtectedResource(RESOURCE, ["https://auth.example.com"],
                                         scopes_supported=["notes:read"]),
        verifier=verifier or JWTVerifier(issuer=idp.issuer, audience=RESOURCE,
                                         jwks_uri=idp.jwks_uri, fetcher=fetcher),
        dpop=checker if checker is not None else DPoPChecker(), reuse_seconds=reuse_seconds,
        required_scopes=required_scopes)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url=base_url) as client:
            yield client, echo
    finally:
        await fetcher.aclose()


def dpop_error(reply: httpx.Response) -> tuple[int, str | None, str | None]:
    """(status, the DPoP challenge's error, the body's error)."""
    challenge = parse_bearer_challenge(reply.headers.get("www-authenticate", ""), "dpop")
    return (reply.status_code, challenge.error if challenge else None,
            reply.json().get("error") if reply.content else None)


# ------------------------------------------------------------------ accepted


async def test_a_bound_token_with_fresh_proofs_reaches_the_app(idp: IdP) -> None:
    token = bound(idp)
    async with protected(idp) as (client, echo):
        first = await client.post("/mcp", headers=dpop(token, proof(token)))
        second = await client.post("/mcp", headers=dpop(token, proof(token)))
    assert first.status_code == second.status_code == 200, first.text
    assert first.json()["subject"] == "alice" and echo.calls == 2


async def test_an_introspected_bound_token_is_checked_the_same_way(idp: IdP) -> None:
    idp.introspection["opaque-1"] = {"active": True, "aud": RESOURCE, "sub": "bob",
                                     "iss": idp.issuer, "cnf": {"jkt": KEY.thumbprint()},
                                     "token_type": "DPoP"}
    verifier = IntrospectionVerifier(endpoint=idp.introspection_endpoint,
                                     client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                                     audience=RESOURCE)
    try:
        async with protected(idp, verifier=verifier) as (client, _):
            good = await client.post("/mcp", headers=dpop("opaque-1", proof("opaque-1")))
            other = await client.post("/mcp", headers=dpop(
                "opaque-1", proof("opaque-1", key=OTHER)))
            as_bearer = await client.post("/mcp",
                                          headers={"authorization": "Bearer opaque-1"})
    finally:
        await verifier.aclose()
    assert good.status_code == 200 and good.json()["subject"] == "bob"
    assert dpop_error(other) == (401, "invalid_dpop_proof", "invalid_dpop_proof")
    assert as_bearer.status_code == 401 and "DPoP" in as_bearer.json()["error_description"]


async def test_the_url_checked_is_the_public_one_behind_a_proxy(idp: IdP) -> None:
    """Behind a proxy the Host is the internal one; the client signed the public URL."""
    token = bound(idp)
    async with protected(idp, base_url="http://10.0.0.7:8000") as (client, _):
        public = await client.post("/mcp", headers=dpop(token, proof(token)))
        internal = await client.post("/mcp", headers=dpop(
            token, proof(token, url="http://10.0.0.7:8000/mcp")))
        normalised = await client.post("/mcp", headers=dpop(
            token, proof(token, url="HTTPS://MCP.example.com:443/mcp?q=1#f")))
    assert public.status_code == 200
    assert dpop_error(internal)[1] == "invalid_dpop_proof"
    assert "htu" in internal.json()["error_description"]
    assert normalised.status_code == 200  # RFC 9449 §4.3: case, port, query ignored


# ------------------------------------------------------------------ hostile proofs


def _cases(idp: IdP, token: str) -> dict[str, tuple[list[tuple[str, str]], str]]:
    now = int(time.time())
    hs_key = {"kty": "oct", "k": b64url(b"0" * 32)}
    head = {"typ": "dpop+jwt", "alg": "HS256", "jwk": hs_key}
    claims = {"jti": "x", "htm": "POST", "htu": RESOURCE, "iat": now, "ath": ath(token)}
    signing_input = f"{b64url(orjson.dumps(head))}.{b64url(orjson.dumps(claims))}"
    mac = hmac.new(b"0" * 32, signing_input.encode(), hashlib.sha256).digest()
    hs256 = f"{signing_input}.{b64url(mac)}"
    public = KEY.as_dict(private=False)
    return {
        "wrong htu": (dpop(token, proof(token, url=PUBLIC + "/other")), "htu"),
        "wrong htm": (dpop(token, proof(token, method="GET")), "htm"),
        "stale iat": (dpop(token, proof(token, iat=now - 3600)), "iat"),
        "future iat": (dpop(token, proof(token, iat=now + 3600)), "iat"),
        "no iat": (dpop(token, proof(token, iat=None)), "iat"),
        "ath mismatch": (dpop(token, proof(token, ath=ath("another"))), "ath"),
        "no ath": (dpop(token, proof(token, ath=None)), "ath"),
        "non-ascii ath": (dpop(token, proof(token, ath="ä" * 43)), "ath"),
        "non-ascii htu": (dpop(token, proof(token, url="https://mcp.exämple.com/mcp")),
                          "htu"),
        "another key": (dpop(token, proof(token, key=OTHER)), "not bound to"),
        "alg none": (dpop(token, unsigned({**head, "alg": "none", "jwk": public}, claims)),
                     "alg"),
        "hs256": (dpop(token, hs256), "alg"),
        "private jwk": (dpop(token, proof(token, header={"jwk": KEY.as_dict(private=True)})),
                        "public key"),
        "wrong typ": (dpop(token, proof(token, header={"typ": "JWT"})), "typ"),
        "no jti": (dpop(token, proof(token, jti=None)), "jti"),
        "curve mismatch": (dpop(token, unsigned({**head, "alg": "ES384", "jwk": public},
                                                claims, b"x" * 96)), "curve"),
        "huge": (dpop(token, proof(token, pad="x" * 10_000)), "too long"),
        "garbage": (dpop(token, "not.a.jwt"), "well-formed"),
        "missing": (dpop(token), "send a DPoP proof"),
        "two headers": ([*dpop(token, proof(token)), ("dpop", proof(token))],
                        "exactly one DPoP header"),
    }


@pytest.mark.parametrize("case", [
    "wrong htu", "wrong htm", "stale iat", "future iat", "no iat", "ath mismatch", "no ath",
    "non-ascii ath", "non-ascii htu",
    "another key", "alg none", "hs256", "private jwk", "wrong typ", "no jti",
    "curve mismatch", "huge", "garbage", "missing", "two headers"])
async def test_a_hostile_proof_is_401_invalid_dpop_proof(idp: IdP, case: str) -> None:
    token = bound(idp)
    headers, reason = _cases(idp, token)[case]
    async with protected(idp) as (client, echo):
        reply = await client.post("/mcp", headers=headers)
    assert dpop_error(reply) == (401, "invalid_dpop_proof", "invalid_dpop_proof"), reply.text
    assert reason in reply.json()["error_description"]
    assert echo.calls == 0


async def test_a_replayed_proof_is_refused(idp: IdP) -> None:
    token = bound(idp)
    once = proof(token)
    async with protected(idp, reuse_seconds=0) as (client, echo):
        first = await client.post("/mcp", headers=dpop(token, once))
        again = await client.post("/mcp", headers=dpop(token, once))
    assert first.status_code == 200
    assert dpop_error(again)[:2] == (401, "invalid_dpop_proof")
    assert "used before" in again.json()["error_description"] and echo.calls == 1


async def test_two_dpop_headers_through_uvicorn(idp: IdP) -> None:
    token = bound(idp)
    verifier = JWTVerifier(issuer=idp.issuer, audience=RESOURCE, jwks_uri=idp.jwks_uri)
    app = BearerAuth(Echo(), resource=ProtectedResource(RESOURCE, ["https://a.example"]),
                     verifier=verifier, dpop=DPoPChecker())
    with LiveServer(app) as live:
        async with httpx.AsyncClient(timeout=10) as http:
            reply = await http.post(live.url, headers=[*dpop(token, proof(token)),
                                                       ("dpop", proof(token))])
            one = await http.post(live.url, headers=dpop(token, proof(token, url=live.url)))
        assert live.loop is not None  # the verifier's HTTP client lives on the server's loop
        asyncio.run_coroutine_threadsafe(verifier.aclose(), live.loop).result(timeout=5)
    assert one.status_code == 401 and "htu" in one.json()["error_description"]  # public URL
    assert dpop_error(reply)[:2] == (401, "invalid_dpop_proof")


# ------------------------------------------------------------------ schemes and challenges


async def test_a_bound_token_as_bearer_and_a_bearer_token_as_dpop_are_refused(
        idp: IdP) -> None:
    token, plain = bound(idp), idp.sign(idp.claims())
    async with protected(idp) as (client, echo):
        as_bearer = await client.post("/mcp", headers={"authorization": f"Bearer {token}"})
        as_dpop = await client.post("/mcp", headers=dpop(plain, proof(plain)))
        plain_ok = await client.post("/mcp", headers={"authorization": f"Bearer {plain}"})
    bearer = parse_bearer_challenge(as_bearer.headers["www-authenticate"])
    assert as_bearer.status_code == 401 and bearer is not None
    assert bearer.error == "invalid_token" and "DPoP" in (bearer.error_description or "")
    assert dpop_error(as_dpop) == (401, "invalid_token", "invalid_token")
    assert "not bound" in as_dpop.json()["error_description"]
    assert plain_ok.status_code == 200 and echo.calls == 1


async def test_the_401_challenges_offer_bearer_and_dpop_with_algs(idp: IdP) -> None:
    async with protected(idp, DPoPChecker(algorithms=["ES256", "PS256"])) as (client, _):
        reply = await client.post("/mcp")
    values = reply.headers.get_list("www-authenticate")
    assert reply.status_code == 401 and len(values) == 2
    assert values[0].startswith("Bearer ") and "resource_metadata=" in values[0]
    assert values[1].startswith("DPoP ") and 'algs="ES256 PS256"' in values[1]


async def test_insufficient_scope_is_challenged_in_the_scheme_used(idp: IdP) -> None:
    token = idp.sign(idp.claims(cnf={"jkt": KEY.thumbprint()}, scope="notes:read"))
    plain = idp.sign(idp.claims(scope="notes:read"))
    async with protected(idp, required_scopes=("notes:admin",)) as (client, echo):
        bound_reply = await client.post("/mcp", headers=dpop(token, proof(token)))
        plain_reply = await client.post("/mcp", headers={"authorization": f"Bearer {plain}"})
    assert dpop_error(bound_reply) == (403, "insufficient_scope", "insufficient_scope")
    assert 'scope="notes:admin"' in bound_reply.headers["www-authenticate"]
    assert plain_reply.status_code == 403
    assert plain_reply.headers["www-authenticate"].startswith(
        'Bearer error="insufficient_scope"') and echo.calls == 0


async def test_without_dpop_a_bound_token_is_refused_under_either_scheme(idp: IdP) -> None:
    token = bound(idp)
    verifier = JWTVerifier(issuer=idp.issuer, audience=RESOURCE, jwks_uri=idp.jwks_uri)
    app = BearerAuth(Echo(), resource=ProtectedResource(RESOURCE, ["https://a.example"]),
                     verifier=verifier)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url=PUBLIC) as client:
        as_bearer = await client.post("/mcp", headers={"authorization": f"Bearer {token}"})
        as_dpop = await client.post("/mcp", headers=dpop(token, proof(token)))
    await verifier.aclose()
    assert as_bearer.json()["error_description"] == (
        "the token is bound to a key (cnf) and this server accepts bearer tokens only")
    assert as_dpop.status_code == 401 and "error=" not in as_dpop.headers["www-authenticate"]
    assert "DPoP" not in as_dpop.headers["www-authenticate"]


async def test_a_token_bound_another_way_is_refused(idp: IdP) -> None:
    token = idp.sign(idp.claims(cnf={"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN"}))
    async with protected(idp) as (client, _):
        reply = await client.post("/mcp", headers=dpop(token, proof(token)))
    assert dpop_error(reply)[:2] == (401, "invalid_token")
    assert "cannot check" in reply.json()["error_description"]


# ------------------------------------------------------------------ nonces


async def test_server_nonces(idp: IdP) -> None:
    token = bound(idp)
    checker = DPoPChecker(nonces=True, nonce_lifetime=60)
    async with protected(idp, checker, reuse_seconds=0) as (client, echo):
        first = await client.post("/mcp", headers=dpop(token, proof(token)))
        nonce = first.headers["dpop-nonce"]
        retried = await client.post("/mcp", headers=dpop(token, proof(token, nonce=nonce)))
        forged = await client.post("/mcp", headers=dpop(token, proof(
            token, nonce=nonce[:-2] + ("AA" if not nonce.endswith("AA") else "BB"))))
        old = checker.new_nonce(time.time() - 120)
        stale = await client.post("/mcp", headers=dpop(token, proof(token, nonce=old)))
    assert dpop_error(first) == (401, "use_dpop_nonce", "use_dpop_nonce")
    assert retried.status_code == 200 and echo.calls == 1
    for reply in (forged, stale):
        assert dpop_error(reply)[1] == "use_dpop_nonce" and reply.headers["dpop-nonce"]


def test_a_checker_refuses_symmetric_or_unknown_algorithms() -> None:
    for algs in (["HS256"], ["none"], ["XX999"], []):
        with pytest.raises(ValueError):
            DPoPChecker(algorithms=algs)


def test_a_tool_s_403_is_in_the_dpop_scheme_for_a_bound_token() -> None:
    """What ``ScopeGuard`` sends for a call lacking a tool's scope (Auth.insufficient)."""
    def token(claims: dict[str, Any]) -> AccessToken:
        return AccessToken(subject="a", client_id=None, scopes=(), expires_at=None,
                           issuer=None, audience=(), claims=claims)

    resource = ProtectedResource(RESOURCE, ["https://auth.example.com"])
    with_dpop = Auth(object(), resource=resource, dpop=True)  # type: ignore[arg-type]
    without = Auth(object(), resource=resource)  # type: ignore[arg-type]
    bound = token({"cnf": {"jkt": KEY.thumbprint()}})
    assert with_dpop.insufficient(["w"], "needs w", bound).startswith(
        'DPoP error="insufficient_scope", scope="w"')
    assert 'algs="RS256 RS384' in with_dpop.insufficient(["w"], None, bound)
    for auth, access in ((with_dpop, token({})), (without, bound), (with_dpop, None)):
        assert auth.insufficient(["w"], None, access).startswith(
            'Bearer error="insufficient_scope"')
