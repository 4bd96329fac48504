"""``EnterpriseAuth``: enterprise-managed authorization for MCP servers (ID-JAG).

What: an ``httpx.Auth`` for the MCP extension
``io.modelcontextprotocol/enterprise-managed-authorization`` (SEP-990, the Identity
Assertion JWT Authorization Grant draft). The user has signed in to this client through
the enterprise identity provider and the client holds their ID token (or SAML
assertion). On a 401 it discovers the MCP server's authorization server as ``OAuth``
does, then

1. makes a token exchange (RFC 8693) at the IdP's token endpoint: the ID token as
   ``subject_token``, asking for an ID-JAG whose ``audience`` is that authorization
   server's issuer and whose ``resource`` is the MCP server, with ``scope``;
   authenticated as this client is registered at the IdP;
2. presents the ID-JAG to the authorization server with the JWT bearer grant (RFC 7523),
   authenticated as this client is registered there (``client_secret_basic`` by
   default, ``client_secret_post``, ``client_secret_jwt``, ``private_key_jwt``);

and keeps the access token in the token store until it expires or is refused; then both
steps are made again (the ID token is read again when a function gives it). The IdP's
token endpoint is ``idp_token_endpoint``, else found in ``idp_issuer``'s metadata
(RFC 8414 / OpenID Connect discovery, once).

Why: in an enterprise the IdP decides which user may use which MCP server from which
client; the user signs in once, and no consent screen is shown per server.

Failure modes: :class:`~mcpkit.protocol.errors.AuthorizationFailed` when discovery (of
the server or the IdP) fails, ``issuer=`` is given and the server names another
authorization server (nothing is sent), the ID token provider fails, the IdP refuses
or answers a token that is not an ID-JAG (``issued_token_type``), or the authorization
server refuses the grant (their ``error`` code and description are in the message,
never a token). ``ValueError`` at construction for missing or conflicting settings.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from typing import Any

from ..urls import canonical_resource_uri, issuer_url
from .discovery import Discovery, authorization_server
from .dpop import DPoPKey
from .grant_auth import GrantAuth, SubjectToken, credentials, subject_token
from .grants import ID_TOKEN, jwt_bearer, request_id_jag
from .jwt import PrivateKeyJWT
from .steps import Step
from .store import ClientCredentials, Tokens, TokenStore


class EnterpriseAuth(GrantAuth):
    """Enterprise-managed authorization, as an ``httpx.Auth`` (see the module docstring).

    ``id_token``: the user's ID token from the IdP, or a function (sync or async)
    returning the current one. ``idp_token_endpoint`` and/or ``idp_issuer``: where the
    IdP's token exchange is. ``idp_client_id`` / ``idp_client_secret``: this client at
    the IdP (no secret: a public client, ``client_id`` in the form).
    ``subject_token_type``: the ID token's type (``...:id_token``; ``...:saml2`` for a
    SAML assertion). ``client_id``, ``client_secret`` / ``private_key``,
    ``signing_alg``, ``auth_method``: this client at the MCP server's authorization
    server (as for :class:`ClientCredentialsAuth`; neither secret nor key: a public
    client). ``issuer``, ``scopes``, ``store``, ``max_step_ups``, ``allow_private_networks``: as
    for :class:`ClientCredentialsAuth`.
    """

    def __init__(self, id_token: SubjectToken, *, idp_client_id: str,
                 client_id: str, idp_token_endpoint: str | None = None,
                 idp_issuer: str | None = None, idp_client_secret: str | None = None,
                 subject_token_type: str = ID_TOKEN, client_secret: str | None = None,
                 private_key: PrivateKeyJWT | str | bytes | Mapping[str, Any] | None = None,
                 signing_alg: str | None = None, auth_method: str | None = None,
                 issuer: str | None = None, scopes: Iterable[str] | None = None,
                 store: TokenStore | None = None, max_step_ups: int = 2,
                 allow_private_networks: bool = False, dpop: bool | DPoPKey = False
                 ) -> None:
        if not callable(id_token) and not (isinstance(id_token, str) and id_token.strip()):
            raise ValueError("id_token must be a token or a function returning one")
        if not idp_token_endpoint and not idp_issuer:
            raise ValueError("give idp_token_endpoint or idp_issuer (where the IdP is)")
        if idp_token_endpoint:
            canonical_resource_uri(idp_token_endpoint)  # https, or http on loopback
        super().__init__(client=credentials(client_id, client_secret, private_key,
                                            signing_alg, auth_method, public=True),
                         issuer=issuer, scopes=scopes, store=store,
                         max_step_ups=max_step_ups,
                         allow_private_networks=allow_private_networks, dpop=dpop)
        self.id_token = id_token
        self.idp_client = credentials(idp_client_id, idp_client_secret, None, None, None,
                                      public=True)
        self.subject_token_type = subject_token_type
        self.idp_issuer = issuer_url(idp_issuer) if idp_issuer else None
        self._idp: Discovery | None = None
        if idp_token_endpoint:
            self._idp = Discovery("", self.idp_issuer or idp_token_endpoint,
                                  {"token_endpoint": idp_token_endpoint})

    def __repr__(self) -> str:  # never show the ID token
        return f"EnterpriseAuth(idp={self.idp_issuer!r}, issuer={self.issuer!r})"

    def _identity_provider(self) -> Generator[Step, Any, Discovery]:
        if self._idp is None:
            assert self.idp_issuer is not None
            metadata = yield from authorization_server(self.idp_issuer, interactive=False)
            self._idp = Discovery("", self.idp_issuer, metadata)
        return self._idp

    def _obtain(self, discovery: Discovery, scopes: tuple[str, ...]
                ) -> Generator[Step, Any, Tokens]:
        idp = yield from self._identity_provider()
        token = yield from subject_token(self.id_token, "the ID token provider")
        grant = yield from request_id_jag(
            idp, self.idp_client, subject_token=token,
            subject_token_type=self.subject_token_type, audience=discovery.issuer,
            resource=discovery.resource, scopes=scopes)
        assert isinstance(self.client, ClientCredentials)
        return (yield from jwt_bearer(discovery, self.client, grant, scopes,
                                      "the ID-JAG from the identity provider",
                                      self._prover()))
