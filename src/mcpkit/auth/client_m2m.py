"""``ClientCredentialsAuth``: machine-to-machine tokens for MCP servers, no user.

What: an ``httpx.Auth`` for a client acting on its own behalf (OAuth 2.1 client
credentials grant, RFC 6749 §4.4; the MCP ``io.modelcontextprotocol/oauth-client-credentials``
extension). It is :class:`~mcpkit.auth.client_oauth.OAuth` with another way of getting
a token: on a 401 it discovers the authorization server exactly as ``OAuth`` does
(without asking for PKCE or an authorization endpoint, which this grant does not use),
then POSTs ``grant_type=client_credentials`` with ``resource`` and the scopes
(``scopes=``, else the challenge's, else the resource's ``scopes_supported``) to the
token endpoint, authenticated with ``client_secret_basic`` / ``client_secret_post``
(a secret) or ``private_key_jwt`` (a :class:`~mcpkit.auth.client_jwt.PrivateKeyJWT`).
Tokens are kept in the :class:`~mcpkit.auth.client_store.TokenStore` under (issuer,
resource); there is no refresh: an expired or refused token is replaced by a new
request. A 403 ``insufficient_scope`` asks for the union of the scopes, as ``OAuth``.

Why: services, CI jobs and agents without a person behind them still need tokens for
protected MCP servers; the discovery rules (resource and issuer checks, per-issuer
keying) are the same as for a user's authorization and are shared, not copied.

Failure modes: :class:`~mcpkit.protocol.errors.AuthorizationFailed` when discovery
fails (see ``client_discovery``), when ``issuer=`` is given and the server names
another authorization server (the credentials are not sent there), when the
authorization server's ``grant_types_supported`` is present and lacks
``client_credentials``, and when the token endpoint refuses or answers without a usable
Bearer token (the server's ``error`` code is in the message, never a secret).
``ValueError`` at construction for missing or conflicting credentials.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from typing import Any

from ..protocol.errors import AuthorizationFailed
from .client_challenge import BearerChallenge
from .client_discovery import Discovery
from .client_dpop import DPoPKey
from .client_jwt import PrivateKeyJWT
from .client_oauth import OAuth, _another, _Server
from .client_steps import Step
from .client_store import ClientCredentials, Tokens, TokenStore
from .client_tokens import SECRET_METHODS, client_credentials

_METHODS = (*SECRET_METHODS, "private_key_jwt")


class _NoUser:
    """The redirect handler of a flow that never sends a user anywhere."""

    @property
    def redirect_uri(self) -> str:
        raise AuthorizationFailed("the client credentials grant has no redirect URI")

    async def authorize(self, url: str) -> str:
        raise AuthorizationFailed("the client credentials grant has no user to send to "
                                  "an authorization URL")


class ClientCredentialsAuth(OAuth):
    """OAuth 2.1 client credentials for MCP servers, as an ``httpx.Auth``.

    ``client_id`` with ``client_secret`` (``client_secret_basic`` unless the server
    offers only ``client_secret_post``, or ``auth_method=`` says) or ``private_key``
    (``private_key_jwt``: a :class:`PrivateKeyJWT`, or a private key in PEM or as a JWK
    mapping, signed with ``signing_alg`` when given). ``issuer``: the authorization
    server these credentials belong to; when given, a server naming another one is
    refused before anything is sent. ``scopes``, ``store``, ``max_step_ups``, ``dpop``:
    as for :class:`OAuth`.
    """

    _interactive = False

    def __init__(self, client_id: str, client_secret: str | None = None, *,
                 private_key: PrivateKeyJWT | str | bytes | Mapping[str, Any] | None = None,
                 signing_alg: str | None = None, auth_method: str | None = None,
                 issuer: str | None = None, scopes: Iterable[str] | None = None,
                 store: TokenStore | None = None, max_step_ups: int = 2,
                 dpop: bool | DPoPKey = False) -> None:
        if not client_id:
            raise ValueError("client_id is required")
        if (client_secret is None) == (private_key is None):
            raise ValueError("give exactly one of client_secret and private_key")
        if auth_method is not None and auth_method not in _METHODS:
            raise ValueError(f"auth_method must be one of {', '.join(_METHODS)}")
        signer: PrivateKeyJWT | None = None
        if private_key is not None:
            if auth_method not in (None, "private_key_jwt"):
                raise ValueError(f"a private_key authenticates with private_key_jwt, "
                                 f"not {auth_method}")
            signer = (private_key if isinstance(private_key, PrivateKeyJWT)
                      else PrivateKeyJWT(private_key, alg=signing_alg))
        elif auth_method == "private_key_jwt":
            raise ValueError("private_key_jwt needs a private_key")
        super().__init__(_NoUser(), store=store, max_step_ups=max_step_ups,
                         offline_access=False, scopes=scopes, dpop=dpop,
                         client=ClientCredentials(client_id, client_secret, auth_method,
                                                  private_key=signer))
        self.issuer = issuer

    def _renew(self, server: str, known: _Server, challenge: BearerChallenge,
               sent: Tokens | None) -> Generator[Step, Any, Tokens]:
        """A stored token other than the refused one, else a new one (no refresh)."""
        discovery = yield from self._discover(server, known, challenge)
        held = self.store.get_tokens(discovery.issuer, discovery.resource)
        if _another(held, sent):
            assert held is not None
            return held
        wanted = (self.scopes if self.scopes is not None
                  else challenge.scopes or discovery.scopes_supported)
        return (yield from self._authorize(discovery, known, wanted))

    def _authorize(self, discovery: Discovery, known: _Server,
                   wanted: Iterable[str]) -> Generator[Step, Any, Tokens]:
        if self.issuer is not None and discovery.issuer != self.issuer:
            raise AuthorizationFailed(
                f"the server names the authorization server {discovery.issuer!r}, not "
                f"{self.issuer!r} these client credentials belong to; refused")
        assert isinstance(self.client, ClientCredentials)
        scopes = tuple(dict.fromkeys(wanted))
        known.requested = scopes
        tokens = yield from client_credentials(discovery, self.client, scopes,
                                               self._prover())
        self.store.set_tokens(discovery.issuer, discovery.resource, tokens)
        return tokens
