"""End to end: ``ClientCredentialsAuth`` against oidc-provider and a protected mcpkit server.

oidc-provider (tests/auth/oidc/server.mjs, the ``oidc`` session fixture) knows the
clients ``app`` (client_secret_basic), ``short-lived`` (tokens live 2 s) and ``machine``
(private_key_jwt, the public half of the ``oidc_machine_key`` fixture). An mcpkit server
on loopback, protected by ``JWTVerifier`` for oidc-provider, is its own resource. The
mcpkit ``Client`` connects with nothing but the client's credentials: from the 401
through discovery to a client credentials token, and the tool sees the client as the
token's subject.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from joserfc import jwk

from mcpkit.auth import (
    Auth,
    AuthorizationFailed,
    ClientCredentialsAuth,
    JWTVerifier,
    MemoryTokenStore,
    ProtectedResource,
)
from mcpkit.client import Client, Http
from tests.support.http import LiveServer
from tests.support.oidc import SECRET, OidcProvider

from .notes_server import notes_server, served_at_own_url

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

SCOPES = ["notes:read", "notes:write"]
WHOAMI = ("subject", "client_id", "scopes", "audience")


@pytest.fixture(scope="module")
def notes(oidc: OidcProvider) -> Iterator[LiveServer]:
    with served_at_own_url(lambda url: notes_server(WHOAMI).asgi_app(auth=Auth(
            JWTVerifier(issuer=oidc.issuer, audience=url, leeway=0),  # see the last test
            resource=ProtectedResource(url, [oidc.issuer], scopes_supported=SCOPES),
            required_scopes=["notes:read"]))) as live:
        yield live


async def whoami(live: LiveServer, auth: ClientCredentialsAuth) -> dict[str, Any]:
    with anyio.fail_after(30):
        async with Client(Http(live.url, auth=auth)) as client:
            result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_a_client_secret_gets_a_token_from_the_401_alone(
        oidc: OidcProvider, notes: LiveServer) -> None:
    auth = ClientCredentialsAuth("app", SECRET, issuer=oidc.issuer)
    seen = await whoami(notes, auth)
    assert seen == {"subject": "app", "client_id": "app", "scopes": ["notes:read"],
                    "audience": [notes.url]}
    held = auth.store.get_tokens(oidc.issuer, notes.url)
    assert held is not None and held.refresh_token is None


async def test_private_key_jwt_at_oidc_provider(oidc: OidcProvider, notes: LiveServer,
                                                oidc_machine_key: jwk.ECKey) -> None:
    auth = ClientCredentialsAuth("machine", private_key=oidc_machine_key.as_pem(private=True),
                                 scopes=SCOPES)
    seen = await whoami(notes, auth)
    assert (seen["subject"], seen["client_id"], seen["scopes"]) == ("machine", "machine",
                                                                    SCOPES)
    # a second client with a fresh store: a second assertion (another jti) is accepted
    again = ClientCredentialsAuth("machine", private_key=oidc_machine_key.as_dict(private=True))
    assert (await whoami(notes, again))["client_id"] == "machine"


async def test_a_key_oidc_provider_does_not_know_is_refused(
        oidc: OidcProvider, notes: LiveServer) -> None:
    stranger = jwk.ECKey.generate_key("P-256", private=True)
    auth = ClientCredentialsAuth("machine", private_key=stranger.as_pem(private=True))
    with pytest.raises(AuthorizationFailed, match="invalid_client"):
        await whoami(notes, auth)


async def test_a_wrong_secret_is_refused_without_showing_it(
        oidc: OidcProvider, notes: LiveServer) -> None:
    auth = ClientCredentialsAuth("app", "not-the-secret")
    with pytest.raises(AuthorizationFailed, match="invalid_client") as info:
        await whoami(notes, auth)
    assert "not-the-secret" not in str(info.value)


async def test_an_expired_token_is_replaced(oidc: OidcProvider, notes: LiveServer) -> None:
    store = MemoryTokenStore()
    auth = ClientCredentialsAuth("short-lived", SECRET, store=store)
    await whoami(notes, auth)
    first = store.get_tokens(oidc.issuer, notes.url)
    assert first is not None and first.expires_at is not None
    # its tokens live 2 s (the server has no leeway): bounded, at most ~3 s
    await anyio.sleep(max(0.0, first.expires_at - time.time()) + 1.1)
    await whoami(notes, auth)
    second = store.get_tokens(oidc.issuer, notes.url)
    assert second is not None and second.access_token != first.access_token
