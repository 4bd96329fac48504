"""Newline framing for stdio: bytes in, complete lines out.

Invariants:
- A line never grows past ``max_size`` bytes in memory: once a line is known to be longer,
  its bytes are dropped until the next newline and one ``TOO_LARGE`` marker is reported.
- ``feed(b"")`` means end of input: a last line without a newline is still delivered.
- Blank lines (and a trailing ``\\r``) are ignored, so CRLF peers work.
"""

from __future__ import annotations

from typing import Final

DEFAULT_MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024


class _TooLarge:
    __slots__ = ()

    def __repr__(self) -> str:
        return "TOO_LARGE"


TOO_LARGE: Final = _TooLarge()
"""Marker for a line that was longer than the limit (its content is gone)."""

Line = bytes | _TooLarge


class LineBuffer:
    """Splits a byte stream into lines of at most ``max_size`` bytes."""

    __slots__ = ("_buf", "_skipping", "max_size")

    def __init__(self, max_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.max_size = max_size
        self._buf = b""
        self._skipping = False

    def feed(self, data: bytes) -> list[Line]:
        """Add ``data``; return the complete lines it finished (``b""`` = end of input)."""
        if not data:
            tail, self._buf = self._buf, b""
            self._skipping = False
            tail = tail.rstrip(b"\r")
            return [tail] if tail.strip() else []
        if self._buf:
            data = self._buf + data
            self._buf = b""
        parts = data.split(b"\n")
        tail = parts.pop()
        out: list[Line] = []
        limit = self.max_size
        for part in parts:
            if self._skipping:
                self._skipping = False
                continue
            if len(part) > limit:
                out.append(TOO_LARGE)
                continue
            if part.endswith(b"\r"):
                part = part[:-1]
            if part and not part.isspace():
                out.append(part)
        if self._skipping:
            return out
        if len(tail) > limit:
            self._skipping = True
            out.append(TOO_LARGE)
        else:
            self._buf = tail
        return out

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line held in memory."""
        return len(self._buf)
