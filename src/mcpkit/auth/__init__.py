"""mcpkit as an OAuth 2.1 resource server: bearer tokens in, a verified principal out.

The pieces, each in its own module:

- :class:`Auth` (``config``): what ``Server.asgi_app(auth=...)`` takes to serve a
  server as a protected resource (verifier, metadata, required scopes);
- :class:`BearerAuth` (``middleware``): an ASGI middleware that serves the Protected
  Resource Metadata, verifies each request's bearer token and answers 400/401/403/503
  with the ``WWW-Authenticate`` challenge MCP asks for;
- :class:`ProtectedResource` (``metadata``): the RFC 9728 document and its URLs;
- :class:`TokenVerifier` (``verifier``), with :class:`JWTVerifier` (``jwt``, keys from
  ``jwks``) and :class:`IntrospectionVerifier` (``introspection``, RFC 7662);
- :class:`AccessToken` (``access_token``), the principal; :class:`Audience` and
  :class:`ClaimRules` (``claims``), the rules tokens are judged by;
- :class:`DPoPChecker` (``dpop``): DPoP proofs of DPoP-bound tokens (RFC 9449),
  ``Auth(dpop=True)``;
- :func:`parse_authorization` (``bearer``), the challenge builders (``challenge``),
  URL rules (``urls``), the bounded fetcher (``fetch``).

The client side (an MCP client getting tokens from an authorization server):

- :class:`OAuth` (``client_oauth``): an ``httpx.Auth`` running the authorization code
  flow with PKCE, discovery (``client_discovery``), registration and token requests
  (``client_tokens``), the authorization request checks (``client_authorize``), the
  challenge parser (``client_challenge``) and the flow's steps (``client_steps``);
- :class:`ClientCredentialsAuth` (``client_m2m``): the same discovery and stores for
  the client credentials grant (no user), with a secret or a :class:`PrivateKeyJWT`
  (``client_jwt``, also usable by ``OAuth``'s pre-registered clients, with
  ``client_secret_jwt``); :class:`JWTBearerAuth` (``client_wif``, workload identity:
  a platform's JWT for a token) and :class:`EnterpriseAuth` (``client_enterprise``,
  enterprise-managed authorization: an ID token exchanged at the IdP for an ID-JAG),
  both on ``client_grant_auth`` and ``client_grants`` (:func:`token_file` reads a
  rotated token); :func:`revoke_tokens` and :class:`Revocation` (``client_revoke``,
  RFC 7009 on logout); all ask for DPoP-bound tokens with ``dpop=True`` or a
  :class:`DPoPKey` (``client_dpop``);
- :class:`RedirectHandler` and :class:`FollowRedirect` (``client_callback``), the
  user-facing part, and :class:`LoopbackRedirect` (``client_loopback``) for CLIs and
  desktop apps; :class:`TokenStore`, :class:`MemoryTokenStore`,
  :class:`FileTokenStore`, :class:`Tokens`, :class:`ClientCredentials`
  (``client_store``); :class:`HostClass` and :func:`classify_host` (``addresses``): the
  address rule the client's fetches follow (``OAuth(allow_private_networks=...)``).

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
from .access_token import AccessToken
from .addresses import HostClass, classify_host
from .bearer import parse_authorization, parse_credentials
from .challenge import (
    bearer_challenge,
    dpop_challenge,
    insufficient_scope,
    invalid_request,
    unauthorized,
)
from .claims import Audience, ClaimRules
from .client_callback import FollowRedirect, RedirectHandler
from .client_challenge import BearerChallenge, parse_bearer_challenge
from .client_dpop import DPoPKey
from .client_enterprise import EnterpriseAuth
from .client_grant_auth import token_file
from .client_jwt import PrivateKeyJWT
from .client_loopback import LoopbackRedirect
from .client_m2m import ClientCredentialsAuth
from .client_oauth import OAuth
from .client_revoke import Revocation, revoke_tokens
from .client_store import (
    ClientCredentials,
    FileTokenStore,
    MemoryTokenStore,
    Tokens,
    TokenStore,
)
from .client_wif import JWTBearerAuth
from .config import Auth
from .dpop import DPoPChecker
from .fetch import Fetcher
from .introspection import IntrospectionVerifier
from .jwt import DEFAULT_ALGORITHMS, JWTVerifier
from .metadata import ProtectedResource
from .middleware import AUTH_STATE_KEY, BearerAuth
from .urls import canonical_resource_uri, protected_resource_metadata_urls
from .verifier import TokenVerifier

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
