"""The authorization request and its response: PKCE, ``state``, ``iss``, URL checks.

What: :meth:`AuthorizationAttempt.start` makes a PKCE S256 verifier and challenge and a
random ``state``, records the issuer the request goes to, and builds the authorization
URL (``response_type=code``, ``client_id``, ``redirect_uri``, ``code_challenge``,
``state``, ``resource`` and ``scope`` when there are scopes). :meth:`~AuthorizationAttempt.
code_from` reads the redirect the browser was sent back to and returns the code, after
checking ``state`` and the RFC 9207 ``iss`` parameter. :func:`check_authorization_url`
is the rule for any URL shown to a user or opened in a browser.

Why: PKCE binds the code to this client; ``state`` discards responses this client did
not ask for; ``iss`` (RFC 9207 §2.4, MCP 2026-07-28) detects a mix-up between
authorization servers. An authorization endpoint comes from a server's metadata, so it
is untrusted: only ``https`` (``http`` on loopback) may be opened, never
``javascript:``, ``file:`` or the like.

Failure modes: :class:`~mcpkit.protocol.errors.AuthorizationFailed` for an unsafe
authorization URL, a response whose ``state`` is missing or different, an ``iss`` that
is not exactly the recorded issuer (or is missing when the server said it sends one),
an error response (its ``error`` is named only once ``iss`` checked out), or no code.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from ...protocol.errors import AuthorizationFailed
from ..urls import is_loopback_host


def check_authorization_url(url: str) -> str:
    """``url`` when it may be opened: absolute ``https``, or ``http`` on a loopback
    host, with a host and no user information. ``AuthorizationFailed`` otherwise."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        raise AuthorizationFailed(f"authorization URL {url[:200]!r} is not a URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not host:
        raise AuthorizationFailed(
            f"authorization URL {url[:200]!r} is not an absolute http(s) URL; refused")
    if scheme == "http" and not is_loopback_host(host):
        raise AuthorizationFailed(
            f"authorization URL {url[:200]!r} must use https (http only on loopback)")
    if parts.username is not None or parts.password is not None or any(
            ord(c) < 0x21 or c == "\x7f" for c in url):
        raise AuthorizationFailed(f"authorization URL {url[:200]!r} is malformed; refused")
    return url


def pkce_challenge(verifier: str) -> str:
    """The S256 ``code_challenge`` of ``verifier`` (RFC 7636 §4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class AuthorizationAttempt:
    """One authorization request in flight: what the response is checked against."""

    url: str
    issuer: str
    redirect_uri: str
    state: str
    code_verifier: str
    iss_supported: bool

    def __repr__(self) -> str:
        return f"AuthorizationAttempt(issuer={self.issuer!r})"

    @classmethod
    def start(cls, *, endpoint: str, issuer: str, client_id: str, redirect_uri: str,
              resource: str, scopes: Iterable[str], iss_supported: bool) -> AuthorizationAttempt:
        """A fresh attempt (new verifier and state). ``AuthorizationFailed`` when the
        authorization endpoint is not a URL that may be opened."""
        check_authorization_url(endpoint)
        verifier = secrets.token_urlsafe(48)  # 64 characters of [A-Za-z0-9_-]
        state = secrets.token_urlsafe(24)
        query: dict[str, str] = {
            "response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
            "code_challenge": pkce_challenge(verifier), "code_challenge_method": "S256",
            "state": state, "resource": resource}
        scope = " ".join(scopes)
        if scope:
            query["scope"] = scope
        parts = urlsplit(endpoint)
        joined = "&".join(q for q in (parts.query, urlencode(query)) if q)
        url = check_authorization_url(urlunsplit(parts._replace(query=joined, fragment="")))
        return cls(url, issuer, redirect_uri, state, verifier, iss_supported)

    def code_from(self, redirected_to: str) -> str:
        """The authorization code in the redirect URL ``redirected_to`` (its query
        string), once ``state`` and ``iss`` are checked. ``AuthorizationFailed`` as
        the module docstring says."""
        params = {k: v[0] for k, v in parse_qs(urlsplit(redirected_to).query,
                                               keep_blank_values=True).items()}
        iss = params.get("iss")
        if iss is not None and iss != self.issuer:
            raise AuthorizationFailed(
                "the authorization response names another issuer than the authorization "
                "server asked (RFC 9207 mix-up protection); refused")
        if iss is None and self.iss_supported:
            raise AuthorizationFailed(
                "the authorization server says it sends 'iss' but the response has none; "
                "refused")
        if not secrets.compare_digest(params.get("state", ""), self.state):
            raise AuthorizationFailed(
                "the authorization response's state is missing or not the one sent; "
                "refused")
        if "error" in params:
            detail = params.get("error_description")
            raise AuthorizationFailed(
                f"the authorization server answered {params['error']!r}"
                + (f": {detail[:300]}" if detail else ""))
        code = params.get("code")
        if not code:
            raise AuthorizationFailed("the authorization response has no code")
        return code
