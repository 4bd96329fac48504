"""ASGI plumbing shared by the HTTP endpoints (Streamable HTTP and legacy HTTP+SSE).

Header access, plain responses, the ``Refused`` exception that becomes an HTTP error with
a JSON-RPC body, the ``Origin``/``Host`` guard against DNS rebinding, a bounded body
reader (size cap and read timeout), and the disconnect watcher.

The HTTP transports run on **asyncio only**: they are served by uvicorn (or any asyncio
ASGI server), and their per-request waits are bare ``asyncio`` events and tasks because an
anyio task group per request cost more than the request itself (see docs/architecture.md).
``require_asyncio`` turns a call under another event loop (trio) into a clear error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import orjson

from ..protocol.errors import INVALID_REQUEST, PARSE_ERROR
from ..protocol.jsonrpc import batch_too_large, loads, unreadable

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
               (b"x-accel-buffering", b"no")]
ASYNCIO_ONLY = ("mcpkit's HTTP transports run on asyncio only (uvicorn, hypercorn's "
                "asyncio worker, ...); serve this app with an asyncio ASGI server")


class Refused(Exception):
    """An HTTP request refused before it reached the protocol: status, JSON-RPC error
    ``code`` and a message that tells the caller what to do."""

    def __init__(self, status: int, message: str, code: int = INVALID_REQUEST,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers


def require_asyncio() -> None:
    """Raise ``RuntimeError`` (with ``ASYNCIO_ONLY``) unless an asyncio loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(ASYNCIO_ONLY) from None


def local_path(scope: Scope) -> str:
    """The request path below the point the app is mounted at.

    A host app that mounts mcpkit (Starlette's ``Mount("/api", app=...)``, FastAPI, a
    ``root_path`` given to uvicorn) puts the prefix in ``root_path`` and leaves it in
    ``path`` as well (the ASGI spec since 2023); older servers strip it. Either way the
    endpoints are matched on what is left."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root):len(root) + 1] in ("", "/"):
        return path[len(root):] or "/"
    return path


def headers_of(scope: Scope) -> dict[str, str]:
    """Header name -> value; a value without the whitespace around it (RFC 9110 §5.5),
    which h11 strips but httptools leaves at the end. Repeated headers are joined."""
    out: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        name = key.decode("latin-1").lower()
        text = value.decode("latin-1").strip(" \t")
        out[name] = f"{out[name]}, {text}" if name in out else text
    return out


def error_body(code: int, message: str) -> bytes:
    """A JSON-RPC error object without an id (the request could not be read)."""
    return orjson.dumps({"jsonrpc": "2.0", "error": {"code": code, "message": message}})


async def respond(send: Send, status: int, body: bytes = b"",
                  headers: list[tuple[bytes, bytes]] | None = None,
                  content_type: bytes = b"application/json") -> None:
    """A complete response with a ``content-length``."""
    hdrs = list(headers or [])
    if body:
        hdrs.append((b"content-type", content_type))
    hdrs.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": body})


async def not_found(endpoint: str, scope: Scope, receive: Receive, send: Send) -> None:
    """The 404 of a path an app does not serve, naming its MCP ``endpoint``."""
    where = scope.get("root_path", "") + endpoint
    await respond(send, 404, error_body(INVALID_REQUEST, f"Not found: the MCP endpoint is "
                                                         f"{where}"))


async def respond_refused(send: Send, exc: Refused) -> None:
    await respond(send, exc.status, error_body(exc.code, exc.message), exc.headers)


def host_name(host: str) -> str:
    """The host part of a ``Host`` value or an origin's authority (port dropped)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class OriginHostGuard:
    """Refuses requests whose ``Host`` (421) or ``Origin`` (403) is not allowed.

    Defaults: localhost names on any port, and localhost origins. ``X-Forwarded-Host`` and
    ``Forwarded: host=`` count only from ``trusted_proxies`` (client IPs).
    """

    def __init__(self, allowed_hosts: Iterable[str] | None, allowed_origins: Iterable[str] | None,
                 trusted_proxies: Iterable[str]) -> None:
        self.hosts = None if allowed_hosts is None else {host_name(h) for h in allowed_hosts}
        self.origins = None if allowed_origins is None else {
            o.rstrip("/").lower() for o in allowed_origins}
        self.proxies = set(trusted_proxies)

    def client_address(self, scope: Scope, headers: dict[str, str]) -> str | None:
        """The address of the client a request comes from: the ASGI ``client`` host, or,
        when that is a trusted proxy, the nearest address in ``Forwarded: for=`` (else
        ``X-Forwarded-For``) that is not one, read from the right (the hops the trusted
        proxies appended; what the client itself wrote is only believed past them).
        None when the server gives no client (a Unix socket). Used as the rate-limit key
        of unauthenticated requests."""
        client = scope.get("client")
        if not client:
            return None
        host: str = client[0]
        if host not in self.proxies:
            return host
        hops: list[str] = []
        fwd = headers.get("forwarded")
        if fwd:
            for element in fwd.split(","):
                for part in element.split(";"):
                    key, _, value = part.strip().partition("=")
                    if key.lower() == "for":
                        hops.append(_forwarded_node(value))
        else:
            hops = [h.strip() for h in headers.get("x-forwarded-for", "").split(",")]
        hops = [h for h in hops if h]
        for hop in reversed(hops):
            if hop not in self.proxies:
                return hop[:100]
        return hops[0][:100] if hops else host

    def check(self, scope: Scope, headers: dict[str, str]) -> None:
        host = headers.get("host", "")
        client = scope.get("client")
        if client and client[0] in self.proxies:
            forwarded = headers.get("x-forwarded-host")
            fwd = headers.get("forwarded")
            if fwd:
                for part in fwd.split(",")[0].split(";"):
                    key, _, value = part.strip().partition("=")
                    if key.lower() == "host":
                        forwarded = value.strip('"')
            if forwarded:
                host = forwarded.split(",")[0].strip()
        name = host_name(host)
        allowed = self.hosts if self.hosts is not None else set(LOCAL_HOSTS)
        if "*" not in allowed and name not in allowed:
            raise Refused(421, f"Misdirected request: Host {host!r} is not served here. If "
                               "this server is behind a proxy, configure allowed_hosts or "
                               "trusted_proxies.")
        origin = headers.get("origin")
        if origin is not None:
            o = origin.rstrip("/").lower()
            if self.origins is not None:
                ok = "*" in self.origins or o in self.origins
            else:
                scheme, _, rest = o.partition("://")
                ok = scheme in ("http", "https") and host_name(rest) in LOCAL_HOSTS
            if not ok:
                raise Refused(403, f"Forbidden: Origin {origin!r} is not allowed.")


