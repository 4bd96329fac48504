"""``JWTVerifier``: signed JWT access tokens checked locally against the issuer's keys.

What: :meth:`JWTVerifier.verify` reads the JWS header, refuses an algorithm outside the
allow-list, finds the key (:class:`~mcpkit.auth.server.jwks.KeySource`), checks the signature
with joserfc and the claims with :class:`~mcpkit.auth.server.claims.ClaimRules` (``iss`` equal
to the issuer, ``exp`` required, ``nbf``/``iat`` with leeway, the audience naming this
server), and returns the :class:`~mcpkit.auth.server.access_token.AccessToken`.

Why these rules: the algorithm comes from the token, so it is only trusted once it is on
a list the server chose -- asymmetric algorithms only, so neither ``alg: none`` nor an
HMAC "signed" with the issuer's *public* key (algorithm confusion) can pass; a key is
used only with the algorithm family it belongs to. Tokens with ``crit`` extensions or an
unencoded payload (RFC 7797) are refused: an access token needs neither, and a
verifier must not accept what it does not understand.

Failure modes: ``InvalidToken`` (HTTP 401) for a token that is too long, not a compact
JWS, signed with an algorithm not allowed, by an unknown key or with a bad signature, or
whose claims fail; ``VerifierUnavailable`` (503) when the keys cannot be fetched. The
token never appears in an error or a log line.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from joserfc import jws
from joserfc.errors import JoseError

from ...protocol.errors import AuthError, InvalidToken
from .access_token import AccessToken
from .cache import TokenCache, token_key, within_expiry
from .claims import Audience, ClaimRules
from .fetch import Fetcher
from .jwks import KeySource
from .verifier import DEFAULT_MAX_TOKEN_LENGTH

DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                      "ES256", "ES384", "ES512", "Ed25519")
"""Asymmetric signature algorithms accepted by default. ``EdDSA`` (RFC 8037) is not
among them: RFC 9864 deprecates it in favour of ``Ed25519``, and joserfc warns on each
use. Pass ``algorithms=(..., "EdDSA")`` for an issuer that still signs with it."""


def asymmetric(algorithms: Iterable[str], why: str) -> tuple[str, ...]:
    """``algorithms`` without repeats, once each is known to joserfc and asymmetric:
    ``none`` and the HMAC (``oct`` key) algorithms would let anyone holding the shared
    secret, or nobody, sign. ``ValueError`` says which one is refused and ``why``."""
    names = tuple(dict.fromkeys(algorithms))
    for alg in names:
        model = jws.JWSRegistry.algorithms.get(alg)
        if model is None:
            raise ValueError(f"unknown JWS algorithm {alg!r}")
        if alg == "none" or model.key_type == "oct":
            raise ValueError(f"algorithm {alg!r} is not allowed: {why} (asymmetric "
                             "algorithms only)")
    if not names:
        raise ValueError("algorithms must name at least one algorithm")
    return names


class JWTVerifier:
    """A :class:`~mcpkit.auth.server.verifier.TokenVerifier` for JWT access tokens.

    ``issuer``: the exact ``iss`` of accepted tokens (also where the keys are discovered
    when ``jwks_uri`` is not given). ``audience``: this server's canonical resource URI,
    or an :class:`~mcpkit.auth.server.claims.Audience` for providers that cannot put it in
    ``aud``. ``algorithms``: the allow-list (asymmetric only; ``ValueError`` otherwise).
    ``leeway``: seconds of clock skew allowed. ``refresh_interval``: the least time
    between key-set fetches caused by unknown key ids; ``max_age``: when the key set is
    fetched again anyway. ``fetcher``: the bounded HTTP fetcher (timeout, size limit);
    one with the defaults is made when not given, and :meth:`aclose` closes it.
    ``jwks``: the issuer's public keys as a JWKS document, for an issuer that publishes
    none or keys pinned by configuration: nothing is fetched, and a token signed by any
    other key is refused (``ValueError`` when it has no usable key or ``jwks_uri`` is
    given too). ``cache_ttl``: seconds a verified token is remembered (by its SHA-256,
    never past its ``exp``; 0: never), so a client sending the same token on every request
    costs one hash and one lookup instead of a signature check; at most ``max_entries``
    are kept, least recently used dropped first. A signing key removed from the issuer's
    set therefore stops being trusted within ``cache_ttl`` of its removal being fetched.
    """

    def __init__(self, *, issuer: str, audience: str | Audience, jwks_uri: str | None = None,
                 algorithms: Iterable[str] = DEFAULT_ALGORITHMS, leeway: float = 60.0,
                 refresh_interval: float = 60.0, max_age: float = 3600.0,
                 max_token_length: int = DEFAULT_MAX_TOKEN_LENGTH,
                 fetcher: Fetcher | None = None, jwks: Mapping[str, Any] | None = None,
                 cache_ttl: float = 300.0, max_entries: int = 10_000) -> None:
        if cache_ttl < 0:
            raise ValueError("cache_ttl must be >= 0 (0: verify every request)")
        self.cache_ttl = cache_ttl
        self.cache: TokenCache[AccessToken] = TokenCache(max_entries)
        self.algorithms = frozenset(asymmetric(algorithms, "tokens must be signed with the "
                                               "issuer's private key"))
        if not isinstance(audience, Audience):
            audience = Audience(audience)
        self.rules = ClaimRules(issuer=issuer, audience=audience, leeway=leeway)
        self.max_token_length = max_token_length
        self._own_fetcher = fetcher is None
        self.fetcher = fetcher if fetcher is not None else Fetcher()
        self.keys = KeySource(self.fetcher, issuer=issuer, jwks_uri=jwks_uri,
                              refresh_interval=refresh_interval, max_age=max_age, jwks=jwks)
        self._registries = {alg: jws.JWSRegistry(algorithms=[alg], strict_check_header=False)
                            for alg in self.algorithms}

    async def aclose(self) -> None:
        """Close the fetcher this verifier made (not one it was given)."""
        if self._own_fetcher:
            await self.fetcher.aclose()

    async def verify(self, token: str) -> AccessToken:
        """The principal of a JWT access token. Raises ``InvalidToken`` or
        ``VerifierUnavailable`` (see the module docstring)."""
        if len(token) > self.max_token_length:
            raise InvalidToken("the token is too long")
        if self.cache_ttl:
            key = token_key(token)
            cached = self.cache.get(key)
            if cached is not None:
                return cached
            access = await self._verify(token)
            self.cache.put(key, access, within_expiry(self.cache_ttl, access.expires_at))
            return access
        return await self._verify(token)

    async def _verify(self, token: str) -> AccessToken:
        """The full check of a token not in the cache."""
        try:
            signed = jws.extract_compact(token.encode("ascii"))
        except (JoseError, ValueError, TypeError):  # UnicodeError is a ValueError
            raise InvalidToken("the token is not a well-formed JWT") from None
        header = signed.headers()
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise InvalidToken("the token's signing algorithm is not accepted")
        if "crit" in header or "b64" in header:
            raise InvalidToken("the token uses JWS extensions this server does not accept")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("the token's key id is malformed")
        key = await self.keys.key_for(kid, alg)
        claims = verified_claims(signed, key, self._registries[alg], "the token", InvalidToken)
        return self.rules.access_token(claims, now=time.time(), complete=True)


def verified_claims(signed: jws.CompactSignature, key: Any, registry: jws.JWSRegistry,
                    what: str, error: type[AuthError]) -> dict[str, Any]:
    """The claims of ``signed`` once its signature checks out with ``key``; raises
    ``error`` ("``what``'s signature is not valid", "... claims are not a JSON object")
    otherwise. Shared by access tokens and DPoP proofs (``dpop``)."""
    try:
        valid = jws.validate_compact(signed, key, registry=registry)
    except (JoseError, ValueError, TypeError):
        valid = False
    if not valid:
        raise error(f"{what}'s signature is not valid")
    try:
        claims = orjson.loads(signed.payload)
    except orjson.JSONDecodeError:
        claims = None
    if not isinstance(claims, dict):
        raise error(f"{what}'s claims are not a JSON object")
    return claims
