"""Streamable HTTP, server side: one ASGI endpoint for POST, GET and DELETE.

Each HTTP session owns an ``HttpSession`` (a ``Session`` whose output is routed, not
written): a message related to an inbound request goes to that request's stream, anything
else to the session's standalone GET stream. A request's stream is answered as
``application/json`` when its response is the first thing produced, and as
``text/event-stream`` once the handler emits progress, logs or server->client requests
first (``response_mode="auto"``; ``"json"`` and ``"sse"`` force one). SSE streams begin
with a priming event (an id, ``retry`` and empty data); every event is stored in the
session's ``EventStore`` before it is written, so a client whose connection broke resumes
with ``GET`` + ``Last-Event-ID`` and gets exactly the missed events of that one stream.
A dropped connection never cancels the handler.

Security and limits: ``Origin`` (403) and ``Host`` (421) are checked against allow-lists
(localhost by default), honouring ``X-Forwarded-Host``/``Forwarded`` only from trusted
proxies; bodies are capped (413); sessions are capped (503, existing ones unaffected) and
expire when idle (then 404); in-flight requests are capped per session (429).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
import orjson

from ..protocol.connection import Connection, Outgoing, RequestReceived
from ..protocol.errors import HeaderMismatch, InvalidRequest, ProtocolError
from ..protocol.jsonrpc import RequestId, is_valid_id
from ..protocol.lifecycle import State
from ..protocol.sse import encode_event
from ..protocol.stateless import PROTOCOL_VERSION, is_modern, read_meta
from ..protocol.versions import DEFAULT_HTTP_VERSION, STATEFUL_VERSIONS
from ..session import HandlerResult, NotificationHandler, RequestHandler, Session
from ..storage.events import EventStore, MemoryEventStore
from ..storage.sessions import MemorySessionStore, SessionStore

log = logging.getLogger("mcpkit.http")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")


@dataclass
class HttpConfig:
    """Settings of a Streamable HTTP endpoint (all have production-minded defaults)."""

    path: str = "/mcp"
    response_mode: str = "auto"  # "auto" | "json" | "sse"
    allowed_hosts: Iterable[str] | None = None  # None: localhost names (any port)
    allowed_origins: Iterable[str] | None = None  # None: http(s)://localhost-ish origins
    trusted_proxies: Iterable[str] = ()  # client IPs whose X-Forwarded-Host/Forwarded count
    max_body: int = 4 * 1024 * 1024
    max_sessions: int = 10_000
    session_idle_timeout: float = 3600.0
    max_in_flight: int = 4096  # per session (429 past it)
    max_in_flight_total: int = 65536  # across sessions (503 past it)
    retry_ms: int = 1000
    enable_get: bool = True
    allow_delete: bool = True
    legacy_sse: bool = True  # also serve 2024-11-05 HTTP+SSE clients at /sse + /messages
    legacy_sse_path: str = "/sse"
    legacy_messages_path: str = "/messages"
    event_store: EventStore = field(default_factory=MemoryEventStore)
    session_store: SessionStore = field(default_factory=MemorySessionStore)


# ------------------------------------------------------------------------------ streams


class _Listener:
    """The live HTTP connection consuming one stream's events."""

    def __init__(self) -> None:
        self.items: list[tuple[str, bytes, bool]] = []
        self.wakeup = asyncio.Event()
        self.gone = False

    def put(self, event_id: str, data: bytes, final: bool) -> None:
        self.items.append((event_id, data, final))
        self.wakeup.set()

    async def take(self) -> list[tuple[str, bytes, bool]]:
        while not self.items and not self.gone:
            await self.wakeup.wait()
            self.wakeup = asyncio.Event()
        items, self.items = self.items, []
        return items


