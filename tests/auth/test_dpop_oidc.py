"""DPoP end to end (RFC 9449): oidc-provider binds the tokens, mcpkit checks the proofs.

oidc-provider (tests/auth/oidc/server.mjs, ``features.dPoP``) issues a DPoP-bound token
(``token_type: DPoP``, ``cnf.jkt``) to a token request carrying a proof. On the client
side ``ClientCredentialsAuth(dpop=True)`` gets one from the 401 alone and presents it to
an mcpkit server protected by ``Auth(JWTVerifier(...), dpop=True)`` on loopback (its own
URL the resource), with server nonces too; the key is kept with the token in a
``FileTokenStore`` so another process's client uses it. On the server side, tokens
obtained by hand (JWT and opaque, the latter judged by introspection) are presented with
proofs signed for the public resource URL, as behind a proxy; and refused: as
``Bearer``, with another key's proof, a replayed proof.
"""

from __future__ import annotations

import base64
import hashlib
import stat
import time
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from joserfc import jwk, jws

from mcpkit.auth import (
    Auth,
    AuthorizationFailed,
    ClientCredentialsAuth,
    DPoPChecker,
    DPoPKey,
    FileTokenStore,
    IntrospectionVerifier,
    JWTVerifier,
    ProtectedResource,
)
from mcpkit.client import Client, Http
from tests.support.http import LiveServer
from tests.support.oidc import OPAQUE_RESOURCE, RESOURCE, SECRET, OidcProvider

from .notes_server import notes_server, served_at_own_url

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

SCOPES = ["notes:read", "notes:write"]
WHOAMI = ("subject", "client_id", "scopes", "audience", "claims")


def _served(oidc: OidcProvider, checker: DPoPChecker | bool) -> Iterator[LiveServer]:
    with served_at_own_url(lambda url: notes_server(WHOAMI).asgi_app(auth=Auth(
            JWTVerifier(issuer=oidc.issuer, audience=url),
            resource=ProtectedResource(url, [oidc.issuer], scopes_supported=SCOPES),
            required_scopes=["notes:read"], dpop=checker))) as live:
        yield live


@pytest.fixture(scope="module")
def notes(oidc: OidcProvider) -> Iterator[LiveServer]:
    yield from _served(oidc, True)


@pytest.fixture(scope="module")
def nonce_notes(oidc: OidcProvider) -> Iterator[LiveServer]:
    yield from _served(oidc, DPoPChecker(nonces=True))


def claims_of(token: str) -> dict[str, Any]:
    payload: dict[str, Any] = orjson.loads(base64.urlsafe_b64decode(
        token.split(".")[1] + "=="))
    return payload


async def whoami(url: str, auth: httpx.Auth) -> dict[str, Any]:
    with anyio.fail_after(30):
        async with Client(Http(url, auth=auth)) as client:
            result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    assert isinstance(result.structured_content, dict)
    return result.structured_content


# ------------------------------------------------------------------ mcpkit's client


