"""``WWW-Authenticate: Bearer ...`` challenges (RFC 6750 §3, RFC 9728 §5.1).

What: :func:`bearer_challenge` writes the header value from its parts; the three helpers
give the answers MCP asks for:

- :func:`unauthorized` (401): ``resource_metadata`` and ``scope`` so a client can find
  the authorization server and what to ask for; ``error="invalid_token"`` and a
  description when a token was presented and refused;
- :func:`insufficient_scope` (403): ``error="insufficient_scope"`` and, in ``scope``,
  every scope the request needs (not one at a time), so the client steps up once;
- :func:`invalid_request` (400): a malformed ``Authorization`` header.

Quoting: every value is a quoted-string. Scope names must be RFC 6750 ``scope-token``s
(printable ASCII without space, ``"`` or ``\\``); an ``error_description`` may only hold
printable ASCII without ``"`` and ``\\``, so any other character is replaced by ``?``
(the header stays parseable whatever the description says); a URL's ``"`` and ``\\`` are
escaped as quoted-pairs.

Failure modes: ``ValueError`` for a scope name that is not a ``scope-token`` or a URL with
control characters or non-ASCII (both are configuration, not input, errors). Never
raises for a description.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..protocol.scopes import check_scopes

_DESCRIPTION_BAD = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")
_URL_OK = re.compile(r"[\x20-\x7e]*")


def _quoted_url(url: str) -> str:
    if not _URL_OK.fullmatch(url):
        raise ValueError(f"{url!r} has characters a challenge cannot carry")
    return '"' + url.replace("\\", "\\\\").replace('"', '\\"') + '"'


def bearer_challenge(*, error: str | None = None, error_description: str | None = None,
                     scopes: Iterable[str] = (), resource_metadata: str | None = None) -> str:
    """``Bearer`` and its parameters, in the order ``error``, ``scope``,
    ``resource_metadata``, ``error_description``; absent or empty ones are left out.
    ``error`` is one of RFC 6750's codes (``invalid_request``, ``invalid_token``,
    ``insufficient_scope``)."""
    params: list[str] = []
    if error is not None:
        if error not in ("invalid_request", "invalid_token", "insufficient_scope"):
            raise ValueError(f"{error!r} is not an RFC 6750 error code")
        params.append(f'error="{error}"')
    scope = " ".join(check_scopes(scopes))
    if scope:
        params.append(f'scope="{scope}"')
    if resource_metadata is not None:
        params.append(f"resource_metadata={_quoted_url(resource_metadata)}")
    if error_description:
        params.append(f'error_description="{_DESCRIPTION_BAD.sub("?", error_description)}"')
    return "Bearer " + ", ".join(params) if params else "Bearer"


def unauthorized(resource_metadata: str, scopes: Iterable[str] = (),
                 description: str | None = None) -> str:
    """The 401 challenge: without ``description`` for a request that sent no token,
    with it (and ``error="invalid_token"``) for one whose token was refused."""
    return bearer_challenge(error=None if description is None else "invalid_token",
                            error_description=description, scopes=scopes,
                            resource_metadata=resource_metadata)


def insufficient_scope(resource_metadata: str, scopes: Iterable[str],
                       description: str | None = None) -> str:
    """The 403 challenge naming every scope that would satisfy the request."""
    return bearer_challenge(error="insufficient_scope", error_description=description,
                            scopes=scopes, resource_metadata=resource_metadata)


def invalid_request(resource_metadata: str, description: str) -> str:
    """The 400 challenge for a malformed ``Authorization`` header."""
    return bearer_challenge(error="invalid_request", error_description=description,
                            resource_metadata=resource_metadata)
