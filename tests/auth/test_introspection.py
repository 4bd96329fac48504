"""``IntrospectionVerifier`` against a real RFC 7662 endpoint on loopback (tests/auth/idp.py).

Active and inactive tokens, client authentication both ways, the claim rules applied to
what the answer carries, and the cache: hits counted at the endpoint, refusals kept
briefly, nothing kept past ``exp``, the size bound, keys that are digests.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcpkit.auth import (
    Audience,
    Fetcher,
    IntrospectionVerifier,
    InvalidToken,
    VerifierUnavailable,
)
from mcpkit.auth.server.cache import TokenCache, token_key

from .idp import CLIENT_ID, CLIENT_SECRET, RESOURCE, IdP

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def verifier(idp: IdP, *, timeout: float = 2.0,
                   **options: Any) -> AsyncIterator[IntrospectionVerifier]:
    fetcher = Fetcher(timeout=timeout)
    options.setdefault("client_secret", CLIENT_SECRET)
    v = IntrospectionVerifier(endpoint=idp.introspection_endpoint, client_id=CLIENT_ID,
                              audience=options.pop("audience", RESOURCE), fetcher=fetcher,
                              **options)
    try:
        yield v
    finally:
        await fetcher.aclose()


def answer(**fields: Any) -> dict[str, Any]:
    now = time.time()
    base: dict[str, Any] = {"active": True, "sub": "bob", "client_id": "client-9",
                            "scope": "notes:read", "aud": RESOURCE, "exp": int(now) + 300,
                            "token_type": "Bearer"}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


async def refused(v: IntrospectionVerifier, token: str) -> str:
    with pytest.raises(InvalidToken) as info:
        await v.verify(token)
    assert token not in str(info.value)
    return info.value.description


@pytest.mark.parametrize("auth_method", ["client_secret_basic", "client_secret_post"])
async def test_active_token(idp: IdP, auth_method: Any) -> None:
    idp.introspection["opaque-1"] = answer()
    async with verifier(idp, auth_method=auth_method) as v:
        access = await v.verify("opaque-1")
    assert (access.subject, access.client_id, access.scopes, access.audience) == (
        "bob", "client-9", frozenset({"notes:read"}), (RESOURCE,))
    assert idp.introspection_auth == ["basic" if auth_method.endswith("basic") else "post"]
    body = idp.introspection_bodies[0]
    assert body["token"] == "opaque-1" and body["token_type_hint"] == "access_token"
    assert ("client_secret" in body) == auth_method.endswith("post")


async def test_wrong_client_credentials_are_unavailable_not_invalid(idp: IdP) -> None:
    idp.introspection["opaque-1"] = answer()
    async with verifier(idp, client_secret="wrong") as v:
        with pytest.raises(VerifierUnavailable, match="HTTP 401"):
            await v.verify("opaque-1")


@pytest.mark.parametrize("fields, reason", [
    ({"active": False}, "not active"),
    ({"active": "true"}, "not active"),
    ({"exp": -120}, "expired"),
    ({"aud": "https://other.example.com"}, "another resource"),
    ({"token_type": "refresh_token"}, "refresh token"),
    ({"scope": 5}, "scope claim is malformed"),
])
async def test_refused_answers(idp: IdP, fields: dict[str, Any], reason: str) -> None:
    if "exp" in fields:
        fields["exp"] += int(time.time())
    idp.introspection["opaque-1"] = answer(**fields)
    async with verifier(idp) as v:
        assert reason in await refused(v, "opaque-1")


async def test_unknown_token_is_inactive(idp: IdP) -> None:
    async with verifier(idp) as v:
        assert "not active" in await refused(v, "never-issued")


async def test_rules_apply_only_to_what_the_answer_carries(idp: IdP) -> None:
    """Issuer and times are checked when present; the audience always."""
    idp.introspection["bare"] = {"active": True, "aud": RESOURCE}
    idp.introspection["other-iss"] = answer(iss="https://evil.example.com")
    idp.introspection["our-iss"] = answer(iss=idp.issuer)
    async with verifier(idp, issuer=idp.issuer) as v:
        bare = await v.verify("bare")
        assert (bare.subject, bare.audience, bare.expires_at) == (None, (RESOURCE,), None)
        assert "another issuer" in await refused(v, "other-iss")
        assert (await v.verify("our-iss")).issuer == idp.issuer


async def test_an_answer_naming_no_audience_is_refused(idp: IdP) -> None:
    """What oidc-provider answers for a refresh token: active, no ``aud``, no
    ``token_type``. Without an audience nothing says the token was issued for this
    server, so it is refused (an ``Audience`` with another claim reads that claim)."""
    idp.introspection["refresh"] = answer(aud=None, token_type=None)
    idp.introspection["appid"] = answer(aud=None, appid="api://notes")
    async with verifier(idp) as v:
        assert await refused(v, "refresh") == "the token names no audience"
    async with verifier(idp, audience=Audience(RESOURCE, also=["api://notes"],
                                               claim="appid")) as v:
        assert (await v.verify("appid")).audience == ("api://notes",)


async def test_active_answers_are_cached(idp: IdP) -> None:
    idp.introspection["opaque-1"] = answer()
    idp.introspection["opaque-2"] = answer(sub="carol")
    async with verifier(idp) as v:
        for _ in range(5):
            assert (await v.verify("opaque-1")).subject == "bob"
        assert (await v.verify("opaque-2")).subject == "carol"
    assert idp.hits["/introspect"] == 2


async def test_refusals_are_cached_briefly(idp: IdP) -> None:
    async with verifier(idp, inactive_ttl=0.2) as v:
        for _ in range(3):
            await refused(v, "revoked")
        assert idp.hits["/introspect"] == 1
        await anyio.sleep(0.25)
        await refused(v, "revoked")
        assert idp.hits["/introspect"] == 2


async def test_cache_never_outlives_exp(idp: IdP) -> None:
    idp.introspection["short"] = answer(exp=time.time() + 0.3)
    async with verifier(idp, leeway=0, cache_ttl=60) as v:
        await v.verify("short")
        await v.verify("short")
        assert idp.hits["/introspect"] == 1
        await anyio.sleep(0.35)
        assert "expired" in await refused(v, "short")
        assert idp.hits["/introspect"] == 2


async def test_cache_is_bounded_and_keyed_by_digest(idp: IdP) -> None:
    for n in range(5):
        idp.introspection[f"t{n}"] = answer()
    async with verifier(idp, max_entries=3) as v:
        for n in range(5):
            await v.verify(f"t{n}")
        assert len(v.cache) == 3
        await v.verify("t0")  # evicted: asked again
        await v.verify("t4")  # still there
    assert idp.hits["/introspect"] == 6
    assert token_key("t0") == hashlib.sha256(b"t0").digest()


def test_token_cache_rules() -> None:
    cache: TokenCache[str] = TokenCache(max_entries=2)
    cache.put(b"a", "A", 60)
    cache.put(b"b", "B", 60)
    assert cache.get(b"a") == "A"  # a is now the most recently used
    cache.put(b"c", "C", 60)
    assert (cache.get(b"a"), cache.get(b"b"), cache.get(b"c")) == ("A", None, "C")
    cache.put(b"a", "A2", 0)  # a deadline already passed: dropped, not stored
    assert cache.get(b"a") is None and len(cache) == 1
    with pytest.raises(ValueError):
        TokenCache(0)


@pytest.mark.parametrize("mode, message", [
    ("hang", "did not answer within"),
    ("junk", "is not JSON"),
    ("list", "not a JSON object"),
])
async def test_endpoint_failures_are_unavailable(idp: IdP, mode: str, message: str) -> None:
    idp.introspection_mode = mode
    async with verifier(idp, timeout=0.2) as v:
        started = time.monotonic()
        with pytest.raises(VerifierUnavailable, match=message) as info:
            await v.verify("opaque-secret-token")
        assert time.monotonic() - started < 0.6
        assert "opaque-secret-token" not in str(info.value)


async def test_an_unsupported_token_type_answer_refuses_the_token(idp: IdP) -> None:
    """HTTP 400 ``unsupported_token_type`` (oidc-provider's answer for its JWT access
    tokens): the endpoint will not vouch for the token, so it is refused (401, cached as a
    refusal), not reported as an unavailable server (503, retried for ever)."""
    idp.introspection_mode = "oauth-error"
    idp.introspection_error = (400, {"error": "unsupported_token_type",
                                     "error_description": "Structured JWT Tokens cannot "
                                                          "be introspected"})
    async with verifier(idp) as v:
        assert await refused(v, "a.jwt.token") == (
            "the authorization server does not introspect this kind of token")
        await refused(v, "a.jwt.token")
    assert idp.hits["/introspect"] == 1


@pytest.mark.parametrize("status, body, message", [
    (400, {"error": "invalid_request"}, r"HTTP 400 \(invalid_request\)"),
    (401, {"error": "unsupported_token_type"}, r"HTTP 401 \(unsupported_token_type\)"),
    (400, {"error": "<b>" + "x" * 100}, "HTTP 400$"),
    (400, ["unsupported_token_type"], "HTTP 400$"),
    (500, {"error": "unsupported_token_type"}, "HTTP 500$"),
])
async def test_other_error_answers_are_unavailable(idp: IdP, status: int, body: Any,
                                                   message: str) -> None:
    idp.introspection_mode = "oauth-error"
    idp.introspection_error = (status, body)
    async with verifier(idp) as v:
        with pytest.raises(VerifierUnavailable, match=message):
            await v.verify("opaque-1")


async def test_post_redirects_keep_method_and_origin(idp: IdP) -> None:
    """307 within the origin is followed with the same POST; 302 (which would turn it
    into a GET) is not followed."""
    idp.introspection["opaque-1"] = answer()
    idp.introspection_mode = "redirect-307"
    async with verifier(idp) as v:
        assert (await v.verify("opaque-1")).subject == "bob"
    assert idp.hits["/introspect-moved"] == 1 and idp.introspection_auth == ["basic"]
    idp.introspection_mode = "redirect-302"
    async with verifier(idp) as v:
        with pytest.raises(VerifierUnavailable, match="answered a POST with HTTP 302"):
            await v.verify("opaque-1")
    assert idp.hits["/introspect-moved"] == 1


async def test_too_long_token_is_refused_without_asking(idp: IdP) -> None:
    async with verifier(idp) as v:
        assert "too long" in await refused(v, "x" * 1_000_000)
    assert idp.hits["/introspect"] == 0


def test_configuration_errors(idp: IdP) -> None:
    common: dict[str, Any] = {"client_id": CLIENT_ID, "client_secret": "hunter2-secret",
                              "audience": RESOURCE}
    with pytest.raises(ValueError, match="https"):
        IntrospectionVerifier(endpoint="http://as.example.com/introspect", **common)
    with pytest.raises(ValueError, match="authentication method"):
        IntrospectionVerifier(endpoint=idp.introspection_endpoint, auth_method="none",  # type: ignore[arg-type]
                              **common)
    with pytest.raises(ValueError):
        IntrospectionVerifier(endpoint=idp.introspection_endpoint, cache_ttl=-1, **common)
    v = IntrospectionVerifier(endpoint=idp.introspection_endpoint, **common)
    assert "hunter2" not in repr(v)