async def test_client_credentials_with_dpop_from_the_401_alone(
        oidc: OidcProvider, notes: LiveServer, tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    auth = ClientCredentialsAuth("app", SECRET, issuer=oidc.issuer, store=store, dpop=True)
    seen = await whoami(notes.url, auth)
    assert (seen["subject"], seen["scopes"]) == ("app", ["notes:read"])  # as challenged
    assert "cnf" in seen["claims"]
    held = store.get_tokens(oidc.issuer, notes.url)
    assert held is not None and held.token_type == "DPoP" and held.dpop_jwk is not None
    assert auth.dpop is not None
    assert claims_of(held.access_token)["cnf"] == {"jkt": auth.dpop.thumbprint}
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    # another process's client, its own new key: the stored token comes with its key
    again = ClientCredentialsAuth("app", SECRET, store=FileTokenStore(store.path), dpop=True)
    assert (await whoami(notes.url, again))["subject"] == "app"
    kept = store.get_tokens(oidc.issuer, notes.url)
    assert kept is not None and kept.access_token == held.access_token


async def test_the_client_retries_with_the_server_s_nonce(
        oidc: OidcProvider, nonce_notes: LiveServer) -> None:
    auth = ClientCredentialsAuth("app", SECRET, dpop=True)
    assert (await whoami(nonce_notes.url, auth))["subject"] == "app"
    assert auth.dpop_nonces.get(nonce_notes.url) is not None


async def test_a_tool_s_scope_is_challenged_in_dpop_and_the_client_steps_up(
        oidc: OidcProvider, notes: LiveServer) -> None:
    """``write_note`` needs ``notes:write``: the 403 names it in a ``DPoP`` challenge
    (the token is DPoP-bound) and the client asks for the union, then the call works."""
    auth = ClientCredentialsAuth("app", SECRET, scopes=["notes:read"], dpop=True)
    with anyio.fail_after(30):
        async with Client(Http(notes.url, auth=auth)) as client:
            result = await client.call_tool("write_note", {"text": "hi"})
    assert not result.is_error, result
    assert auth.store.get_tokens(oidc.issuer, notes.url).scopes == (  # type: ignore[union-attr]
        "notes:read", "notes:write")


async def test_a_dpop_alg_oidc_provider_does_not_list_is_refused_before_asking(
        oidc: OidcProvider, notes: LiveServer) -> None:
    metadata = oidc.http.get(f"{oidc.issuer}/.well-known/openid-configuration").json()
    assert "RS512" not in metadata["dpop_signing_alg_values_supported"]
    rsa = jwk.RSAKey.generate_key(2048, private=True).as_dict(private=True)
    auth = ClientCredentialsAuth("app", SECRET, dpop=DPoPKey(rsa, alg="RS512"))
    with pytest.raises(AuthorizationFailed, match="dpop_signing_alg_values_supported"):
        await whoami(notes.url, auth)


# ------------------------------------------------------------------ mcpkit's server


class Proving(httpx.Auth):
    """Presents ``token`` with a fresh proof signed by ``key`` for ``htu``."""

    def __init__(self, token: str, key: jwk.ECKey, htu: str, scheme: str = "DPoP") -> None:
        self.token, self.key, self.htu, self.scheme = token, key, htu, scheme
        self.sent: list[str] = []

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, Any, None]:
        ath = base64.urlsafe_b64encode(hashlib.sha256(self.token.encode()).digest())
        claims = {"jti": str(uuid.uuid4()), "htm": request.method, "htu": self.htu,
                  "iat": int(time.time()), "ath": ath.rstrip(b"=").decode()}
        header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": self.key.as_dict(private=False)}
        proof = jws.serialize_compact(header, orjson.dumps(claims), self.key,
                                      algorithms=["ES256"])
        self.sent.append(proof)
        request.headers["authorization"] = f"{self.scheme} {self.token}"
        request.headers["dpop"] = proof
        yield request


@pytest.fixture(scope="module")
def behind_proxy(oidc: OidcProvider) -> Iterator[dict[str, LiveServer]]:
    """Servers whose public URLs (the resources) are not where they listen."""
    introspection = IntrospectionVerifier(
        endpoint=oidc.introspection_endpoint, client_id="mcp-server", client_secret=SECRET,
        audience=OPAQUE_RESOURCE, issuer=oidc.issuer, cache_ttl=0, inactive_ttl=0)
    signed = JWTVerifier(issuer=oidc.issuer, audience=RESOURCE)
    apps = {resource: notes_server(WHOAMI).asgi_app(auth=Auth(
        verifier, resource=ProtectedResource(resource, [oidc.issuer], scopes_supported=SCOPES),
        dpop=True)) for resource, verifier in ((RESOURCE, signed),
                                               (OPAQUE_RESOURCE, introspection))}
    with LiveServer(apps[RESOURCE]) as jwt_live, LiveServer(apps[OPAQUE_RESOURCE]) as opaque:
        yield {RESOURCE: jwt_live, OPAQUE_RESOURCE: opaque}


@pytest.mark.parametrize("resource", [RESOURCE, OPAQUE_RESOURCE], ids=["jwt", "opaque"])
async def test_a_bound_token_and_its_proofs_from_oidc_provider(
        oidc: OidcProvider, behind_proxy: dict[str, LiveServer], resource: str) -> None:
    live = behind_proxy[resource]
    key = jwk.ECKey.generate_key("P-256", private=True)
    answer = oidc.client_credentials(resource=resource, dpop_key=key)
    assert answer["token_type"] == "DPoP"
    token = answer["access_token"]
    seen = await whoami(live.url, Proving(token, key, resource))
    assert seen["client_id"] == "app" and "cnf" in seen["claims"]

    async def status(auth: httpx.Auth, replay: str | None = None) -> tuple[int, str]:
        async with httpx.AsyncClient(auth=auth, timeout=10) as http:
            headers = {"dpop": replay} if replay else None
            if replay:
                http.auth = None
                headers = {"authorization": f"DPoP {token}", "dpop": replay}
            reply = await http.post(live.url, json={}, headers=headers)
        return reply.status_code, reply.json().get("error", "")

    stranger = jwk.ECKey.generate_key("P-256", private=True)
    used = Proving(token, key, resource)
    assert (await status(used))[0] != 401  # a fresh proof: past authorization
    assert await status(Proving(token, key, resource, scheme="Bearer")) == (
        401, "invalid_token")
    assert await status(Proving(token, stranger, resource)) == (401, "invalid_dpop_proof")
    assert await status(Proving(token, key, live.url)) == (401, "invalid_dpop_proof")
    assert await status(used, replay=used.sent[0]) == (401, "invalid_dpop_proof")
