"""``JWTVerifier`` against a real JWKS endpoint on loopback (tests/auth/idp.py).

Valid tokens of each key type, every claim rule (issuer, audience and its documented
alternatives, expiry, not-before, issued-at, scopes), the attacks (``alg: none``, HS256
keyed with the public key, a forged key id, a flood of them), garbage and huge tokens,
and a key endpoint that hangs, answers junk, a huge body, an error or a redirect.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from joserfc import jwk

from mcpkit.auth import (
    AccessToken,
    Audience,
    Fetcher,
    InvalidToken,
    JWTVerifier,
    VerifierUnavailable,
)

from .idp import RESOURCE, IdP

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def verifier(idp: IdP, *, timeout: float = 2.0, discover: bool = False,
                   **options: Any) -> AsyncIterator[JWTVerifier]:
    fetcher = Fetcher(timeout=timeout)
    options.setdefault("audience", RESOURCE)
    v = JWTVerifier(issuer=idp.issuer, jwks_uri=None if discover else idp.jwks_uri,
                    fetcher=fetcher, **options)
    try:
        yield v
    finally:
        await fetcher.aclose()


async def refused(v: JWTVerifier, token: str) -> str:
    with pytest.raises(InvalidToken) as info:
        await v.verify(token)
    assert token not in str(info.value)
    return info.value.description


# ------------------------------------------------------------------ valid tokens


async def test_valid_token_gives_its_principal(idp: IdP) -> None:
    claims = idp.claims()
    token = idp.sign(claims)
    async with verifier(idp) as v:
        access = await v.verify(token)
    assert isinstance(access, AccessToken)
    assert access.subject == "alice"
    assert access.client_id == "client-1"
    assert access.scopes == frozenset({"notes:read", "notes:write"})
    assert access.issuer == idp.issuer
    assert access.audience == (RESOURCE,)
    assert access.expires_at == claims["exp"]
    assert access.claims["iat"] == claims["iat"]
    assert token not in repr(access) and token not in str(access)
    with pytest.raises(AttributeError):
        access.subject = "mallory"


@pytest.mark.parametrize("key_name, alg", [("ec", "ES256"), ("ed", "Ed25519")])
async def test_other_key_types(idp: IdP, key_name: str, alg: str) -> None:
    token = idp.sign(idp.claims(), getattr(idp, key_name), alg)
    async with verifier(idp) as v:
        assert (await v.verify(token)).subject == "alice"


async def test_audience_as_a_list(idp: IdP) -> None:
    token = idp.sign(idp.claims(aud=["https://other.example.com", RESOURCE]))
    async with verifier(idp) as v:
        assert (await v.verify(token)).audience == ("https://other.example.com", RESOURCE)


@pytest.mark.parametrize("claims, scopes", [
    ({"scope": None, "scp": ["a", "b"]}, {"a", "b"}),
    ({"scope": None, "scp": "a b"}, {"a", "b"}),
    ({"scope": None}, set()),
])
async def test_scopes_from_scp(idp: IdP, claims: dict[str, Any], scopes: set[str]) -> None:
    async with verifier(idp) as v:
        assert (await v.verify(idp.sign(idp.claims(**claims)))).scopes == scopes


# ------------------------------------------------------------------ claim rules


@pytest.mark.parametrize("overrides, reason", [
    ({"exp": -120}, "expired"),
    ({"exp": None}, "no expiry"),
    ({"nbf": 600}, "not valid yet"),
    ({"iat": 600}, "issued in the future"),
    ({"iss": "https://evil.example.com"}, "another issuer"),
    ({"iss": None}, "no issuer"),
    ({"aud": "https://other.example.com/mcp"}, "another resource"),
    ({"aud": [RESOURCE + "/", "https://mcp.example.com"]}, "another resource"),
    ({"aud": None}, "no audience"),
    ({"aud": 7}, "audience claim is malformed"),
    ({"scope": ["a"]}, "scope claim is malformed"),
    ({"sub": 12}, "'sub' claim is not a string"),
    ({"exp": "tomorrow"}, "not a number"),
])
async def test_claim_rules(idp: IdP, overrides: dict[str, Any], reason: str) -> None:
    now = int(time.time())
    for name in ("exp", "nbf", "iat"):
        if isinstance(overrides.get(name), int):
            overrides[name] += now
    async with verifier(idp) as v:
        assert reason in await refused(v, idp.sign(idp.claims(**overrides)))


@pytest.mark.parametrize("cnf", [{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"},
                                 {"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}])
async def test_a_bound_token_keeps_its_cnf_for_the_middleware(
        idp: IdP, cnf: dict[str, str]) -> None:
    """The verifier cannot know how the token was presented: it returns the binding in
    the claims and BearerAuth judges it (tests/auth/test_dpop_server.py)."""
    async with verifier(idp) as v:
        assert (await v.verify(idp.sign(idp.claims(cnf=cnf)))).claims["cnf"] == cnf


async def test_leeway(idp: IdP) -> None:
    now = int(time.time())
    late = idp.sign(idp.claims(exp=now - 30))
    early = idp.sign(idp.claims(nbf=now + 30))
    async with verifier(idp) as v:  # default leeway: 60 s
        await v.verify(late)
        await v.verify(early)
    async with verifier(idp, leeway=5) as v:
        assert "expired" in await refused(v, late)
        assert "not valid yet" in await refused(v, early)


async def test_alternative_audiences_are_explicit(idp: IdP) -> None:
    """A provider that puts the client id (or an app id URI) in ``aud`` is accepted only
    by naming that value; another claim (Entra ID's ``appid``) only by naming it."""
    client_aud = idp.sign(idp.claims(aud="client-1"))
    appid = idp.sign(idp.claims(aud=None, appid="8f1c-app"))
    async with verifier(idp) as v:
        assert "another resource" in await refused(v, client_aud)
        assert "no audience" in await refused(v, appid)
    async with verifier(idp, audience=Audience(RESOURCE, also=["client-1"])) as v:
        assert (await v.verify(client_aud)).audience == ("client-1",)
        assert "another resource" in await refused(v, idp.sign(idp.claims(aud="client-2")))
    async with verifier(idp, audience=Audience(RESOURCE, also=["8f1c-app"],
                                               claim="appid")) as v:
        assert (await v.verify(appid)).audience == ("8f1c-app",)
    with pytest.raises(ValueError):
        Audience(RESOURCE, also=[""])
    with pytest.raises(ValueError):
        Audience("mcp.example.com")


# ------------------------------------------------------------------ attacks


async def test_alg_none_and_hmac_with_the_public_key_are_refused(idp: IdP) -> None:
    async with verifier(idp) as v:
        unsigned = idp.raw({"alg": "none", "typ": "JWT"}, idp.claims())
        assert "algorithm is not accepted" in await refused(v, unsigned)
        assert "algorithm is not accepted" in await refused(
            v, idp.hs256_with_public_key(idp.claims()))
    for algorithms in (["none"], ["HS256"], ["RS256", "HS512"], ["XX999"], []):
        with pytest.raises(ValueError):
            JWTVerifier(issuer=idp.issuer, audience=RESOURCE, algorithms=algorithms)


async def test_algorithm_outside_the_configured_list(idp: IdP) -> None:
    async with verifier(idp, algorithms=["ES256"]) as v:
        assert "algorithm is not accepted" in await refused(v, idp.sign(idp.claims()))


async def test_key_of_another_family_is_not_used(idp: IdP) -> None:
    """An ES256 token naming the RSA key's id finds no key: a key only verifies its own
    algorithm family."""
    token = idp.sign(idp.claims(), idp.ec, "ES256", kid=idp.rsa.kid)
    async with verifier(idp) as v:
        assert "signing key is not known" in await refused(v, token)


async def test_tampered_and_foreign_signatures(idp: IdP) -> None:
    token = idp.sign(idp.claims())
    head, _, sig = token.split(".")
    other = idp.sign(idp.claims(sub="mallory"))
    forged = f"{head}.{other.split('.')[1]}.{sig}"
    stranger = jwk.RSAKey.generate_key(2048, {"kid": "rsa-1"}, private=True)
    async with verifier(idp) as v:
        assert "signature is not valid" in await refused(v, forged)
        assert "signature is not valid" in await refused(v, idp.sign(idp.claims(), stranger))


@pytest.mark.parametrize("make", [
    lambda idp: "not-a-jwt",
    lambda idp: "a.b.c",
    lambda idp: "....",
    lambda idp: "é.é.é",
    lambda idp: "x" * 1_000_000,
    lambda idp: idp.sign(idp.claims(pad="x" * 20_000)),
    lambda idp: idp.raw({"alg": "RS256", "kid": "rsa-1", "crit": ["exp"], "exp": 1},
                        idp.claims(), b"sig"),
    lambda idp: idp.raw({"alg": "RS256", "kid": "rsa-1", "b64": False}, idp.claims(), b"s"),
    lambda idp: idp.raw({"alg": "RS256", "kid": 7}, idp.claims(), b"sig"),
    lambda idp: idp.sign(idp.claims()) + "x",
], ids=["word", "three-dots", "dots", "non-ascii", "1MB", "20KB-claims", "crit", "b64", "kid",
       "bad-sig"])
async def test_garbage_tokens(idp: IdP, make: Callable[[IdP], str]) -> None:
    token = make(idp)
    async with verifier(idp) as v:
        started = time.monotonic()
        await refused(v, token)
        assert time.monotonic() - started < 1.0


async def test_no_kid_needs_exactly_one_fitting_key(idp: IdP) -> None:
    async with verifier(idp) as v:  # one RSA key published: it is the one
        assert (await v.verify(idp.sign(idp.claims(), kid=None))).subject == "alice"
    idp.published.append(jwk.RSAKey.generate_key(2048, {"kid": "rsa-2"}, private=True))
    async with verifier(idp) as v:  # two RSA keys: ambiguous
        assert "not known" in await refused(v, idp.sign(idp.claims(), kid=None))


# ------------------------------------------------------------------ key refresh


async def test_unknown_kid_refreshes_at_most_once_per_interval(idp: IdP) -> None:
    rogue = jwk.RSAKey.generate_key(2048, {"kid": "rogue"}, private=True)

    def forged(n: int) -> str:
        return idp.sign(idp.claims(), rogue, kid=f"rogue-{n}")

    async with verifier(idp, refresh_interval=0.3) as v:
        await v.verify(idp.sign(idp.claims()))
        assert idp.hits["/jwks"] == 1
        await refused(v, forged(0))  # the keys are fresh: no fetch
        assert idp.hits["/jwks"] == 1
        await anyio.sleep(0.35)
        await refused(v, forged(1))  # one refresh, then refused
        assert idp.hits["/jwks"] == 2
        await anyio.sleep(0.35)
        outcomes: list[str] = []

        async def attempt(n: int) -> None:
            outcomes.append(await refused(v, forged(n)))

        async with anyio.create_task_group() as tg:  # a burst shares one fetch
            for n in range(20):
                tg.start_soon(attempt, n)
        assert len(outcomes) == 20 and idp.hits["/jwks"] == 3
        for n in range(5):
            await refused(v, forged(100 + n))
        assert idp.hits["/jwks"] == 3


async def test_rotated_key_is_picked_up(idp: IdP) -> None:
    new = jwk.RSAKey.generate_key(2048, {"kid": "rsa-new"}, private=True)
    async with verifier(idp, refresh_interval=0.2) as v:
        await v.verify(idp.sign(idp.claims()))
        idp.published.append(new)
        await anyio.sleep(0.25)
        assert (await v.verify(idp.sign(idp.claims(), new))).subject == "alice"
        assert idp.hits["/jwks"] == 2


async def test_stale_keys_stay_in_use_when_the_refresh_fails(
        idp: IdP, caplog: pytest.LogCaptureFixture) -> None:
    async with verifier(idp, max_age=0.2) as v:
        await v.verify(idp.sign(idp.claims()))
        idp.jwks_mode = "error"
        await anyio.sleep(0.25)  # another token: the first one is in the verification cache
        assert (await v.verify(idp.sign(idp.claims(sub="bob")))).subject == "bob"
    assert idp.hits["/jwks"] == 2
    assert "keeping the cached signing keys" in caplog.text


async def test_discovery_from_issuer_metadata(idp: IdP) -> None:
    async with verifier(idp, discover=True) as v:
        await v.verify(idp.sign(idp.claims()))
        await v.verify(idp.sign(idp.claims()))
    assert idp.hits["/.well-known/oauth-authorization-server"] == 1
    assert idp.hits["/jwks"] == 1


async def test_discovery_refuses_metadata_of_another_issuer(idp: IdP) -> None:
    fetcher = Fetcher(timeout=2)
    v = JWTVerifier(issuer=idp.issuer + "/tenant", audience=RESOURCE, fetcher=fetcher)
    try:
        with pytest.raises(VerifierUnavailable, match="no metadata found"):
            await v.verify(idp.sign(idp.claims(iss=idp.issuer + "/tenant")))
    finally:
        await fetcher.aclose()


# ------------------------------------------------------------------ a misbehaving JWKS


@pytest.mark.parametrize("mode, message", [
    ("hang", "did not answer within"),
    ("junk", "is not JSON"),
    ("huge", "is over 1048576 bytes"),
    ("error", "answered HTTP 500"),
    ("redirect-away", "redirected to another origin"),
])
async def test_jwks_endpoint_failures_are_unavailable(idp: IdP, mode: str, message: str) -> None:
    idp.jwks_mode = mode
    token = idp.sign(idp.claims())
    # Only the hanging endpoint needs the short timeout; the others must fail for their own
    # reason, which a short timeout on a loaded machine could pre-empt (a 1 MiB body took
    # over 0.2 s to arrive in one CI run, and the test then saw the timeout's message).
    timeout = 0.2 if mode == "hang" else 10.0
    async with verifier(idp, timeout=timeout) as v:
        started = time.monotonic()
        with pytest.raises(VerifierUnavailable, match=message) as info:
            await v.verify(token)
        if mode == "hang":
            assert time.monotonic() - started < 3.0  # bounded by the timeout, never a hang
        assert token not in str(info.value)
        with pytest.raises(VerifierUnavailable, match=message):  # remembered: no new fetch
            await v.verify(token)
    assert idp.hits["/jwks"] == 1


async def test_jwks_redirect_loop_is_cut_short(idp: IdP) -> None:
    idp.jwks_mode = "redirect-loop"
    async with verifier(idp) as v:
        with pytest.raises(VerifierUnavailable, match="more than 3 redirects"):
            await v.verify(idp.sign(idp.claims()))
    assert idp.hits["/jwks"] == 4


async def test_jwks_redirect_within_the_origin_is_followed(idp: IdP) -> None:
    idp.jwks_mode = "redirect-same"
    async with verifier(idp) as v:
        assert (await v.verify(idp.sign(idp.claims()))).subject == "alice"
    assert idp.hits["/jwks-moved"] == 1


async def test_plain_http_off_loopback_is_never_fetched(idp: IdP) -> None:
    fetcher = Fetcher(timeout=2)
    v = JWTVerifier(issuer=idp.issuer, audience=RESOURCE, fetcher=fetcher,
                    jwks_uri="http://keys.example.com/jwks")
    with pytest.raises(VerifierUnavailable, match="must use https"):
        await v.verify(idp.sign(idp.claims()))
    await fetcher.aclose()


async def test_owned_fetcher_is_closed(idp: IdP) -> None:
    v = JWTVerifier(issuer=idp.issuer, audience=RESOURCE, jwks_uri=idp.jwks_uri)
    assert (await v.verify(idp.sign(idp.claims()))).subject == "alice"
    await v.aclose()
    await v.aclose()


# ------------------------------------------------------------------ fixed keys


async def test_fixed_keys_are_used_without_any_fetch(idp: IdP) -> None:
    """``jwks=``: the given public keys verify tokens and nothing is ever fetched; a key
    outside the set (or a forged kid) is refused at once, not looked up."""
    document = {"keys": [idp.rsa.as_dict(private=False), idp.ec.as_dict(private=False)]}
    stranger = jwk.RSAKey.generate_key(2048, {"kid": "rsa-9"}, private=True)
    fetcher = Fetcher(timeout=0.5)
    v = JWTVerifier(issuer=idp.issuer, audience=RESOURCE, jwks=document, fetcher=fetcher)
    try:
        assert (await v.verify(idp.sign(idp.claims()))).subject == "alice"
        assert (await v.verify(idp.sign(idp.claims(), idp.ec, "ES256"))).subject == "alice"
        assert "not known" in await refused(v, idp.sign(idp.claims(), idp.ed, "Ed25519"))
        assert "not known" in await refused(v, idp.sign(idp.claims(), stranger))
        assert "algorithm is not accepted" in await refused(
            v, idp.hs256_with_public_key(idp.claims()))
    finally:
        await fetcher.aclose()
    assert not idp.hits  # neither the JWKS nor the issuer's metadata was asked for


@pytest.mark.parametrize("document", [
    {}, {"keys": "no"}, {"keys": []}, {"keys": [{"kty": "oct", "k": "c2VjcmV0"}]},
    {"keys": [{"kty": "RSA", "n": "junk"}]},
], ids=["empty", "not-a-list", "no-keys", "symmetric-only", "unreadable"])
def test_fixed_keys_must_hold_a_usable_key(idp: IdP, document: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="no usable signature key"):
        JWTVerifier(issuer=idp.issuer, audience=RESOURCE, jwks=document)


def test_fixed_keys_and_a_jwks_uri_are_exclusive(idp: IdP) -> None:
    with pytest.raises(ValueError, match="not both"):
        JWTVerifier(issuer=idp.issuer, audience=RESOURCE, jwks_uri=idp.jwks_uri,
                    jwks={"keys": [idp.rsa.as_dict(private=False)]})


# ------------------------------------------------------------------ the verification cache


async def test_a_verified_token_is_remembered_until_its_exp(idp: IdP) -> None:
    """The second request with a token is served from the cache (the same principal
    object, no signature check), but never past the token's ``exp``."""
    token = idp.sign(idp.claims())
    short = idp.sign(idp.claims(exp=int(time.time()) + 2))
    async with verifier(idp, leeway=0) as v:
        first = await v.verify(token)
        assert await v.verify(token) is first
        assert (await v.verify(short)).subject == "alice"
        assert len(v.cache) == 2
        await anyio.sleep(max(0.0, int(time.time()) + 3 - time.time()))
        assert "expired" in await refused(v, short)
        assert await v.verify(token) is first


async def test_cache_off_and_bounded(idp: IdP) -> None:
    token = idp.sign(idp.claims())
    async with verifier(idp, cache_ttl=0) as v:
        assert await v.verify(token) is not await v.verify(token)
        assert len(v.cache) == 0
    async with verifier(idp, max_entries=3) as v:
        for n in range(5):
            await v.verify(idp.sign(idp.claims(sub=f"user-{n}")))
        assert len(v.cache) == 3
    with pytest.raises(ValueError, match="cache_ttl"):
        JWTVerifier(issuer=idp.issuer, audience=RESOURCE, cache_ttl=-1)


async def test_refusals_are_not_remembered(idp: IdP) -> None:
    """A refused token is checked again each time (a client cannot poison the cache), and
    a forged copy of a cached token is not mistaken for it."""
    token = idp.sign(idp.claims())
    head, _body, sig = token.split(".")
    forged = f"{head}.{idp.sign(idp.claims(sub='mallory')).split('.')[1]}.{sig}"
    async with verifier(idp) as v:
        await v.verify(token)
        assert "signature is not valid" in await refused(v, forged)
        assert "signature is not valid" in await refused(v, forged)
        assert len(v.cache) == 1
