"""What the design lint judges: the tools, instructions, calls and errors the probes saw.

The probes (:mod:`mcpkit.check.features`) fill these as they go, and
:func:`mcpkit.check.lint.lint` reads them. They live apart from the rules so that observing a
server does not depend on judging it. Every field holds the server's raw JSON, which may be
garbage: the rules check each value's type before use (:mod:`mcpkit.check.lint.common`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class ToolCall:
    """One ``tools/call`` the checker made and its outcome."""

    tool: str
    arguments: dict[str, Any]
    result: dict[str, Any] | None
    """The CallToolResult, if a result came back."""
    error: dict[str, Any] | None
    """The JSON-RPC error object, if an error came back."""
    evidence: str
    """Request and response text, already trimmed."""


@dataclass(slots=True)
class ProvokedError:
    """An error the probes provoked on purpose (unknown tool, bad arguments, bad cursor, …)."""

    probe: str
    """What was provoked, e.g. ``"unknown tool"``, ``"invalid arguments for search_docs"``."""
    message: str
    """The JSON-RPC error message, or the text of an ``isError`` result."""
    expected_words: tuple[str, ...]
    """Names the message ought to mention (the unknown tool, the bad parameter); may be empty."""
    evidence: str


@dataclass(slots=True)
class LintInput:
    """Everything the lint judges, as the probes saw it."""

    tools: list[dict[str, Any]]
    """Every Tool object from ``tools/list`` (all pages), raw JSON (may hold garbage)."""
    instructions: str | None
    """The ``initialize`` / ``server/discover`` instructions."""
    calls: list[ToolCall]
    """Calls made; empty when the user forbade calls."""
    provoked: list[ProvokedError]
    second_listing: list[dict[str, Any]] | None
    """Tools from a second, independent listing (another session), or None."""
