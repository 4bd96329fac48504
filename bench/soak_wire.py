"""The wire under bench/soak.py: a raw HTTP/1.1 client on asyncio streams that reads a
response incrementally (SSE events as they come, so a client can cancel or drop a stream
in the middle), an SSE parser, the MCP messages of both eras, and sampled validation of
what the server sends against the official schema of its revision.

The client is written here rather than taken from mcpkit or httpx so the soak sees exactly
what a host sees on the socket (an empty ``200 text/event-stream`` body, a stream that
never ends) and costs little CPU on a 2-core machine shared with the servers.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import struct
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from tests.support.schemas import SchemaViolation, _index, error_def, validate

STATELESS = "2026-07-28"
ACCEPT_BOTH = b"application/json, text/event-stream"


class NoAnswer(Exception):
    """The connection closed, broke or timed out before the whole response arrived."""


# ------------------------------------------------------------------------------ SSE


@dataclass
class Event:
    """One SSE event: its id (None when it had none), type and data."""

    id: str | None
    event: str
    data: bytes


class SSEParser:
    """Incremental ``text/event-stream`` parser: ``feed`` bytes as they come, get the
    complete events; ``last_event_id`` is what a resumption sends as ``Last-Event-ID``."""

    def __init__(self) -> None:
        self.buffer = b""
        self.last_event_id: str | None = None
        self._id: str | None = None
        self._event = "message"
        self._data: list[bytes] = []
        self._fields = False

    def feed(self, chunk: bytes) -> list[Event]:
        self.buffer += chunk
        out: list[Event] = []
        while True:
            cut = min((i for i in (self.buffer.find(b"\n"), self.buffer.find(b"\r"))
                       if i >= 0), default=-1)
            if cut < 0:
                return out
            line = self.buffer[:cut]
            skip = 2 if self.buffer[cut:cut + 2] == b"\r\n" else 1
            if self.buffer[cut:cut + 1] == b"\r" and cut + 1 == len(self.buffer):
                return out  # a CR that may be half of a CRLF: wait for the next byte
            self.buffer = self.buffer[cut + skip:]
            if not line:
                if self._fields:
                    out.append(Event(self._id, self._event, b"\n".join(self._data)))
                self._id, self._event, self._data, self._fields = None, "message", [], False
                continue
            if line.startswith(b":"):
                continue
            name, _, value = line.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            self._fields = True
            if name == b"data":
                self._data.append(value)
            elif name == b"id":
                self._id = self.last_event_id = value.decode()
            elif name == b"event":
                self._event = value.decode()


# ------------------------------------------------------------------------------ HTTP


class Response:
    """A response whose head was read; ``chunks()`` yields its body as it arrives."""

    def __init__(self, conn: Conn, status: int, headers: dict[str, str]) -> None:
        self.conn = conn
        self.status = status
        self.headers = headers

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def is_sse(self) -> bool:
        return self.content_type == "text/event-stream"

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's pieces as they arrive (``NoAnswer`` if the connection breaks)."""
        try:
            async for data in self._chunks():
                yield data
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ValueError) as exc:
            self.conn.close()
            raise NoAnswer(f"{type(exc).__name__}: {exc}") from None

    async def _chunks(self) -> AsyncIterator[bytes]:
        reader = self.conn.reader
        if reader is None:
            raise NoAnswer("the connection was closed")
        headers = self.headers
        if "content-length" in headers:
            left = int(headers["content-length"])
            while left:
                data = await reader.read(min(left, 65536))
                if not data:
                    raise NoAnswer("the connection closed inside the body")
                left -= len(data)
                yield data
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                yield (await reader.readexactly(size + 2))[:-2]
            await reader.readuntil(b"\r\n")
        elif self.status in (202, 204, 304) or 100 <= self.status < 200:
            pass
        else:  # delimited by the end of the connection
            while data := await reader.read(65536):
                yield data
            self.conn.close()
            return
        self.conn.used = time.monotonic()
        if headers.get("connection", "").lower() == "close":
            self.conn.close()

    async def read(self) -> bytes:
        return b"".join([c async for c in self.chunks()])


