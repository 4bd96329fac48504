"""``ClientCredentialsAuth``: machine-to-machine tokens for MCP servers, no user.

What: an ``httpx.Auth`` for a client acting on its own behalf (OAuth 2.1 client
credentials grant, RFC 6749 §4.4; the MCP ``io.modelcontextprotocol/oauth-client-credentials``
extension). It is :class:`~mcpkit.auth.client.oauth.OAuth` with another way of getting
a token: on a 401 it discovers the authorization server exactly as ``OAuth`` does
(without asking for PKCE or an authorization endpoint, which this grant does not use),
then POSTs ``grant_type=client_credentials`` with ``resource`` and the scopes
(``scopes=``, else the challenge's, else the resource's ``scopes_supported``) to the
token endpoint, authenticated with ``client_secret_basic`` / ``client_secret_post`` /
``client_secret_jwt`` (a secret) or ``private_key_jwt`` (a
:class:`~mcpkit.auth.client.jwt.PrivateKeyJWT`). The shared part (discovery, issuer pin,
cached token, no user) is :class:`~mcpkit.auth.client.grant_auth.GrantAuth`.
Tokens are kept in the :class:`~mcpkit.auth.client.store.TokenStore` under (issuer,
resource); there is no refresh: an expired or refused token is replaced by a new
request. A 403 ``insufficient_scope`` asks for the union of the scopes, as ``OAuth``.

Why: services, CI jobs and agents without a person behind them still need tokens for
protected MCP servers; the discovery rules (resource and issuer checks, per-issuer
keying) are the same as for a user's authorization and are shared, not copied.

Failure modes: :class:`~mcpkit.protocol.errors.AuthorizationFailed` when discovery
fails (see ``discovery``), when ``issuer=`` is given and the server names
another authorization server (the credentials are not sent there), when the
authorization server's ``grant_types_supported`` is present and lacks
``client_credentials``, and when the token endpoint refuses or answers without a usable
Bearer token (the server's ``error`` code is in the message, never a secret).
``ValueError`` at construction for missing or conflicting credentials.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from typing import Any

from .discovery import Discovery
from .dpop import DPoPKey
from .grant_auth import GrantAuth, credentials
from .jwt import PrivateKeyJWT
from .steps import Step
from .store import ClientCredentials, Tokens, TokenStore
from .tokens import client_credentials


class ClientCredentialsAuth(GrantAuth):
    """OAuth 2.1 client credentials for MCP servers, as an ``httpx.Auth``.

    ``client_id`` with ``client_secret`` (``client_secret_basic`` unless the server
    offers only ``client_secret_post``, or ``auth_method=`` says: ``client_secret_jwt``
    for an HMAC assertion) or ``private_key`` (``private_key_jwt``: a
    :class:`PrivateKeyJWT`, or a private key in PEM or as a JWK mapping, signed with
    ``signing_alg`` when given). ``issuer``: the authorization server these credentials
    belong to; when given, a server naming another one is refused before anything is
    sent. ``scopes``, ``store``, ``max_step_ups``, ``allow_private_networks``, ``dpop``: as for
    :class:`OAuth`.
    """

    def __init__(self, client_id: str, client_secret: str | None = None, *,
                 private_key: PrivateKeyJWT | str | bytes | Mapping[str, Any] | None = None,
                 signing_alg: str | None = None, auth_method: str | None = None,
                 issuer: str | None = None, scopes: Iterable[str] | None = None,
                 store: TokenStore | None = None, max_step_ups: int = 2,
                 allow_private_networks: bool = False, dpop: bool | DPoPKey = False
                 ) -> None:
        super().__init__(client=credentials(client_id, client_secret, private_key,
                                            signing_alg, auth_method),
                         issuer=issuer, scopes=scopes, store=store,
                         max_step_ups=max_step_ups,
                         allow_private_networks=allow_private_networks, dpop=dpop)

    def _obtain(self, discovery: Discovery, scopes: tuple[str, ...]
                ) -> Generator[Step, Any, Tokens]:
        assert isinstance(self.client, ClientCredentials)
        return (yield from client_credentials(discovery, self.client, scopes,
                                              self._prover()))
