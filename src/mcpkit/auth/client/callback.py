"""The user-facing part of the authorization code flow, behind one small interface.

What: a :class:`RedirectHandler` knows its ``redirect_uri`` and, given an authorization
URL (already checked to be https, or http on loopback), gets the user through it and
returns the URL the browser was redirected back to (with ``code``, ``state``, ``iss``).
A CLI opens a browser and listens on a loopback port; a web app redirects its user; a
test or a headless client uses :class:`FollowRedirect`, which GETs the authorization
URL and reads the redirect, for authorization servers that answer without a person
(the conformance suite's mock, a test server, a pre-approved consent).

Why: the OAuth flow itself (``oauth``) stays the same for every kind of client;
only this part differs.

Failure modes: :class:`FollowRedirect` raises
:class:`~mcpkit.protocol.errors.AuthorizationFailed` when the authorization endpoint
does not answer with a redirect to the redirect URI within its timeout, and lets
``httpx.HTTPError`` (no connection) through.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urljoin, urlsplit

import httpx

from ...protocol.errors import AuthorizationFailed
from .authorize import check_authorization_url


class RedirectHandler(Protocol):
    """Takes the user through an authorization URL."""

    @property
    def redirect_uri(self) -> str:
        """Where the authorization server sends the user back (registered with it)."""
        ...

    async def authorize(self, url: str) -> str:
        """Open ``url`` for the user; return the URL redirected back to."""
        ...


class FollowRedirect:
    """A :class:`RedirectHandler` without a user: GET the authorization URL, return its
    ``Location`` (which must lead to ``redirect_uri``)."""

    def __init__(self, redirect_uri: str = "http://127.0.0.1:33418/callback", *,
                 timeout: float = 10.0) -> None:
        self._redirect_uri = redirect_uri
        self.timeout = timeout

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, url: str) -> str:
        check_authorization_url(url)
        async with httpx.AsyncClient(follow_redirects=False, timeout=self.timeout) as http:
            response = await http.get(url)
        location: str = urljoin(url, response.headers.get("location", ""))
        expected, got = urlsplit(self._redirect_uri), urlsplit(location)
        if not response.is_redirect or (got.scheme, got.netloc, got.path) != (
                expected.scheme, expected.netloc, expected.path):
            raise AuthorizationFailed(
                f"the authorization endpoint answered HTTP {response.status_code} without "
                "redirecting to the redirect URI")
        return location
