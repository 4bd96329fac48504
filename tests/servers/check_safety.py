"""A server whose tool handlers leave a trace, for the checker's safety tests.

Every handler that actually runs appends its name to the file named by
``MCPKIT_SAFETY_LOG``. With ``--call-tools readonly`` (the default) the checker may call
only ``vault_lookup`` (annotated read-only) and only with arguments its schema rejects, so
no handler may run at all; ``vault_wipe`` (destructive) must never be named in a
``tools/call``.

Run: ``python tests/servers/check_safety.py`` (stdio) or with ``--http --port N``.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

from pydantic import Field

from mcpkit import Server

server = Server("vault", "1.0.0", instructions="A test vault; look entries up by key.")


def _trace(name: str) -> None:
    path = os.environ.get("MCPKIT_SAFETY_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(name + "\n")


@server.tool(annotations={"readOnlyHint": True})
def vault_lookup(key: Annotated[str, Field(min_length=1)]) -> str:
    """Use this to read one vault entry by key. Returns the entry's text."""
    _trace("vault_lookup")
    return f"entry {key}"


@server.tool(annotations={"readOnlyHint": False, "destructiveHint": True})
def vault_wipe(confirm: bool) -> str:
    """Use this to erase every vault entry. Returns a confirmation."""
    _trace("vault_wipe")
    return "wiped"


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(sys.argv[sys.argv.index("--port") + 1]))
    else:
        server.run()
