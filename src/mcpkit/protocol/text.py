"""Showing a peer's text on a terminal without letting it act on the terminal.

A server's strings (tool output in a report, an elicitation's message, a progress
message) may carry control characters: ANSI escapes that move the cursor, clear the
screen or retitle the window, and bidi overrides that reorder what a person reads.
:func:`visible` makes each one visible as ``\\xNN`` / ``\\uNNNN`` instead, so what is
shown is what was sent.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with control characters (ANSI escapes, bidi overrides) made visible as
    ``\\xNN`` or ``\\uNNNN``; tabs become four spaces, newlines stay."""
    text = text.replace("\r\n", "\n").replace("\t", "    ")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)
