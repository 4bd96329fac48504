"""Server-Sent Events, sans-I/O: an incremental parser (bytes in, events out).

Follows the WHATWG event-stream rules that matter to MCP: lines end in LF, CR or CRLF;
``data`` lines accumulate (joined with LF); ``id`` sets the last event id (ignored when
it contains NUL); ``retry`` takes digits only; comments (``:``) are skipped; an event is
dispatched at a blank line and only when it has data or an id (a priming event). A
field line longer than ``max_line`` is refused instead of buffered without bound.
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
        self._buf = b""
        self._data: list[str] = []
        self._event = ""
        self._id_seen = False
        self._retry_seen: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._buf += chunk
        events: list[SSEEvent] = []
        while True:
            idx = -1
            for sep in (b"\n", b"\r"):
                pos = self._buf.find(sep)
                if pos != -1 and (idx == -1 or pos < idx):
                    idx = pos
            if idx == -1:
                if len(self._buf) > self.max_line:
                    raise ValueError(f"SSE line longer than {self.max_line} bytes")
                return events
            line = self._buf[:idx]
            end = idx + 1
            if self._buf[idx:idx + 1] == b"\r":
                if end >= len(self._buf):
                    return events  # wait: the LF of a CRLF may follow
                if self._buf[end:end + 1] == b"\n":
                    end += 1
            self._buf = self._buf[end:]
            event = self._line(line.decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data and not self._id_seen:
                self._event = ""
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
        elif name == "retry" and value.isdigit():
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
