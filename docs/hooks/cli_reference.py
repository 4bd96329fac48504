"""MkDocs hook: the command-line reference is rendered from mcpkit's own argparse parser.

docs/cli.md holds the marker ``<!-- cli-reference -->``; at build time it is replaced by one
section per ``mcpkit`` command with the ``--help`` text argparse prints for it, so the page
cannot drift from the parser (``mcpkit.cli._parser()``). The help is rendered at a fixed
width so that a build gives the same page on every terminal.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

MARKER = "<!-- cli-reference -->"
WIDTH = "88"


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every subcommand, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, helps.get(name, ""), sp) for name, sp in action.choices.items()]
    return []


def render_reference() -> str:
    """The Markdown of the reference: the top-level usage, then each command's help."""
    from mcpkit.cli import _parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH  # argparse wraps at the terminal's width
    try:
        parser = _parser()
        parts = ["```text", parser.format_help().rstrip(), "```", ""]
        for name, helptext, sub in _subcommands(parser):
            parts += [f"## `mcpkit {name}`", "", f"{helptext[:1].upper()}{helptext[1:]}.", "",
                      "```text", sub.format_help().rstrip(), "```", ""]
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Replace the marker on the CLI page; every other page passes through unchanged."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render_reference())
