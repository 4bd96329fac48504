"""End to end with a real authorization server: oidc-provider (npm, OpenID-certified).

oidc-provider runs in Node.js on loopback (tests/auth/oidc/server.mjs, started once per
session by the ``oidc`` fixture) with resource indicators, introspection, revocation,
refresh tokens and DPoP. Tokens are obtained from it over HTTP as a client would (client
credentials with a ``resource``, authorization code with PKCE, refresh). They are sent to
an mcpkit ``Server`` under uvicorn protected by ``JWTVerifier`` (keys discovered through
oidc-provider's metadata) or by ``IntrospectionVerifier`` (its introspection endpoint).

Covered: a valid token calls a tool and ``ctx.auth`` shows what oidc-provider put in it;
per-call scopes (403, then success); refused with 401: a token for another resource, an
expired one, one from another issuer, one signed by an unknown key or under a known
``kid`` with another key, ``alg: none``, a refresh token, a revoked opaque token, a JWT
that oidc-provider will not introspect, a sender-constrained (DPoP) token presented as a
bearer token. And the way a client finds the authorization server from the 401.
"""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import orjson
import pytest
from joserfc import jwk, jws

from mcpkit.auth import Auth, IntrospectionVerifier, JWTVerifier, ProtectedResource
from mcpkit.client import Client, Http
from tests.support.http import LiveServer, McpHttp
from tests.support.oidc import (
    OPAQUE_RESOURCE,
    OTHER_RESOURCE,
    RESOURCE,
    SECRET,
    OidcProvider,
    b64url,
    new_signing_key,
)

# The first test's setup may install Node.js and oidc-provider into the cache.
from .notes_server import notes_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

SCOPES = ["notes:read", "notes:write"]
WHOAMI = ("subject", "client_id", "scopes", "issuer", "audience", "expires_at", "claims")


def protect(verifier: Any, oidc: OidcProvider, resource: str) -> Any:
    return notes_server(WHOAMI).asgi_app(auth=Auth(
        verifier, resource=ProtectedResource(resource, [oidc.issuer],
                                             scopes_supported=SCOPES)))


@pytest.fixture(scope="module")
def jwt_server(oidc: OidcProvider) -> Iterator[LiveServer]:
    """Protected by JWTVerifier: issuer only, the keys found through its metadata."""
    verifier = JWTVerifier(issuer=oidc.issuer, audience=RESOURCE)
    with LiveServer(protect(verifier, oidc, RESOURCE)) as live:
        yield live


@pytest.fixture(scope="module")
def opaque_server(oidc: OidcProvider) -> Iterator[LiveServer]:
    """Protected by IntrospectionVerifier; no cache, so a revocation shows at once."""
    verifier = IntrospectionVerifier(endpoint=oidc.introspection_endpoint,
                                     client_id="mcp-server", client_secret=SECRET,
                                     audience=OPAQUE_RESOURCE, issuer=oidc.issuer,
                                     cache_ttl=0, inactive_ttl=0)
    with LiveServer(protect(verifier, oidc, OPAQUE_RESOURCE)) as live:
        yield live


def bearer(value: str) -> dict[str, str]:
    return {"authorization": f"Bearer {value}"}


@asynccontextmanager
async def raw(live: LiveServer, value: str) -> AsyncIterator[McpHttp]:
    async with httpx.AsyncClient(headers=bearer(value), timeout=10) as http:
        yield McpHttp(http, live.url)


async def whoami(live: LiveServer, value: str) -> dict[str, Any]:
    async with Client(Http(live.url, headers=bearer(value))) as client:
        result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def refused(live: LiveServer, value: str) -> str:
    """The error description of the 401 that ``value`` gets; asserts the challenge."""
    async with raw(live, value) as client:
        reply = await client.post(client.init_message())
    assert reply.status == 401, (reply.status, reply.body)
    assert reply.headers["www-authenticate"].startswith('Bearer error="invalid_token"')
    description: str = reply.json["error_description"]
    return description


