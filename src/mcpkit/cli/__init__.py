"""The ``mcpkit`` command: run a server, or talk to one from a shell.

    mcpkit run FILE[:OBJECT]                       serve a Server object over stdio
    mcpkit run --http [--host H] [--port N] [--path P] [--drain S] FILE[:OBJECT]
                                                   ... or over Streamable HTTP
    mcpkit dev FILE[:OBJECT]                       serve on loopback, reload on change
    mcpkit install HOST FILE[:OBJECT]              register it with an MCP host
    mcpkit list tools|resources|templates|prompts TARGET
    mcpkit call TARGET TOOL [key=value | key:=JSON ...] [--args JSON] [--task [--ttl MS]]
    mcpkit tasks list|get|cancel|result TARGET [TASK_ID]
    mcpkit read TARGET URI
    mcpkit prompt TARGET NAME [key=value ...] [--args JSON]
    mcpkit check TARGET [--era stateful|stateless|both] [--format ...] [--fail-on ...] ...
    mcpkit login URL [--scope S ...] [--client-id ID [--client-secret S]] [--port N]
    mcpkit logout URL
    mcpkit proxy --stdio "COMMAND" --http [--port N]  serve a stdio server over HTTP
    mcpkit proxy URL [--token T]                   serve an HTTP server on stdio
    mcpkit completion bash|zsh|fish                a shell completion script
    mcpkit --version

TARGET is ``--stdio "COMMAND"`` or an ``http(s)://`` URL (with ``--header``, ``--token``).
The client commands live in :mod:`mcpkit.cli.calls` (arguments, output, ``--json``
shapes, exit status, errors that say what to do next) and answer the server's questions
through :mod:`mcpkit.cli.elicit`. ``check`` exits 1 when a finding at the ``--fail-on``
level failed, so it drops into CI. The parser and the commands live in
:mod:`mcpkit.cli.commands`; this module only starts them, so ``mcpkit --version`` answers
before anything else is imported.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # (not typing's, nor collections.abc: --version imports neither)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mcpkit`` with ``argv`` (default: the process's); the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if list(args) == ["--version"]:  # a small tool's start: no parser, no subcommands
        from .version import write_version

        write_version()
        return 0
    from .commands import main as run

    return run(argv)


def _parser() -> argparse.ArgumentParser:
    """The whole parser (every subcommand): what ``--help``, the completion scripts and
    the docs hook read."""
    from .commands import _parser as build

    return build()
