"""``BearerAuth`` in front of a small app, with a real ``JWTVerifier`` whose keys come from
the loopback authorization server (tests/auth/idp.py).

Requests go through httpx: in process (``httpx.ASGITransport``) for most, through a real
uvicorn for the end-to-end ones (repeated headers, lifespan state). Covers the metadata
at both well-known URLs, every refusal (400/401/403/503) and its challenge, the principal
handed to the app, and that no log line carries a token.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest

from mcpkit.auth import (
    AUTH_STATE_KEY,
    AccessToken,
    BearerAuth,
    Fetcher,
    JWTVerifier,
    ProtectedResource,
)
from tests.support.http import LiveServer

from .idp import RESOURCE, IdP

pytestmark = pytest.mark.anyio

PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
PRM_URL = "https://mcp.example.com" + PRM_PATH
ROOT_PRM_PATH = "/.well-known/oauth-protected-resource"


class Echo:
    """The protected app: answers with the principal it was handed (and lifespan state)."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                if message["type"] == "lifespan.startup":
                    scope["state"]["db"] = "ready"
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        self.calls += 1
        state = scope.get("state", {})
        access: AccessToken = state[AUTH_STATE_KEY]
        body = orjson.dumps({"subject": access.subject, "scopes": sorted(access.scopes),
                             "db": state.get("db")})
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})


def resource() -> ProtectedResource:
    return ProtectedResource(RESOURCE, ["https://auth.example.com"],
                             scopes_supported=["notes:read", "notes:write"],
                             resource_name="Notes")


@asynccontextmanager
async def protected(idp: IdP, *, required_scopes: tuple[str, ...] = (),
                    timeout: float = 2.0) -> AsyncIterator[tuple[httpx.AsyncClient, Echo]]:
    fetcher = Fetcher(timeout=timeout)
    echo = Echo()
    app = BearerAuth(echo, resource=resource(), required_scopes=required_scopes,
                     verifier=JWTVerifier(issuer=idp.issuer, audience=RESOURCE,
                                          jwks_uri=idp.jwks_uri, fetcher=fetcher))
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport,
                                     base_url="https://mcp.example.com") as client:
            yield client, echo
    finally:
        await fetcher.aclose()


def challenge_of(reply: httpx.Response) -> str:
    value: str = reply.headers["www-authenticate"]
    return value


# ------------------------------------------------------------------ metadata


@pytest.mark.parametrize("path", [PRM_PATH, ROOT_PRM_PATH])
async def test_metadata_at_both_well_known_paths(idp: IdP, path: str) -> None:
    async with protected(idp) as (client, echo):
        reply = await client.get(path)
        head = await client.head(path)
        preflight = await client.options(path, headers={
            "origin": "https://app.example", "access-control-request-method": "GET"})
        post = await client.post(path)
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.headers["access-control-allow-origin"] == "*"
    assert "max-age" in reply.headers["cache-control"]
    assert reply.json() == {
        "resource": RESOURCE,
        "authorization_servers": ["https://auth.example.com"],
        "scopes_supported": ["notes:read", "notes:write"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Notes",
    }
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(reply.content))
    assert preflight.status_code == 204
    assert "GET" in preflight.headers["access-control-allow-methods"]
    assert post.status_code == 405 and "GET" in post.headers["allow"]
    assert echo.calls == 0


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize("headers", [{}, {"authorization": "Basic dXNlcjpwdw=="}])
async def test_no_bearer_token_is_401_with_metadata_and_scope(
        idp: IdP, headers: dict[str, str]) -> None:
    async with protected(idp) as (client, echo):
        reply = await client.post("/mcp", headers=headers)
    assert reply.status_code == 401
    assert challenge_of(reply) == (
        f'Bearer scope="notes:read notes:write", resource_metadata="{PRM_URL}"')
    assert reply.json()["error"] == "unauthorized"
    assert reply.headers["cache-control"] == "no-store"
    assert echo.calls == 0


async def test_required_scopes_are_the_challenged_ones(idp: IdP) -> None:
    async with protected(idp, required_scopes=("notes:read",)) as (client, _):
        reply = await client.post("/mcp")
    assert 'scope="notes:read"' in challenge_of(reply)


@pytest.mark.parametrize("make", [
    lambda idp: "garbage",
    lambda idp: idp.sign(idp.claims(aud="https://other.example.com")),
    lambda idp: idp.sign(idp.claims(exp=1)),
    lambda idp: idp.raw({"alg": "none"}, idp.claims()),
], ids=["garbage", "audience", "expired", "alg-none"])
async def test_refused_token_is_401_invalid_token(idp: IdP, make: Any) -> None:
    token = make(idp)
    async with protected(idp) as (client, echo):
        reply = await client.post("/mcp", headers={"authorization": f"Bearer {token}"})
    assert reply.status_code == 401
    challenge = challenge_of(reply)
    assert challenge.startswith('Bearer error="invalid_token", ')
    assert f'resource_metadata="{PRM_URL}"' in challenge and "error_description=" in challenge
    assert reply.json()["error"] == "invalid_token"
    assert token not in challenge and token not in reply.text
    assert echo.calls == 0


