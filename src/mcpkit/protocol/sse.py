"""Server-Sent Events, sans-I/O: an incremental parser (bytes in, events out).

Follows the WHATWG event-stream rules that matter to MCP: lines end in LF, CR or CRLF;
``data`` lines accumulate (joined with LF); ``id`` sets the last event id (ignored when
it contains NUL); ``retry`` takes ASCII digits only (and at most 18 of them: a longer
value is no delay, and Python refuses to convert more than 4,300 digits); comments
(``:``) are skipped; an event is dispatched at a blank line and only when it has data or
an id (a priming event). A line longer than ``max_line`` bytes (without its line end) is
refused with ``ValueError``, whether or not its end has arrived, so whatever the chunking
the same streams are refused; nothing else is raised.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEParser:
    """Feed bytes, get complete events; ``last_event_id``/``retry`` persist across events."""

    def __init__(self, max_line: int = 8 * 1024 * 1024) -> None:
        self.max_line = max_line
        self.last_event_id: str | None = None
        self.retry: int | None = None
        # Linear in the input (h11's receive buffer is the model): bytes accumulate in a
        # bytearray; ``_pos`` is where the next line starts, ``_scanned`` how far past it
        # no line end was found (a long line arriving in pieces is searched once).
        self._buf = bytearray()
        self._pos = 0
        self._scanned = 0
        self._data: list[str] = []
        self._event = ""
        self._id_seen = False
        self._retry_seen: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Add ``chunk``; return the events it completed. ``ValueError`` for a line longer
        than ``max_line`` (the parser is then unusable: drop the stream)."""
        self._buf += chunk
        buf = self._buf
        events: list[SSEEvent] = []
        while True:
            start = max(self._pos, self._scanned)
            lf, cr = buf.find(b"\n", start), buf.find(b"\r", start)
            idx = lf if cr == -1 or (lf != -1 and lf < cr) else cr
            if idx == -1:
                self._scanned = len(buf)
                if len(buf) - self._pos > self.max_line:
                    raise ValueError(f"SSE line longer than {self.max_line} bytes")
                break
            if idx - self._pos > self.max_line:
                raise ValueError(f"SSE line longer than {self.max_line} bytes")
            end = idx + 1
            if idx == cr:
                if end >= len(buf):
                    self._scanned = idx  # wait: the LF of a CRLF may follow
                    break
                if buf[end] == 0x0A:
                    end += 1
            line = bytes(buf[self._pos:idx])
            self._pos = self._scanned = end
            event = self._line(line.decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
        if self._pos:  # drop what was consumed (once per feed: amortized linear)
            del buf[:self._pos]
            self._scanned -= self._pos
            self._pos = 0
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data and not self._id_seen:
                self._event, self._retry_seen = "", None
                return None
            event = SSEEvent("\n".join(self._data), self._event or "message",
                             self.last_event_id, self._retry_seen)
            self._data, self._event, self._id_seen, self._retry_seen = [], "", False, None
            return event
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\x00" not in value:
                self.last_event_id = value
                self._id_seen = True
        elif name == "retry" and value.isascii() and value.isdigit() and len(value) <= 18:
            self.retry = self._retry_seen = int(value)
        return None


def encode_event(data: bytes, event_id: str | None = None, retry: int | None = None) -> bytes:
    """One SSE event carrying a single-line JSON message (empty data: a priming event)."""
    out = b""
    if event_id is not None:
        out += b"id: " + event_id.encode() + b"\n"
    if retry is not None:
        out += b"retry: " + str(retry).encode() + b"\n"
    if data:
        out += b"event: message\n"
    return out + b"data: " + data + b"\n\n"
