"""Newline framing for stdio: bytes in, complete lines out.

Invariants:
- A line never grows past ``max_size`` bytes in memory: once a line is known to be longer,
  its bytes are dropped until the next newline and one ``TooLarge`` marker is reported
  (holding the line's first ``HEAD_BYTES`` bytes).
- ``feed(b"")`` means end of input: a last line without a newline is still delivered.
- Blank lines (and a trailing ``\\r``) are ignored, so CRLF peers work.
"""

from __future__ import annotations

from typing import Final

DEFAULT_MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024


HEAD_BYTES: Final = 256
"""How much of an oversized line is kept (``TooLarge.head``): enough for the message's
``id``, which every peer writes among its first keys, so a client can fail the one
request whose answer it could not take instead of letting it wait for its timeout."""


class TooLarge:
    """A line that was longer than the limit: its first ``HEAD_BYTES`` bytes (``head``),
    the rest gone. All are equal to one another (and to ``TOO_LARGE``)."""

    __slots__ = ("head",)

    def __init__(self, head: bytes = b"") -> None:
        self.head = head[:HEAD_BYTES]

    def __repr__(self) -> str:
        return "TOO_LARGE"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TooLarge)

    def __hash__(self) -> int:
        return 0


TOO_LARGE: Final = TooLarge()
"""A line that was longer than the limit, its start unknown (what tests compare with)."""

Line = bytes | TooLarge


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
                out.append(TooLarge(part))
            else:
                _add(part, out)
        self._extend(tail, out)
        return out

    def _extend(self, chunk: bytes, out: list[Line]) -> None:
        """Grow the unfinished line; past the limit, drop it and report ``TOO_LARGE`` once."""
        if self._skipping or not chunk:
            return
        if len(self._buf) + len(chunk) > self.max_size:
            start = bytes(self._buf[:HEAD_BYTES]) + chunk[:HEAD_BYTES]
            self._buf.clear()
            self._skipping = True
            out.append(TooLarge(start))
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
            start = bytes(self._buf[:HEAD_BYTES]) + head[:HEAD_BYTES]
            self._buf.clear()
            out.append(TooLarge(start))
            return
        else:
            self._buf += head
            line = bytes(self._buf)
            self._buf.clear()
        if len(line) > self.max_size:
            out.append(TooLarge(line))
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
