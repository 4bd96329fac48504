"""Interop: the official ``mcp`` SDK's OAuth client against an mcpkit server and oidc-provider.

The official client (``mcp.client.auth.OAuthClientProvider``, an ``httpx2.Auth``, on the
SDK's Streamable HTTP client and ``ClientSession``) connects to an mcpkit ``Server``
served by uvicorn on 127.0.0.1 and protected by ``JWTVerifier`` for oidc-provider
(tests/auth/oidc/server.mjs, the ``oidc`` session fixture). The server's canonical URL,
``http://127.0.0.1:<port>/mcp``, is its resource; oidc-provider issues JWT access tokens
for any such loopback resource and allows dynamic client registration.

Nothing is pre-arranged between the SDK and the authorization server: on the 401 the SDK
discovers the protected resource metadata (from ``resource_metadata``), then
oidc-provider's metadata, registers itself (RFC 7591), and runs the authorization code
grant with PKCE and the ``resource`` indicator. The test plays the browser: the SDK's
``redirect_handler`` gets the authorization URL, which ``Browser`` follows through
oidc-provider's login and consent (server.mjs logs in ``login_hint``'s subject) to the
redirect URI; the ``callback_handler`` hands back ``code``, ``state`` and ``iss``.

Proved: the tool sees oidc-provider's subject in ``ctx.auth``; a second connection with
the same token storage makes no new authorization; a 403 ``insufficient_scope`` from a
tool declaring ``scopes`` makes the SDK authorize again for the union of the scopes and
retry the call in the same session (step-up).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx
import orjson
import pytest
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from mcpkit.auth import Auth, JWTVerifier, ProtectedResource
from tests.support.http import LiveServer
from tests.support.oidc import OidcProvider

from .notes_server import notes_server, served_at_own_url

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

SCOPES = ["notes:read", "notes:write"]
WHOAMI = ("subject", "client_id", "scopes", "issuer", "audience")
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never contacted: the browser stops there
STEP_SECONDS = 30.0


def protected(oidc: OidcProvider, required_scopes: list[str]) -> Iterator[LiveServer]:
    """An mcpkit server on loopback whose resource is its own URL."""
    with served_at_own_url(lambda url: notes_server(WHOAMI).asgi_app(auth=Auth(
            JWTVerifier(issuer=oidc.issuer, audience=url),
            resource=ProtectedResource(url, [oidc.issuer], scopes_supported=SCOPES),
            required_scopes=required_scopes))) as live:
        yield live


@pytest.fixture(scope="module")
def notes(oidc: OidcProvider) -> Iterator[LiveServer]:
    """Its 401 asks for every scope it supports."""
    yield from protected(oidc, [])


@pytest.fixture(scope="module")
def notes_read(oidc: OidcProvider) -> Iterator[LiveServer]:
    """Every request needs notes:read, so its 401 asks for that alone; write_note needs
    notes:write on top (a 403 naming both)."""
    yield from protected(oidc, ["notes:read"])


# ------------------------------------------------------------------ the SDK's collaborators


@dataclass
class Storage:
    """The SDK's ``TokenStorage``, in memory, counting what was stored."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None
    tokens_stored: int = 0

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.tokens_stored += 1

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class AuthorizationRefused(Exception):
    """The authorization endpoint redirected back with an error."""

    def __init__(self, answer: dict[str, list[str]]) -> None:
        super().__init__(answer)
        self.error = answer["error"][0]
        self.description = answer.get("error_description", [""])[0]


@dataclass
class Browser:
    """The user agent: follows the authorization URL through oidc-provider's login and
    consent (as ``login``) to the redirect URI, and gives its parameters to the SDK."""

    login: str
    authorization_urls: list[str] = field(default_factory=list)
    answers: list[dict[str, list[str]]] = field(default_factory=list)

    async def redirect_handler(self, url: str) -> None:
        self.authorization_urls.append(url)
        with anyio.fail_after(STEP_SECONDS):
            async with httpx.AsyncClient(timeout=10) as http:  # its own cookies
                # The user says who logs in (server.mjs logs in login_hint's subject).
                reply = await http.get(httpx.URL(url).copy_add_param("login_hint", self.login))
                for _ in range(10):  # auth -> login -> auth -> consent -> auth -> redirect
                    assert reply.status_code in (302, 303), (reply.status_code, reply.text)
                    location = urljoin(str(reply.url), reply.headers["location"])
                    if location.startswith(REDIRECT_URI):
                        self.answers.append(parse_qs(urlsplit(location).query))
                        return
                    reply = await http.get(location)
        raise AssertionError("the authorization endpoint never redirected back")

    async def callback_handler(self) -> AuthorizationCodeResult:
        answer = self.answers[-1]
        if "error" in answer:  # what a real callback does with an error redirect
            raise AuthorizationRefused(answer)
        return AuthorizationCodeResult(code=answer["code"][0], state=answer["state"][0],
                                       iss=answer.get("iss", [None])[0])

    def params(self, index: int) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.authorization_urls[index]).query)


