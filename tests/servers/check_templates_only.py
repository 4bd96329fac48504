"""A server with a resource template and no concrete resource, for the checker's M056 test.

mcpkit declares ``resources.subscribe``, but ``resources/list`` is empty, so the checker
has no URI to subscribe to: M056 must say exactly that (declared, only templates), not that
the server "does not offer subscriptions".

Run: ``python tests/servers/check_templates_only.py`` (stdio).
"""

from __future__ import annotations

from mcpkit import Server

server = Server("templates", "1.0.0", instructions="Reads files of a small store by name.")


@server.resource("store://files/{name}", mime_type="text/plain")
def store_file(name: str) -> str:
    """One file of the store, by name."""
    return f"contents of {name}"


if __name__ == "__main__":
    server.run()