def parts(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A JWT's header and claims, unverified."""
    header, claims, _ = token.split(".")
    return (orjson.loads(base64.urlsafe_b64decode(header + "==")),
            orjson.loads(base64.urlsafe_b64decode(claims + "==")))


# ------------------------------------------------------------------ JWT access tokens


async def test_a_client_credentials_jwt_calls_a_tool_with_its_claims_in_ctx_auth(
        oidc: OidcProvider, jwt_server: LiveServer) -> None:
    answer = oidc.client_credentials(scope="notes:read notes:write")
    assert answer["token_type"] == "Bearer"
    header, claims = parts(answer["access_token"])
    assert header == {"alg": "RS256", "typ": "at+jwt", "kid": "oidc-rs256"}  # RFC 9068
    seen = await whoami(jwt_server, answer["access_token"])
    assert seen == {"subject": "app", "client_id": "app", "scopes": SCOPES,
                    "issuer": oidc.issuer, "audience": [RESOURCE],
                    "expires_at": claims["exp"],
                    "claims": ["aud", "client_id", "exp", "iat", "iss", "jti", "scope", "sub"]}


async def test_from_the_401_to_a_token_that_is_accepted(oidc: OidcProvider,
                                                         jwt_server: LiveServer) -> None:
    """What a client does: the challenge names the resource metadata, which names
    oidc-provider, whose metadata gives the token endpoint; a token asked for with the
    metadata's ``resource`` is accepted."""
    async with httpx.AsyncClient(timeout=10) as http:
        challenge = await http.post(jwt_server.url, json={})
        assert challenge.status_code == 401
        assert 'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-' \
               'resource/mcp"' in challenge.headers["www-authenticate"]
        prm = (await http.get(jwt_server.base + "/.well-known/oauth-protected-resource/mcp"
                              )).json()
        assert prm["authorization_servers"] == [oidc.issuer]
        metadata = (await http.get(prm["authorization_servers"][0]
                                   + "/.well-known/openid-configuration")).json()
        assert metadata["issuer"] == oidc.issuer
        assert metadata["token_endpoint"] == oidc.token_endpoint
        grant = await http.post(metadata["token_endpoint"], auth=("app", SECRET), data={
            "grant_type": "client_credentials", "resource": prm["resource"],
            "scope": " ".join(prm["scopes_supported"])})
    assert (await whoami(jwt_server, grant.json()["access_token"]))["scopes"] == SCOPES


async def test_an_authorization_code_token_names_the_user_and_its_refresh_works(
        oidc: OidcProvider, jwt_server: LiveServer) -> None:
    answer = oidc.authorization_code(login="bob", scope="notes:read")
    assert set(answer) >= {"access_token", "refresh_token"}, answer
    seen = await whoami(jwt_server, answer["access_token"])
    assert (seen["subject"], seen["client_id"], seen["scopes"]) == ("bob", "app",
                                                                    ["notes:read"])
    refreshed = oidc.refresh(answer["refresh_token"])
    assert refreshed["access_token"] != answer["access_token"]
    seen = await whoami(jwt_server, refreshed["access_token"])
    assert (seen["subject"], seen["scopes"]) == ("bob", ["notes:read"])
    # the refresh token itself is no access token
    assert await refused(jwt_server, refreshed["refresh_token"]) == (
        "the token is not a well-formed JWT")


async def test_a_tool_needing_a_scope_the_token_lacks_is_403_then_works_with_it(
        oidc: OidcProvider, jwt_server: LiveServer) -> None:
    narrow = oidc.client_credentials(scope="notes:read")["access_token"]
    wide = oidc.client_credentials(scope="notes:read notes:write")["access_token"]
    async with raw(jwt_server, narrow) as client:
        await client.initialize()
        denied = await client.call_tool("write_note", {"text": "x"})
    async with raw(jwt_server, wide) as client:
        await client.initialize()
        allowed = await client.call_tool("write_note", {"text": "x"})
    assert denied.status == 403
    assert denied.headers["www-authenticate"].startswith(
        'Bearer error="insufficient_scope", scope="notes:write"')
    assert allowed.status == 200
    assert allowed.json["result"]["content"][0]["text"] == "saved x for app"


async def test_a_token_for_another_resource_is_refused(oidc: OidcProvider,
                                                       jwt_server: LiveServer) -> None:
    token = oidc.client_credentials(resource=OTHER_RESOURCE)["access_token"]
    assert parts(token)[1]["aud"] == OTHER_RESOURCE
    assert await refused(jwt_server, token) == "the token was issued for another resource"


async def test_a_token_of_another_issuer_with_the_same_keys_is_refused(
        oidc: OidcProvider, oidc_other: OidcProvider, jwt_server: LiveServer) -> None:
    token = oidc_other.client_credentials()["access_token"]
    header, claims = parts(token)
    assert header["kid"] == "oidc-rs256" and claims["iss"] == oidc_other.issuer != oidc.issuer
    assert await refused(jwt_server, token) == "the token was issued by another issuer"


def resigned(token: str, key: jwk.Key, **header: Any) -> str:
    """``token``'s header and claims signed again with ``key``."""
    head, claims = parts(token)
    return jws.serialize_compact({**head, **header}, orjson.dumps(claims), key,
                                 algorithms=["RS256"])


async def test_a_token_signed_by_an_unknown_key_is_refused(oidc: OidcProvider,
                                                           jwt_server: LiveServer) -> None:
    token = oidc.client_credentials()["access_token"]
    stranger = new_signing_key("not-published")
    assert await refused(jwt_server, resigned(token, stranger, kid="not-published")) == (
        "the token's signing key is not known to this server")
    # the provider's kid on a token signed with another key
    assert await refused(jwt_server, resigned(token, stranger)) == (
        "the token's signature is not valid")


async def test_alg_none_is_refused(oidc: OidcProvider, jwt_server: LiveServer) -> None:
    token = oidc.client_credentials()["access_token"]
    header, claims = parts(token)
    unsigned = ".".join((b64url(orjson.dumps({**header, "alg": "none"})),
                         b64url(orjson.dumps(claims)), ""))
    assert await refused(jwt_server, unsigned) == (
        "the token's signing algorithm is not accepted")


async def test_expired_tokens_are_refused(oidc: OidcProvider) -> None:
    """The client "short-lived" gets tokens that live 2 s (no leeway here, so the test
    does not wait out the default 60 s): accepted first, refused once expired -- a JWT
    by its ``exp``, an opaque token because introspection says it is inactive."""
    verifier = JWTVerifier(issuer=oidc.issuer, audience=RESOURCE, leeway=0)
    introspection = IntrospectionVerifier(
        endpoint=oidc.introspection_endpoint, client_id="mcp-server", client_secret=SECRET,
        audience=OPAQUE_RESOURCE, leeway=0, cache_ttl=0, inactive_ttl=0)
    with LiveServer(protect(verifier, oidc, RESOURCE)) as jwt_live, \
            LiveServer(protect(introspection, oidc, OPAQUE_RESOURCE)) as opaque_live:
        signed = oidc.client_credentials(client="short-lived")
        opaque = oidc.client_credentials(client="short-lived", resource=OPAQUE_RESOURCE)
        assert signed["expires_in"] == opaque["expires_in"] == 2
        assert (await whoami(jwt_live, signed["access_token"]))["client_id"] == "short-lived"
        assert (await whoami(opaque_live, opaque["access_token"]))["client_id"] == (
            "short-lived")
        exp = parts(signed["access_token"])[1]["exp"]
        await anyio.sleep(max(0.0, exp - time.time()) + 1.1)  # bounded: at most ~3 s
        assert await refused(jwt_live, signed["access_token"]) == "the token has expired"
        assert await refused(opaque_live, opaque["access_token"]) == (
            "the token is not active")


# ------------------------------------------------------------------ opaque tokens


async def test_an_opaque_token_is_introspected_and_calls_a_tool(
        oidc: OidcProvider, opaque_server: LiveServer) -> None:
    answer = oidc.client_credentials(resource=OPAQUE_RESOURCE, scope="notes:read")
    assert answer["access_token"].count(".") == 0  # not a JWT
    seen = await whoami(opaque_server, answer["access_token"])
    assert {k: seen[k] for k in ("subject", "client_id", "scopes", "issuer", "audience")} == {
        "subject": None, "client_id": "app", "scopes": ["notes:read"], "issuer": oidc.issuer,
        "audience": [OPAQUE_RESOURCE]}
    user = oidc.authorization_code(resource=OPAQUE_RESOURCE, login="carol")
    seen = await whoami(opaque_server, user["access_token"])
    assert (seen["subject"], seen["client_id"], seen["scopes"]) == ("carol", "app", SCOPES)


async def test_scopes_of_an_opaque_token(oidc: OidcProvider,
                                         opaque_server: LiveServer) -> None:
    narrow = oidc.client_credentials(resource=OPAQUE_RESOURCE, scope="notes:read")
    wide = oidc.client_credentials(resource=OPAQUE_RESOURCE)
    async with raw(opaque_server, narrow["access_token"]) as client:
        await client.initialize()
        denied = await client.call_tool("write_note", {"text": "y"})
    async with raw(opaque_server, wide["access_token"]) as client:
        await client.initialize()
        allowed = await client.call_tool("write_note", {"text": "y"})
    assert denied.status == 403
    assert allowed.json["result"]["content"][0]["text"] == "saved y for None"


async def test_a_revoked_opaque_token_is_refused(oidc: OidcProvider,
                                                 opaque_server: LiveServer) -> None:
    token = oidc.client_credentials(resource=OPAQUE_RESOURCE)["access_token"]
    assert (await whoami(opaque_server, token))["client_id"] == "app"
    oidc.revoke(token)
    assert oidc.introspect(token) == {"active": False}
    assert await refused(opaque_server, token) == "the token is not active"


async def test_a_refresh_token_is_no_access_token_at_the_introspecting_server(
        oidc: OidcProvider, opaque_server: LiveServer) -> None:
    """oidc-provider says a refresh token is active, with no ``aud`` nor ``token_type``:
    refused, as the answer does not name this server."""
    user = oidc.authorization_code(resource=OPAQUE_RESOURCE)
    said = oidc.introspect(user["refresh_token"])
    assert said["active"] is True and "aud" not in said and "token_type" not in said
    assert await refused(opaque_server, user["refresh_token"]) == (
        "the token names no audience")


async def test_a_jwt_access_token_at_the_introspecting_server_is_refused_not_503(
        oidc: OidcProvider, opaque_server: LiveServer) -> None:
    """oidc-provider answers HTTP 400 ``unsupported_token_type`` when asked about its
    JWT access tokens: the token is refused (401), the server is not "unavailable"."""
    signed = oidc.client_credentials()["access_token"]
    asked = oidc.http.post(oidc.introspection_endpoint, auth=("mcp-server", SECRET),
                           data={"token": signed})
    assert (asked.status_code, asked.json()["error"]) == (400, "unsupported_token_type")
    assert await refused(opaque_server, signed) == (
        "the authorization server does not introspect this kind of token")


# ------------------------------------------------------------------ DPoP


async def test_a_dpop_bound_token_is_refused_as_a_bearer_token(
        oidc: OidcProvider, jwt_server: LiveServer, opaque_server: LiveServer) -> None:
    """oidc-provider binds a token to the key of the DPoP proof sent with its request
    (``cnf.jkt``, token type DPoP). A server without ``Auth(dpop=...)`` checks no
    proofs, so it refuses such a token under ``Bearer`` (whoever copied it could use it)
    and answers ``DPoP`` with the challenge for a missing bearer token (with DPoP on:
    tests/auth/test_dpop_oidc.py)."""
    key = jwk.ECKey.generate_key("P-256", private=True)
    signed = oidc.client_credentials(dpop_key=key)
    opaque = oidc.client_credentials(resource=OPAQUE_RESOURCE, dpop_key=key)
    assert signed["token_type"] == opaque["token_type"] == "DPoP"
    thumbprint = key.thumbprint()
    assert parts(signed["access_token"])[1]["cnf"] == {"jkt": thumbprint}
    assert oidc.introspect(opaque["access_token"])["cnf"] == {"jkt": thumbprint}
    for live, token in ((jwt_server, signed), (opaque_server, opaque)):
        assert await refused(live, token["access_token"]) == (
            "the token is bound to a key (cnf) and this server accepts bearer tokens only")
        proof = oidc.dpop_proof(key, live.url)
        async with httpx.AsyncClient(timeout=10) as http:
            reply = await http.post(live.url, json={}, headers={
                "authorization": f"DPoP {token['access_token']}", "dpop": proof})
        assert reply.status_code == 401
        assert "error=" not in reply.headers["www-authenticate"]
