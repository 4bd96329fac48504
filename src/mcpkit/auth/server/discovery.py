"""Find an issuer's metadata document (RFC 8414 / OpenID Connect Discovery).

What: :func:`authorization_server_metadata` tries the issuer's well-known URLs in the
order the MCP specification gives (RFC 8414 first, then OIDC; path-inserted before
appended) and returns the first document whose ``issuer`` is exactly the issuer asked
about.

Why: a JWT verifier configured with only an issuer finds its ``jwks_uri`` here; the
``issuer`` equality check (RFC 8414 §3.3) stops a document served at one place from
speaking for another issuer.

Failure modes: ``VerifierUnavailable`` when no URL gave a usable document (each URL is
bounded by the fetcher's timeout and size limit, so the whole search is bounded by three
of them); its message names the last reason.
"""

from __future__ import annotations

from typing import Any

from ...protocol.errors import VerifierUnavailable
from ..urls import authorization_server_metadata_urls
from .fetch import Fetcher


async def authorization_server_metadata(fetcher: Fetcher, issuer: str) -> dict[str, Any]:
    """The metadata document of ``issuer`` (its ``issuer`` member equal to ``issuer``).
    Raises ``VerifierUnavailable`` when none of the well-known URLs has one."""
    reason = "no metadata URL answered"
    for url in authorization_server_metadata_urls(issuer):
        try:
            document = await fetcher.get_json(url, what="authorization server metadata")
        except VerifierUnavailable as exc:
            reason = str(exc)
            continue
        if document.get("issuer") != issuer:
            reason = f"the metadata at {url!r} names another issuer"
            continue
        return document
    raise VerifierUnavailable(f"no metadata found for issuer {issuer!r}: {reason}")
