"""``ProtectedResource``: this server's RFC 9728 Protected Resource Metadata.

What: built from the server's canonical resource URI and its authorization servers, it
gives the metadata document (``resource``, ``authorization_servers``,
``scopes_supported``, ``bearer_methods_supported: ["header"]``, optional
``resource_name`` and ``resource_documentation``), the URL challenges point at
(``metadata_url``, the path-inserted one) and the paths the document is served at (the
path-inserted and the root well-known path).

Why: MCP clients find the authorization server through this document (from the 401's
``resource_metadata``, else the path-inserted, else the root well-known URL), so it is
built once, validated up front, and every answer uses the same URLs.

Failure modes: the constructor raises ``ValueError`` for a resource URI that is not
canonical-able (see :func:`~mcpkit.auth.urls.canonical_resource_uri`), no authorization
server or one that is not an https issuer, a scope name that is not a ``scope-token``,
``offline_access`` among the scopes (MCP 2026-07-28: refresh tokens are not a resource
requirement), or a documentation URL that is not http(s). Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from ...protocol.scopes import check_scopes
from ..urls import canonical_resource_uri, issuer_url, protected_resource_metadata_urls


class ProtectedResource:
    """This server as an OAuth protected resource. Immutable after construction."""

    __slots__ = ("authorization_servers", "metadata_url", "resource",
                 "resource_documentation", "resource_name", "scopes_supported",
                 "well_known_paths")

    def __init__(self, resource: str, authorization_servers: Iterable[str], *,
                 scopes_supported: Iterable[str] = (), resource_name: str | None = None,
                 resource_documentation: str | None = None) -> None:
        self.resource = canonical_resource_uri(resource)
        self.authorization_servers = tuple(issuer_url(a) for a in authorization_servers)
        if not self.authorization_servers:
            raise ValueError("a protected resource needs at least one authorization server")
        self.scopes_supported = check_scopes(scopes_supported)
        if "offline_access" in self.scopes_supported:
            raise ValueError("offline_access is not a resource scope; leave it out of "
                             "scopes_supported (refresh tokens are the client's business)")
        if resource_documentation is not None and urlsplit(
                resource_documentation).scheme not in ("http", "https"):
            raise ValueError(f"resource_documentation {resource_documentation!r} must be "
                             "an http(s) URL")
        self.resource_name = resource_name
        self.resource_documentation = resource_documentation
        urls = protected_resource_metadata_urls(self.resource)
        self.metadata_url = urls[0]
        self.well_known_paths = tuple(urlsplit(url).path for url in urls)

    def __repr__(self) -> str:
        return (f"ProtectedResource({self.resource!r}, "
                f"authorization_servers={list(self.authorization_servers)!r})")

    def document(self) -> dict[str, Any]:
        """The RFC 9728 metadata document (a new dict each call)."""
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if self.scopes_supported:
            doc["scopes_supported"] = list(self.scopes_supported)
        if self.resource_name is not None:
            doc["resource_name"] = self.resource_name
        if self.resource_documentation is not None:
            doc["resource_documentation"] = self.resource_documentation
        return doc
