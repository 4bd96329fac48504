"""Client-side discovery: from an MCP server's 401 to an authorization server's metadata.

What: :func:`discover` (a sub-flow, see ``steps``) fetches the Protected Resource
Metadata in the MCP specification's order (the challenge's ``resource_metadata``, then
the path-inserted, then the root well-known URL), checks that its ``resource`` names
this server, picks the first of its ``authorization_servers`` and fetches that issuer's
metadata in the specification's order (RFC 8414 then OIDC, path-inserted first, see
:func:`~mcpkit.auth.urls.authorization_server_metadata_urls`), keeping only a document
whose ``issuer`` is exactly that issuer. The result, :class:`Discovery`, says which
``resource`` to send and what the authorization server supports.

When the server publishes no PRM at all (no ``resource_metadata`` in the challenge
and every well-known URL answered 404), discovery falls back to the 2025-03-26 rules,
which predate PRM: the MCP server's origin is the authorization server, its RFC 8414
metadata is read from the origin's root well-known URL, and when that is 404 too the
default endpoints ``/authorize``, ``/token`` and ``/register`` on the origin are used
(PKCE S256 assumed: that revision required it of every server). ``resource`` is then
the server's canonical URI. Requests to the MCP server's side (PRM, and the 2025-03-26
metadata on its origin) carry ``MCP-Protocol-Version`` when the caller knows the
revision of the request that was refused (2025-03-26 and later: clients SHOULD send it
during discovery, so a server can answer for that revision).

Why: the client must find the authorization server from the resource itself, refuse
metadata that speaks for another resource or issuer (mix-up and phishing defences), and
refuse to proceed without PKCE S256. The 2025-03-26 fallback keeps servers of that
revision (which mcpkit still speaks) usable; it never leaves the server's own origin.

Failure modes: :class:`~mcpkit.protocol.errors.AuthorizationFailed` when no PRM document
could be fetched and the 2025-03-26 fallback does not apply or fails (the message lists
each URL's problem), its ``resource`` names another
resource, it lists no usable authorization server, no metadata document of that issuer
was found, or the metadata lacks ``code_challenge_methods_supported`` with ``S256`` or an
https (loopback http) authorization or token endpoint (for the client credentials
grant, ``interactive=False``: only the token endpoint is required).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ...protocol.errors import AuthorizationFailed
from ..urls import (
    authorization_server_metadata_urls,
    canonical_resource_uri,
    issuer_url,
    protected_resource_metadata_urls,
)
from .steps import Fetched, Step, exchange_json


@dataclass(frozen=True)
class Discovery:
    """What discovery found for one MCP server."""

    resource: str  # the ``resource`` parameter to send (RFC 8707)
    issuer: str
    metadata: dict[str, Any] = field(repr=False)  # the authorization server's
    scopes_supported: tuple[str, ...] = ()  # the resource's (PRM)

    def endpoint(self, name: str) -> str | None:
        value = self.metadata.get(name)
        return value if isinstance(value, str) and value else None

    @property
    def iss_supported(self) -> bool:
        return self.metadata.get("authorization_response_iss_parameter_supported") is True


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str) and v)


def resource_for(server: str, declared: Any) -> str:
    """The resource to ask tokens for: ``declared`` (the PRM's ``resource``) when it is
    this server's canonical URI or a parent of it on the same origin, else
    ``AuthorizationFailed``. ``server`` is already canonical."""
    if not isinstance(declared, str):
        raise AuthorizationFailed("the protected resource metadata has no 'resource'")
    try:
        claimed = canonical_resource_uri(declared)
    except ValueError:
        raise AuthorizationFailed(
            f"the protected resource metadata names an invalid resource {declared[:200]!r}"
        ) from None
    ours, theirs = urlsplit(server), urlsplit(claimed)
    base = theirs.path.rstrip("/")
    if (ours.scheme, ours.netloc) == (theirs.scheme, theirs.netloc) and not theirs.query and (
            ours.path == theirs.path or ours.path.startswith(base + "/")):
        return claimed
    raise AuthorizationFailed(
        f"the protected resource metadata is for {claimed!r}, not for {server!r}; refused")


def discover(server: str, resource_metadata: str | None, version: str | None = None, *,
             interactive: bool = True) -> Generator[Step, Any, Discovery]:
    """Discovery for the MCP server at canonical URI ``server`` (see the module
    docstring); ``resource_metadata``: the URL from the 401 challenge, if any;
    ``version``: the MCP revision to name in ``MCP-Protocol-Version``;
    ``interactive``: False for the client credentials grant, which needs neither PKCE
    nor an authorization endpoint (only the token endpoint is checked)."""
    headers = {"mcp-protocol-version": version} if version else None
    urls = list(protected_resource_metadata_urls(server))
    if resource_metadata:
        urls.insert(0, resource_metadata)
    problems: list[str] = []
    prm: dict[str, Any] | None = None
    statuses: set[int | None] = set()
    for url in dict.fromkeys(urls):
        fetched: Fetched = yield from exchange_json("GET", url, headers=headers)
        status = fetched.status
        if fetched.document is not None and status == 200:
            prm = fetched.document
            break
        statuses.add(status)
        problems.append(fetched.problem or f"{url} answered HTTP {status}")
    if prm is None and not resource_metadata and statuses == {404}:
        return (yield from legacy_discovery(server, headers, interactive=interactive))
    if prm is None:
        raise AuthorizationFailed("no protected resource metadata found for "
                                  f"{server!r}: {'; '.join(problems)}")
    resource = resource_for(server, prm.get("resource"))
    servers = _strings(prm.get("authorization_servers"))
    if not servers:
        raise AuthorizationFailed(
            f"the protected resource metadata of {server!r} lists no authorization server")
    try:
        issuer = issuer_url(servers[0])
    except ValueError as exc:
        raise AuthorizationFailed(str(exc)) from None
    metadata = yield from authorization_server(issuer, interactive=interactive)
    return Discovery(resource, issuer, metadata, _strings(prm.get("scopes_supported")))


def legacy_discovery(server: str, headers: dict[str, str] | None = None, *,
                     interactive: bool = True) -> Generator[Step, Any, Discovery]:
    """The 2025-03-26 discovery for a server without PRM (see the module docstring)."""
    parts = urlsplit(server)
    issuer = f"{parts.scheme}://{parts.netloc}"  # ``server`` is canonical already
    url = f"{issuer}/.well-known/oauth-authorization-server"
    fetched: Fetched = yield from exchange_json("GET", url, headers=headers)
    metadata = fetched.document
    if fetched.status == 404:
        metadata = {
            "issuer": issuer, "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token", "registration_endpoint": f"{issuer}/register",
            "code_challenge_methods_supported": ["S256"]}
    elif metadata is None or fetched.status != 200 or metadata.get("issuer") != issuer:
        why = fetched.problem or (f"{url} answered HTTP {fetched.status}" if metadata is None
                                  or fetched.status != 200 else f"{url} names another issuer")
        raise AuthorizationFailed(f"no protected resource metadata found for {server!r}, "
                                  f"and the 2025-03-26 fallback failed: {why}")
    return Discovery(server, issuer, checked_metadata(issuer, metadata, interactive))


def authorization_server(issuer: str, *, interactive: bool = True
                         ) -> Generator[Step, Any, dict[str, Any]]:
    """The checked metadata of ``issuer`` (see the module docstring)."""
    problems: list[str] = []
    for url in authorization_server_metadata_urls(issuer):
        fetched: Fetched = yield from exchange_json("GET", url)
        status = fetched.status
        if fetched.document is None or status != 200:
            problems.append(fetched.problem or f"{url} answered HTTP {status}")
            continue
        if fetched.document.get("issuer") != issuer:
            problems.append(f"{url} names another issuer; discarded")
            continue
        return checked_metadata(issuer, fetched.document, interactive)
    raise AuthorizationFailed(f"no authorization server metadata found for {issuer!r}: "
                              + "; ".join(problems))


def checked_metadata(issuer: str, metadata: dict[str, Any], interactive: bool = True
                     ) -> dict[str, Any]:
    """``metadata`` when it offers PKCE S256 and usable endpoints (only a usable token
    endpoint when not ``interactive``), else ``AuthorizationFailed``."""
    if interactive and "S256" not in _strings(
            metadata.get("code_challenge_methods_supported")):
        raise AuthorizationFailed(
            f"the authorization server {issuer!r} does not advertise PKCE S256 "
            "(code_challenge_methods_supported); refusing to proceed")
    for name in ("authorization_endpoint", "token_endpoint")[0 if interactive else 1:]:
        value = metadata.get(name)
        try:
            canonical_resource_uri(value if isinstance(value, str) else "")
        except ValueError:
            raise AuthorizationFailed(f"the authorization server {issuer!r} has no usable "
                                      f"{name} (https, or http on loopback)") from None
    return metadata
