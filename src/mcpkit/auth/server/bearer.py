"""``parse_authorization``: the bearer token of an ``Authorization`` header (RFC 6750 §2.1).

What: ``Authorization: Bearer <b64token>`` -> the token. The scheme is matched without
regard to case (RFC 9110 §11.1), one or more spaces may follow it, and the token must be
one ``b64token`` (letters, digits, ``-._~+/``, then optional ``=`` padding).

Why only the header: RFC 6750 also allows a form field and a query parameter; MCP
forbids the query string (tokens there end up in logs and browser history) and a form
body is not how MCP requests are sent, so this module reads nothing else, and the
middleware refuses a query-string token outright.

Failure modes: a missing header, or credentials of another scheme (``Basic ...``),
give ``None``: RFC 6750 §3.1 answers a request that carries no bearer credentials with a
plain 401 challenge, no error code. A header that says ``Bearer`` but is not one
well-formed token (no token, two tokens, characters outside ``b64token``, an empty
value) raises :class:`~mcpkit.protocol.errors.MalformedAuthorization` (HTTP 400
``invalid_request``), whose description never contains the header's value.
"""

from __future__ import annotations

import re

from ...protocol.errors import MalformedAuthorization
from ...protocol.scopes import B64TOKEN

_SCHEME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # an RFC 9110 token


def parse_authorization(value: str | None) -> str | None:
    """The bearer token in an ``Authorization`` header value; ``None`` when there is no
    header or it carries another scheme's credentials. Raises ``MalformedAuthorization``
    for a malformed bearer header (see the module docstring)."""
    found = parse_credentials(value)
    return None if found is None else found[1]


def parse_credentials(value: str | None, schemes: tuple[str, ...] = ("bearer",),
                      ) -> tuple[str, str] | None:
    """(scheme, token) of an ``Authorization`` header value whose scheme is one of
    ``schemes`` (lowercase; ``dpop``: RFC 9449 §7.1, the same token grammar); ``None``
    when there is no header or it carries another scheme. Raises
    ``MalformedAuthorization`` as :func:`parse_authorization` does."""
    if value is None:
        return None
    if value.startswith("Bearer ") and "bearer" in schemes and B64TOKEN.fullmatch(value, 7):
        return "bearer", value[7:]  # the usual spelling, at once (every request)
    scheme, _, rest = value.strip(" \t").partition(" ")
    if not _SCHEME.fullmatch(scheme):
        raise MalformedAuthorization("the Authorization header is not 'Bearer <token>'")
    scheme = scheme.lower()
    if scheme not in schemes:
        return None
    token = rest.lstrip(" ")
    if not token:
        raise MalformedAuthorization(f"the Authorization header has no {scheme} token")
    if B64TOKEN.fullmatch(token):
        return scheme, token
    if any(c in token for c in " \t,"):
        raise MalformedAuthorization("the Authorization header must carry exactly one token")
    raise MalformedAuthorization(
        f"the {scheme} token has characters RFC 6750 does not allow (b64token)")