@pytest.mark.parametrize("target, headers", [
    ("/mcp", {"authorization": "Bearer"}),
    ("/mcp", {"authorization": "Bearer a b"}),
    ("/mcp", {"authorization": "Bearer a<b"}),
    ("/mcp", {"authorization": ""}),
    ("/mcp?access_token=abc", {}),
    ("/mcp?x=1&access_token=", {"authorization": "Bearer abc"}),
])
async def test_malformed_is_400_invalid_request(idp: IdP, target: str,
                                                headers: dict[str, str]) -> None:
    async with protected(idp) as (client, echo):
        reply = await client.post(target, headers=headers)
    assert reply.status_code == 400
    assert challenge_of(reply).startswith('Bearer error="invalid_request", ')
    assert reply.json()["error"] == "invalid_request"
    assert echo.calls == 0


async def test_two_authorization_headers_are_400(idp: IdP) -> None:
    token = idp.sign(idp.claims())
    async with protected(idp) as (client, echo):
        reply = await client.post("/mcp", headers=[("authorization", f"Bearer {token}"),
                                                   ("authorization", f"Bearer {token}")])
    assert reply.status_code == 400 and echo.calls == 0
    assert "only one Authorization header" in reply.json()["error_description"]


async def test_insufficient_scope_is_403_naming_every_needed_scope(idp: IdP) -> None:
    token = idp.sign(idp.claims(scope="notes:read"))
    async with protected(idp, required_scopes=("notes:read", "notes:write")) as (client, echo):
        reply = await client.post("/mcp", headers={"authorization": f"Bearer {token}"})
    assert reply.status_code == 403
    assert challenge_of(reply) == (
        f'Bearer error="insufficient_scope", scope="notes:read notes:write", '
        f'resource_metadata="{PRM_URL}", '
        'error_description="this request needs the scopes: notes:read notes:write"')
    assert reply.json()["error"] == "insufficient_scope"
    assert echo.calls == 0


async def test_unreachable_keys_are_503_not_401(idp: IdP, caplog: pytest.LogCaptureFixture) -> None:
    idp.jwks_mode = "hang"
    token = idp.sign(idp.claims())
    async with protected(idp, timeout=0.2) as (client, echo):
        reply = await client.post("/mcp", headers={"authorization": f"Bearer {token}"})
    assert reply.status_code == 503
    assert reply.headers["retry-after"] == "5"
    assert "www-authenticate" not in reply.headers
    assert reply.json()["error"] == "temporarily_unavailable"
    assert idp.jwks_uri not in reply.text  # internal detail: logged, not shown
    assert "did not answer within" in caplog.text
    assert echo.calls == 0


# ------------------------------------------------------------------ accepted


async def test_valid_token_reaches_the_app_with_its_principal(idp: IdP) -> None:
    token = idp.sign(idp.claims(scope="notes:read notes:write"))
    async with protected(idp, required_scopes=("notes:write",)) as (client, echo):
        reply = await client.post("/mcp", headers={"authorization": f"bearer {token}"})
    assert reply.status_code == 200
    assert reply.json() == {"subject": "alice", "scopes": ["notes:read", "notes:write"],
                            "db": None}
    assert echo.calls == 1


async def test_lifespan_passes_and_websockets_are_closed(idp: IdP) -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    app = BearerAuth(Echo(), resource=resource(), verifier=JWTVerifier(
        issuer=idp.issuer, audience=RESOURCE, jwks_uri=idp.jwks_uri))
    await app({"type": "websocket", "path": "/mcp", "headers": []}, receive, send)
    assert sent == [{"type": "websocket.close", "code": 1008}]

    sent.clear()
    lifespan = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def lifespan_receive() -> dict[str, Any]:
        return next(lifespan)

    await app({"type": "lifespan", "state": {}}, lifespan_receive, send)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete",
                                         "lifespan.shutdown.complete"]


async def test_end_to_end_under_uvicorn(idp: IdP) -> None:
    """A real server: lifespan state is kept beside the principal, and repeated
    ``Authorization`` header lines (which a server may not merge) are refused."""
    token = idp.sign(idp.claims())
    verifier = JWTVerifier(issuer=idp.issuer, audience=RESOURCE, jwks_uri=idp.jwks_uri)
    app = BearerAuth(Echo(), resource=resource(), verifier=verifier)
    with LiveServer(app) as live:
        async with httpx.AsyncClient(base_url=live.base, timeout=5) as client:
            ok = await client.post("/mcp", headers={"authorization": f"Bearer {token}"})
            twice = await client.post("/mcp", headers=[("authorization", f"Bearer {token}"),
                                                       ("authorization", "Bearer other")])
            prm = await client.get(PRM_PATH)
            anonymous = await client.post("/mcp")
        assert live.loop is not None  # the verifier's HTTP client lives on the server's loop
        asyncio.run_coroutine_threadsafe(verifier.aclose(), live.loop).result(timeout=5)
    assert ok.status_code == 200 and ok.json() == {
        "subject": "alice", "scopes": ["notes:read", "notes:write"], "db": "ready"}
    assert twice.status_code == 400
    assert prm.status_code == 200 and prm.json()["resource"] == RESOURCE
    assert anonymous.status_code == 401
    assert f'resource_metadata="{PRM_URL}"' in anonymous.headers["www-authenticate"]


