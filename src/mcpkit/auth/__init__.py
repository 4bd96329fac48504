"""OAuth 2.1 for MCP, both sides: a server as a protected resource (bearer tokens in, a
verified principal out) and a client getting tokens from an authorization server.

Everything public is imported from here (``from mcpkit.auth import OAuth, Auth``); the
modules sit in two sub-packages that never import each other, beside the two modules both
use:

- ``mcpkit.auth.server``: the resource server;
- ``mcpkit.auth.client``: the OAuth client;
- ``urls`` (canonical resource URIs, issuer checks, the well-known metadata URLs, origins,
  loopback hosts) and ``addresses`` (:class:`HostClass`, :func:`classify_host`: the
  address rule of the client's fetches, ``OAuth(allow_private_networks=...)``, and of
  the server's key fetches), shared by both sides.

The resource server (``server/``):

- :class:`Auth` (``server.config``): what ``Server.asgi_app(auth=...)`` takes to serve a
  server as a protected resource (verifier, metadata, required scopes);
- :class:`BearerAuth` (``server.middleware``): an ASGI middleware that serves the
  Protected Resource Metadata, verifies each request's bearer token and answers
  400/401/403/503 with the ``WWW-Authenticate`` challenge MCP asks for;
- :class:`ProtectedResource` (``server.metadata``): the RFC 9728 document and its URLs;
- :class:`TokenVerifier` (``server.verifier``), with :class:`JWTVerifier` (``server.jwt``,
  keys from ``server.jwks``) and :class:`IntrospectionVerifier` (``server.introspection``,
  RFC 7662);
- :class:`AccessToken` (``server.access_token``), the principal; :class:`Audience` and
  :class:`ClaimRules` (``server.claims``), the rules tokens are judged by;
- :class:`DPoPChecker` (``server.dpop``): DPoP proofs of DPoP-bound tokens (RFC 9449),
  ``Auth(dpop=True)``;
- :func:`parse_authorization` (``server.bearer``), the challenge builders
  (``server.challenge``), the bounded fetcher (``server.fetch``).

The client side (``client/``):

- :class:`OAuth` (``client.oauth``): an ``httpx.Auth`` running the authorization code
  flow with PKCE, discovery (``client.discovery``), registration and token requests
  (``client.tokens``), the authorization request checks (``client.authorize``), the
  challenge parser (``client.challenge``) and the flow's steps (``client.steps``);
- :class:`ClientCredentialsAuth` (``client.m2m``): the same discovery and stores for
  the client credentials grant (no user), with a secret or a :class:`PrivateKeyJWT`
  (``client.jwt``, also usable by ``OAuth``'s pre-registered clients, with
  ``client_secret_jwt``); :class:`JWTBearerAuth` (``client.wif``, workload identity:
  a platform's JWT for a token) and :class:`EnterpriseAuth` (``client.enterprise``,
  enterprise-managed authorization: an ID token exchanged at the IdP for an ID-JAG),
  both on ``client.grant_auth`` and ``client.grants`` (:func:`token_file` reads a
  rotated token); :func:`revoke_tokens` and :class:`Revocation` (``client.revoke``,
  RFC 7009 on logout); all ask for DPoP-bound tokens with ``dpop=True`` or a
  :class:`DPoPKey` (``client.dpop``);
- :class:`RedirectHandler` and :class:`FollowRedirect` (``client.callback``), the
  user-facing part, and :class:`LoopbackRedirect` (``client.loopback``) for CLIs and
  desktop apps; :class:`TokenStore`, :class:`MemoryTokenStore`,
  :class:`FileTokenStore`, :class:`Tokens`, :class:`ClientCredentials`
  (``client.store``).

The exceptions (:class:`InvalidToken`, :class:`MalformedAuthorization`,
:class:`InvalidDPoPProof`, :class:`UseDPoPNonce`,
:class:`VerifierUnavailable`, their base :class:`AuthError`) live with every other in
``mcpkit.protocol.errors`` and are re-exported here. See docs/auth.md.
"""

from ..protocol.errors import (
    AuthError,
    AuthorizationFailed,
    InvalidDPoPProof,
    InvalidToken,
    MalformedAuthorization,
    UseDPoPNonce,
    VerifierUnavailable,
)
from .addresses import HostClass, classify_host
from .client.callback import FollowRedirect, RedirectHandler
from .client.challenge import BearerChallenge, parse_bearer_challenge
from .client.dpop import DPoPKey
from .client.enterprise import EnterpriseAuth
from .client.grant_auth import token_file
from .client.jwt import PrivateKeyJWT
from .client.loopback import LoopbackRedirect
from .client.m2m import ClientCredentialsAuth
from .client.oauth import OAuth
from .client.revoke import Revocation, revoke_tokens
from .client.store import (
    ClientCredentials,
    FileTokenStore,
    MemoryTokenStore,
    Tokens,
    TokenStore,
)
from .client.wif import JWTBearerAuth
from .server.access_token import AccessToken
from .server.bearer import parse_authorization, parse_credentials
from .server.challenge import (
    bearer_challenge,
    dpop_challenge,
    insufficient_scope,
    invalid_request,
    unauthorized,
)
from .server.claims import Audience, ClaimRules
from .server.config import Auth
from .server.dpop import DPoPChecker
from .server.fetch import Fetcher
from .server.introspection import IntrospectionVerifier
from .server.jwt import DEFAULT_ALGORITHMS, JWTVerifier
from .server.metadata import ProtectedResource
from .server.middleware import AUTH_STATE_KEY, BearerAuth
from .server.verifier import TokenVerifier
from .urls import canonical_resource_uri, protected_resource_metadata_urls

__all__ = [
    "AUTH_STATE_KEY",
    "DEFAULT_ALGORITHMS",
    "AccessToken",
    "Audience",
    "Auth",
    "AuthError",
    "AuthorizationFailed",
    "BearerChallenge",
    "BearerAuth",
    "ClaimRules",
    "ClientCredentials",
    "ClientCredentialsAuth",
    "DPoPChecker",
    "DPoPKey",
    "EnterpriseAuth",
    "FileTokenStore",
    "Fetcher",
    "FollowRedirect",
    "HostClass",
    "IntrospectionVerifier",
    "InvalidDPoPProof",
    "InvalidToken",
    "JWTBearerAuth",
    "JWTVerifier",
    "LoopbackRedirect",
    "MalformedAuthorization",
    "MemoryTokenStore",
    "OAuth",
    "PrivateKeyJWT",
    "ProtectedResource",
    "RedirectHandler",
    "Revocation",
    "TokenStore",
    "TokenVerifier",
    "Tokens",
    "UseDPoPNonce",
    "VerifierUnavailable",
    "bearer_challenge",
    "canonical_resource_uri",
    "classify_host",
    "dpop_challenge",
    "insufficient_scope",
    "invalid_request",
    "parse_bearer_challenge",
    "parse_authorization",
    "parse_credentials",
    "protected_resource_metadata_urls",
    "revoke_tokens",
    "token_file",
    "unauthorized",
]
