"""``AccessToken``: who a verified bearer token speaks for and what it allows.

What: the principal a :class:`~mcpkit.auth.server.verifier.TokenVerifier` returns, read from a
JWT's claims or an introspection answer: subject, client id, scopes, expiry, issuer,
audience and every claim as received (read-only).

Why: handlers, scope checks and session binding need the principal, never the token.
The token string itself is not kept here, so no ``repr``, log line or traceback that
shows an ``AccessToken`` can leak it.

Failure modes: none; it is an immutable value. Claim *validation* is
:mod:`mcpkit.auth.server.claims`'s job, before one is built.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any


class AccessToken:
    """A verified token's principal. Immutable; equal when every field is equal.

    ``subject`` (``sub``), ``client_id`` (``client_id``, else ``azp``, else ``appid``),
    ``scopes`` (from ``scope`` or ``scp``), ``expires_at`` (``exp``, seconds since the
    epoch, ``None`` when the token has none), ``issuer`` (``iss``), ``audience`` (``aud``
    as a tuple) and ``claims``: everything the token or the introspection answer carried.
    """

    __slots__ = ("audience", "claims", "client_id", "expires_at", "issuer", "scopes",
                 "subject")

    subject: str | None
    client_id: str | None
    scopes: frozenset[str]
    expires_at: float | None
    issuer: str | None
    audience: tuple[str, ...]
    claims: Mapping[str, Any]

    def __init__(self, *, subject: str | None, client_id: str | None,
                 scopes: Iterable[str], expires_at: float | None, issuer: str | None,
                 audience: Iterable[str], claims: Mapping[str, Any]) -> None:
        for name, value in (("subject", subject), ("client_id", client_id),
                            ("scopes", frozenset(scopes)), ("expires_at", expires_at),
                            ("issuer", issuer), ("audience", tuple(audience)),
                            ("claims", MappingProxyType(dict(claims)))):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"AccessToken is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"AccessToken is immutable; cannot delete {name!r}")

    @property
    def identity(self) -> str:
        """Who the token speaks for, as one string that state is bound to (HTTP sessions,
        MRTR ``requestState``): the issuer and ``sub``; for a token without ``sub`` (a
        client acting for itself) the issuer and the client id. A token with neither
        names nobody: every such token of one issuer has the same identity, so they share
        what is bound to it (issue subjects to keep callers apart)."""
        if self.subject is not None:
            who = f"sub:{self.subject}"
        elif self.client_id is not None:
            who = f"client:{self.client_id}"
        else:
            who = "anonymous"
        return f"{self.issuer or ''} {who}"

    def missing_scopes(self, required: Iterable[str]) -> frozenset[str]:
        """The scopes of ``required`` that were not granted (empty: the token suffices)."""
        return frozenset(required) - self.scopes

    def __repr__(self) -> str:
        scopes = " ".join(sorted(self.scopes))
        return (f"AccessToken(subject={self.subject!r}, client_id={self.client_id!r}, "
                f"scopes={scopes!r}, expires_at={self.expires_at!r}, issuer={self.issuer!r}, "
                f"audience={self.audience!r})")

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if type(other) is not AccessToken:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __hash__(self) -> int:
        return hash((self.subject, self.client_id, self.scopes, self.expires_at,
                     self.issuer, self.audience))
