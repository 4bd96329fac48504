"""URLs of the resource server: canonical resource URIs, issuers, well-known locations.

What: :func:`canonical_resource_uri` validates and normalizes the URI a server is known
by (RFC 8707 / MCP: scheme, host, port and path, no fragment); :func:`issuer_url` does
the same for an authorization server's issuer; :func:`protected_resource_metadata_urls`
gives the path-inserted and root RFC 9728 URLs of a resource, and
:func:`authorization_server_metadata_urls` the RFC 8414 / OIDC discovery URLs of an issuer
in the order the MCP specification gives.

Why: tokens are checked against the canonical URI (audience) and clients find the
metadata at URLs derived from it, so both sides must spell it alike. A resource or an
issuer must be ``https``; plain ``http`` is accepted only for a loopback host (local
development and tests).

Failure modes: every function raises ``ValueError`` naming what is wrong (a relative
URI, a fragment, user info, a non-https scheme off loopback); none does any I/O.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import SplitResult, urlsplit

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
"""RFC 9728 §3: the well-known path of protected resource metadata."""


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (no port; IPv6 with or without brackets) is ``localhost`` or a
    loopback address (127.0.0.0/8, ::1)."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _split(uri: str, what: str) -> SplitResult:
    """The parts of an absolute http(s) URI; ``ValueError`` for anything else."""
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018  # raises ValueError for a port that is not a number
    except ValueError as exc:
        raise ValueError(f"{what} {uri!r} is not a valid URI: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what} {uri!r} must be an absolute https URI with a host")
    if parts.fragment or "#" in uri:
        raise ValueError(f"{what} {uri!r} must not have a fragment")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{what} {uri!r} must not carry user information")
    if scheme == "http" and not is_loopback_host(parts.hostname):
        raise ValueError(f"{what} {uri!r} must use https (http only on a loopback host)")
    return parts


def _normalized(parts: SplitResult, path: str) -> str:
    """scheme://host[:port]path[?query] with the scheme and host in lower case."""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # an IPv6 literal
    port = f":{parts.port}" if parts.port is not None else ""
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme.lower()}://{host.lower()}{port}{path}{query}"


def canonical_resource_uri(uri: str) -> str:
    """The canonical form of a resource server's URI: the scheme and host in lower case,
    a bare ``/`` path dropped (``https://H/`` -> ``https://h``), the rest kept as given.

    Raises ``ValueError`` for a URI that is relative, has no host, has a fragment or user
    information, or uses ``http`` off a loopback host.
    """
    parts = _split(uri, "resource URI")
    return _normalized(parts, "" if parts.path == "/" else parts.path)


def issuer_url(issuer: str) -> str:
    """An authorization server's issuer identifier, checked (RFC 8414 §2: https, no query,
    no fragment) and returned as given: issuers are compared as exact strings, so this
    one is never rewritten. ``ValueError`` when it breaks those rules."""
    parts = _split(issuer, "issuer")
    if parts.query:
        raise ValueError(f"issuer {issuer!r} must not have a query")
    return issuer


def protected_resource_metadata_urls(resource: str) -> tuple[str, ...]:
    """The RFC 9728 metadata URLs of ``resource``, most specific first: the path-inserted
    one (``https://h/mcp`` -> ``https://h/.well-known/oauth-protected-resource/mcp``) and
    the root one (``https://h/.well-known/oauth-protected-resource``); just the root one
    when the resource has no path. ``ValueError`` as :func:`canonical_resource_uri`."""
    parts = urlsplit(canonical_resource_uri(resource))
    root = _normalized(parts._replace(query=""), PRM_WELL_KNOWN)
    if not parts.path and not parts.query:
        return (root,)
    return (_normalized(parts, PRM_WELL_KNOWN + parts.path.rstrip("/")), root)


def authorization_server_metadata_urls(issuer: str) -> tuple[str, ...]:
    """Where an issuer's metadata may be, in the order the MCP specification tries them:
    for ``https://a/t1`` RFC 8414 path-inserted, OIDC path-inserted, OIDC appended; for an
    issuer without a path, RFC 8414 then OIDC at the root. ``ValueError`` as
    :func:`issuer_url`."""
    parts = urlsplit(issuer_url(issuer))
    path = parts.path.rstrip("/")
    base = _normalized(parts, "")
    if not path:
        return (f"{base}/.well-known/oauth-authorization-server",
                f"{base}/.well-known/openid-configuration")
    return (f"{base}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration{path}",
            f"{base}{path}/.well-known/openid-configuration")


def origin_of(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of an absolute URL, the default port made explicit, for
    same-origin checks. ``ValueError`` for a URL without a host or with a bad port."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port
    if port is None:
        port = {"http": 80, "https": 443}.get(scheme)
    if not parts.hostname:
        raise ValueError(f"{url!r} has no host")
    return scheme, parts.hostname.lower(), port