def _forwarded_node(value: str) -> str:
    """The address of a ``Forwarded`` ``for=`` node: quotes, an IPv6 address's brackets
    and a port removed (``"[2001:db8::1]:4711"`` -> ``2001:db8::1``)."""
    node = value.strip().strip('"')
    if node.startswith("["):
        return node[1:node.find("]")] if "]" in node else node[1:]
    return node.rsplit(":", 1)[0] if node.count(":") == 1 else node


class _Read:
    __slots__ = ("deadline", "expired", "refusal", "task")

    def __init__(self, deadline: float, task: Any) -> None:
        self.deadline, self.task, self.expired = deadline, task, False
        self.refusal: Callable[[], Refused] | None = None  # None: the 408 of a late body


class ReadDeadlines:
    """Deadlines of the body reads in progress, enforced by one periodic ``sweep`` for all
    of them: a timer per request (``asyncio.timeout``) would cost ~5 µs each, this costs
    a dict insert and delete. Reads are kept in start order, so a sweep visits only the
    expired ones (and one more)."""

    __slots__ = ("_reads", "timeout")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._reads: dict[_Read, None] = {}

    def start(self) -> _Read:
        read = _Read(time.monotonic() + self.timeout, asyncio.current_task())
        self._reads[read] = None
        return read

    def stop(self, read: _Read) -> None:
        self._reads.pop(read, None)

    def sweep(self, now: float) -> None:
        """Cancel the reads whose deadline passed (their request then answers 408)."""
        reads = self._reads
        while reads:
            read = next(iter(reads))
            if read.deadline > now:
                return
            del reads[read]
            read.expired = True
            if read.task is not None:
                read.task.cancel()

    def expire(self, refusal: Callable[[], Refused]) -> None:
        """Fail every read in progress now, each with ``refusal()`` (a server draining:
        a body still arriving is not waited for)."""
        for read in self._reads:
            read.refusal = refusal
        self.sweep(float("inf"))