class _Stream:
    """One response stream (a POSTed request's, or the standalone GET stream)."""

    def __init__(self, session: HttpSession, stream_id: str, standalone: bool = False) -> None:
        self.session = session
        self.id = stream_id
        self.standalone = standalone
        self.queue: list[tuple[bytes, bool]] = []  # produced, not yet stored/sent
        self.wakeup = asyncio.Event()
        self.done = False  # the final message was produced
        self.closed = False  # the session ended: stop waiting for more
        self.sse = False  # switched to SSE (events are stored from then on)
        self.listener: _Listener | None = None
        self.finished = asyncio.Event()  # the final event was stored (and handed on)
        self._pump: Any = None

    def push(self, data: bytes, final: bool) -> None:
        self.queue.append((data, final))
        if final:
            self.done = True
        self.wakeup.set()

    async def first(self) -> tuple[bytes, bool]:
        while not self.queue:
            await self.wakeup.wait()
            self.wakeup = asyncio.Event()
        return self.queue[0]

    def start_sse(self) -> None:
        if not self.sse:
            self.sse = True
            loop = asyncio.get_running_loop()
            self._pump = loop.create_task(self._run_pump())
            self.session._track(self._pump)

    async def _run_pump(self) -> None:
        store = self.session.store
        sid = self.session.session_id
        try:
            rev = self.session.conn.revision
            if rev is None or rev.has("sse_priming"):  # older clients choke on empty data
                prime = await store.append(sid, self.id, b"")
                if self.listener is not None:
                    self.listener.put(prime, b"", False)
            while True:
                while not self.queue:
                    await self.wakeup.wait()
                    self.wakeup = asyncio.Event()
                batch, self.queue = self.queue, []
                for data, final in batch:
                    event_id = await store.append(sid, self.id, data)
                    if self.listener is not None:
                        self.listener.put(event_id, data, final)
                    if final:
                        self.finished.set()
                        return
        except Exception:
            log.exception("SSE stream %s of session %s failed", self.id, sid)
            self.finished.set()


class HttpSession(Session):
    """A ``Session`` whose output is routed to HTTP response streams."""

    __slots__ = ("_seq", "backlog", "direct", "last_seen", "last_standalone", "saved",
                 "session_id", "standalone", "store", "streams")

    def __init__(
        self,
        conn: Connection,
        session_id: str,
        store: EventStore,
        *,
        on_request: RequestHandler | None,
        on_notification: NotificationHandler | None,
    ) -> None:
        super().__init__(conn, _NoStream(), on_request=on_request,
                         on_notification=on_notification)
        self._asyncio_loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()  # notify() from other threads hops here
        self._loop_token = anyio.lowlevel.current_token()
        self.session_id = session_id
        self.store = store
        self.streams: dict[RequestId, _Stream] = {}
        self.standalone: _Stream | None = None
        self.last_standalone: _Stream | None = None  # the latest GET stream (resumable)
        self.backlog: list[bytes] = []  # server-initiated messages waiting for a GET stream
        self.direct: list[bytes] | None = None  # errors answering the POST being fed
        self.last_seen = time.monotonic()
        self.saved: dict[str, Any] | None = None  # the handshake state last stored
        self._seq = 0

    def new_stream_id(self) -> str:
        self._seq += 1
        return f"s{self._seq}"

    def _kick(self) -> None:
        for out in self.conn.messages_to_send():
            self._route(out)

    def _route(self, out: Outgoing) -> None:
        rid = out.related
        stream = self.streams.get(rid) if rid is not None else None
        if stream is not None:
            stream.push(out.data, out.final)
            if out.final:
                del self.streams[rid]  # type: ignore[arg-type]
            return
        if out.final and self.direct is not None:
            self.direct.append(out.data)
            return
        standalone = self.standalone
        if standalone is not None:
            standalone.push(out.data, False)
        elif len(self.backlog) < 1000:
            self.backlog.append(out.data)

    def feed(self, obj: Any) -> list[bytes]:
        """Give the connection one POSTed body; return errors that answer the POST itself."""
        self.last_seen = time.monotonic()
        self.direct = []
        try:
            self._feed(self.conn.receive_message, obj)
            return self.direct
        finally:
            self.direct = None

    def close(self) -> None:
        self._closed = True
        self._fail_waiters()
        for rid, handle in list(self._handles.items()):
            self._cancel(rid, handle)
        for task in list(self._tasks or ()):
            task.cancel()


class _NoStream:
    async def receive(self) -> bytes:
        raise anyio.EndOfStream

    async def send(self, data: bytes) -> None:
        raise anyio.ClosedResourceError

    async def aclose(self) -> None:
        return None


# ------------------------------------------------------------------------------ helpers


def _headers(scope: Scope) -> dict[str, str]:
    """Header name -> value; a value without the whitespace around it (RFC 9110 §5.5),
    which h11 strips but httptools leaves at the end."""
    out: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        name = key.decode("latin-1").lower()
        text = value.decode("latin-1").strip(" \t")
        out[name] = f"{out[name]}, {text}" if name in out else text
    return out


def _error_body(code: int, message: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "error": {"code": code, "message": message}})


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


