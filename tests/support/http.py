"""Drive a Streamable HTTP MCP server over real sockets, checking everything it sends.

``LiveServer`` runs an ASGI app under a real uvicorn server on ``127.0.0.1`` (a free port,
pre-bound, so there is no race for it) in a background thread with its own event loop;
startup and shutdown are bounded. ``McpHttp`` is a raw client on ``httpx.AsyncClient``:
it builds the POST/GET/DELETE requests itself (so tests can send hostile ones), parses
SSE with mcpkit's ``SSEParser`` and validates every JSON-RPC message the server sends
(JSON bodies and SSE ``data:``) with a per-session ``WireChecker``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import uvicorn

from mcpkit.protocol.sse import SSEEvent, SSEParser

from .schemas import WireChecker

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / "examples" / "everything.py"
LATEST = "2025-11-25"
ACCEPT_BOTH = "application/json, text/event-stream"


def free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def everything_server() -> Any:
    """A fresh instance of ``examples/everything.py``'s server (its own tool registry)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_everything_{next(_counter)}", EVERYTHING)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server


_counter = itertools.count()


class LateApp:
    """An ASGI app whose ``app`` is set after ``LiveServer(LateApp())`` picked the port:
    for apps that must know their own URL (an OAuth resource URI is the URL it is reached
    at)."""

    app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


