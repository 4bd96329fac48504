"""``IntrospectionVerifier``: opaque tokens judged by the authorization server (RFC 7662).

What: :meth:`IntrospectionVerifier.verify` POSTs the token to the introspection endpoint,
authenticated as this resource server (``client_secret_basic`` or
``client_secret_post``), requires ``"active": true``, applies the same issuer, audience
and time rules as the JWT verifier to whatever of ``iss``, ``aud`` and ``exp``/``nbf``/
``iat`` the answer carries, refuses an answer that says it describes a refresh token, and
returns the :class:`~mcpkit.auth.server.access_token.AccessToken`. The audience is required: an
answer that names none (oidc-provider's for a refresh token, which carries no
``token_type`` either) does not show the token was issued for this server.

Caching: answers are kept by the token's SHA-256 (:mod:`mcpkit.auth.server.cache`), an active
one for ``cache_ttl`` seconds but never past its ``exp``, a refusal for
``inactive_ttl`` seconds (so a client retrying a revoked token does not cost a round trip
each time). Revocation therefore takes effect within ``cache_ttl`` at most.

Failure modes: ``InvalidToken`` (401) for a token that is too long, inactive, a refresh
token, one the endpoint will not introspect (HTTP 400 ``unsupported_token_type``: what
oidc-provider answers for its JWT access tokens), or whose claims fail;
``VerifierUnavailable`` (503) when the endpoint cannot be asked or answers with anything
else but HTTP 200 and a JSON object (a 401 there means this server's client credentials
are wrong). The token is sent only in the POST body to the
configured endpoint, and is never logged or put in an error. The constructor raises
``ValueError`` for an endpoint that is not https (http only on loopback), an unknown
``auth_method`` or a negative cache time.
"""

from __future__ import annotations

import base64
import time
from typing import Any, Literal
from urllib.parse import quote_plus

from ...protocol.errors import InvalidToken, VerifierUnavailable
from .access_token import AccessToken
from .cache import TokenCache, token_key, within_expiry
from .claims import Audience, ClaimRules
from .fetch import ErrorAnswer, Fetcher
from .verifier import DEFAULT_MAX_TOKEN_LENGTH

ClientAuth = Literal["client_secret_basic", "client_secret_post"]


class IntrospectionVerifier:
    """A :class:`~mcpkit.auth.server.verifier.TokenVerifier` for opaque tokens.

    ``endpoint``: the introspection URL (https; http only on loopback).
    ``client_id``/``client_secret``: this server's credentials at the authorization
    server, sent as ``auth_method`` says. ``audience``: this server's canonical resource
    URI or an :class:`~mcpkit.auth.server.claims.Audience`; the answer must name it.
    ``issuer``: when given, an answer's ``iss`` must equal it. ``cache_ttl``,
    ``inactive_ttl``, ``max_entries``: see the module docstring. ``fetcher``: the bounded
    HTTP fetcher; one with the defaults is made when not given, closed by :meth:`aclose`.
    """

    def __init__(self, *, endpoint: str, client_id: str, client_secret: str,
                 audience: str | Audience, issuer: str | None = None,
                 auth_method: ClientAuth = "client_secret_basic", leeway: float = 60.0,
                 cache_ttl: float = 60.0, inactive_ttl: float = 5.0, max_entries: int = 10_000,
                 max_token_length: int = DEFAULT_MAX_TOKEN_LENGTH,
                 fetcher: Fetcher | None = None) -> None:
        if auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError(f"unknown client authentication method {auth_method!r}")
        if cache_ttl < 0 or inactive_ttl < 0:
            raise ValueError("cache_ttl and inactive_ttl must be >= 0")
        if not isinstance(audience, Audience):
            audience = Audience(audience)
        self.rules = ClaimRules(issuer=issuer, audience=audience, leeway=leeway)
        self.endpoint = endpoint
        self.client_id = client_id
        self._client_secret = client_secret
        self.auth_method = auth_method
        self.cache_ttl = cache_ttl
        self.inactive_ttl = inactive_ttl
        self.max_token_length = max_token_length
        self.cache: TokenCache[AccessToken | str] = TokenCache(max_entries)
        self._own_fetcher = fetcher is None
        self.fetcher = fetcher if fetcher is not None else Fetcher()
        try:
            self.fetcher.check_url(endpoint, "introspection endpoint")
        except VerifierUnavailable as exc:
            raise ValueError(str(exc)) from None

    def __repr__(self) -> str:
        return (f"IntrospectionVerifier(endpoint={self.endpoint!r}, "
                f"client_id={self.client_id!r}, auth_method={self.auth_method!r})")

    async def aclose(self) -> None:
        """Close the fetcher this verifier made (not one it was given)."""
        if self._own_fetcher:
            await self.fetcher.aclose()

    async def verify(self, token: str) -> AccessToken:
        """The principal of an opaque token, from the cache or the authorization server.
        Raises ``InvalidToken`` or ``VerifierUnavailable`` (see the module docstring)."""
        if len(token) > self.max_token_length:
            raise InvalidToken("the token is too long")
        key = token_key(token)
        cached = self.cache.get(key)
        if isinstance(cached, str):
            raise InvalidToken(cached)
        if cached is not None:
            return cached
        try:
            answer = await self._introspect(token)
            now = time.time()
            access = self._judge(answer, now)
        except InvalidToken as exc:
            self.cache.put(key, exc.description, self.inactive_ttl)
            raise
        self.cache.put(key, access, within_expiry(self.cache_ttl, access.expires_at, now))
        return access

    async def _introspect(self, token: str) -> dict[str, Any]:
        form = {"token": token, "token_type_hint": "access_token"}
        headers: dict[str, str] = {}
        if self.auth_method == "client_secret_basic":
            pair = f"{quote_plus(self.client_id)}:{quote_plus(self._client_secret)}"
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form.update(client_id=self.client_id, client_secret=self._client_secret)
        try:
            return await self.fetcher.post_form(self.endpoint, form, headers=headers,
                                                what="token introspection")
        except ErrorAnswer as exc:
            if exc.status == 400 and exc.error == "unsupported_token_type":
                raise InvalidToken("the authorization server does not introspect this "
                                   "kind of token") from None
            raise

    def _judge(self, answer: dict[str, Any], now: float) -> AccessToken:
        if answer.get("active") is not True:
            raise InvalidToken("the token is not active")
        token_type = answer.get("token_type")
        if isinstance(token_type, str) and "refresh" in token_type.lower():
            raise InvalidToken("a refresh token is not an access token")
        return self.rules.access_token(answer, now=now, complete=False)