async def _respond(send: Send, status: int, body: bytes = b"",
                   headers: list[tuple[bytes, bytes]] | None = None,
                   content_type: bytes = b"application/json") -> None:
    hdrs = list(headers or [])
    if body:
        hdrs.append((b"content-type", content_type))
    hdrs.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": body})


def _decode_header(value: str) -> str:
    """A header value, with the ``=?base64?…?=`` form for non-ASCII values decoded."""
    if value.startswith("=?base64?") and value.endswith("?="):
        import base64

        try:
            return base64.b64decode(value[9:-2], validate=True).decode()
        except (ValueError, UnicodeDecodeError):
            return "\x00invalid"
    return value


def _param_mismatch(declared: dict[str, str], arguments: Any,
                    headers: dict[str, str]) -> str | None:
    """Mcp-Param-* headers against the arguments of ``x-mcp-header`` parameters."""
    args = arguments if isinstance(arguments, dict) else {}
    for param, header in declared.items():
        got = headers.get(f"mcp-param-{header.lower()}")
        value = args.get(param)
        if value is None:
            if got is not None:
                return f"Mcp-Param-{header} is sent but argument {param!r} is absent"
            continue
        if not isinstance(value, str | int | float):  # bool is an int
            # An object or array cannot travel in a header, so no client sends one: the
            # argument breaks the tool's schema, and the isError result says how.
            if got is not None:
                return f"Mcp-Param-{header} is sent but argument {param!r} is not a primitive"
            continue
        if got is None:
            return f"the Mcp-Param-{header} header is missing (argument {param!r})"
        text = _decode_header(got)
        if isinstance(value, bool):
            ok = text == ("true" if value else "false")
        elif isinstance(value, int | float):
            try:
                ok = float(text) == float(value)
            except ValueError:
                ok = False
        else:
            ok = text == value
        if not ok:
            return f"Mcp-Param-{header} {got[:60]!r} differs from argument {param!r}"
    return None


def _header_mismatch(obj: dict[str, Any], params: dict[str, Any],
                     headers: dict[str, str],
                     param_headers: Callable[[str], dict[str, str]] | None = None,
                     ) -> str | None:
    """Why the routing headers disagree with the body, or None."""
    version = params["_meta"].get(PROTOCOL_VERSION)
    got = headers.get("mcp-protocol-version")
    if got is None:
        return "the MCP-Protocol-Version header is missing"
    if got != version:
        return f"MCP-Protocol-Version {got[:40]!r} differs from the body's {str(version)[:40]!r}"
    method = obj.get("method")
    got = headers.get("mcp-method")
    if got is None:
        return "the Mcp-Method header is missing"
    if got != method:
        return f"Mcp-Method {got[:60]!r} differs from the body's {str(method)[:60]!r}"
    name_key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(
        str(method))
    if name_key is not None:
        got = headers.get("mcp-name")
        if got is None:
            return "the Mcp-Name header is missing"
        if _decode_header(got) != params.get(name_key):
            return f"Mcp-Name {got[:60]!r} differs from the body's {name_key}"
        if method == "tools/call" and param_headers is not None:
            declared = param_headers(str(params.get("name")))
            if declared:
                return _param_mismatch(declared, params.get("arguments"), headers)
    return None


def _error_with_id(rid: Any, exc: ProtocolError) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "error": exc.to_error()}
    if is_valid_id(rid):
        body["id"] = rid
    return orjson.dumps(body)


def _modern_status(data: bytes) -> int:
    """The HTTP status of a stateless answer: 404 for -32601, 400 for request errors."""
    if b'"error"' not in data:
        return 200
    try:
        code = orjson.loads(data)["error"]["code"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return 200
    if code == -32601:
        return 404
    return 400 if code in (-32600, -32020, -32021, -32022, -32700) else 200


SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
               (b"x-accel-buffering", b"no")]


def _watch_disconnect(receive: Receive, on_gone: Callable[[], None]) -> Any:
    """A plain asyncio task calling ``on_gone`` when the client disconnects (the request
    body was read already, so the next ASGI message can only be the disconnect); the
    caller cancels it when done. (An anyio task group here cost more than the request.)"""

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        on_gone()

    return asyncio.get_running_loop().create_task(watch())


