"""The client OAuth flow (``mcpkit.auth.OAuth``) through httpx's synchronous pump.

An ``httpx.Client`` whose transport routes ``as.example.com`` to the test authorization
server (tests/auth/oauth_as.py) and ``mcp.example.com`` to a protected resource that
checks the JWTs it issued (challenges built with mcpkit's own helpers). Covers
discovery, registration, PKCE, state and iss, resource, scopes, refresh, step-up and
the refusals; the asynchronous pump runs end to end in test_client_e2e.py.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from joserfc import jwt
from joserfc.errors import JoseError

from mcpkit.auth import (
    AuthorizationFailed,
    ClientCredentials,
    FileTokenStore,
    MemoryTokenStore,
    OAuth,
    Tokens,
    insufficient_scope,
    parse_bearer_challenge,
    unauthorized,
)
from mcpkit.auth.client.authorize import AuthorizationAttempt, check_authorization_url
from mcpkit.auth.client.discovery import discover
from mcpkit.auth.client.steps import Fetch

from .oauth_as import AuthServer, s256

MCP = "https://mcp.example.com/mcp"
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
ROOT_PRM = "/.well-known/oauth-protected-resource"
REDIRECT = "http://127.0.0.1:5000/callback"


@dataclass
class Resource:
    """The protected MCP endpoint: needs ``scopes`` (challenged in the 401) and
    ``write`` scopes on top for a request whose body says ``write`` (403)."""

    auth: AuthServer
    scopes: list[str] = field(default_factory=list)
    write: list[str] = field(default_factory=list)
    supported: list[str] | None = None
    prm_at: tuple[str, ...] = (PRM_PATH, ROOT_PRM)
    header_metadata: bool = True
    prm_resource: str = MCP
    revoked: set[str] = field(default_factory=set)
    paths: list[str] = field(default_factory=list)
    tokens_seen: list[str | None] = field(default_factory=list)
    prm_versions: list[str | None] = field(default_factory=list)
    queries: list[bytes] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.paths.append(path)
        self.queries.append(request.url.query)
        if path in (PRM_PATH, ROOT_PRM):
            self.prm_versions.append(request.headers.get("mcp-protocol-version"))
            if path not in self.prm_at:
                return httpx.Response(404)
            doc: dict[str, Any] = {"resource": self.prm_resource,
                                   "authorization_servers": [self.auth.issuer]}
            if self.supported is not None:
                doc["scopes_supported"] = self.supported
            return httpx.Response(200, json=doc)
        metadata = f"https://mcp.example.com{PRM_PATH}" if self.header_metadata else None
        header = request.headers.get("authorization")
        self.tokens_seen.append(header)
        if not header or not header.startswith("Bearer "):
            return self._challenge(401, unauthorized(metadata or "", self.scopes))
        token = header[7:]
        try:
            claims = jwt.decode(token, self.auth.key).claims
        except JoseError:
            return self._challenge(401, unauthorized(metadata or "", self.scopes, "bad"))
        if token in self.revoked or claims.get("aud") != self.prm_resource:
            return self._challenge(401, unauthorized(metadata or "", self.scopes, "no"))
        held = set(str(claims.get("scope", "")).split())
        needed = self.scopes + (self.write if b"write" in request.content else [])
        if not set(needed) <= held:
            missing = [s for s in needed if s not in held]
            return self._challenge(403, insufficient_scope(metadata or "", missing))
        return httpx.Response(200, json={"ok": True, "scopes": sorted(held)})

    @staticmethod
    def _challenge(status: int, value: str) -> httpx.Response:
        if 'resource_metadata=""' in value:  # no header URL: drop the parameter
            value = value.replace(', resource_metadata=""', "").replace(
                'resource_metadata="", ', "").replace(' resource_metadata=""', "")
        return httpx.Response(status, headers={"www-authenticate": value})


class Browser:
    """A redirect handler that asks the test authorization server directly."""

    def __init__(self, auth: AuthServer) -> None:
        self.auth = auth
        self.opened: list[str] = []

    @property
    def redirect_uri(self) -> str:
        return REDIRECT

    async def authorize(self, url: str) -> str:
        self.opened.append(url)
        answer = self.auth.handle(httpx.Request("GET", url))
        assert answer.status_code == 302, answer.text
        location: str = answer.headers["location"]
        return location


@dataclass
class World:
    auth: AuthServer
    mcp: Resource
    browser: Browser
    oauth: OAuth
    http: httpx.Client

    def call(self, body: bytes = b"read") -> httpx.Response:
        return self.http.post(MCP, content=body)

    def authorized_scopes(self) -> list[str | None]:
        return [a.get("scope") for a in self.auth.authorizations]


def make_world(*, oauth: dict[str, Any] | None = None, **auth: Any) -> World:
    server = AuthServer(base="https://as.example.com", **auth)
    mcp = Resource(server)
    browser = Browser(server)

    def route(request: httpx.Request) -> httpx.Response:
        target = server if request.url.host == "as.example.com" else mcp
        return target.handle(request)

    flow = OAuth(browser, **(oauth or {}))
    http = httpx.Client(transport=httpx.MockTransport(route), auth=flow)
    return World(server, mcp, browser, flow, http)


@pytest.fixture
def world() -> Iterator[World]:
    w = make_world()
    yield w
    w.http.close()


# ------------------------------------------------------------------ the whole flow


def test_first_request_runs_the_whole_flow_in_the_spec_order(world: World) -> None:
    world.mcp.scopes = ["notes:read"]
    reply = world.call()
    assert reply.status_code == 200
    assert world.mcp.paths == ["/mcp", PRM_PATH, "/mcp"]  # header URL, then the retry
    assert world.auth.paths == ["/.well-known/oauth-authorization-server", "/register",
                                "/authorize", "/token"]
    registration = world.auth.registrations[0]
    assert registration["redirect_uris"] == [REDIRECT]
    assert registration["application_type"] == "native"
    assert registration["token_endpoint_auth_method"] == "none"
    (query,) = world.auth.authorizations
    (form,) = world.auth.token_requests
    assert query["resource"] == form["resource"] == MCP
    assert query["code_challenge_method"] == "S256"
    assert s256(form["code_verifier"]) == query["code_challenge"]
    assert query["scope"] == "notes:read"
    assert form["client_id"] == query["client_id"] == "client-1"
    # later requests carry the token without another authorization
    assert world.call().status_code == 200
    assert len(world.auth.authorizations) == 1
    assert world.mcp.tokens_seen[-1] == world.mcp.tokens_seen[-2] != None  # noqa: E711
    # M036/M037: the token travels in the Authorization header, never in a URL
    assert str(world.mcp.tokens_seen[-1]).startswith("Bearer ")
    assert world.mcp.queries == [b""] * len(world.mcp.paths)


def test_discovery_without_header_url_tries_path_inserted_then_root(world: World) -> None:
    world.mcp.header_metadata = False
    world.mcp.prm_at = (ROOT_PRM,)
    world.mcp.prm_resource = "https://mcp.example.com"  # the root document's resource
    assert world.call().status_code == 200
    assert world.mcp.paths[:3] == ["/mcp", PRM_PATH, ROOT_PRM]
    assert world.auth.authorizations[0]["resource"] == "https://mcp.example.com"


def answer_with(documents: dict[str, dict[str, Any]],
                versions: list[str | None] | None = None) -> tuple[list[str], Any]:
    asked: list[str] = []

    def respond(step: Fetch) -> httpx.Response:
        url = str(step.request.url)
        asked.append(url)
        if versions is not None:
            versions.append(step.request.headers.get("mcp-protocol-version"))
        doc = documents.get(url)
        return httpx.Response(200 if doc else 404, json=doc or {}, request=step.request)

    return asked, respond


def drive(flow: Any, respond: Any) -> Any:
    """Run a sub-flow, answering each Fetch with ``respond``."""
    try:
        step = next(flow)
        while True:
            assert isinstance(step, Fetch)
            step = flow.send(respond(step))
    except StopIteration as done:
        return done.value


def as_document(issuer: str, **extra: Any) -> dict[str, Any]:
    return {"issuer": issuer, "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token", "code_challenge_methods_supported": ["S256"],
            **extra}


def test_issuer_with_a_path_is_looked_up_in_the_spec_order() -> None:
    issuer = "https://as.example.com/tenant1"
    prm = {"resource": MCP, "authorization_servers": [issuer]}
    asked, respond = answer_with({
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp": prm,
        "https://as.example.com/tenant1/.well-known/openid-configuration":
            as_document(issuer)})
    found = drive(discover(MCP, None), respond)
    assert found.issuer == issuer and found.resource == MCP
    assert asked == [
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        "https://as.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://as.example.com/.well-known/openid-configuration/tenant1",
        "https://as.example.com/tenant1/.well-known/openid-configuration"]


def test_issuer_without_path_tries_rfc8414_then_oidc_and_discards_other_issuers() -> None:
    issuer = "https://as.example.com"
    prm = {"resource": MCP, "authorization_servers": [issuer]}
    asked, respond = answer_with({
        "https://mcp.example.com/prm": prm,
        "https://as.example.com/.well-known/oauth-authorization-server":
            as_document("https://attacker.example.com"),
        "https://as.example.com/.well-known/openid-configuration": as_document(issuer)})
    found = drive(discover(MCP, "https://mcp.example.com/prm"), respond)
    assert found.metadata["issuer"] == issuer
    assert asked == ["https://mcp.example.com/prm",
                     "https://as.example.com/.well-known/oauth-authorization-server",
                     "https://as.example.com/.well-known/openid-configuration"]


# ------------------------------------------------------------------ 2025-03-26 fallback

ORIGIN = "https://mcp.example.com"
PRM_URLS = [f"{ORIGIN}{PRM_PATH}", f"{ORIGIN}{ROOT_PRM}"]


def test_server_without_prm_is_its_own_authorization_server_2025_03_26() -> None:
    server = AuthServer(base=ORIGIN)  # the MCP server's origin serves the OAuth endpoints
    mcp = Resource(server, prm_at=(), header_metadata=False)
    browser = Browser(server)

    def route(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        return (mcp if path == "/mcp" or "protected-resource" in path else server).handle(
            request)

    with httpx.Client(transport=httpx.MockTransport(route), auth=OAuth(browser)) as http:
        assert http.post(MCP, content=b"read").status_code == 200
    assert mcp.paths[:3] == ["/mcp", PRM_PATH, ROOT_PRM]
    assert server.paths == ["/.well-known/oauth-authorization-server", "/register",
                            "/authorize", "/token"]
    assert server.authorizations[0]["resource"] == server.token_requests[0]["resource"] == MCP


def test_2025_03_26_fallback_without_metadata_uses_the_default_endpoints() -> None:
    asked, respond = answer_with({})
    found = drive(discover(MCP, None), respond)
    assert asked == [*PRM_URLS, f"{ORIGIN}/.well-known/oauth-authorization-server"]
    assert (found.issuer, found.resource) == (ORIGIN, MCP)
    assert [found.endpoint(n) for n in ("authorization_endpoint", "token_endpoint",
                                        "registration_endpoint")] == [
        f"{ORIGIN}/authorize", f"{ORIGIN}/token", f"{ORIGIN}/register"]


def test_2025_03_26_fallback_refuses_metadata_of_another_issuer() -> None:
    _, respond = answer_with({f"{ORIGIN}/.well-known/oauth-authorization-server":
                              as_document("https://as.example.com")})
    with pytest.raises(AuthorizationFailed, match="2025-03-26 fallback failed"):
        drive(discover(MCP, None), respond)


def test_no_fallback_when_the_challenge_names_a_prm_url() -> None:
    asked, respond = answer_with({})
    with pytest.raises(AuthorizationFailed, match="no protected resource metadata"):
        drive(discover(MCP, f"{ORIGIN}/prm"), respond)
    assert not any("oauth-authorization-server" in url for url in asked)


def test_no_fallback_when_a_prm_url_fails_otherwise_than_404() -> None:
    asked: list[str] = []

    def respond(step: Fetch) -> httpx.Response:
        asked.append(str(step.request.url))
        return httpx.Response(500 if len(asked) == 1 else 404, request=step.request)

    with pytest.raises(AuthorizationFailed, match="HTTP 500"):
        drive(discover(MCP, None), respond)
    assert asked == PRM_URLS


def test_prm_for_another_resource_is_refused(world: World) -> None:
    world.mcp.prm_resource = "https://evil.example.com/mcp"
    with pytest.raises(AuthorizationFailed, match="not for"):
        world.call()
    assert world.auth.authorizations == []


# ------------------------------------------------------------------ refusals


def test_as_without_s256_is_refused_before_any_authorization() -> None:
    w = make_world(pkce_methods=["plain"])
    with pytest.raises(AuthorizationFailed, match="S256"):
        w.call()
    w2 = make_world(pkce_methods=None)
    with pytest.raises(AuthorizationFailed, match="S256"):
        w2.call()
    assert w.auth.authorizations == w2.auth.authorizations == []
    assert w.browser.opened == []


@pytest.mark.parametrize(("knobs", "message"), [
    ({"state_mode": "wrong"}, "state"),
    ({"state_mode": "omit"}, "state"),
    ({"iss_mode": "wrong"}, "another issuer"),
    ({"iss_mode": "wrong", "iss_supported": None}, "another issuer"),
    ({"iss_mode": "omit"}, "has none"),
])
def test_bad_authorization_responses_are_refused_before_the_token_request(
        knobs: dict[str, Any], message: str) -> None:
    w = make_world(**knobs)
    with pytest.raises(AuthorizationFailed, match=message):
        w.call()
    assert len(w.auth.authorizations) == 1
    assert w.auth.token_requests == []


def test_iss_may_be_absent_when_not_advertised() -> None:
    w = make_world(iss_mode="omit", iss_supported=False)
    assert w.call().status_code == 200


def test_iss_is_compared_exactly() -> None:
    attempt = AuthorizationAttempt.start(
        endpoint="https://as.example.com/authorize", issuer="https://as.example.com",
        client_id="c", redirect_uri=REDIRECT, resource=MCP, scopes=(), iss_supported=True)
    for variant in ("https://as.example.com/", "https://AS.example.com",
                    "https://as.example.com:443"):
        with pytest.raises(AuthorizationFailed, match="another issuer"):
            attempt.code_from(f"{REDIRECT}?code=x&state={attempt.state}&iss={variant}")
    assert attempt.code_from(
        f"{REDIRECT}?code=x&state={attempt.state}&iss=https%3A%2F%2Fas.example.com") == "x"
    with pytest.raises(AuthorizationFailed, match="access_denied"):
        attempt.code_from(f"{REDIRECT}?error=access_denied&state={attempt.state}"
                          "&iss=https://as.example.com")


@pytest.mark.parametrize("url", [
    "javascript:alert(1)", "file:///etc/passwd", "data:text/html,hi", "vbscript:x",
    "http://as.example.com/authorize", "//as.example.com/authorize", "https:///path",
    "https://user:pw@as.example.com/authorize", "https://as.example.com/a b"])
def test_unsafe_authorization_urls_are_refused(url: str) -> None:
    with pytest.raises(AuthorizationFailed):
        check_authorization_url(url)


def test_safe_authorization_urls_pass() -> None:
    for url in ("https://as.example.com/authorize?x=1", "http://127.0.0.1:9/authorize",
                "http://localhost/authorize", "http://[::1]:8/a"):
        assert check_authorization_url(url) == url


def test_javascript_authorization_endpoint_is_never_opened() -> None:
    w = make_world()
    w.auth.metadata = lambda: {**AuthServer.metadata(w.auth),  # type: ignore[method-assign]
                               "authorization_endpoint": "javascript:alert(1)"}
    with pytest.raises(AuthorizationFailed, match="authorization_endpoint"):
        w.call()
    assert w.browser.opened == []


# ------------------------------------------------------------------ scopes


def test_scopes_from_the_challenge_first(world: World) -> None:
    world.mcp.scopes = ["notes:read"]
    world.mcp.supported = ["notes:read", "notes:write", "admin"]
    world.call()
    assert world.authorized_scopes() == ["notes:read"]


def test_scopes_from_scopes_supported_when_the_challenge_has_none(world: World) -> None:
    world.mcp.supported = ["notes:read", "notes:write"]
    world.call()
    assert world.authorized_scopes() == ["notes:read notes:write"]


def test_scope_omitted_when_nothing_names_one(world: World) -> None:
    world.call()
    assert world.authorized_scopes() == [None]
    assert "scope" not in world.browser.opened[0]


def test_offline_access_only_when_the_as_lists_it() -> None:
    w = make_world(scopes_supported=["notes:read", "offline_access"])
    w.mcp.scopes = ["notes:read"]
    w.call()
    w2 = make_world(scopes_supported=["notes:read"])
    w2.mcp.scopes = ["notes:read"]
    w2.call()
    assert w.authorized_scopes() == ["notes:read offline_access"]
    assert w2.authorized_scopes() == ["notes:read"]


def test_step_up_asks_for_the_union_and_retries(world: World) -> None:
    world.mcp.scopes = ["notes:read"]
    world.mcp.write = ["notes:write"]
    assert world.call(b"read").status_code == 200
    reply = world.call(b"write")
    assert reply.status_code == 200 and reply.json()["scopes"] == ["notes:read", "notes:write"]
    assert world.authorized_scopes() == ["notes:read", "notes:read notes:write"]


def test_step_up_is_bounded() -> None:
    w = make_world(grant_only=("notes:read",), oauth={"max_step_ups": 2})
    w.mcp.scopes = ["notes:read"]
    w.mcp.write = ["notes:write"]
    reply = w.call(b"write")
    assert reply.status_code == 403
    assert len(w.auth.authorizations) == 3  # the first, then two step-ups
    assert parse_bearer_challenge(reply.headers["www-authenticate"]).scopes == (  # type: ignore[union-attr]
        "notes:write",)


# ------------------------------------------------------------------ tokens


def test_refused_token_is_refreshed_before_a_new_authorization(world: World) -> None:
    assert world.call().status_code == 200
    first = world.mcp.tokens_seen[-1]
    assert first is not None
    world.mcp.revoked.add(first.removeprefix("Bearer "))
    assert world.call().status_code == 200
    assert [f["grant_type"] for f in world.auth.token_requests] == [
        "authorization_code", "refresh_token"]
    assert world.auth.token_requests[-1]["resource"] == MCP
    assert len(world.auth.authorizations) == 1
    assert world.mcp.tokens_seen[-1] != first


def test_refused_refresh_falls_back_to_a_new_authorization(world: World) -> None:
    assert world.call().status_code == 200
    first = world.mcp.tokens_seen[-1]
    assert first is not None
    world.mcp.revoked.add(first.removeprefix("Bearer "))
    world.auth.refresh_tokens.clear()  # the AS forgot the refresh token
    assert world.call().status_code == 200
    assert len(world.auth.authorizations) == 2


def test_persistent_401_is_returned_not_looped(world: World) -> None:
    world.mcp.revoked = type("All", (set,), {"__contains__": lambda self, x: True})()
    reply = world.call()
    assert reply.status_code == 401
    assert len(world.auth.authorizations) == 1


def test_pre_registered_secret_basic_and_post() -> None:
    for method in ("client_secret_basic", "client_secret_post"):
        w = make_world(auth_methods=[method], dcr=False)
        w.auth.clients["pre"] = ("s3cret:/ +", method)
        w.oauth.client = ClientCredentials("pre", "s3cret:/ +")
        assert w.call().status_code == 200
        form = w.auth.token_requests[0]
        assert ("client_secret" in form) == (method == "client_secret_post")
        assert w.auth.registrations == []


def test_pre_registered_credentials_are_keyed_by_issuer() -> None:
    w = make_world(dcr=False)
    w.auth.clients["mine"] = (None, "none")
    w.oauth.client = {"https://other.example.com": ClientCredentials("theirs"),
                      "https://as.example.com": ClientCredentials("mine")}
    assert w.call().status_code == 200
    assert w.auth.authorizations[0]["client_id"] == "mine"


def test_dcr_secret_is_used_with_the_method_registered() -> None:
    w = make_world(auth_methods=["client_secret_basic"])
    assert w.call().status_code == 200
    assert w.auth.registrations[0]["token_endpoint_auth_method"] == "client_secret_basic"
    assert "client_secret" not in w.auth.token_requests[0]


def test_client_id_metadata_document_is_preferred_over_registration() -> None:
    url = "https://client.example.com/metadata.json"
    w = make_world(cimd=True, oauth={"client_metadata_url": url})
    assert w.call().status_code == 200
    assert w.auth.authorizations[0]["client_id"] == url
    assert w.auth.registrations == []


def test_no_way_to_register_asks_for_credentials() -> None:
    w = make_world(dcr=False)
    with pytest.raises(AuthorizationFailed, match="give this client a client_id"):
        w.call()


# ------------------------------------------------------------------ store and parser


def test_file_store_is_private_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "state" / "tokens.json"
    store = FileTokenStore(path)
    tokens = Tokens("at", expires_at=123.0, refresh_token="rt", scopes=("a", "b"))
    store.set_tokens("https://as", MCP, tokens)
    store.set_client("https://as", ClientCredentials("id", "secret", "client_secret_post"))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    again = FileTokenStore(path)
    assert again.get_tokens("https://as", MCP) == tokens
    assert again.get_client("https://as") == ClientCredentials("id", "secret",
                                                               "client_secret_post")
    assert again.get_tokens("https://other", MCP) is None
    assert "at" not in repr(tokens) and "secret" not in repr(again.get_client("https://as"))
    again.set_tokens("https://as", MCP, None)
    assert store.get_tokens("https://as", MCP) is None
    os.chmod(path, 0o644)
    with pytest.raises(PermissionError):
        store.get_tokens("https://as", MCP)


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_stores_list_what_they_keep(kind: str, tmp_path: Path) -> None:
    store = MemoryTokenStore() if kind == "memory" else FileTokenStore(tmp_path / "t.json")
    assert store.all_tokens() == []
    one, two = Tokens("a1", scopes=("s",)), Tokens("a2")
    store.set_tokens("https://as", MCP, one)
    store.set_tokens("https://as2", "https://r.example.com", two)
    assert sorted(store.all_tokens(), key=lambda e: e[0]) == [
        ("https://as", MCP, one), ("https://as2", "https://r.example.com", two)]
    store.set_tokens("https://as", MCP, None)
    assert store.all_tokens() == [("https://as2", "https://r.example.com", two)]


def test_file_store_ignores_junk(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text('{"tokens": {"https://as https://r": {"no": 1}}, "clients": []}')
    os.chmod(path, 0o600)
    store = FileTokenStore(path)
    assert store.get_tokens("https://as", "https://r") is None
    assert store.get_client("https://as") is None


@pytest.mark.parametrize(("header", "expected"), [
    ('Bearer resource_metadata="https://h/prm", scope="a b a"',
     (None, ("a", "b"), "https://h/prm")),
    ('Basic realm="x", Bearer error="insufficient_scope", scope="w"',
     ("insufficient_scope", ("w",), None)),
    ('Basic abc==, bearer scope=r', (None, ("r",), None)),
    ('DPoP algs="ES256", Bearer error_description="say \\"hi\\"", scope="s"',
     (None, ("s",), None)),
    ("Bearer", (None, (), None)),
])
def test_challenge_parser(header: str, expected: tuple[Any, ...]) -> None:
    found = parse_bearer_challenge(header)
    assert found is not None
    assert (found.error, found.scopes, found.resource_metadata) == expected


def test_challenge_parser_without_bearer() -> None:
    assert parse_bearer_challenge('Basic realm="x"') is None
    assert parse_bearer_challenge("") is None
    assert parse_bearer_challenge('DPoP error="x"') is None


def test_redirect_urls_carry_what_was_asked(world: World) -> None:
    world.mcp.scopes = ["notes:read"]
    world.call()
    query = parse_qs(urlsplit(world.browser.opened[0]).query)
    assert query["redirect_uri"] == [REDIRECT] and query["response_type"] == ["code"]
    assert len(query["state"][0]) >= 32 and len(query["code_challenge"][0]) == 43


# ------------------------------------------------------------------ MCP-Protocol-Version


@pytest.mark.parametrize(("body", "headers", "expected"), [
    (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
     b'"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}', {},
     "2025-06-18"),
    (b"read", {"mcp-protocol-version": "2026-07-28"}, "2026-07-28"),
    (b"read", {}, None),  # nothing says which revision: no header rather than a guess
])
def test_discovery_names_the_refused_request_s_revision(
        body: bytes, headers: dict[str, str], expected: str | None) -> None:
    """S012: the PRM fetches carry MCP-Protocol-Version of the request that was refused
    (its header, else the revision an initialize offers); the authorization server's
    own metadata and endpoints get none."""
    w = make_world()
    try:
        assert w.http.post(MCP, content=body, headers=headers).status_code == 200
    finally:
        w.http.close()
    assert w.mcp.prm_versions == [expected]
    assert all(r.get("mcp-protocol-version") is None for r in w.auth.request_headers)


def test_2025_03_26_fallback_sends_the_revision_to_the_server_s_origin() -> None:
    versions: list[str | None] = []
    _, respond = answer_with({}, versions)
    drive(discover(MCP, None, "2025-03-26"), respond)
    assert versions == ["2025-03-26"] * 3  # two PRM URLs, then the origin's metadata