class Conn:
    """One HTTP/1.1 keep-alive connection to 127.0.0.1:``port``, opened on first use and
    again after it was closed. A request whose response was not read to its end must
    ``close()`` the connection (it cannot carry another request)."""

    IDLE = 4.0
    """Seconds after which an idle connection is not used again (uvicorn closes its side
    after 5 s): like a host's pool, a request never races the server's close."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.used = 0.0

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    def abort(self) -> None:
        """Close with a reset (SO_LINGER 0): a host that drops a stream mid-way."""
        if self.writer is not None:
            sock = self.writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close()

    async def send(self, method: str, headers: list[tuple[bytes, bytes]],
                   body: bytes = b"") -> Response:
        """Send one request and read the head of its response (``NoAnswer`` if the
        connection fails first; the caller bounds the wait)."""
        now = time.monotonic()
        if self.reader is not None and (self.reader.at_eof() or now - self.used > self.IDLE):
            self.close()
        self.used = now
        try:
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(
                    "127.0.0.1", self.port, limit=1 << 22)
            assert self.reader is not None
            head = [b"%s /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (method.encode(), self.port)]
            head += [b"%s: %s\r\n" % kv for kv in headers]
            if body or method == "POST":
                head.append(b"Content-Length: %d\r\n" % len(body))
            head.append(b"\r\n")
            self.writer.write(b"".join(head) + body)
            lines = (await self.reader.readuntil(b"\r\n\r\n"))[:-4].split(b"\r\n")
            status = int(lines[0].split(b" ", 2)[1])
            found = {k.strip().lower().decode(): v.strip().decode("latin-1")
                     for k, _, v in (line.partition(b":") for line in lines[1:])}
            return Response(self, status, found)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ValueError, IndexError) as exc:
            self.close()
            raise NoAnswer(f"{type(exc).__name__}: {exc}") from None


def raw_socket(port: int, request: bytes) -> socket.socket:
    """A blocking socket with a small receive buffer that sent ``request`` and will never
    be read from: a client that stopped reading (its window closes after a few KB)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(5)
    sock.connect(("127.0.0.1", port))
    sock.sendall(request)
    return sock


def raw_request(port: int, method: str, headers: list[tuple[bytes, bytes]],
                body: bytes = b"") -> bytes:
    out = [b"%s /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (method.encode(), port)]
    out += [b"%s: %s\r\n" % kv for kv in headers]
    if body:
        out.append(b"Content-Length: %d\r\n" % len(body))
    return b"".join(out) + b"\r\n" + body


# ------------------------------------------------------------------------------ MCP


def request(rid: int | str, method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return orjson.dumps(msg)


def notification(method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return orjson.dumps(msg)


def initialize(rid: int, version: str, name: str = "soak") -> bytes:
    return request(rid, "initialize", {"protocolVersion": version, "capabilities": {},
                                       "clientInfo": {"name": name, "version": "1"}})


def stateless_meta(progress: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": STATELESS,
                            "io.modelcontextprotocol/clientCapabilities": {},
                            "io.modelcontextprotocol/clientInfo": {"name": "soak",
                                                                   "version": "1"}}
    if progress is not None:
        meta["progressToken"] = progress
    return meta


def stateless_headers(method: str, name: str | None) -> list[tuple[bytes, bytes]]:
    out = [(b"Content-Type", b"application/json"), (b"Accept", ACCEPT_BOTH),
           (b"MCP-Protocol-Version", STATELESS.encode()), (b"Mcp-Method", method.encode())]
    if name is not None:
        out.append((b"Mcp-Name", name.encode()))
    return out


# ------------------------------------------------------------------------------ schema


class Validator:
    """Validates a sample of what the servers send against the schema of the revision in
    use: the first ``first`` messages of each kind, then one in ``every``. What fails is
    counted (and the first few kept) as wrong answers."""

    def __init__(self, first: int = 40, every: int = 200) -> None:
        self.first = first
        self.every = every
        self.seen: Counter[tuple[str, str]] = Counter()
        self.checked = 0
        self.violations: list[str] = []
        self._tick = itertools.count()

    def check(self, revision: str, msg: Any, method: str | None = None) -> bool:
        """Check ``msg`` (an answer to ``method``, or a request/notification); False if it
        violates the schema."""
        if not isinstance(msg, dict):
            return self._fail(f"not an object: {str(msg)[:200]}")
        requests, results, notes = _index(revision)
        if "method" in msg:
            kinds = [notes.get(msg["method"]) if "id" not in msg
                     else requests.get(msg["method"])]
            if kinds[0] is None:
                return self._fail(f"{msg['method']!r} is not a message of {revision}")
            parts = [msg]
        elif "error" in msg:
            kinds, parts = [error_def(revision)], [msg]
        else:
            envelope = ("JSONRPCResponse" if "JSONRPCResponse" in _defs_of(revision)
                        else "JSONRPCResultResponse")
            result = results.get(method) if method else None
            kinds = [envelope] + ([result] if result else [])
            parts = [msg] + ([msg.get("result")] if result else [])
        key = (revision, kinds[-1] or "")
        self.seen[key] += 1
        if self.seen[key] > self.first and next(self._tick) % self.every:
            return True
        self.checked += 1
        try:
            for kind, part in zip(kinds, parts, strict=True):
                if kind:
                    validate(revision, kind, part)
        except SchemaViolation as exc:
            return self._fail(str(exc).split("\nmessage:")[0])
        return True

    def _fail(self, why: str) -> bool:
        if len(self.violations) < 10:
            self.violations.append(why[:400])
        return False


def _defs_of(revision: str) -> dict[str, Any]:
    from tests.support.schemas import load

    doc = load(revision)
    return doc.get("$defs") or doc["definitions"]