@dataclass
class Wire:
    """Every HTTP exchange the SDK's httpx2 client made: (method, url, status, request
    headers), the OAuth flow's own requests included."""

    exchanges: list[tuple[str, str, int, dict[str, str]]] = field(default_factory=list)

    async def on_response(self, response: Any) -> None:
        request = response.request
        self.exchanges.append((request.method, str(request.url), response.status_code,
                               {k.lower(): v for k, v in request.headers.items()}))

    def urls(self, prefix: str) -> list[str]:
        return [url for _, url, _, _ in self.exchanges if url.startswith(prefix)]


@asynccontextmanager
async def sdk_session(live: LiveServer, storage: Storage, browser: Browser,
                      wire: Wire) -> AsyncIterator[ClientSession]:
    """The official client, authorizing with ``OAuthClientProvider``, initialized."""
    provider = OAuthClientProvider(
        server_url=live.url,
        client_metadata=OAuthClientMetadata(client_name="mcp sdk interop",
                                            redirect_uris=[REDIRECT_URI]),  # type: ignore[list-item]
        storage=storage, redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler)
    http = create_mcp_http_client(auth=provider)
    http.event_hooks = {"response": [wire.on_response]}
    async with http, streamable_http_client(live.url, http_client=http) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=STEP_SECONDS) as session:
            with anyio.fail_after(STEP_SECONDS * 2):
                await session.initialize()
            yield session


def claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    decoded: dict[str, Any] = orjson.loads(base64.urlsafe_b64decode(payload + "=="))
    return decoded


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> Any:
    with anyio.fail_after(STEP_SECONDS * 2):
        result = await session.call_tool(tool, args)
    assert not result.is_error, result
    return result


# ------------------------------------------------------------------ tests


async def test_sdk_discovers_registers_authorizes_and_calls_a_tool_as_the_oidc_subject(
        oidc: OidcProvider, notes: LiveServer) -> None:
    storage, browser, wire = Storage(), Browser("bob"), Wire()
    async with sdk_session(notes, storage, browser, wire) as session:
        with anyio.fail_after(STEP_SECONDS):
            listing = await session.list_tools()
        assert sorted(tool.name for tool in listing.tools) == ["whoami", "write_note"]
        result = await call(session, "whoami", {})
        note = await call(session, "write_note", {"text": "hi"})

    # The tool saw oidc-provider's subject, through a token for this server's URL.
    who = result.structured_content
    assert who["subject"] == "bob"
    assert who["issuer"] == oidc.issuer
    assert who["audience"] == [notes.url]
    assert who["scopes"] == SCOPES
    assert note.content[0].text == "saved hi for bob"

    # Discovery: the 401's resource_metadata, then oidc-provider's metadata; registration.
    first = wire.exchanges[0]
    assert (first[0], first[1], first[2]) == ("POST", notes.url, 401)
    assert wire.urls(notes.base + "/.well-known/") == [
        notes.base + "/.well-known/oauth-protected-resource/mcp"]
    assert wire.urls(oidc.issuer + "/.well-known/") == [
        oidc.issuer + "/.well-known/oauth-authorization-server"]  # RFC 8414, found first
    assert storage.client_info is not None
    assert storage.client_info.client_id not in ("app", "short-lived", "mcp-server")
    assert wire.urls(oidc.issuer + "/reg") == [oidc.issuer + "/reg"]

    # One authorization: code + PKCE (S256) + the resource indicator, the 401's scopes.
    assert len(browser.authorization_urls) == 1
    params = browser.params(0)
    assert browser.authorization_urls[0].startswith(oidc.issuer + "/auth?")
    assert params["client_id"] == [storage.client_info.client_id]
    assert params["response_type"] == ["code"]
    assert params["code_challenge_method"] == ["S256"]
    assert params["resource"] == [notes.url]
    assert params["scope"][0].split()[:2] == SCOPES
    assert browser.answers[0]["iss"] == [oidc.issuer]  # RFC 9207, checked by the SDK

    # The token is oidc-provider's JWT for this resource, and every MCP request carried it.
    assert storage.tokens is not None
    token = claims(storage.tokens.access_token)
    assert (token["sub"], token["aud"], token["iss"]) == ("bob", notes.url, oidc.issuer)
    assert token["client_id"] == storage.client_info.client_id
    authorized = [headers.get("authorization") for method, url, status, headers
                  in wire.exchanges if url == notes.url and status != 401]
    assert authorized and set(authorized) == {f"Bearer {storage.tokens.access_token}"}


