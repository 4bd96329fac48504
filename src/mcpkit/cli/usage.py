"""What every ``mcpkit`` command shares about how it ends: the exit statuses and
:class:`UsageError`, the one-line mistake in how the command was called (status 2)."""

from __future__ import annotations

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
"""The command did what was asked; it could not (the server failed, a tool reported an
error); it was called wrongly."""


class UsageError(Exception):
    """A mistake in how mcpkit was called; printed as one line, exit status 2."""
