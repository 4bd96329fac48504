"""``mcpkit check``: judge any MCP server against the protocol and the design rules.

Point it at a stdio command or a Streamable HTTP URL; it probes the server in each era it
speaks (the handshake revisions and the stateless 2026-07-28), validates every message
against the official schema of the negotiated revision, gives a verdict on every row of
the compliance matrix and on the checker's own probe and lint rules, and renders the
report as text, JSON, Markdown, HTML or the matrix CSV.

Safety: tools are called only as ``--call-tools`` allows (by default only tools annotated
``readOnlyHint: true``, and only with arguments their own schema rejects); redirects are
never followed; every request is bounded by a timeout.

Importing the package loads nothing else: its names are loaded on first use, so that a
light module of it (``hosts``, which ``mcpkit install`` reads its path table from) does not
pull in the probes and, through them, the authorization code.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import EraSummary, Finding, Report
    from .runner import run_check
    from .target import Target

__all__ = ["EraSummary", "Finding", "Report", "Target", "run_check"]

_HOME = {"EraSummary": "model", "Finding": "model", "Report": "model", "Target": "target",
         "run_check": "runner"}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