async def test_no_log_line_carries_a_token(idp: IdP, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    tokens = [idp.sign(idp.claims()), idp.sign(idp.claims(aud="https://x.example")),
              idp.sign(idp.claims(scope="other")), "opaque-garbage-token-123"]
    async with protected(idp, required_scopes=("notes:read",)) as (client, _):
        for token in tokens:
            await client.post("/mcp", headers={"authorization": f"Bearer {token}"})
        idp.jwks_mode = "error"
        rogue = idp.sign(idp.claims(), kid="rogue-kid-xyz")
        tokens.append(rogue)
        await client.post("/mcp", headers={"authorization": f"Bearer {rogue}"})
    assert caplog.records, "expected the refusals to be logged"
    for record in caplog.records:
        text = record.getMessage()
        assert not any(token in text for token in tokens), text


# ------------------------------------------------------------------ reuse of a verified header


class Counting:
    """A verifier that accepts the tokens the real one accepts and counts its calls."""

    def __init__(self, inner: JWTVerifier, cache_ttl: float | None = None) -> None:
        self.inner = inner
        self.calls = 0
        if cache_ttl is not None:
            self.cache_ttl = cache_ttl

    async def verify(self, token: str) -> AccessToken:
        self.calls += 1
        return await self.inner.verify(token)


@asynccontextmanager
async def counted(idp: IdP, **options: Any) -> AsyncIterator[tuple[httpx.AsyncClient, Counting]]:
    cache_ttl = options.pop("cache_ttl", None)
    verifier = Counting(JWTVerifier(issuer=idp.issuer, audience=RESOURCE,
                                    jwks_uri=idp.jwks_uri, cache_ttl=0), cache_ttl)
    app = BearerAuth(Echo(), resource=resource(), verifier=verifier, **options)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="https://mcp.example.com") as client:
            yield client, verifier
    finally:
        await verifier.inner.aclose()


async def test_a_verified_header_is_reused_for_reuse_seconds(idp: IdP) -> None:
    token = idp.sign(idp.claims())
    headers = {"authorization": f"Bearer {token}"}
    async with counted(idp, reuse_seconds=0.3) as (client, verifier):
        for _ in range(3):
            assert (await client.post("/mcp", headers=headers)).status_code == 200
        assert verifier.calls == 1
        await asyncio.sleep(0.35)
        assert (await client.post("/mcp", headers=headers)).status_code == 200
        assert verifier.calls == 2
        other = {"authorization": f"Bearer {idp.sign(idp.claims(sub='bob'))}"}
        assert (await client.post("/mcp", headers=other)).json()["subject"] == "bob"
        assert verifier.calls == 3


async def test_reuse_is_off_at_zero_and_bounded_by_the_verifier_s_own_cache(idp: IdP) -> None:
    headers = {"authorization": f"Bearer {idp.sign(idp.claims())}"}
    async with counted(idp, reuse_seconds=0) as (client, verifier):
        for _ in range(3):
            await client.post("/mcp", headers=headers)
        assert verifier.calls == 3
    async with counted(idp, reuse_seconds=5, cache_ttl=0) as (client, verifier):
        for _ in range(3):  # a verifier that caches nothing is asked every time
            await client.post("/mcp", headers=headers)
        assert verifier.calls == 3
    with pytest.raises(ValueError, match="reuse_seconds"):
        BearerAuth(Echo(), resource=resource(), verifier=Counting(JWTVerifier(
            issuer=idp.issuer, audience=RESOURCE)), reuse_seconds=-1)


async def test_reuse_never_outlives_the_token(idp: IdP) -> None:
    """A token reused for up to a minute is still refused once its exp has passed."""
    import time

    token = idp.sign(idp.claims(exp=int(time.time()) + 1))
    headers = {"authorization": f"Bearer {token}"}
    async with counted(idp, reuse_seconds=60) as (client, verifier):
        assert (await client.post("/mcp", headers=headers)).status_code == 200
        await asyncio.sleep(max(0.0, int(time.time()) + 2 - time.time()))
        verifier.inner.rules.leeway = 0
        reply = await client.post("/mcp", headers=headers)
    assert reply.status_code == 401 and verifier.calls == 2


async def test_refusals_are_not_reused(idp: IdP) -> None:
    headers = {"authorization": "Bearer not-a-jwt"}
    async with counted(idp, reuse_seconds=60) as (client, verifier):
        for _ in range(2):
            assert (await client.post("/mcp", headers=headers)).status_code == 401
    assert verifier.calls == 2
