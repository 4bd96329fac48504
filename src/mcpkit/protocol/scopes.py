"""OAuth scope names (RFC 6750 §3 ``scope-token``): the one grammar every layer checks;
and ``B64TOKEN``, RFC 6750 §2.1's grammar of a bearer token, which the resource server's
header parser and the CLI's ``--token`` both check.

What: :func:`check_scopes` validates a list of scope names and keeps their order without
duplicates. The resource server (``mcpkit.auth``: challenges, metadata) and the server
framework (per-tool, per-resource and per-prompt ``scopes=``) both use it; it lives here
so that registering a tool checks its scopes without loading the auth package (and the
HTTP client it brings) on the start-up path of a stdio server.

Failure modes: ``ValueError`` naming the first name that is not a ``scope-token``
(printable ASCII without space, ``"`` or ``\\``), or that is not a string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
"""A bearer token as RFC 6750 §2.1 spells it (``b64token``); use with ``fullmatch``."""

_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


def check_scopes(scopes: Iterable[str]) -> tuple[str, ...]:
    """``scopes`` as a tuple, each checked to be an RFC 6750 ``scope-token``; duplicates
    dropped, order kept. ``ValueError`` names the first bad one (a single string is
    refused too: ``"a b"`` would otherwise read as the scopes ``a``, `` `` and ``b``)."""
    if isinstance(scopes, str):
        raise ValueError(f"scopes must be a list of names, not the string {scopes!r}")
    out: dict[str, None] = {}
    for scope in scopes:
        if not isinstance(scope, str) or not _SCOPE_TOKEN.fullmatch(scope):
            raise ValueError(f"{scope!r} is not a valid OAuth scope name (RFC 6750 scope-token)")
        out[scope] = None
    return tuple(out)
