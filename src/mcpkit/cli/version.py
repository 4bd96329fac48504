"""``mcpkit --version``: this mcpkit's version and the protocol revisions it speaks."""

from __future__ import annotations

import sys


def write_version() -> None:
    """Write the version line to stdout. The version is ``MCPKIT_VERSION``, the one
    pyproject.toml reads, not ``importlib.metadata``'s, whose scan of every installed
    distribution costs more than the rest of the command."""
    from ..protocol.release import MCPKIT_VERSION, NEWEST, OLDEST

    sys.stdout.write(f"mcpkit {MCPKIT_VERSION} (MCP {OLDEST} to {NEWEST})\n")
