"""``TokenVerifier``: the one interface between a bearer token and its principal.

What: anything with ``async verify(token) -> AccessToken``. mcpkit ships two,
:class:`~mcpkit.auth.server.jwt.JWTVerifier` (signed JWTs checked locally against the issuer's
keys) and :class:`~mcpkit.auth.server.introspection.IntrospectionVerifier` (opaque tokens asked
of the authorization server, RFC 7662); an application may bring its own.

Why: the middleware (and later the server framework) needs only this method, so the kind
of token a deployment uses is a constructor argument, not a code path.

Failure modes an implementation must keep to:

- the token is not acceptable (malformed, bad signature, expired, wrong issuer or
  audience, unknown key, inactive) -> raise
  :class:`~mcpkit.protocol.errors.InvalidToken` with a description safe to show, never
  containing the token (HTTP 401);
- the verifier could not decide (the authorization server or its keys could not be
  consulted) -> raise :class:`~mcpkit.protocol.errors.VerifierUnavailable` (HTTP 503);
- never hang (bound every wait), never log the token, never raise anything else for
  anything a caller can send.
"""

from __future__ import annotations

from typing import Protocol

from .access_token import AccessToken

DEFAULT_MAX_TOKEN_LENGTH = 16384
"""The longest token the shipped verifiers look at (characters); a longer one is refused
as invalid before any parsing or network request. Real access tokens are a few KiB."""


class TokenVerifier(Protocol):
    """Turns a bearer token into its principal, or refuses it (see the module docstring
    for the errors it raises)."""

    async def verify(self, token: str) -> AccessToken:
        """The principal of ``token``. Raises ``InvalidToken`` (401) or
        ``VerifierUnavailable`` (503)."""
        ...
