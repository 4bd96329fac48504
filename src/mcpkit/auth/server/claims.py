"""The claim rules both verifiers apply: issuer, audience, time, scopes.

What: :class:`Audience` says which audience values name this server; :class:`ClaimRules`
checks a claims mapping (a JWT payload or an RFC 7662 introspection answer) against the
configured issuer, audience and clock, and :meth:`ClaimRules.access_token` turns the
checked claims into an :class:`~mcpkit.auth.server.access_token.AccessToken`.

Why one place: a JWT and an introspected opaque token must be judged alike. The audience
rule is where other libraries go wrong: by default a token must name this server's
canonical resource URI in ``aud`` (RFC 8707; MCP: "MUST validate that tokens were issued
specifically for them"). A provider that cannot put it there is configured *explicitly*
with :class:`Audience` (other accepted values, another claim); there is no switch that
turns the check off.

Failure modes: :meth:`ClaimRules.access_token` raises
:class:`~mcpkit.protocol.errors.InvalidToken` whose description names the rule that
failed in general words (never a value copied from the token). The constructors raise
``ValueError`` for a configuration that cannot work (no audience values, a negative
leeway, a resource URI that is not canonical-able).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...protocol.errors import InvalidToken
from ..urls import canonical_resource_uri, issuer_url
from .access_token import AccessToken

CLIENT_ID_CLAIMS = ("client_id", "azp", "appid")
"""Where the client id is, first found wins: RFC 9068 ``client_id``, OIDC's ``azp``
(Auth0, Keycloak), Entra ID v1's ``appid``."""


class Audience:
    """Which audience values mean "this server".

    ``Audience(resource)``: the token's ``aud`` (a string or a list of strings) must
    contain the canonical resource URI, compared exactly.

    For providers that cannot put the resource URI in ``aud`` (some issue the client id,
    or an application id URI such as ``api://my-app``): ``also`` lists further values that
    count as this server, and ``claim`` names another claim to read instead of ``aud``
    (for example ``"appid"``). Every accepted value is one the operator wrote down; a
    token that names none of them is refused.
    """

    __slots__ = ("accepted", "claim", "resource")

    def __init__(self, resource: str, *, also: Iterable[str] = (), claim: str = "aud") -> None:
        self.resource = canonical_resource_uri(resource)
        others = tuple(also)
        if any(not isinstance(value, str) or not value for value in others):
            raise ValueError("Audience(also=...) takes non-empty strings")
        if not claim:
            raise ValueError("Audience(claim=...) must name a claim")
        self.accepted = frozenset((self.resource, *others))
        self.claim = claim

    def __repr__(self) -> str:
        return f"Audience(accepted={sorted(self.accepted)!r}, claim={self.claim!r})"

    def values_in(self, claims: Mapping[str, Any]) -> tuple[str, ...] | None:
        """The audience values the token carries in :attr:`claim` (``None`` when absent).
        Raises ``InvalidToken`` when the claim is neither a string nor a list of them."""
        value = claims.get(self.claim)
        if value is None:
            return None
        if isinstance(value, str):
            return (value,)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise InvalidToken("the token's audience claim is malformed")


class ClaimRules:
    """The checks a token's claims must pass.

    ``issuer``: the exact ``iss`` required (``None``: not checked, introspection only);
    ``audience``: see :class:`Audience`; ``leeway``: seconds of clock difference allowed
    on ``exp``, ``nbf`` and ``iat`` (default 60).
    """

    __slots__ = ("audience", "issuer", "leeway")

    def __init__(self, *, issuer: str | None, audience: Audience, leeway: float = 60.0) -> None:
        if leeway < 0:
            raise ValueError("leeway must be >= 0 seconds")
        self.issuer = None if issuer is None else issuer_url(issuer)
        self.audience = audience
        self.leeway = leeway

    def access_token(self, claims: Mapping[str, Any], *, now: float,
                     complete: bool) -> AccessToken:
        """Check ``claims`` at time ``now`` (seconds since the epoch) and build the
        principal.

        The audience claim is always required: a token that names no audience was not
        issued for this server (a real introspection endpoint answers ``active`` for a
        refresh token, or for a token meant for the userinfo endpoint, without one).
        ``complete=True`` (a JWT): ``iss`` and ``exp`` are required too.
        ``complete=False`` (an introspection answer, whose ``active`` already vouches for
        the token): they are checked only when present.

        A token with a ``cnf`` claim is sender-constrained (DPoP, RFC 9449; mutual TLS,
        RFC 8705): only its holder may use it. It is returned with ``cnf`` in its
        claims; :class:`~mcpkit.auth.server.middleware.BearerAuth` then refuses it unless it
        was presented as its binding requires (a DPoP proof checked), so code that calls
        a verifier itself must look at ``claims["cnf"]`` too.

        Raises ``InvalidToken`` for a missing required claim, another issuer, an
        audience that does not name this server, an expired token, one not yet valid or
        issued in the future, or a malformed claim.
        """
        self._check_issuer(claims, complete)
        audience = self._check_audience(claims)
        expires_at = self._check_times(claims, now, complete)
        subject = _optional_str(claims, "sub")
        client_id = next((c for name in CLIENT_ID_CLAIMS
                          if (c := _optional_str(claims, name)) is not None), None)
        return AccessToken(subject=subject, client_id=client_id, scopes=scopes_of(claims),
                           expires_at=expires_at, issuer=_optional_str(claims, "iss"),
                           audience=audience, claims=claims)

    def _check_issuer(self, claims: Mapping[str, Any], complete: bool) -> None:
        iss = claims.get("iss")
        if iss is None:
            if complete:
                raise InvalidToken("the token names no issuer")
            return
        if self.issuer is not None and iss != self.issuer:
            raise InvalidToken("the token was issued by another issuer")

    def _check_audience(self, claims: Mapping[str, Any]) -> tuple[str, ...]:
        values = self.audience.values_in(claims)
        if values is None:
            raise InvalidToken("the token names no audience")
        if self.audience.accepted.isdisjoint(values):
            raise InvalidToken("the token was issued for another resource")
        return values

    def _check_times(self, claims: Mapping[str, Any], now: float,
                     complete: bool) -> float | None:
        exp, nbf, iat = (_optional_time(claims, name) for name in ("exp", "nbf", "iat"))
        if exp is None and complete:
            raise InvalidToken("the token has no expiry")
        if exp is not None and now >= exp + self.leeway:
            raise InvalidToken("the token has expired")
        if nbf is not None and now + self.leeway < nbf:
            raise InvalidToken("the token is not valid yet")
        if iat is not None and now + self.leeway < iat:
            raise InvalidToken("the token was issued in the future")
        return exp


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The granted scopes: ``scope`` (a space-separated string, RFC 8693 / RFC 9068), else
    ``scp`` (a list of strings, or one space-separated string as Entra ID sends it); empty
    when neither is there. ``InvalidToken`` when the one present is malformed."""
    for name in ("scope", "scp"):
        value = claims.get(name)
        if value is None:
            continue
        if isinstance(value, str):
            return frozenset(value.split())
        if name == "scp" and isinstance(value, list) and all(isinstance(s, str) for s in value):
            return frozenset(value)
        raise InvalidToken("the token's scope claim is malformed")
    return frozenset()


def _optional_str(claims: Mapping[str, Any], name: str) -> str | None:
    value = claims.get(name)
    if value is None or isinstance(value, str):
        return value
    raise InvalidToken(f"the token's {name!r} claim is not a string")


def _optional_time(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidToken(f"the token's {name!r} claim is not a number of seconds")
    return float(value)
