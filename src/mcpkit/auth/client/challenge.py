"""Read a server's ``WWW-Authenticate`` header, client side (RFC 6750 §3, RFC 9728 §5.1).

What: :func:`parse_bearer_challenge` finds the ``Bearer`` challenge among the ones a
header value may hold (``DPoP ..., Bearer error="insufficient_scope", scope="a b"``) and
returns its ``error``, ``scope`` (split into names), ``resource_metadata`` and
``error_description`` as a :class:`BearerChallenge`.

Why: an MCP client learns where the Protected Resource Metadata is and which scopes to
ask for from this header (401), and that it must step up (403 ``insufficient_scope``).

Failure modes: none raised. A header without a ``Bearer`` challenge gives ``None``;
parameters that cannot be parsed are skipped (the rest of the challenge is still read);
quoted-pairs (``\\"``) are unescaped. A value repeated keeps its first occurrence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_PARAM = re.compile(rf'\s*({_TOKEN})\s*=\s*("(?:[^"\\]|\\.)*"|{_TOKEN})\s*(?:,|$)')
_SCHEME = re.compile(rf"\s*({_TOKEN})(?:\s+|\s*,|\s*$)")
_TOKEN68 = re.compile(r"\s*[A-Za-z0-9._~+/-]+=*\s*(?:,|$)")


@dataclass(frozen=True)
class BearerChallenge:
    """The parameters of one ``Bearer`` challenge; absent ones are ``None`` / empty."""

    error: str | None = None
    scopes: tuple[str, ...] = ()
    resource_metadata: str | None = None
    error_description: str | None = None

    @property
    def insufficient_scope(self) -> bool:
        """Whether the server asks for more scopes (403 step-up)."""
        return self.error == "insufficient_scope"


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def parse_bearer_challenge(header: str, scheme: str = "bearer") -> BearerChallenge | None:
    """The ``Bearer`` challenge of a ``WWW-Authenticate`` value, or ``None`` when it has
    none. ``scheme``: another scheme whose challenge has the same parameters (``dpop``,
    RFC 9449 §7.1), lowercase. Never raises."""
    wanted = scheme
    params: dict[str, str] = {}
    current: str | None = None
    seen = False
    pos = 0
    while pos < len(header):
        if header[pos] in ", \t":
            pos += 1
            continue
        if (m := _PARAM.match(header, pos)) is not None:
            if current == wanted:
                params.setdefault(m[1].lower(), _unquote(m[2]))
            pos = m.end()
        elif (m := _SCHEME.match(header, pos)) is not None:
            current = m[1].lower()
            seen = seen or current == wanted
            pos = m.end()
            if current != wanted and (t := _TOKEN68.match(header, pos)) is not None:
                pos = t.end()  # another scheme's token68 credentials: skip them
        else:
            comma = header.find(",", pos)
            pos = len(header) if comma < 0 else comma + 1
    if not seen:
        return None
    scope = params.get("scope")
    return BearerChallenge(
        error=params.get("error"),
        scopes=tuple(dict.fromkeys(scope.split())) if scope else (),
        resource_metadata=params.get("resource_metadata"),
        error_description=params.get("error_description"))
