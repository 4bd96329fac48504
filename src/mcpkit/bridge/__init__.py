"""Proxy and bridge: serve a remote MCP server through mcpkit (docs/proxy.md).

- ``proxy``: ``ProxyServer`` and ``proxy()``: the remote's description, which
  connection serves which request, reconnection;
- ``forward``: each request forwarded and its answer brought back; the remote's requests
  and notifications relayed;
- ``upstream``: the upstream ``Client`` (built in one place) and a ``Link`` keeping it
  connected;
- ``clients``: ``Clients``: many servers from a host configuration, as clients or as
  one ``Server``.
"""

from .clients import Clients
from .proxy import ProxyServer, proxy
from .upstream import Upstream

__all__ = ["Clients", "ProxyServer", "Upstream", "proxy"]