async def test_a_second_connection_reuses_the_stored_token(
        oidc: OidcProvider, notes: LiveServer) -> None:
    storage, browser = Storage(), Browser("carol")
    async with sdk_session(notes, storage, browser, Wire()) as session:
        await call(session, "whoami", {})
    assert len(browser.authorization_urls) == 1
    assert storage.tokens is not None
    stored = storage.tokens.access_token

    wire = Wire()
    async with sdk_session(notes, storage, browser, wire) as session:
        result = await call(session, "whoami", {})
    assert result.structured_content["subject"] == "carol"
    assert len(browser.authorization_urls) == 1  # no new authorization
    assert storage.tokens_stored == 1
    assert [status for _, _, status, _ in wire.exchanges if status in (401, 403)] == []
    assert wire.urls(oidc.issuer) == []  # not even a request to the authorization server
    assert {headers.get("authorization") for _, url, _, headers in wire.exchanges
            if url == notes.url} == {f"Bearer {stored}"}


async def test_insufficient_scope_makes_the_sdk_step_up_and_retry_the_call(
        oidc: OidcProvider, notes: LiveServer, notes_read: LiveServer) -> None:
    # A client already registered at oidc-provider for both scopes (by the SDK, through
    # the other server, whose 401 asks for both) ...
    registered, browser = Storage(), Browser("dave")
    async with sdk_session(notes, registered, browser, Wire()) as session:
        await call(session, "whoami", {})
    assert registered.client_info is not None
    assert registered.client_info.scope == "notes:read notes:write"

    # ... connects to a server whose 401 asks for notes:read alone: no new registration.
    storage, browser, wire = Storage(client_info=registered.client_info), Browser("dave"), Wire()
    async with sdk_session(notes_read, storage, browser, wire) as session:
        who = await call(session, "whoami", {})
        assert who.structured_content["scopes"] == ["notes:read"]
        assert len(browser.authorization_urls) == 1
        assert "notes:write" not in browser.params(0)["scope"][0].split()

        note = await call(session, "write_note", {"text": "more"})  # 403, step-up, retry
        assert note.content[0].text == "saved more for dave"
        who = await call(session, "whoami", {})
    assert wire.urls(oidc.issuer + "/reg") == []

    # The 403 named every scope the call needs; the SDK asked for the union, once, in
    # the same session, and retried the call with the new token.
    refused = [(method, url) for method, url, status, _ in wire.exchanges if status == 403]
    assert refused == [("POST", notes_read.url)]
    assert len(browser.authorization_urls) == 2
    assert {"notes:read", "notes:write"} <= set(browser.params(1)["scope"][0].split())
    assert browser.params(1)["resource"] == [notes_read.url]
    assert who.structured_content["scopes"] == SCOPES
    assert who.structured_content["subject"] == "dave"
    assert storage.tokens_stored == 2
    sessions = {headers.get("mcp-session-id") for method, url, status, headers
                in wire.exchanges if url == notes_read.url and method == "POST"
                and status != 401} - {None}
    assert len(sessions) == 1


async def test_step_up_beyond_the_scope_the_sdk_registered_with_is_refused_by_the_as(
        oidc: OidcProvider, notes_read: LiveServer) -> None:
    """The SDK's limitation, recorded: it registers (RFC 7591) with ``scope`` set to the
    scopes of the first challenge, and never registers again; oidc-provider (like any
    authorization server that holds a client to its registered ``scope``) then refuses
    the step-up's authorization request with ``invalid_scope``. mcpkit's 403 is as the
    spec asks (every scope the call needs); the call fails on the client side."""
    storage, browser, wire = Storage(), Browser("erin"), Wire()
    with pytest.raises(BaseExceptionGroup) as failure:
        async with sdk_session(notes_read, storage, browser, wire) as session:
            await call(session, "whoami", {})
            assert storage.client_info is not None
            assert storage.client_info.scope == "notes:read"
            await call(session, "write_note", {"text": "never"})
    refusals = [exc for exc in leaves(failure.value) if isinstance(exc, AuthorizationRefused)]
    assert len(refusals) == 1, failure.value
    assert refusals[0].error == "invalid_scope", refusals[0].description
    assert {"notes:read", "notes:write"} <= set(browser.params(1)["scope"][0].split())
    assert [status for method, url, status, _ in wire.exchanges
            if url == notes_read.url and status in (401, 403)] == [401, 403]
    assert storage.tokens_stored == 1


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]
