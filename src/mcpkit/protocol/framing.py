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
    """Splits a byte stream into lines of at most ``max_size`` bytes.

    Linear in the input: an unfinished line grows in a ``bytearray`` (amortized appends),
    and each chunk is searched once, from its own start, so a 4 MiB line arriving in
    4 KiB chunks costs what one 4 MiB chunk does (``bench/framing.py``).
    """

    __slots__ = ("_buf", "_skipping", "max_size")

    def __init__(self, max_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.max_size = max_size
        self._buf = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[Line]:
        """Add ``data``; return the complete lines it finished (``b""`` = end of input)."""
        out: list[Line] = []
        if not data:  # the last line ends as if a newline followed it
            tail = bytes(self._buf)
            self._buf.clear()
            self._skipping = False
            _add(tail, out)
            return out
        nl = data.find(b"\n")
        if nl == -1:
            self._extend(data, out)
            return out
        self._finish(data[:nl], out)
        parts = data[nl + 1:].split(b"\n")
        tail = parts.pop()
        limit = self.max_size
        for part in parts:
            if len(part) > limit:
                out.append(TOO_LARGE)
            else:
                _add(part, out)
        self._extend(tail, out)
        return out

    def _extend(self, chunk: bytes, out: list[Line]) -> None:
        """Grow the unfinished line; past the limit, drop it and report ``TOO_LARGE`` once."""
        if self._skipping or not chunk:
            return
        if len(self._buf) + len(chunk) > self.max_size:
            self._buf.clear()
            self._skipping = True
            out.append(TOO_LARGE)
        else:
            self._buf += chunk

    def _finish(self, head: bytes, out: list[Line]) -> None:
        """A newline arrived: the unfinished line plus ``head`` is complete."""
        if self._skipping:  # already reported; its end just stops the skipping
            self._skipping = False
            return
        if not self._buf:
            line = head
        elif len(self._buf) + len(head) > self.max_size:
            self._buf.clear()
            out.append(TOO_LARGE)
            return
        else:
            self._buf += head
            line = bytes(self._buf)
            self._buf.clear()
        if len(line) > self.max_size:
            out.append(TOO_LARGE)
        else:
            _add(line, out)

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line held in memory."""
        return len(self._buf)


def _add(line: bytes, out: list[Line]) -> None:
    """Append a complete line unless it is blank (a trailing CR is dropped: CRLF peers)."""
    if line.endswith(b"\r"):
        line = line[:-1]
    if line and not line.isspace():
        out.append(line)