async def answer_lifespan(receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
    """Answer an ASGI lifespan scope: start-up and shutdown complete, nothing to do."""
    while (await receive())["type"] != "lifespan.shutdown":
        await send({"type": "lifespan.startup.complete"})
    await send({"type": "lifespan.shutdown.complete"})


async def read_body(receive: Callable[[], Any]) -> bytes:
    """The whole body of an ASGI HTTP request."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def replaying(body: bytes, receive: Callable[[], Any]) -> Callable[[], Any]:
    """An ASGI ``receive`` that gives ``body`` (already read by a middleware) to the app
    behind it, then whatever the client sends next (a disconnect)."""
    replayed = False

    async def replay() -> Any:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class LiveServer:
    """A real uvicorn server running ``app`` in a thread; a context manager."""

    def __init__(self, app: Any, *, startup_timeout: float = 10.0, debug: bool = False,
                 **uvicorn_options: Any) -> None:
        """``debug``: run the loop in asyncio debug mode, which raises on calls into it
        from a foreign thread (a thread-safety check; slower). ``uvicorn_options`` go to
        ``uvicorn.Config`` (e.g. ``http=`` a protocol class)."""
        self.app = app
        self.loop: asyncio.AbstractEventLoop | None = None
        self.startup_timeout = startup_timeout
        self._sock = free_socket()
        self.port = int(self._sock.getsockname()[1])
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"

        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            if self.loop is None:
                self.loop = asyncio.get_running_loop()
                self.loop.set_debug(debug)
            await app(scope, receive, send)

        config = uvicorn.Config(wrapped, lifespan="on", log_level="warning",
                                access_log=False, timeout_graceful_shutdown=1,
                                **{"timeout_keep_alive": 30, **uvicorn_options})
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, daemon=True, name="uvicorn")
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            self.server.run(sockets=[self._sock])
        except BaseException as exc:  # pragma: no cover - surfaced by __enter__/__exit__
            self.error = exc

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + self.startup_timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"uvicorn did not start: {self.error!r}")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(5)
        if self.thread.is_alive():  # pragma: no cover - only when shutdown hangs
            self.server.force_exit = True
            self.thread.join(5)
        self._sock.close()
        assert not self.thread.is_alive(), "uvicorn did not shut down within 10 s"

    def call(self, fn: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Run ``fn`` on the server's event loop thread and return its result."""
        assert self.loop is not None
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            try:
                fut.set_result(fn())
            except BaseException as exc:
                fut.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        return fut.result(timeout)


# ------------------------------------------------------------------------------ client


@dataclass
class Reply:
    """One HTTP answer: status, headers, and the JSON-RPC messages it carried."""

    status: int
    headers: httpx.Headers
    body: bytes
    messages: list[Any] = field(default_factory=list)  # decoded JSON bodies / SSE data
    events: list[SSEEvent] = field(default_factory=list)  # SSE events (incl. priming)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip()

    @property
    def json(self) -> Any:
        assert self.messages, f"no JSON body (status {self.status}, body {self.body[:200]!r})"
        return self.messages[-1]


class McpHttp:
    """A raw Streamable HTTP client for one session; validates what the server sends."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.checker = WireChecker("server")
        self.session_id: str | None = None
        self.version: str | None = None  # negotiated; sent as MCP-Protocol-Version
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        return next(self._ids)

    def headers(self, accept: str = ACCEPT_BOTH, **extra: str | None) -> dict[str, str]:
        h = {"accept": accept, "content-type": "application/json"}
        if self.session_id is not None:
            h["mcp-session-id"] = self.session_id
        if self.version is not None:
            h["mcp-protocol-version"] = self.version
        for key, value in extra.items():
            name = key.replace("_", "-")
            if value is None:
                h.pop(name, None)
            else:
                h[name] = value
        return h

    # ------------------------------------------------------------ checking

    def check(self, msg: Any, status: int) -> None:
        """Validate one JSON-RPC message (or batch) the server sent. An authorization
        refusal of the resource-server middleware (401/403/400 before any JSON-RPC
        processing) carries an OAuth error body (RFC 6750: ``error`` a string, optional
        ``error_description``) instead; that shape is checked here."""
        if (status in (400, 401, 403) and isinstance(msg, dict)
                and isinstance(msg.get("error"), str) and "jsonrpc" not in msg):
            assert set(msg) <= {"error", "error_description"}, msg
            assert isinstance(msg.get("error_description", ""), str), msg
            return
        if (status >= 400 and isinstance(msg, dict) and "error" in msg
                and "id" not in msg):
            msg = {**msg, "id": None}  # an id-less HTTP-level error (spec: MAY be sent)
        self.checker.check(msg)

    def check_body(self, status: int, headers: httpx.Headers, body: bytes) -> Reply:
        reply = Reply(status, headers, body)
        ctype = reply.content_type
        if ctype == "application/json" and body:
            msg = orjson.loads(body)
            self.check(msg, status)
            reply.messages.append(msg)
        elif ctype == "text/event-stream":
            parser = SSEParser()
            reply.events = parser.feed(body)
            for ev in reply.events:
                if ev.data:
                    msg = orjson.loads(ev.data)
                    self.check(msg, status)
                    reply.messages.append(msg)
        else:
            assert not body, f"unexpected body with content-type {ctype!r}: {body[:200]!r}"
        return reply

    # ------------------------------------------------------------ requests

    async def post_raw(self, content: bytes, headers: dict[str, str] | None = None,
                       timeout: float = 10.0) -> Reply:
        resp = await self.http.post(self.url, content=content,
                                    headers=headers if headers is not None else self.headers(),
                                    timeout=timeout)
        return self.check_body(resp.status_code, resp.headers, resp.content)

    async def post(self, msg: Any, headers: dict[str, str] | None = None,
                   timeout: float = 10.0) -> Reply:
        self.checker.saw_peer(msg)
        return await self.post_raw(orjson.dumps(msg), headers, timeout)

    async def request(self, method: str, params: dict[str, Any] | None = None,
                      rid: Any = None, **kw: Any) -> Reply:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id() if rid is None else rid,
                               "method": method}
        if params is not None:
            msg["params"] = params
        return await self.post(msg, **kw)

    async def notify(self, method: str, params: dict[str, Any] | None = None,
                     **kw: Any) -> Reply:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        return await self.post(msg, **kw)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None,
                        meta: dict[str, Any] | None = None, rid: Any = None,
                        **kw: Any) -> Reply:
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        return await self.request("tools/call", params, rid=rid, **kw)

    def init_message(self, version: str = LATEST, rid: Any = 0,
                     capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities or {},
            "clientInfo": {"name": "http-tests", "version": "0.0.1"}}}

    async def initialize(self, version: str = LATEST, *, initialized: bool = True,
                         capabilities: dict[str, Any] | None = None) -> Reply:
        """Handshake: initialize (must succeed with a session id) + initialized."""
        reply = await self.post(self.init_message(version, capabilities=capabilities),
                                headers=self.headers(mcp_protocol_version=None))
        assert reply.status == 200, (reply.status, reply.body)
        assert reply.content_type == "application/json"
        self.session_id = reply.headers.get("mcp-session-id")
        assert self.session_id, "no Mcp-Session-Id on the initialize answer"
        self.version = reply.json["result"]["protocolVersion"]
        if initialized:
            note = await self.notify("notifications/initialized")
            assert note.status == 202, (note.status, note.body)
        return reply

    async def delete(self, headers: dict[str, str] | None = None) -> Reply:
        resp = await self.http.delete(self.url, headers=headers or self.headers(), timeout=10)
        return self.check_body(resp.status_code, resp.headers, resp.content)

    async def get(self, headers: dict[str, str] | None = None, timeout: float = 10) -> Reply:
        """A GET that is expected to be refused (or to end by itself)."""
        resp = await self.http.get(self.url, headers=headers or self.headers(
            accept="text/event-stream"), timeout=timeout)
        return self.check_body(resp.status_code, resp.headers, resp.content)

    # ------------------------------------------------------------ live SSE streams

    @asynccontextmanager
    async def stream(self, method: str, content: bytes | None = None,
                     headers: dict[str, str] | None = None,
                     http: httpx.AsyncClient | None = None) -> AsyncIterator[LiveStream]:
        """Open a POST or GET and read its SSE stream incrementally (closed on exit)."""
        client = http or self.http
        req = client.build_request(method, self.url, content=content, headers=headers,
                                   timeout=httpx.Timeout(10, read=None))
        resp = await client.send(req, stream=True)
        live = LiveStream(self, resp)
        try:
            yield live
        finally:
            await resp.aclose()

    def open_get(self, last_event_id: str | None = None, **kw: Any) -> Any:
        h = self.headers(accept="text/event-stream", content_type=None,
                         last_event_id=last_event_id)
        return self.stream("GET", headers=h, **kw)

    def open_post(self, msg: Any, headers: dict[str, str] | None = None, **kw: Any) -> Any:
        self.checker.saw_peer(msg)
        return self.stream("POST", orjson.dumps(msg), headers or self.headers(), **kw)


class LiveStream:
    """An HTTP response read incrementally: SSE events (validated) or one JSON body."""

    def __init__(self, client: McpHttp, resp: httpx.Response) -> None:
        self.client = client
        self.resp = resp
        self.parser = SSEParser()
        self.pending: list[SSEEvent] = []
        self.events: list[SSEEvent] = []  # every event read so far (incl. priming)
        self._chunks = resp.aiter_raw()
        self.ended = False

    @property
    def status(self) -> int:
        return self.resp.status_code

    @property
    def content_type(self) -> str:
        return self.resp.headers.get("content-type", "").split(";")[0].strip()

    async def body(self) -> Reply:
        data = await self.resp.aread()
        return self.client.check_body(self.status, self.resp.headers, data)

    async def next_event(self, timeout: float = 5.0) -> SSEEvent:
        """The next SSE event (validated if it carries a message); bounded wait."""
        with anyio.fail_after(timeout):
            while not self.pending:
                try:
                    chunk = await self._chunks.__anext__()
                except StopAsyncIteration:
                    self.ended = True
                    raise EOFError("the SSE stream ended") from None
                self.pending.extend(self.parser.feed(chunk))
        ev = self.pending.pop(0)
        self.events.append(ev)
        if ev.data:
            self.client.check(orjson.loads(ev.data), self.status)
        return ev

    async def next_message(self, timeout: float = 5.0) -> tuple[SSEEvent, Any]:
        """The next event that carries a JSON-RPC message (skipping priming events)."""
        with anyio.fail_after(timeout):
            while True:
                ev = await self.next_event(timeout)
                if ev.data:
                    return ev, orjson.loads(ev.data)

    async def until_end(self, timeout: float = 10.0) -> list[tuple[SSEEvent, Any]]:
        """Read until the server ends the stream; every remaining message."""
        out: list[tuple[SSEEvent, Any]] = []
        with anyio.fail_after(timeout):
            while True:
                try:
                    ev = await self.next_event(timeout)
                except EOFError:
                    return out
                if ev.data:
                    out.append((ev, orjson.loads(ev.data)))