async def read_body(headers: dict[str, str], receive: Receive, limit: int,
                    deadlines: ReadDeadlines) -> bytes:
    """The request body: at most ``limit`` bytes (413), complete within
    ``deadlines.timeout`` seconds (408: a client that stalls mid-body must not hold a task
    forever; the connection is closed after the answer)."""
    length = headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise Refused(413, f"Payload too large: the limit is {limit} bytes.")
    read = deadlines.start()
    try:
        message = await receive()
        if not message.get("more_body") and message["type"] == "http.request":
            body: bytes = message.get("body", b"")
            if len(body) > limit:
                raise Refused(413, f"Payload too large: the limit is {limit} bytes.")
            return body
        chunks: list[bytes] = []
        size = 0
        while True:
            if message["type"] == "http.disconnect":
                raise Refused(400, "Client disconnected.")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise Refused(413, f"Payload too large: the limit is {limit} bytes.")
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)
            message = await receive()
    except asyncio.CancelledError:
        if not read.expired:
            raise
        read.task.uncancel()
        if read.refusal is not None:
            raise read.refusal() from None
        raise Refused(408, f"Request timeout: the body did not arrive within "
                           f"{deadlines.timeout:g} seconds; send it without pausing.",
                      headers=[(b"connection", b"close")]) from None
    finally:
        deadlines.stop(read)


def require_json(headers: dict[str, str]) -> None:
    """415 unless the body is declared ``application/json``, with no ``charset`` or
    ``charset=utf-8`` (any case, quoted or not): JSON exchanged between systems is UTF-8
    (RFC 8259 §8.1), and a body declared in another charset would be read as UTF-8 all
    the same, its text silently changed."""
    media, *params = headers.get("content-type", "").split(";")
    if media.strip().lower() != "application/json":
        raise Refused(415, "Unsupported media type: POST bodies must be Content-Type: "
                           "application/json.")
    for param in params:
        name, _, value = param.partition("=")
        charset = value.strip().strip('"').strip()
        if name.strip().lower() == "charset" and charset.lower() != "utf-8":
            raise Refused(415, f"Unsupported media type: JSON is UTF-8 (RFC 8259), not "
                               f"{charset[:40]!r}; send the body in UTF-8 with "
                               "Content-Type: application/json (or charset=utf-8).")


def decode_json(body: bytes, max_batch: int) -> Any:
    """A POST body as JSON (400 with -32700 if it is not JSON), refused whole (400 with
    -32600) when it is a batch of more than ``max_batch`` messages, before any of them is
    looked at: the decode is all one body costs the event loop then (a big body is
    parsed with the cyclic collector paused, ``protocol.jsonrpc.loads``)."""
    try:
        obj = loads(body)
    except orjson.JSONDecodeError as exc:
        raise Refused(400, f"Parse error: the body is not valid JSON ({unreadable(exc)}).",
                      code=PARSE_ERROR) from None
    if type(obj) is list and len(obj) > max_batch:
        size = len(obj)
        del obj  # freed before the refusal allocates: see protocol.jsonrpc.loads
        raise Refused(400, batch_too_large(size, max_batch).message)
    return obj


async def respond_withdrawn(send: Send) -> None:
    """The answer to a POSTed request that will never be answered (the client cancelled it,
    or its session ended first): an SSE response with no event, complete at once. A POST
    carrying a request must be answered as SSE or JSON (basic/transports), and a cancelled
    request gets no JSON-RPC response (basic/utilities/cancellation)."""
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


class DisconnectWatch:
    """The one watch on a client's departure while its response is written: ``gone``
    turns True when ``http.disconnect`` arrives (the request body was read already, so the
    next ASGI message can only be that one), and ``wake`` (the waiting writer's) is called.
    A plain asyncio task, cancelled on leaving the ``with`` block (an anyio task group here
    cost more than the request)."""

    __slots__ = ("_task", "_wake", "gone")

    def __init__(self, receive: Receive, wake: Callable[[], None] | None = None) -> None:
        self.gone = False
        self._wake = wake
        self._task = asyncio.get_running_loop().create_task(self._watch(receive))

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self.gone = True
        if self._wake is not None:
            self._wake()

    def __enter__(self) -> DisconnectWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self._task.cancel()
