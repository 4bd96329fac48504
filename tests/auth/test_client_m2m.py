"""Machine-to-machine tokens: ``ClientCredentialsAuth`` and ``PrivateKeyJWT``.

The same in-process world as test_client_flow.py (an ``httpx.Client`` whose transport
routes ``as.example.com`` to the test authorization server, which grants
``client_credentials`` and verifies ``private_key_jwt`` assertions, and
``mcp.example.com`` to a protected resource checking its JWTs), with the client
credentials grant instead of a user: discovery, the token request, client
authentication, reuse and renewal of tokens, step-up, and the refusals.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import anyio
import httpx
import orjson
import pytest
from joserfc import jwk, jwt

from mcpkit.auth import (
    AuthorizationFailed,
    ClientCredentials,
    ClientCredentialsAuth,
    FileTokenStore,
    MemoryTokenStore,
    OAuth,
    PrivateKeyJWT,
    Tokens,
)

from .oauth_as import ASSERTION_TYPE, AuthServer
from .test_client_flow import MCP, PRM_PATH, Browser, Resource

AS_META = "/.well-known/oauth-authorization-server"


@dataclass
class World:
    auth: AuthServer
    mcp: Resource
    http: httpx.Client

    def call(self, body: bytes = b"read") -> httpx.Response:
        return self.http.post(MCP, content=body)

    def route(self, request: httpx.Request) -> httpx.Response:
        target = self.auth if request.url.host == "as.example.com" else self.mcp
        return target.handle(request)


def make_world(flow: httpx.Auth, **knobs: Any) -> World:
    server = AuthServer(base="https://as.example.com", **knobs)
    server.clients["svc"] = ("s3cret:/ +", "client_secret_basic")
    world = World(server, Resource(server), httpx.Client())
    world.http = httpx.Client(transport=httpx.MockTransport(world.route), auth=flow)
    return world


def with_key(world: World, client_id: str, key: Any) -> None:
    world.auth.clients[client_id] = (None, "private_key_jwt")
    world.auth.client_keys[client_id] = key


@pytest.fixture
def ec_key() -> jwk.ECKey:
    return jwk.ECKey.generate_key("P-256", {"kid": "svc-1"}, private=True)


@pytest.fixture
def world() -> Iterator[World]:
    w = make_world(ClientCredentialsAuth("svc", "s3cret:/ +"),
                   auth_methods=["client_secret_basic"])
    yield w
    w.http.close()


# ------------------------------------------------------------------ secrets


def test_a_secret_gets_a_token_with_the_grant_resource_and_challenged_scopes(
        world: World) -> None:
    world.mcp.scopes = ["notes:read"]
    assert world.call().status_code == 200
    # discovery as OAuth does it; no registration, no authorization endpoint
    assert world.mcp.paths == ["/mcp", PRM_PATH, "/mcp"]
    assert world.auth.paths == [AS_META, "/token"]
    (form,) = world.auth.token_requests
    assert form == {"grant_type": "client_credentials", "resource": MCP,
                    "scope": "notes:read"}
    header = world.auth.request_headers[-1]["authorization"]
    name, _, secret = base64.b64decode(header[6:]).decode().partition(":")
    assert (unquote_plus(name), unquote_plus(secret)) == ("svc", "s3cret:/ +")
    # the token is kept and reused; no refresh token is kept
    assert world.call().status_code == 200
    assert len(world.auth.token_requests) == 1
    flow = world.http.auth
    assert isinstance(flow, ClientCredentialsAuth)
    held = flow.store.get_tokens(world.auth.issuer, MCP)
    assert held is not None and held.refresh_token is None
    assert held.scopes == ("notes:read",)


def test_client_secret_post_when_the_server_offers_only_that() -> None:
    w = make_world(ClientCredentialsAuth("svc", "pw"), auth_methods=["client_secret_post"])
    w.auth.clients["svc"] = ("pw", "client_secret_post")
    assert w.call().status_code == 200
    (form,) = w.auth.token_requests
    assert (form["client_id"], form["client_secret"]) == ("svc", "pw")
    assert "authorization" not in w.auth.request_headers[-1]


def test_scopes_given_win_and_none_means_no_scope_parameter() -> None:
    w = make_world(ClientCredentialsAuth("svc", "s3cret:/ +", scopes=["a", "b", "a"]))
    w.mcp.scopes = ["a"]
    assert w.call().status_code == 200
    assert w.auth.token_requests[0]["scope"] == "a b"
    bare = make_world(ClientCredentialsAuth("svc", "s3cret:/ +"))
    assert bare.call().status_code == 200
    assert "scope" not in bare.auth.token_requests[0]


def test_a_refused_token_is_replaced_by_a_new_grant_not_a_refresh() -> None:
    w = make_world(ClientCredentialsAuth("svc", "s3cret:/ +"))
    assert w.call().status_code == 200
    w.mcp.revoked.add(str(w.mcp.tokens_seen[-1])[7:])  # the server refuses it now
    assert w.call().status_code == 200
    grants = [f["grant_type"] for f in w.auth.token_requests]
    assert grants == ["client_credentials", "client_credentials"]
    assert w.mcp.tokens_seen[-1] != w.mcp.tokens_seen[-3]


def test_an_expired_stored_token_is_not_used() -> None:
    store = MemoryTokenStore()
    store.set_tokens("https://as.example.com", MCP,
                     Tokens("stale", expires_at=time.time() - 1, refresh_token="r"))
    w = make_world(ClientCredentialsAuth("svc", "s3cret:/ +", store=store))
    assert w.call().status_code == 200
    (form,) = w.auth.token_requests
    assert form["grant_type"] == "client_credentials"  # no refresh, though one was held
    assert "Bearer stale" not in w.mcp.tokens_seen


def test_insufficient_scope_asks_again_for_the_union(world: World) -> None:
    world.mcp.scopes, world.mcp.write = ["notes:read"], ["notes:write"]
    assert world.call().status_code == 200
    assert world.call(b"write").status_code == 200
    assert world.auth.token_requests[-1]["scope"] == "notes:read notes:write"


def test_the_async_pump_too() -> None:
    w = make_world(ClientCredentialsAuth("svc", "s3cret:/ +"))

    async def run() -> int:
        async with httpx.AsyncClient(transport=httpx.MockTransport(w.route),
                                     auth=w.http.auth) as client:
            return (await client.post(MCP, content=b"read")).status_code

    assert anyio.run(run) == 200
    assert w.auth.token_requests[0]["grant_type"] == "client_credentials"


# ------------------------------------------------------------------ private_key_jwt


def test_private_key_jwt_sends_a_fresh_assertion_the_server_verifies(
        ec_key: jwk.ECKey) -> None:
    pem = ec_key.as_pem(private=True)
    w = make_world(ClientCredentialsAuth("svc-jwt", private_key=pem),
                   auth_methods=["private_key_jwt"])
    with_key(w, "svc-jwt", ec_key)
    assert w.call().status_code == 200
    (form,) = w.auth.token_requests
    assert form["client_assertion_type"] == ASSERTION_TYPE
    assert "authorization" not in w.auth.request_headers[-1]
    token = jwt.decode(form["client_assertion"], ec_key)
    assert token.header["alg"] == "ES256"
    claims = token.claims
    assert claims["iss"] == claims["sub"] == "svc-jwt"
    assert claims["aud"] == w.auth.issuer
    assert 0 < claims["exp"] - claims["iat"] <= 60
    w.mcp.revoked.add(str(w.mcp.tokens_seen[-1])[7:])
    assert w.call().status_code == 200
    second = w.auth.token_requests[1]["client_assertion"]
    assert jwt.decode(second, ec_key).claims["jti"] != claims["jti"]
    assert w.auth.assertion_problems == []


def test_the_test_server_refuses_a_replayed_assertion(ec_key: jwk.ECKey) -> None:
    # guards the verifier above: a reused jti, a foreign key, a wrong aud are refused
    w = make_world(ClientCredentialsAuth("svc-jwt", private_key=ec_key.as_dict(private=True)))
    with_key(w, "svc-jwt", ec_key)
    assert w.call().status_code == 200
    form = w.auth.token_requests[0]
    replay = w.auth.handle(httpx.Request("POST", f"{w.auth.base}/token", data=form))
    assert replay.status_code == 401
    assert w.auth.assertion_problems == ["jti reused"]
    other = PrivateKeyJWT(jwk.ECKey.generate_key("P-256", private=True).as_pem(private=True))
    aud = PrivateKeyJWT(ec_key.as_pem(private=True))
    for assertion in (other.assertion("svc-jwt", w.auth.issuer),
                      aud.assertion("svc-jwt", f"{w.auth.base}/token")):
        forged = {**form, "client_assertion": assertion}
        answer = w.auth.handle(httpx.Request("POST", f"{w.auth.base}/token", data=forged))
        assert answer.status_code == 401
    assert w.auth.assertion_problems[1].startswith("signature")
    assert w.auth.assertion_problems[2] == "aud"


@pytest.mark.parametrize("kind", ["rsa-jwk", "ed25519-pem", "p384-pem"])
def test_other_key_types(kind: str) -> None:
    if kind == "rsa-jwk":
        key: Any = jwk.RSAKey.generate_key(2048, private=True)
        given: Any = key.as_dict(private=True)
        alg = "RS256"
    elif kind == "ed25519-pem":
        key = jwk.OKPKey.generate_key("Ed25519", private=True)
        given, alg = key.as_pem(private=True), "Ed25519"
    else:
        key = jwk.ECKey.generate_key("P-384", private=True)
        given, alg = key.as_pem(private=True).decode(), "ES384"
    w = make_world(ClientCredentialsAuth("svc-jwt", private_key=given))
    with_key(w, "svc-jwt", key)
    assert w.call().status_code == 200, w.auth.assertion_problems
    header = jwt.decode(w.auth.token_requests[0]["client_assertion"], key,
                        algorithms=[alg]).header
    assert header["alg"] == alg


def test_a_key_the_server_does_not_know_is_refused(ec_key: jwk.ECKey) -> None:
    stranger = jwk.ECKey.generate_key("P-256", private=True)
    w = make_world(ClientCredentialsAuth("svc-jwt", private_key=stranger.as_pem(private=True)))
    with_key(w, "svc-jwt", ec_key)
    with pytest.raises(AuthorizationFailed, match="invalid_client"):
        w.call()


def test_keys_of_the_wrong_kind_are_refused_when_made() -> None:
    ec = jwk.ECKey.generate_key("P-256", private=True)
    rsa = jwk.RSAKey.generate_key(2048, private=True)
    with pytest.raises(ValueError, match="private key, not the public"):
        PrivateKeyJWT(ec.as_pem(private=False))
    with pytest.raises(ValueError, match="symmetric"):
        PrivateKeyJWT(jwk.OctKey.generate_key(256).as_dict())
    with pytest.raises(ValueError, match="does not fit"):
        PrivateKeyJWT(rsa.as_pem(private=True), alg="ES256")
    with pytest.raises(ValueError, match="does not fit"):
        PrivateKeyJWT(ec.as_pem(private=True), alg="HS256")
    with pytest.raises(ValueError, match="does not fit"):
        ClientCredentialsAuth("svc", private_key=ec.as_pem(private=True), signing_alg="ES384")
    with pytest.raises(ValueError, match="not an RSA, EC or Ed25519"):
        PrivateKeyJWT("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----")
    with pytest.raises(ValueError, match="RSA, EC or OKP"):
        PrivateKeyJWT({"kty": "XYZ"})


def test_credentials_must_be_one_of_secret_or_key() -> None:
    pem = jwk.ECKey.generate_key("P-256", private=True).as_pem(private=True)
    with pytest.raises(ValueError, match="exactly one"):
        ClientCredentialsAuth("svc")
    with pytest.raises(ValueError, match="exactly one"):
        ClientCredentialsAuth("svc", "pw", private_key=pem)
    with pytest.raises(ValueError, match="needs a private_key"):
        ClientCredentialsAuth("svc", "pw", auth_method="private_key_jwt")
    with pytest.raises(ValueError, match="not client_secret_basic"):
        ClientCredentialsAuth("svc", private_key=pem, auth_method="client_secret_basic")
    with pytest.raises(ValueError, match="auth_method must be"):
        ClientCredentialsAuth("svc", "pw", auth_method="none")
    with pytest.raises(ValueError, match="client_id"):
        ClientCredentialsAuth("", "pw")


def test_the_key_never_shows_in_repr_or_in_a_file_store(tmp_path: Path,
                                                        ec_key: jwk.ECKey) -> None:
    signer = PrivateKeyJWT(ec_key.as_dict(private=True))
    assert signer.kid == "svc-1" and signer.alg == "ES256"
    secret_d = str(ec_key.as_dict(private=True)["d"])
    assert secret_d not in repr(signer)
    store = FileTokenStore(tmp_path / "tokens.json")
    creds = ClientCredentials("svc-jwt", private_key=signer)
    store.set_client("https://as.example.com", creds)
    text = (tmp_path / "tokens.json").read_text()
    assert "svc-jwt" in text and secret_d not in text and "private_key" not in text
    assert store.get_client("https://as.example.com") == ClientCredentials("svc-jwt")


# ------------------------------------------------------------------ what the server says


def test_discovery_needs_no_pkce_nor_authorization_endpoint() -> None:
    w = make_world(ClientCredentialsAuth("svc", "s3cret:/ +"), pkce_methods=None)
    original = w.auth.metadata

    def without_authorize() -> dict[str, Any]:
        doc = original()
        del doc["authorization_endpoint"]
        return doc

    w.auth.metadata = without_authorize  # type: ignore[method-assign]
    assert w.call().status_code == 200


def test_a_server_listing_grants_without_client_credentials_is_not_asked() -> None:
    w = make_world(ClientCredentialsAuth("svc", "s3cret:/ +"),
                   grant_types=["authorization_code"])
    with pytest.raises(AuthorizationFailed, match="does not list the client_credentials"):
        w.call()
    assert w.auth.token_requests == []


def test_a_server_listing_no_grants_is_tried() -> None:
    w = make_world(ClientCredentialsAuth("svc", "s3cret:/ +"), grant_types=None)
    assert w.call().status_code == 200


def test_credentials_bound_to_an_issuer_are_not_sent_to_another() -> None:
    w = make_world(ClientCredentialsAuth("svc", "s3cret:/ +",
                                         issuer="https://login.example.com"))
    with pytest.raises(AuthorizationFailed, match=re.escape("not 'https://login.example.com'")):
        w.call()
    assert w.auth.token_requests == []
    ok = make_world(ClientCredentialsAuth("svc", "s3cret:/ +", issuer="https://as.example.com"))
    assert ok.call().status_code == 200


@pytest.mark.parametrize(("answer", "why"), [
    (httpx.Response(200, content=b"\x00junk"), "not JSON"),
    (httpx.Response(500, json={"error": "server_error"}), "server_error"),
    (httpx.Response(500, text="oops"), "HTTP 500, not JSON"),
    (httpx.Response(200, html="<html>login</html>"), "not JSON"),
    (httpx.Response(200, json=["access_token"]), "no JSON object"),
    (httpx.Response(200, json={"token_type": "Bearer"}), "no access_token"),
    (httpx.Response(200, json={"access_token": "", "token_type": "Bearer"}),
     "no access_token"),
    (httpx.Response(200, json={"access_token": "t", "token_type": "DPoP"}),
     "'DPoP' is not supported"),
    (httpx.Response(200, json={"access_token": "t", "token_type": 7}), "no access_token"),
    (httpx.Response(400, json={"error": "invalid_scope", "error_description": "no"}),
     "invalid_scope: no"),
])
def test_unusable_token_answers_fail_with_the_reason(answer: httpx.Response,
                                                     why: str) -> None:
    w = make_world(ClientCredentialsAuth("svc", "s3cret:/ +"), token_answer=lambda: answer)
    with pytest.raises(AuthorizationFailed, match="refused the client credentials") as info:
        w.call()
    assert why in str(info.value)
    assert "s3cret" not in str(info.value)


def test_token_type_is_compared_without_case() -> None:
    w = make_world(ClientCredentialsAuth("svc", "s3cret:/ +"))
    issue = w.auth._token

    def lower(request: httpx.Request) -> httpx.Response:
        answer = issue(request)
        body = orjson.loads(answer.content)
        body["token_type"] = "bEaReR"
        return httpx.Response(answer.status_code, json=body)

    w.auth._token = lower  # type: ignore[method-assign]
    assert w.call().status_code == 200


# ------------------------------------------------------------------ OAuth's own clients


def test_oauth_pre_registered_client_with_a_private_key(ec_key: jwk.ECKey) -> None:
    signer = PrivateKeyJWT(ec_key.as_pem(private=True))
    server = AuthServer(base="https://as.example.com", auth_methods=["private_key_jwt"])
    mcp = Resource(server)
    server.clients["web"] = (None, "private_key_jwt")
    server.client_keys["web"] = ec_key
    flow = OAuth(Browser(server), client=ClientCredentials("web", private_key=signer))

    def route(request: httpx.Request) -> httpx.Response:
        return (server if request.url.host == "as.example.com" else mcp).handle(request)

    with httpx.Client(transport=httpx.MockTransport(route), auth=flow) as http:
        assert http.post(MCP, content=b"read").status_code == 200
    (form,) = server.token_requests
    assert form["grant_type"] == "authorization_code"
    assert form["client_assertion_type"] == ASSERTION_TYPE
    assert server.assertion_problems == []


def test_private_key_jwt_without_a_key_fails_before_sending() -> None:
    server = AuthServer(base="https://as.example.com")
    server.clients["web"] = (None, "private_key_jwt")
    mcp = Resource(server)
    flow = OAuth(Browser(server), client=ClientCredentials("web", auth_method="private_key_jwt"))

    def route(request: httpx.Request) -> httpx.Response:
        return (server if request.url.host == "as.example.com" else mcp).handle(request)

    with httpx.Client(transport=httpx.MockTransport(route), auth=flow) as http, \
            pytest.raises(AuthorizationFailed, match="has no private_key"):
        http.post(MCP, content=b"read")
    assert server.token_requests == []
