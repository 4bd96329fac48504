"""A small server with task tools that ``mcpkit check`` must pass on every ``TASKS.*`` rule.

It is the baseline of the checker's tasks family (``check_tasks_family.py`` runs it behind
a relay that breaks one task rule): ``reports_build`` may run as a task
(``task="optional"``), ``reports_archive`` runs only as one (``task="required"``); both are
annotated read-only so that ``--call-tools readonly`` may name them too. Each takes a short
while, so a task is seen ``working`` and then ``completed``.

Run: ``python tests/servers/check_tasks_good.py`` (stdio) or ``--http --port N``.
"""

from __future__ import annotations

import sys
from typing import Annotated

import anyio
from pydantic import Field

from mcpkit import Server

READ_ONLY = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}

server = Server(
    "check-tasks-good",
    instructions="Builds and archives reports; both may run as tasks, so poll them.",
)


@server.tool(task="optional", annotations=READ_ONLY)
async def reports_build(
    title: Annotated[str, Field(pattern=r"^[a-z]{1,20}$",
                                description="The report's title, in lower-case letters.")],
) -> str:
    """Build the report named ``title``; use it for a fresh report. Returns its text."""
    await anyio.sleep(0.3)
    return f"Report {title}: all green."


@server.tool(task="required", annotations=READ_ONLY)
async def reports_archive() -> str:
    """Archive every report; use it at the end of a day. Returns how many were archived."""
    await anyio.sleep(0.3)
    return "Archived 3 reports."


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(sys.argv[sys.argv.index("--port") + 1]))
    else:
        server.run()
