"""Where mcpkit keeps its local state on this machine (``mcpkit login``'s tokens, the
development issuer's key): ``$MCPKIT_STATE_DIR``, else ``$XDG_STATE_HOME/mcpkit``, else
``~/.local/state/mcpkit``. Standard library only: the CLI asks for it before anything
heavier is loaded."""

from __future__ import annotations

import os
from pathlib import Path


def state_dir() -> Path:
    """mcpkit's state directory (see the module docstring); not created here."""
    if os.environ.get("MCPKIT_STATE_DIR"):
        return Path(os.environ["MCPKIT_STATE_DIR"])
    if os.environ.get("XDG_STATE_HOME"):
        return Path(os.environ["XDG_STATE_HOME"]) / "mcpkit"
    return Path.home() / ".local" / "state" / "mcpkit"
