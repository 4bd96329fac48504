"""Grants without a user beyond client credentials: ``JWTBearerAuth`` (workload identity
federation), ``EnterpriseAuth`` (ID-JAG token exchange + JWT bearer grant) and
``client_secret_jwt``.

The in-process world of test_client_m2m.py (an ``httpx.Client`` whose transport routes
``as.example.com`` to the test authorization server, ``idp.example.com`` to a second
instance acting as the enterprise IdP, and ``mcp.example.com`` to a protected resource
checking the AS's JWTs). The AS verifies jwt-bearer assertions against the keys of the
issuers it trusts, and ID-JAGs against the IdP's key; what the client sent is read back
from the servers, and every refusal is checked for its message and for what was (not)
sent.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import httpx
import pytest
from joserfc import jwk, jwt

from mcpkit.auth import (
    AuthorizationFailed,
    ClientCredentials,
    ClientCredentialsAuth,
    EnterpriseAuth,
    JWTBearerAuth,
    OAuth,
    token_file,
)

from .oauth_as import ASSERTION_TYPE, ID_JAG, JWT_BEARER, TOKEN_EXCHANGE, AuthServer
from .test_client_flow import MCP, Browser, Resource

AS = "https://as.example.com"
IDP = "https://idp.example.com"
WORKLOAD_ISSUER = "https://k8s.example.com"


@dataclass
class World:
    auth: AuthServer
    idp: AuthServer
    mcp: Resource
    http: httpx.Client
    workload_key: jwk.ECKey

    def call(self) -> httpx.Response:
        return self.http.post(MCP, content=b"read")

    def route(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        target = {"as.example.com": self.auth, "idp.example.com": self.idp}.get(host)
        return (target or self.mcp).handle(request)

    def workload_jwt(self, audience: str = AS, lifetime: int = 300,
                     sub: str = "system:serviceaccount:ci:runner") -> str:
        now = int(time.time())
        claims = {"iss": WORKLOAD_ISSUER, "sub": sub, "aud": audience, "iat": now,
                  "exp": now + lifetime, "jti": f"j{now}{lifetime}"}
        return jwt.encode({"alg": "ES256"}, claims, self.workload_key, algorithms=["ES256"])


def make_world(flow: Callable[[World], httpx.Auth], **knobs: Any) -> World:
    server = AuthServer(base=AS, grant_types=[JWT_BEARER],
                        auth_methods=knobs.pop("auth_methods", ["none"]), **knobs)
    idp = AuthServer(base=IDP, grant_types=[TOKEN_EXCHANGE],
                     auth_methods=["client_secret_basic"])
    key = jwk.ECKey.generate_key("P-256", private=True)
    server.assertion_keys = {WORKLOAD_ISSUER: key, IDP: idp.key}
    world = World(server, idp, Resource(server), httpx.Client(), key)
    world.http = httpx.Client(transport=httpx.MockTransport(world.route), auth=flow(world))
    return world


# ------------------------------------------------------------ workload identity


def test_a_workload_jwt_is_traded_with_the_jwt_bearer_grant_alone() -> None:
    w = make_world(lambda w: JWTBearerAuth(w.workload_jwt()))
    w.mcp.scopes = ["notes:read"]
    assert w.call().status_code == 200
    (form,) = w.auth.token_requests
    assert set(form) == {"grant_type", "assertion", "resource", "scope"}
    assert (form["grant_type"], form["resource"], form["scope"]) == (
        JWT_BEARER, MCP, "notes:read")
    assert "authorization" not in w.auth.request_headers[-1]  # the JWT is the credential
    assert w.call().status_code == 200
    assert len(w.auth.token_requests) == 1  # kept until it expires


def test_a_provider_is_called_for_each_grant_and_its_token_used() -> None:
    calls: list[str] = []

    def provider(w: World) -> Callable[[], str]:
        def fresh() -> str:
            calls.append("x")
            return w.workload_jwt(sub=f"run-{len(calls)}")
        return fresh

    w = make_world(lambda w: JWTBearerAuth(provider(w)))
    assert w.call().status_code == 200
    flow = w.http.auth
    assert isinstance(flow, JWTBearerAuth)
    held = flow.store.get_tokens(AS, MCP)
    assert held is not None
    w.mcp.revoked.add(held.access_token)  # refused now: the grant is made again
    assert w.call().status_code == 200
    assert len(calls) == 2
    assert [jwt.decode(f["assertion"], w.workload_key).claims["sub"]
            for f in w.auth.token_requests] == ["run-1", "run-2"]


def test_an_expired_token_is_replaced_before_it_is_sent() -> None:
    calls: list[int] = []

    def provider(w: World) -> Callable[[], str]:
        def fresh() -> str:
            calls.append(1)
            return w.workload_jwt()
        return fresh

    w = make_world(lambda w: JWTBearerAuth(provider(w)), expires_in=5)  # < the 30 s leeway
    w.mcp.scopes = ["notes:read"]
    assert w.call().status_code == 200
    w.mcp.tokens_seen.clear()
    assert w.call().status_code == 200
    assert len(calls) == 2 and len(w.auth.token_requests) == 2
    assert w.auth.token_requests[1]["scope"] == "notes:read"  # the scopes of the last grant
    flow = w.http.auth
    assert isinstance(flow, JWTBearerAuth)
    held = flow.store.get_tokens(AS, MCP)
    assert held is not None  # the new token went out first: no 401 round trip
    assert w.mcp.tokens_seen == [f"Bearer {held.access_token}"]


def test_an_async_provider_and_a_rotated_token_file(tmp_path: Path) -> None:
    path = tmp_path / "token"

    async def read() -> str:
        return token_file(path)()

    w = make_world(lambda w: JWTBearerAuth(read))
    path.write_text(w.workload_jwt(sub="first") + "\n")
    assert w.call().status_code == 200
    assert jwt.decode(w.auth.token_requests[-1]["assertion"],
                      w.workload_key).claims["sub"] == "first"


def test_a_client_id_is_sent_only_when_given() -> None:
    w = make_world(lambda w: JWTBearerAuth(w.workload_jwt(), client_id="ci-runner"))
    w.auth.clients["ci-runner"] = (None, "none")
    assert w.call().status_code == 200
    assert w.auth.token_requests[0]["client_id"] == "ci-runner"


@pytest.mark.parametrize(("jwt_kind", "why"), [
    ("expired", "invalid_grant: the assertion has expired"),
    ("wrong_audience", "invalid_grant: the assertion's audience is not this server"),
    ("untrusted", "invalid_grant: the assertion is not signed by a trusted issuer"),
])
def test_a_refused_workload_jwt_is_surfaced_not_retried(jwt_kind: str, why: str) -> None:
    def auth(w: World) -> JWTBearerAuth:
        token = {"expired": lambda: w.workload_jwt(lifetime=-60),
                 "wrong_audience": lambda: w.workload_jwt(audience="https://wrong.example"),
                 "untrusted": lambda: jwt.encode(
                     {"alg": "ES256"}, {"aud": AS, "exp": int(time.time()) + 60},
                     jwk.ECKey.generate_key("P-256", private=True), algorithms=["ES256"]),
                 }[jwt_kind]()
        return JWTBearerAuth(token)

    w = make_world(auth)
    with pytest.raises(AuthorizationFailed, match="refused the workload's JWT") as info:
        w.call()
    assert why in str(info.value)
    assert len(w.auth.token_requests) == 1  # no retry, no other grant
    assert "eyJ" not in str(info.value)  # never the JWT


@pytest.mark.parametrize(("answer", "why"), [
    (httpx.Response(400, json={"error": "invalid_scope", "error_description": "no"}),
     "invalid_scope: no"),
    (httpx.Response(400, json={"error": "unauthorized_client"}), "unauthorized_client"),
    (httpx.Response(401, json={"error": "invalid_client"}), "invalid_client"),
    (httpx.Response(200, content=b"\x00junk"), "not JSON"),
    (httpx.Response(200, json={"token_type": "Bearer"}), "no access_token"),
    (httpx.Response(502, text="bad gateway"), "HTTP 502, not JSON"),
])
def test_token_endpoint_errors_and_junk_fail_with_the_reason(answer: httpx.Response,
                                                             why: str) -> None:
    w = make_world(lambda w: JWTBearerAuth(w.workload_jwt()), token_answer=lambda: answer)
    with pytest.raises(AuthorizationFailed, match="refused the workload's JWT") as info:
        w.call()
    assert why in str(info.value)
    assert len(w.auth.token_requests) == 1


def test_a_server_not_listing_the_grant_is_not_sent_the_jwt() -> None:
    w = make_world(lambda w: JWTBearerAuth(w.workload_jwt()))
    w.auth.grant_types = ["client_credentials"]
    with pytest.raises(AuthorizationFailed, match=re.escape(f"does not list the {JWT_BEARER}")):
        w.call()
    assert w.auth.token_requests == []


def test_no_token_endpoint_is_refused_before_anything_is_sent() -> None:
    w = make_world(lambda w: JWTBearerAuth(w.workload_jwt()))
    original = w.auth.metadata

    def without_token_endpoint() -> dict[str, Any]:
        doc = original()
        del doc["token_endpoint"]
        return doc

    w.auth.metadata = without_token_endpoint  # type: ignore[method-assign]
    with pytest.raises(AuthorizationFailed, match="no usable token_endpoint"):
        w.call()
    assert w.auth.token_requests == []


def test_a_workload_pinned_to_an_issuer_does_not_send_its_jwt_elsewhere() -> None:
    w = make_world(lambda w: JWTBearerAuth(w.workload_jwt(), issuer="https://other.example"))
    with pytest.raises(AuthorizationFailed, match=re.escape("not 'https://other.example'")):
        w.call()
    assert w.auth.token_requests == []


@pytest.mark.parametrize(("provider", "why"), [
    (lambda: (_ for _ in ()).throw(FileNotFoundError("/var/run/token")),
     "the workload token provider failed: FileNotFoundError: /var/run/token"),
    (lambda: "", "returned no token"),
    (lambda: 42, "returned no token"),
])
def test_a_failing_provider_fails_the_request_before_any_grant(provider: Any,
                                                               why: str) -> None:
    w = make_world(lambda w: JWTBearerAuth(provider))
    with pytest.raises(AuthorizationFailed) as info:
        w.call()
    assert why in str(info.value)
    assert w.auth.token_requests == []


def test_construction_checks_and_repr_hides_the_token() -> None:
    with pytest.raises(ValueError, match="token must be"):
        JWTBearerAuth("  ")
    assert "eyJ" not in repr(JWTBearerAuth("eyJsecret"))


# ------------------------------------------------------------ enterprise-managed


def enterprise(w: World, **options: Any) -> EnterpriseAuth:
    w.idp.clients["mcp-client-at-idp"] = ("idp-pw", "client_secret_basic")
    w.idp.jag_clients["mcp-client-at-idp"] = "mcp-client"
    w.idp.id_tokens["id-token-of-alice"] = "alice@example.com"
    w.auth.clients["mcp-client"] = ("as-pw", "client_secret_basic")
    return EnterpriseAuth(options.pop("id_token", "id-token-of-alice"),
                          idp_issuer=IDP, idp_client_id="mcp-client-at-idp",
                          idp_client_secret="idp-pw", client_id="mcp-client",
                          client_secret="as-pw", **options)


def basic_pair(headers: httpx.Headers) -> tuple[str, str]:
    name, _, secret = base64.b64decode(headers["authorization"][6:]).decode().partition(":")
    return unquote_plus(name), unquote_plus(secret)


def test_enterprise_exchanges_the_id_token_then_presents_the_id_jag() -> None:
    w = make_world(enterprise, auth_methods=["client_secret_basic"])
    w.mcp.scopes = ["notes:read"]
    assert w.call().status_code == 200
    (exchange,) = w.idp.token_requests
    assert exchange == {
        "grant_type": TOKEN_EXCHANGE, "requested_token_type": ID_JAG, "audience": AS,
        "resource": MCP, "subject_token": "id-token-of-alice",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "scope": "notes:read"}
    assert basic_pair(w.idp.request_headers[-1]) == ("mcp-client-at-idp", "idp-pw")
    (grant,) = w.auth.token_requests
    assert (grant["grant_type"], grant["resource"], grant["scope"]) == (
        JWT_BEARER, MCP, "notes:read")
    assert jwt.decode(grant["assertion"], w.idp.key).header["typ"] == "oauth-id-jag+jwt"
    assert basic_pair(w.auth.request_headers[-1]) == ("mcp-client", "as-pw")
    assert w.idp.paths[0] == "/.well-known/oauth-authorization-server"  # IdP discovered
    assert w.call().status_code == 200
    assert len(w.idp.token_requests) == 1  # the access token is kept


def test_enterprise_with_the_idp_token_endpoint_and_a_public_idp_client() -> None:
    def auth(w: World) -> EnterpriseAuth:
        enterprise(w)
        w.idp.clients["public-app"] = (None, "none")
        w.idp.jag_clients["public-app"] = "mcp-client"
        return EnterpriseAuth(lambda: "id-token-of-alice",
                              idp_token_endpoint=f"{IDP}/token", idp_client_id="public-app",
                              client_id="mcp-client", client_secret="as-pw")

    w = make_world(auth, auth_methods=["client_secret_basic"])
    assert w.call().status_code == 200
    assert w.idp.paths == ["/token"]
    assert w.idp.token_requests[0]["client_id"] == "public-app"


@pytest.mark.parametrize(("answer", "why"), [
    (httpx.Response(400, json={"error": "invalid_grant",
                               "error_description": "Audience validation failed"}),
     "invalid_grant: Audience validation failed"),
    (httpx.Response(200, json={"access_token": "x", "token_type": "Bearer",
                               "issued_token_type":
                                   "urn:ietf:params:oauth:token-type:access_token"}),
     "not an ID-JAG"),
    (httpx.Response(200, json={"issued_token_type": ID_JAG, "token_type": "N_A"}),
     "no access_token"),
    (httpx.Response(200, text="<html>"), "not JSON"),
])
def test_an_idp_refusal_or_a_wrong_token_type_stops_before_the_as(answer: httpx.Response,
                                                                  why: str) -> None:
    w = make_world(enterprise, auth_methods=["client_secret_basic"])
    w.idp.token_answer = lambda: answer
    with pytest.raises(AuthorizationFailed, match="refused to exchange the ID token") as info:
        w.call()
    assert why in str(info.value)
    assert w.auth.token_requests == []
    assert "id-token-of-alice" not in str(info.value)


def test_an_unknown_id_token_is_the_idps_invalid_grant() -> None:
    w = make_world(lambda w: enterprise(w, id_token="stale"),
                   auth_methods=["client_secret_basic"])
    with pytest.raises(AuthorizationFailed, match="invalid_grant: unknown ID token"):
        w.call()


def test_the_as_refusing_the_client_is_invalid_client() -> None:
    def auth(w: World) -> EnterpriseAuth:
        flow = enterprise(w)
        w.auth.clients["mcp-client"] = ("another-pw", "client_secret_basic")
        return flow

    w = make_world(auth, auth_methods=["client_secret_basic"])
    with pytest.raises(AuthorizationFailed, match=r"refused the ID-JAG.*invalid_client"):
        w.call()
    assert len(w.idp.token_requests) == 1


def test_an_id_token_provider_that_raises() -> None:
    def broken() -> str:
        raise RuntimeError("SSO session ended")

    w = make_world(lambda w: enterprise(w, id_token=broken),
                   auth_methods=["client_secret_basic"])
    with pytest.raises(AuthorizationFailed, match="the ID token provider failed: "
                                                  "RuntimeError: SSO session ended"):
        w.call()
    assert w.idp.token_requests == []


def test_enterprise_construction_checks() -> None:
    with pytest.raises(ValueError, match="idp_token_endpoint or idp_issuer"):
        EnterpriseAuth("t", idp_client_id="a", client_id="b")
    with pytest.raises(ValueError, match="not both"):
        EnterpriseAuth("t", idp_issuer=IDP, idp_client_id="a", client_id="b",
                       client_secret="s", private_key="k")


# ------------------------------------------------------------ client_secret_jwt


def test_client_secret_jwt_when_asked_for_and_listed() -> None:
    server = AuthServer(base=AS, auth_methods=["client_secret_basic", "client_secret_jwt"])
    server.clients["svc"] = ("a-secret-of-16-chars", "client_secret_jwt")
    mcp = Resource(server)

    def route(request: httpx.Request) -> httpx.Response:
        return (server if request.url.host == "as.example.com" else mcp).handle(request)

    flow = ClientCredentialsAuth("svc", "a-secret-of-16-chars", auth_method="client_secret_jwt")
    with httpx.Client(transport=httpx.MockTransport(route), auth=flow) as http:
        assert http.post(MCP, content=b"read").status_code == 200
    (form,) = server.token_requests
    assert form["client_assertion_type"] == ASSERTION_TYPE
    assert "client_secret" not in form and "authorization" not in server.request_headers[-1]
    token = jwt.decode(form["client_assertion"], jwk.OctKey.import_key(b"a-secret-of-16-chars"))
    assert token.header["alg"] == "HS256"
    assert (token.claims["iss"], token.claims["sub"], token.claims["aud"]) == ("svc", "svc", AS)
    assert server.assertion_problems == []


def test_client_secret_jwt_uses_the_hmac_alg_the_server_lists() -> None:
    server = AuthServer(base=AS, auth_methods=["client_secret_jwt"])
    server.clients["web"] = ("pw-of-16-chars!!", "client_secret_jwt")
    doc = server.metadata

    def with_algs() -> dict[str, Any]:
        return {**doc(), "token_endpoint_auth_signing_alg_values_supported": ["RS256",
                                                                              "HS512"]}

    server.metadata = with_algs  # type: ignore[method-assign]
    mcp = Resource(server)
    flow = OAuth(Browser(server),
                 client=ClientCredentials("web", "pw-of-16-chars!!", "client_secret_jwt"))

    def route(request: httpx.Request) -> httpx.Response:
        return (server if request.url.host == "as.example.com" else mcp).handle(request)

    with httpx.Client(transport=httpx.MockTransport(route), auth=flow) as http:
        assert http.post(MCP, content=b"read").status_code == 200
    (form,) = server.token_requests
    assert form["grant_type"] == "authorization_code"
    assert jwt.decode(form["client_assertion"], jwk.OctKey.import_key(b"pw-of-16-chars!!"),
                      algorithms=["HS512"]).header["alg"] == "HS512"


def test_client_secret_jwt_not_listed_is_refused_before_sending_the_secret() -> None:
    server = AuthServer(base=AS, auth_methods=["client_secret_basic"])
    server.clients["svc"] = ("pw-of-16-chars!!", "client_secret_jwt")
    mcp = Resource(server)

    def route(request: httpx.Request) -> httpx.Response:
        return (server if request.url.host == "as.example.com" else mcp).handle(request)

    flow = ClientCredentialsAuth("svc", "pw-of-16-chars!!", auth_method="client_secret_jwt")
    with httpx.Client(transport=httpx.MockTransport(route), auth=flow) as http, \
            pytest.raises(AuthorizationFailed, match="does not list client_secret_jwt"):
        http.post(MCP, content=b"read")
    assert server.token_requests == []


def test_client_secret_jwt_needs_a_secret() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        ClientCredentialsAuth("svc", auth_method="client_secret_jwt")


@pytest.mark.parametrize("allow", [False, True])
def test_an_idp_on_a_private_network_needs_allow_private_networks(allow: bool) -> None:
    """The MCP server is public; the enterprise IdP at 10.0.0.5 is on the user's network:
    the address rule holds for the IdP's fetches too, unless allowed."""
    idp = AuthServer(base="https://10.0.0.5", grant_types=[TOKEN_EXCHANGE],
                     auth_methods=["client_secret_basic"])
    server = AuthServer(base=AS, grant_types=[JWT_BEARER],
                        auth_methods=["client_secret_basic"])
    server.assertion_keys = {idp.issuer: idp.key}
    idp.clients["app"] = ("idp-pw", "client_secret_basic")
    idp.jag_clients["app"] = "mcp-client"
    idp.id_tokens["tok"] = "alice"
    server.clients["mcp-client"] = ("as-pw", "client_secret_basic")
    mcp = Resource(server)

    def route(request: httpx.Request) -> httpx.Response:
        target = {"as.example.com": server, "10.0.0.5": idp}.get(request.url.host, mcp)
        return target.handle(request)

    flow = EnterpriseAuth("tok", idp_issuer=idp.issuer, idp_client_id="app",
                          idp_client_secret="idp-pw", client_id="mcp-client",
                          client_secret="as-pw", allow_private_networks=allow)
    with httpx.Client(transport=httpx.MockTransport(route), auth=flow) as http:
        if allow:
            assert http.post(MCP, content=b"read").status_code == 200
            assert len(idp.token_requests) == 1
        else:
            with pytest.raises(AuthorizationFailed, match=r"refused to fetch https://10\.0"):
                http.post(MCP, content=b"read")
            assert idp.paths == []
