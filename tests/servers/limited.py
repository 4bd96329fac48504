"""A stdio server with rate limits and an audit log, for ``tests/test_limits.py``.

``echo`` is under the server-wide limit (``MCPKIT_TEST_RATE_LIMIT``, default "2/minute"),
``burst_tool`` under its own ("1/minute"), ``free`` exempt. Audit records go as JSON
lines to stderr (logger ``mcpkit.audit``, set up by ``run``'s stderr logging at INFO).
"""

from __future__ import annotations

import os

from mcpkit import AuditLog, Server

server = Server("limited", rate_limit=os.environ.get("MCPKIT_TEST_RATE_LIMIT", "2/minute"),
                audit=AuditLog())


@server.tool
async def echo(text: str) -> str:
    """Echo the text (never waits: answered inline)."""
    return text


@server.tool(rate_limit="1/minute")
async def burst_tool() -> str:
    """Its own limit: one call a minute."""
    return "done"


@server.tool(rate_limit=None)
async def free() -> str:
    """Exempt from the server's limit."""
    return "free"


if __name__ == "__main__":
    server.run(log_level="INFO")
