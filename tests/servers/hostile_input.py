"""A server for hostile input (``tests/test_hostile_input.py``, issue #25 items 5, 6, 9).

Tools with an open schema (``echo``: any value), closed ones (``total``: integers,
``shout``: a text) and one
that asks the user (``ask``, an elicitation form) or runs as a task (``slow_task``).
Served on stdio with every request and audit record logged as JSON lines at INFO on
stderr (params and arguments included, so a value the logging cannot write would show),
or over HTTP (``--http PORT``). ``server()`` builds a fresh one for in-process tests.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

from mcpkit import AuditLog, Context, Server
from mcpkit.server import RequestLog


def build(*, logged: bool = False, **options: Any) -> Server:
    extra: dict[str, Any] = {"audit": AuditLog(), "audit_arguments": True,
                             "middleware": [RequestLog(params=True)]} if logged else {}
    srv = Server("hostile-input", **extra, **options)

    @srv.tool
    def echo(value: Any) -> str:
        """Accept any value (an open schema: its depth is counted)."""
        return "ok"

    @srv.tool
    def total(numbers: list[int]) -> int:
        """Add integers (a closed schema: validation bounds the depth)."""
        return sum(numbers)

    @srv.tool
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    @srv.tool
    async def ask(ctx: Context) -> str:
        """Ask the user for a name."""
        answer = await ctx.elicit("Your name?", str)
        return f"hello {answer.data}"

    @srv.tool(task="optional")
    async def slow_task(seconds: float = 30.0) -> str:
        """Sleep, as a task when asked."""
        await anyio.sleep(seconds)
        return "slept"

    return srv


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        build().run("http", port=port)
    else:
        build(logged=True).run(log_level="INFO")
