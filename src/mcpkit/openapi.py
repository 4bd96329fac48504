"""``mcpkit.openapi``: a server from an OpenAPI 3.0/3.1 document or a FastAPI app.

    from mcpkit.openapi import RouteMap, from_asgi, from_openapi

The same as ``Server.from_openapi(document, client)`` and ``Server.from_fastapi(app)``;
how operations become tools is in :mod:`mcpkit.server.openapi`.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import TYPE_CHECKING, Any

from .server import Server
from .server.openapi import RouteMap, load, operations

if TYPE_CHECKING:
    import httpx

__all__ = ["RouteMap", "from_asgi", "from_openapi", "load", "operations"]


def from_openapi(document: Mapping[str, Any] | str | PathLike[str], client: httpx.AsyncClient,
                 **options: Any) -> Server:
    """``Server.from_openapi``: a server serving the document's operations through
    ``client`` (an ``httpx.AsyncClient`` with the API's base URL and credentials)."""
    return Server.from_openapi(document, client, **options)


def from_asgi(app: Any, **options: Any) -> Server:
    """``Server.from_fastapi``: the same for a FastAPI or Starlette app in this process."""
    return Server.from_fastapi(app, **options)