async def _first_unless_gone(stream: _Stream, receive: Receive) -> tuple[bytes, bool] | None:
    """The stream's first message, or None if the client disconnected before it came."""
    if stream.queue:
        return stream.queue[0]
    gone = False

    def went() -> None:
        nonlocal gone
        gone = True
        stream.wakeup.set()

    watcher = _watch_disconnect(receive, went)
    try:
        while not stream.queue and not gone:
            await stream.wakeup.wait()
            stream.wakeup = asyncio.Event()
    finally:
        watcher.cancel()
    return None if gone and not stream.queue else stream.queue[0]


async def relay(stream: _Stream, send: Send, is_gone: Callable[[], bool]) -> None:
    """Write a stream's messages as plain SSE events (no ids: nothing to resume) until its
    final message, the client's departure, or the end of its session."""
    done = False
    while not done and not is_gone() and not stream.closed:
        while not stream.queue and not is_gone() and not stream.closed:
            await stream.wakeup.wait()
            stream.wakeup = asyncio.Event()
        batch, stream.queue = stream.queue, []
        for data, final in batch:
            await send({"type": "http.response.body", "body": encode_event(data),
                        "more_body": True})
            done = done or final


class _Refused(Exception):
    def __init__(self, status: int, message: str, code: int = -32600,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers


# ------------------------------------------------------------------------------ the app


class StreamableHTTPApp:
    """The ASGI application of one MCP endpoint (see the module docstring).

    ``new_connection()`` builds a server ``Connection`` for a new session; ``on_request``
    and ``on_notification`` are the session handlers (as for stdio).
    """

    def __init__(
        self,
        new_connection: Callable[[], Connection],
        *,
        on_request: Callable[[Session, RequestReceived], HandlerResult],
        on_notification: NotificationHandler | None = None,
        config: HttpConfig | None = None,
        on_session: Callable[[HttpSession, bool], None] | None = None,
        lifespan: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
        param_headers: Callable[[str], dict[str, str]] | None = None,
    ) -> None:
        self.config = config or HttpConfig()
        self.lifespan = lifespan
        self.param_headers = param_headers  # tool name -> {param: x-mcp-header name}
        self.new_connection = new_connection
        self.on_request = on_request
        self.on_notification = on_notification
        self.on_session = on_session
        self.sessions: dict[str, HttpSession] = {}
        self.in_flight = 0  # POSTed requests being answered, all sessions
        self._last_sweep = 0.0
        cfg = self.config
        self._hosts = None if cfg.allowed_hosts is None else {
            _host_name(h) for h in cfg.allowed_hosts}
        self._origins = None if cfg.allowed_origins is None else {
            o.rstrip("/").lower() for o in cfg.allowed_origins}
        self._proxies = set(cfg.trusted_proxies)
        self.legacy: Any = None
        if cfg.legacy_sse:
            from .legacy_sse import LegacySSE

            self.legacy = LegacySSE(self, cfg.legacy_sse_path, cfg.legacy_messages_path)

    # ------------------------------------------------------------------ ASGI entry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        path = scope.get("path", "")
        if self.legacy is not None and self.legacy.handles(path):
            await self.legacy(scope, receive, send)
            return
        if path.rstrip("/") != self.config.path.rstrip("/"):
            await _respond(send, 404, _error_body(-32600, f"Not found: the MCP endpoint is "
                                                  f"{self.config.path}"))
            return
        headers = _headers(scope)
        try:
            self._check_origin_and_host(scope, headers)
            method = scope["method"]
            if method == "POST":
                await self._post(scope, headers, receive, send)
            elif method == "GET":
                await self._get(headers, send, receive)
            elif method == "DELETE":
                await self._delete(headers, send)
            else:
                raise _Refused(405, "Method not allowed: use POST, GET or DELETE.",
                               headers=[(b"allow", b"GET, POST, DELETE")])
        except _Refused as exc:
            await _respond(send, exc.status, _error_body(exc.code, exc.message), exc.headers)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """ASGI lifespan: enter the server's lifespan at startup, leave it at shutdown.

        (When this app is mounted inside another ASGI app, forward the lifespan to it or
        enter ``Server.lifespan_scope()`` in the outer app's lifespan.)"""
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with AsyncExitStack() as stack:
            try:
                if self.lifespan is not None:
                    await stack.enter_async_context(self.lifespan())
            except Exception as exc:
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
            while (await receive())["type"] != "lifespan.shutdown":
                pass
            self.close_all()
        await send({"type": "lifespan.shutdown.complete"})

    def close_all(self) -> None:
        """End every session (server shutdown): handlers cancelled, streams ended."""
        sessions = list(self.sessions.values())
        if self.legacy is not None:
            sessions += list(self.legacy.sessions.values())
        for session in sessions:
            session.close()
            for stream in (session.standalone, *session.streams.values()):
                if stream is not None and stream.listener is not None:
                    stream.listener.gone = True
                    stream.listener.wakeup.set()
                if stream is not None:
                    stream.closed = True
                    stream.wakeup.set()
        self.sessions.clear()

    # ------------------------------------------------------------------ checks

    def _check_origin_and_host(self, scope: Scope, headers: dict[str, str]) -> None:
        host = headers.get("host", "")
        client = scope.get("client")
        if client and client[0] in self._proxies:
            forwarded = headers.get("x-forwarded-host")
            fwd = headers.get("forwarded")
            if fwd:
                for part in fwd.split(",")[0].split(";"):
                    key, _, value = part.strip().partition("=")
                    if key.lower() == "host":
                        forwarded = value.strip('"')
            if forwarded:
                host = forwarded.split(",")[0].strip()
        name = _host_name(host)
        allowed = self._hosts if self._hosts is not None else set(LOCAL_HOSTS)
        if "*" not in allowed and name not in allowed:
            raise _Refused(421, f"Misdirected request: Host {host!r} is not served here. If "
                                "this server is behind a proxy, configure allowed_hosts or "
                                "trusted_proxies.")
        origin = headers.get("origin")
        if origin is not None:
            o = origin.rstrip("/").lower()
            if self._origins is not None:
                ok = "*" in self._origins or o in self._origins
            else:
                scheme, _, rest = o.partition("://")
                ok = scheme in ("http", "https") and _host_name(rest) in LOCAL_HOSTS
            if not ok:
                raise _Refused(403, f"Forbidden: Origin {origin!r} is not allowed.")

    async def _session(self, headers: dict[str, str]) -> HttpSession:
        sid = headers.get("mcp-session-id")
        if not sid:
            raise _Refused(400, "Bad request: the Mcp-Session-Id header is required; send "
                                "'initialize' first to get one.")
        session = self.sessions.get(sid)
        if session is not None and (
            time.monotonic() - session.last_seen > self.config.session_idle_timeout
        ):
            self._end(sid)
            session = None
        elif session is None and len(sid) <= 100:
            session = await self._restore(sid)
        if session is None:
            raise _Refused(404, "Session not found: it expired or was ended; start a new one "
                                "with 'initialize' (without Mcp-Session-Id).", code=-32001)
        return session

    async def _restore(self, sid: str) -> HttpSession | None:
        """A session of an earlier run of this server, from the session store."""
        record = await self.config.session_store.load(sid)
        if record is None or len(self.sessions) >= self.config.max_sessions:
            return None
        conn = self.new_connection()
        try:
            conn.restore(record)
        except ValueError:
            return None
        session = HttpSession(conn, sid, self.config.event_store, on_request=self.on_request,
                              on_notification=self.on_notification)
        session.saved = conn.snapshot()
        self.sessions[sid] = session
        if self.on_session is not None:
            self.on_session(session, True)
        return session

    async def _persist(self, session: HttpSession) -> None:
        """Save the session's handshake state when it changed (initialized, log level)."""
        conn, saved = session.conn, session.saved
        if saved is not None and saved["log_level"] == conn.log_level and saved["ready"] == (
            conn.state is State.READY
        ):
            return  # the common case, checked without building a snapshot
        snap = conn.snapshot()
        if snap != saved:
            session.saved = snap
            await self.config.session_store.save(session.session_id, snap)

    def _check_version(self, headers: dict[str, str], session: HttpSession) -> None:
        version = headers.get("mcp-protocol-version")
        negotiated = session.conn.revision.version if session.conn.revision else None
        if version is None:
            return  # absent: the server assumes 2025-03-26, or knows it from the session
        if version not in STATEFUL_VERSIONS or (negotiated and version != negotiated):
            raise _Refused(400, f"Bad request: unsupported MCP-Protocol-Version {version!r}; "
                                f"this session uses {negotiated or DEFAULT_HTTP_VERSION}.")

    def _end(self, sid: str) -> None:
        session = self.sessions.pop(sid, None)
        if session is not None:
            session.close()
            if self.on_session is not None:
                self.on_session(session, False)
            loop = asyncio.get_running_loop()
            for coro in (self.config.event_store.drop(sid),
                         self.config.session_store.delete(sid)):
                task = loop.create_task(coro)
                task.add_done_callback(lambda t: t.exception())

    def _expire_idle(self, force: bool = False) -> None:
        """End sessions idle past the timeout. Sweeps at most once a second (or when the
        session cap is reached), so opening sessions stays O(1) however many are open."""
        now = time.monotonic()
        if not force and now - self._last_sweep < 1.0:
            return
        self._last_sweep = now
        limit = self.config.session_idle_timeout
        for sid, session in list(self.sessions.items()):
            if now - session.last_seen > limit and not session.streams:
                self._end(sid)

    # ------------------------------------------------------------------ POST

    async def _read_body(self, headers: dict[str, str], receive: Receive) -> bytes:
        limit = self.config.max_body
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise _Refused(413, f"Payload too large: the limit is {limit} bytes.")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Refused(400, "Client disconnected.")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _Refused(413, f"Payload too large: the limit is {limit} bytes.")
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    async def _post(self, scope: Scope, headers: dict[str, str], receive: Receive,
                    send: Send) -> None:
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise _Refused(415, "Unsupported media type: POST bodies must be "
                                "Content-Type: application/json.")
        accept = headers.get("accept", "").lower()
        if not (("application/json" in accept or "*/*" in accept)
                and ("text/event-stream" in accept or "*/*" in accept)):
            raise _Refused(406, "Not acceptable: the Accept header must list both "
                                "application/json and text/event-stream.")
        body = await self._read_body(headers, receive)
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise _Refused(400, "Parse error: the body is not valid JSON (UTF-8).",
                           code=-32700) from None
        messages = obj if isinstance(obj, list) else [obj]
        if isinstance(obj, dict) and (
            is_modern(obj.get("params")) or (
                "mcp-session-id" not in headers and obj.get("method") != "initialize")
        ):
            # 2026-07-28: self-describing requests (and any session-less request, which
            # is judged by the modern rules: missing _meta -> -32602)
            await self._post_modern(obj, headers, send, receive)
            return
        is_init = any(isinstance(m, dict) and m.get("method") == "initialize" for m in messages)
        if is_init and "mcp-session-id" not in headers:
            if isinstance(obj, list):
                raise _Refused(400, "Invalid request: 'initialize' must not be in a batch.")
            await self._initialize(obj, send)
            return
        session = await self._session(headers)
        self._check_version(headers, session)
        request_ids = [m["id"] for m in messages if isinstance(m, dict) and "method" in m
                       and "id" in m and is_valid_id(m["id"])]
        if not request_ids:
            direct = session.feed(obj)
            await self._persist(session)
            if direct:
                await _respond(send, 400, direct[0])
            else:
                await _respond(send, 202)
            return
        if len(session._handles) + len(request_ids) > self.config.max_in_flight:
            raise _Refused(429, "Too many requests in flight on this session; wait for some "
                                "answers and retry.", headers=[(b"retry-after", b"1")])
        if self.in_flight >= self.config.max_in_flight_total:
            raise _Refused(503, "Service unavailable: the server is at its limit of requests "
                                "in flight; retry shortly.", headers=[(b"retry-after", b"1")])
        key = request_ids[0]
        if key in session.streams or (not isinstance(obj, list) and key in session._handles):
            await _respond(send, 200, _error_body(
                -32600, f"Invalid Request: request id {key!r} is already in use by a request "
                        "still in progress; use a new id for every request."))
            return
        stream = _Stream(session, session.new_stream_id())
        session.streams[key] = stream
        direct = session.feed(obj)
        await self._persist(session)
        if direct and not stream.queue:
            session.streams.pop(key, None)
            await _respond(send, 400, direct[0])
            return
        mode = "json" if isinstance(obj, list) else self.config.response_mode
        self.in_flight += 1
        try:
            await self._answer(stream, mode, send, receive)
        finally:
            self.in_flight -= 1

    # ------------------------------------------------------------------ 2026-07-28

    async def _post_modern(self, obj: dict[str, Any], headers: dict[str, str], send: Send,
                           receive: Receive) -> None:
        """A stateless request: no session; headers must match the body; errors get their
        HTTP status; closing the response stream cancels the handler."""
        params = obj.get("params")
        if not isinstance(params, dict):
            params = {}
        rid = obj.get("id")
        if not isinstance(obj.get("method"), str):
            await _respond(send, 400, _error_with_id(rid, InvalidRequest(
                "Invalid Request: a request needs a string 'method' (a client sends only "
                "requests and notifications to this endpoint).")))
            return
        try:
            read_meta(params, None)  # missing/partial _meta: -32602 (HTTP 400)
        except ProtocolError as exc:
            await _respond(send, 400, _error_with_id(rid, exc))
            return
        mismatch = _header_mismatch(obj, params, headers, self.param_headers)
        if mismatch:
            await _respond(send, 400, _error_with_id(rid, HeaderMismatch(
                f"Header mismatch: {mismatch}. Send the MCP-Protocol-Version, Mcp-Method and "
                "Mcp-Name headers with the same values as the body.")))
            return
        # From here the connection judges the request (an unsupported version is its -32022,
        # which _modern_status answers with 400); a notification is only checked here.
        if not is_valid_id(rid):
            try:
                read_meta(params)
            except ProtocolError as exc:
                await _respond(send, 400, _error_with_id(rid, exc))
                return
        session = HttpSession(self.new_connection(), "", self.config.event_store,
                              on_request=self.on_request, on_notification=self.on_notification)
        if not is_valid_id(rid):
            direct = session.feed(obj)
            await _respond(send, 400 if direct else 202, direct[0] if direct else b"")
            return
        assert isinstance(rid, str | int)
        stream = _Stream(session, "m")
        session.streams[rid] = stream
        session.feed(obj)
        self.in_flight += 1
        try:
            first = await _first_unless_gone(stream, receive)
            if first is None:
                return  # the client went away before the answer began: cancelled below
            data, final = first
            if final and self.config.response_mode != "sse":
                await _respond(send, _modern_status(data), data)
                return
            await self._sse_modern(stream, send, receive)
        finally:
            self.in_flight -= 1
            session.close()  # ends the handler if the client went away first

    async def _sse_modern(self, stream: _Stream, send: Send, receive: Receive) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        gone = False

        def went() -> None:
            nonlocal gone
            gone = True
            stream.wakeup.set()

        watcher = _watch_disconnect(receive, went)
        try:
            await relay(stream, send, lambda: gone)
            if not gone:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass
        finally:
            watcher.cancel()

    async def _initialize(self, obj: Any, send: Send) -> None:
        self._expire_idle()
        if len(self.sessions) >= self.config.max_sessions:
            self._expire_idle(force=True)
        if len(self.sessions) >= self.config.max_sessions:
            raise _Refused(503, "Service unavailable: too many open sessions; retry later.",
                           headers=[(b"retry-after", b"5")])
        sid = secrets.token_urlsafe(24)
        session = HttpSession(self.new_connection(), sid, self.config.event_store,
                              on_request=self.on_request,
                              on_notification=self.on_notification)
        rid = obj.get("id") if isinstance(obj, dict) else None
        if not is_valid_id(rid):
            direct = session.feed(obj)
            await _respond(send, 400, direct[0] if direct else _error_body(
                -32600, "Invalid Request: initialize needs a string or integer id."))
            return
        assert isinstance(rid, str | int)
        stream = _Stream(session, session.new_stream_id())
        session.streams[rid] = stream
        session.feed(obj)
        data, _final = await stream.first()
        if session.conn.revision is None:  # initialize was refused (bad params)
            await _respond(send, 200, data)
            return
        self.sessions[sid] = session
        if self.on_session is not None:
            self.on_session(session, True)
        await self._persist(session)
        await _respond(send, 200, data, [(b"mcp-session-id", sid.encode())])

    async def _answer(self, stream: _Stream, mode: str, send: Send, receive: Receive) -> None:
        data, final = await stream.first()
        if mode == "json" or (mode == "auto" and final):
            if mode == "json":
                while not final:  # intermediate messages go to the standalone stream
                    stream.queue.pop(0)
                    if stream.session.standalone is not None:
                        stream.session.standalone.push(data, False)
                    data, final = await stream.first()
            stream.queue.clear()
            await _respond(send, 200, data)
            return
        listener = _Listener()
        stream.listener = listener
        stream.start_sse()
        await self._sse(stream, listener, send, receive, skip_through=None)

    async def _sse(self, stream: _Stream, listener: _Listener, send: Send, receive: Receive,
                   skip_through: int | None,
                   replay: list[tuple[str, bytes]] | None = None) -> None:
        retry = self.config.retry_ms
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        first = True

        def went() -> None:
            listener.gone = True
            listener.wakeup.set()

        watcher = _watch_disconnect(receive, went)
        try:
            for event_id, data in replay or ():
                if data:
                    await send({"type": "http.response.body", "body": encode_event(
                        data, event_id), "more_body": True})
            done = stream.done and stream.finished.is_set() and not listener.items
            while not done and not listener.gone:
                items = await listener.take() if not listener.gone else []
                if listener.gone:
                    break
                for event_id, data, final in items:
                    seq = int(event_id.rpartition("_")[2])
                    if skip_through is not None and seq <= skip_through:
                        continue
                    chunk = encode_event(data, event_id, retry if first else None)
                    first = False
                    await send({"type": "http.response.body", "body": chunk,
                                "more_body": True})
                    if final:
                        done = True
            if not listener.gone:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away; the stream keeps storing for resumption
        finally:
            if stream.listener is listener:
                stream.listener = None
            watcher.cancel()

    # ------------------------------------------------------------------ GET / DELETE

    async def _get(self, headers: dict[str, str], send: Send, receive: Receive) -> None:
        if "text/event-stream" not in headers.get("accept", "").lower():
            raise _Refused(406, "Not acceptable: GET needs Accept: text/event-stream.")
        if not self.config.enable_get:
            raise _Refused(405, "Method not allowed: this server has no GET stream.",
                           headers=[(b"allow", b"POST, DELETE")])
        session = await self._session(headers)
        self._check_version(headers, session)
        session.last_seen = time.monotonic()
        last = headers.get("last-event-id")
        if last is not None:
            await self._resume(session, last.strip(), send, receive)
            return
        if session.standalone is not None and not session.standalone.done:
            raise _Refused(409, "Conflict: this session already has an open GET stream.")
        listener = _Listener()
        stream = _Stream(session, session.new_stream_id(), standalone=True)
        self._open_standalone(session, stream, listener)
        try:
            await self._sse(stream, listener, send, receive, skip_through=None)
        finally:
            self._release_standalone(session, stream)

    def _open_standalone(self, session: HttpSession, stream: _Stream,
                         listener: _Listener) -> None:
        """Make ``stream`` the session's GET stream, read by ``listener``'s connection."""
        session.standalone = session.last_standalone = stream
        stream.listener = listener
        for data in session.backlog:
            stream.push(data, False)
        session.backlog.clear()
        stream.start_sse()

    def _release_standalone(self, session: HttpSession, stream: _Stream) -> None:
        """The GET stream's connection ended: unless a resumed one took it over, messages
        wait in the backlog for the next GET (or the resumption of this one)."""
        if session.standalone is stream and stream.listener is None:
            session.standalone = None
            session.backlog[:0] = [d for d, _ in stream.queue]
            stream.queue.clear()

    async def _resume(self, session: HttpSession, last: str, send: Send,
                      receive: Receive) -> None:
        store = self.config.event_store
        if await store.replay(session.session_id, last) is None:  # before touching a stream
            raise _Refused(400, "Bad request: Last-Event-ID is not an event of this session; "
                                "open a new stream without it.")
        stream_id = last.rpartition("_")[0]
        live = next((s for s in session.streams.values() if s.id == stream_id), None)
        reopen = False
        standalone = session.last_standalone
        if live is None and standalone is not None and standalone.id == stream_id:
            live = standalone
            reopen = session.standalone is None  # its connection broke: resuming reopens it
        listener = _Listener()
        if live is not None:
            # Attach first: nothing stored from now on is missed. A connection still attached
            # broke unnoticed so far (a quick reconnect): this one takes over.
            old, live.listener = live.listener, listener
            if old is not None:
                old.gone = True
                old.wakeup.set()
            if reopen:
                self._open_standalone(session, live, listener)
        replay = await store.replay(session.session_id, last)
        _, events = replay or (stream_id, [])  # (None: the session ended meanwhile)
        if live is None or live.listener is not listener:
            live = _Stream(session, stream_id)  # finished (or taken): replay only
            live.done = True
            live.finished.set()
        last_seq = int(events[-1][0].rpartition("_")[2]) if events else int(
            last.rpartition("_")[2])
        try:
            await self._sse(live, listener, send, receive, skip_through=last_seq,
                            replay=events)
        finally:
            if live.standalone:
                self._release_standalone(session, live)

    async def _delete(self, headers: dict[str, str], send: Send) -> None:
        if not self.config.allow_delete:
            raise _Refused(405, "Method not allowed: sessions end when they expire.",
                           headers=[(b"allow", b"GET, POST")])
        session = await self._session(headers)
        self._end(session.session_id)
        await _respond(send, 200)
