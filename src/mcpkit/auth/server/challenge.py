"""``WWW-Authenticate: Bearer ...`` challenges (RFC 6750 §3, RFC 9728 §5.1).

What: :func:`bearer_challenge` writes the header value from its parts; the three helpers
give the answers MCP asks for:

- :func:`unauthorized` (401): ``resource_metadata`` and ``scope`` so a client can find
  the authorization server and what to ask for; ``error="invalid_token"`` and a
  description when a token was presented and refused;
- :func:`insufficient_scope` (403): ``error="insufficient_scope"`` and, in ``scope``,
  every scope the request needs (not one at a time), so the client steps up once;
- :func:`invalid_request` (400): a malformed ``Authorization`` header.

:func:`dpop_challenge` writes the ``DPoP`` challenge (RFC 9449 §7.1) a server accepting
DPoP-bound tokens sends beside the ``Bearer`` one, with its ``algs``.

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

from ...protocol.scopes import check_scopes

_DESCRIPTION_BAD = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")
_URL_OK = re.compile(r"[\x20-\x7e]*")


def _quoted_url(url: str) -> str:
    if not _URL_OK.fullmatch(url):
        raise ValueError(f"{url!r} has characters a challenge cannot carry")
    return '"' + url.replace("\\", "\\\\").replace('"', '\\"') + '"'


_BEARER_ERRORS = ("invalid_request", "invalid_token", "insufficient_scope")
_DPOP_ERRORS = (*_BEARER_ERRORS, "invalid_dpop_proof", "use_dpop_nonce")
_ALG = re.compile(r"[A-Za-z0-9_-]+")


def bearer_challenge(*, error: str | None = None, error_description: str | None = None,
                     scopes: Iterable[str] = (), resource_metadata: str | None = None) -> str:
    """``Bearer`` and its parameters, in the order ``error``, ``scope``,
    ``resource_metadata``, ``error_description``; absent or empty ones are left out.
    ``error`` is one of RFC 6750's codes (``invalid_request``, ``invalid_token``,
    ``insufficient_scope``)."""
    if error is not None and error not in _BEARER_ERRORS:
        raise ValueError(f"{error!r} is not an RFC 6750 error code")
    return _challenge("Bearer", error, error_description, scopes, resource_metadata)


def dpop_challenge(algs: Iterable[str], *, error: str | None = None,
                   error_description: str | None = None, scopes: Iterable[str] = (),
                   resource_metadata: str | None = None) -> str:
    """``DPoP`` and its parameters (RFC 9449 §7.1): as :func:`bearer_challenge`, then
    ``algs`` (the proof algorithms accepted). ``error`` may also be
    ``invalid_dpop_proof`` or ``use_dpop_nonce``."""
    if error is not None and error not in _DPOP_ERRORS:
        raise ValueError(f"{error!r} is not a DPoP error code")
    names = list(algs)
    if not names or not all(_ALG.fullmatch(a) for a in names):
        raise ValueError("algs must be one or more algorithm names")
    challenge = _challenge("DPoP", error, error_description, scopes, resource_metadata)
    return f'{challenge}{"," if " " in challenge else ""} algs="{" ".join(names)}"'


def _challenge(scheme: str, error: str | None, error_description: str | None,
               scopes: Iterable[str], resource_metadata: str | None) -> str:
    params: list[str] = []
    if error is not None:
        params.append(f'error="{error}"')
    scope = " ".join(check_scopes(scopes))
    if scope:
        params.append(f'scope="{scope}"')
    if resource_metadata is not None:
        params.append(f"resource_metadata={_quoted_url(resource_metadata)}")
    if error_description:
        params.append(f'error_description="{_DESCRIPTION_BAD.sub("?", error_description)}"')
    return f"{scheme} " + ", ".join(params) if params else scheme


def unauthorized(resource_metadata: str, scopes: Iterable[str] = (),
                 description: str | None = None) -> str:
    """The 401 challenge: without ``description`` for a request that sent no token,
    with it (and ``error="invalid_token"``) for one whose token was refused."""
    return bearer_challenge(error=None if description is None else "invalid_token",
                            error_description=description, scopes=scopes,
                            resource_metadata=resource_metadata)


def insufficient_scope(resource_metadata: str, scopes: Iterable[str],
                       description: str | None = None, *,
                       dpop_algs: Iterable[str] | None = None) -> str:
    """The 403 challenge naming every scope that would satisfy the request; in the
    ``DPoP`` scheme (with its ``algs``) when ``dpop_algs`` is given, for a request that
    presented its token with DPoP (RFC 9449 §7.1)."""
    if dpop_algs is not None:
        return dpop_challenge(dpop_algs, error="insufficient_scope",
                              error_description=description, scopes=scopes,
                              resource_metadata=resource_metadata)
    return bearer_challenge(error="insufficient_scope", error_description=description,
                            scopes=scopes, resource_metadata=resource_metadata)


def invalid_request(resource_metadata: str, description: str) -> str:
    """The 400 challenge for a malformed ``Authorization`` header."""
    return bearer_challenge(error="invalid_request", error_description=description,
                            resource_metadata=resource_metadata)
