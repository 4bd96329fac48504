"""Streamable HTTP, client side (httpx), presented to the session as a byte stream.

``send(data)`` takes newline-framed messages and POSTs each one in its own task (a long
SSE answer never holds up the next message); answers — JSON bodies or SSE events — come
back through ``receive()`` as lines. On the way it:

- sends ``Accept: application/json, text/event-stream``, ``Mcp-Session-Id`` once the
  server assigned one, and ``MCP-Protocol-Version`` once negotiated;
- resumes a broken SSE answer with ``GET`` + ``Last-Event-ID`` after the server's
  ``retry`` delay, until the response arrives (bounded attempts);
- opens the standalone GET stream after the handshake (a 405 just means none);
- on a 404 for its session, starts a new session by replaying ``initialize`` and
  ``notifications/initialized`` (their answer is swallowed), then resends the message;
- turns HTTP failures of a request into a JSON-RPC error for that request id, so the
  caller sees one clear error instead of a hang;
- sends ``DELETE`` when closed.

``headers`` are added to every request; ``auth`` is an ``httpx.Auth`` (e.g. a bearer
token flow) applied to every request.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urljoin

import anyio
import httpx
import orjson
from anyio.abc import TaskGroup

from ..protocol.sse import SSEParser
from ..protocol.stateless import PROTOCOL_VERSION

log = logging.getLogger("mcpkit.client.http")
ACCEPT = "application/json, text/event-stream"
_REINIT_ID = "mcpkit-reinitialize"


def connect_failure(url: str, exc: httpx.TransportError) -> str:
    """Say in words why a connection to ``url`` failed: what a person can act on
    ("nothing is listening on 127.0.0.1:8765") rather than the exception's class name."""
    parts = httpx.URL(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    where = f"{parts.host}:{port}"
    text = str(exc) or exc.__class__.__name__
    lowered = text.lower()
    if isinstance(exc, httpx.ConnectTimeout):
        return f"{where} did not accept the connection in time"
    if "refused" in lowered or "all connection attempts failed" in lowered:
        return f"nothing is listening on {where} (connection refused)"
    if "name or service not known" in lowered or "nodename nor servname" in lowered or (
            "getaddrinfo" in lowered) or "name resolution" in lowered:
        return f"cannot resolve the host name {parts.host!r}"
    if "ssl" in lowered or "certificate" in lowered:
        return f"TLS handshake with {where} failed: {text}"
    return f"cannot connect to {where}: {text}"


class HttpClientStream:
    """A ByteStream over a Streamable HTTP endpoint (see the module docstring)."""

    def __init__(
        self,
        url: str,
        tg: TaskGroup,
        *,
        headers: dict[str, str] | None = None,
        auth: httpx.Auth | None = None,
        http: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        max_resumes: int = 10,
        open_get_stream: bool = True,
    ) -> None:
        self.url = url
        self._tg = tg
        self._own_http = http is None
        self.http = http or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, read=None), follow_redirects=False
        )
        self.extra_headers = dict(headers or {})
        self.auth = auth
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.max_resumes = max_resumes
        self.open_get_stream = open_get_stream
        self._send, self._receive = anyio.create_memory_object_stream[bytes](1024)
        self._init_message: dict[str, Any] | None = None
        self.param_headers: dict[str, dict[str, str]] = {}  # tool -> {param: x-mcp-header}
        self._modern_posts: dict[Any, anyio.CancelScope] = {}  # 2026 request id -> its POST
        self._id_alias: dict[str, Any] = {}  # re-issued request id -> the original id
        self.legacy_endpoint: str | None = None  # set when talking HTTP+SSE (2024-11-05)
        self._legacy_tried = False
        self._get_started = False
        self._get_ready = anyio.Event()  # the GET stream connected (or was refused)
        self._reinit_lock = anyio.Lock()  # after a 404: one new session, not one per request
        self._closed = False
        # Why the server could not be reached at all (nothing listening, unknown host, no
        # answer to the connection attempt), set on the first such failure; ``None`` while
        # every connection attempt got through.
        self.unreachable: str | None = None

    # ------------------------------------------------------------------ ByteStream

    async def receive(self) -> bytes:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            raise
        except anyio.ClosedResourceError:
            raise anyio.EndOfStream from None

    async def send(self, data: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            if self._modern_posts and b'"notifications/cancelled"' in line:
                rid = _cancelled_id(line)
                scope = self._modern_posts.get(rid) if rid is not None else None
                if scope is not None:
                    # 2026-07-28 over HTTP: closing the request's stream is the cancellation
                    scope.cancel()
                    continue
            if _is_handshake(line):
                # The handshake goes out in order, and the GET stream is open before
                # anything else is sent (a server may use it right away).
                await self._post_task(line)
            else:
                self._tg.start_soon(self._post_task, line)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            if self.session_id is not None:
                try:
                    with anyio.move_on_after(5):
                        await self.http.delete(self.url, headers=self._headers(False))
                except httpx.HTTPError:
                    pass
            if self._own_http:
                await self.http.aclose()
        self._send.close()
        self._receive.close()

    # ------------------------------------------------------------------ internals

    def _headers(self, post: bool = True) -> dict[str, str]:
        h = {"accept": ACCEPT if post else "text/event-stream", **self.extra_headers}
        if post:
            h["content-type"] = "application/json"
        if self.session_id:
            h["mcp-session-id"] = self.session_id
        if self.protocol_version:
            h["mcp-protocol-version"] = self.protocol_version
        return h

    async def _deliver(self, data: bytes) -> None:
        if not self._closed:
            try:
                await self._send.send(data + b"\n")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

    async def _fail(self, msg: Any, message: str, code: int = -32000) -> None:
        if isinstance(msg, dict) and "method" in msg and "id" in msg:
            await self._deliver(orjson.dumps({
                "jsonrpc": "2.0", "id": msg["id"],
                "error": {"code": code, "message": message},
            }))
        else:
            log.warning("%s", message)

    async def _post_task(self, line: bytes) -> None:
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        rid = msg.get("id") if isinstance(msg, dict) and "method" in msg else None
        modern = rid is not None and _modern_headers(msg) is not None
        try:
            if modern:
                with anyio.CancelScope() as scope:
                    self._modern_posts[rid] = scope
                    try:
                        await self._post_reissuing(line, msg)
                    finally:
                        self._modern_posts.pop(rid, None)
            else:
                await self._post(line, msg, retry_on_404=True)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            reason = connect_failure(self.url, exc)
            self.unreachable = self.unreachable or reason
            await self._fail(msg, f"cannot reach {self.url}: {reason}")
        except httpx.HTTPError as exc:
            await self._fail(msg, f"HTTP transport error: {exc.__class__.__name__}: {exc}")
        except Exception as exc:
            log.exception("POST failed")
            await self._fail(msg, f"HTTP transport failure: {exc}")

    async def _post_reissuing(self, line: bytes, msg: dict[str, Any]) -> None:
        """A 2026-07-28 request: there is no resumption, so if its answer stream breaks
        before the answer, the request is sent again as a new request (a new id; the
        answer is handed back under the original id)."""
        original = msg["id"]
        for attempt in range(1, 4):
            try:
                await self._post(line, msg, retry_on_404=False)
                return
            except (_StreamBroke, httpx.ReadError, httpx.RemoteProtocolError):
                if self._closed:
                    return
                log.info("the answer stream of request %r broke; sending it again", original)
            new_id = f"{original}~{attempt}"
            self._id_alias[new_id] = original
            msg = {**msg, "id": new_id}
            line = orjson.dumps(msg)
        await self._fail({"id": original, "method": "?"},
                         "the server's answer stream broke three times; giving up")

    async def _post(self, line: bytes, msg: Any, *, retry_on_404: bool) -> None:
        if self.legacy_endpoint is not None:
            await self._post_legacy(line, msg)
            return
        is_init = isinstance(msg, dict) and msg.get("method") == "initialize"
        if is_init:
            self._init_message = msg
            self.session_id = None
        request_id = msg.get("id") if isinstance(msg, dict) and "method" in msg else None
        headers = self._headers()
        modern = _modern_headers(msg, self.param_headers)
        if modern is not None:  # 2026-07-28: no session; routing headers mirror the body
            headers.pop("mcp-session-id", None)
            headers.pop("mcp-protocol-version", None)
            headers.update(modern)
        sent_sid = headers.get("mcp-session-id")
        async with self.http.stream("POST", self.url, content=line, headers=headers,
                                    auth=self.auth or httpx.USE_CLIENT_DEFAULT) as resp:
            if modern is not None and resp.status_code >= 400:
                body = (await resp.aread()).strip()
                if body.startswith(b"{") and request_id is not None:
                    await self._on_message(body, False)  # the JSON-RPC error itself
                else:
                    await self._fail(msg, f"HTTP {resp.status_code} from the server")
                return
            if resp.status_code == 404 and sent_sid and retry_on_404 and not is_init:
                await resp.aread()
                async with self._reinit_lock:
                    if self.session_id == sent_sid:  # not yet replaced by a concurrent 404
                        await self._reinitialize()
                await self._post(line, msg, retry_on_404=False)
                return
            if resp.status_code == 202:
                await resp.aread()
                if isinstance(msg, dict) and msg.get("method") == "notifications/initialized":
                    self._start_get_stream()
                    with anyio.move_on_after(5):
                        await self._get_ready.wait()
                return
            if is_init and resp.status_code in (400, 404, 405) and not self._legacy_tried:
                await resp.aread()
                self._legacy_tried = True
                if await self._open_legacy():
                    await self._post_legacy(line, msg)
                    return
                await self._fail(msg, f"HTTP {resp.status_code} from the server, and it has "
                                      "no HTTP+SSE (2024-11-05) endpoint either")
                return
            if resp.status_code >= 400:
                body = (await resp.aread())[:2000]
                detail = _error_message(body) or body.decode(errors="replace")[:300]
                await self._fail(msg, f"HTTP {resp.status_code} from the server: {detail}")
                return
            sid = resp.headers.get("mcp-session-id")
            if sid and is_init:
                self.session_id = sid
            ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype == "text/event-stream":
                await self._read_sse(resp, request_id, is_init)
            else:
                body = await resp.aread()
                if body.strip():
                    await self._on_message(body.strip(), is_init)

    async def _on_message(self, data: bytes, is_init: bool) -> bool:
        """Deliver one message; True if it was a response (result or error)."""
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            log.warning("the server sent a non-JSON message; ignored")
            return False
        if isinstance(obj, dict) and obj.get("id") == _REINIT_ID:
            return True  # the answer to our own re-initialize
        if isinstance(obj, dict) and "method" not in obj and obj.get("id") in self._id_alias:
            obj["id"] = self._id_alias.pop(obj["id"])  # the answer to a re-issued request
            data = orjson.dumps(obj)
        if is_init and isinstance(obj, dict) and isinstance(obj.get("result"), dict):
            version = obj["result"].get("protocolVersion")
            if isinstance(version, str):
                self.protocol_version = version
        await self._deliver(data)
        return isinstance(obj, dict) and "id" in obj and ("result" in obj or "error" in obj)

    async def _read_sse(self, resp: httpx.Response, request_id: Any, is_init: bool) -> None:
        parser = SSEParser()
        got_response = await self._consume(resp, parser, request_id, is_init)
        resumes = 0
        while not got_response and request_id is not None and not self._closed:
            if (parser.last_event_id is None and request_id in self._modern_posts) or (
                    request_id in self._id_alias):
                raise _StreamBroke  # 2026-07-28: re-issued by _post_reissuing
            if parser.last_event_id is None or resumes >= self.max_resumes:
                await self._fail({"id": request_id, "method": "?"},
                                 "the server closed the response stream before answering")
                return
            resumes += 1
            await anyio.sleep((parser.retry or 1000) / 1000)
            headers = self._headers(False)
            headers["last-event-id"] = parser.last_event_id
            async with self.http.stream("GET", self.url, headers=headers,
                                        auth=self.auth or httpx.USE_CLIENT_DEFAULT) as again:
                if again.status_code != 200:
                    await again.aread()
                    await self._fail({"id": request_id, "method": "?"},
                                     f"could not resume the response stream (HTTP "
                                     f"{again.status_code})")
                    return
                got_response = await self._consume(again, parser, request_id, is_init)

    async def _consume(self, resp: httpx.Response, parser: SSEParser, request_id: Any,
                       is_init: bool) -> bool:
        answered = False
        try:
            async for chunk in resp.aiter_bytes():
                for event in parser.feed(chunk):
                    if event.event != "message" or not event.data.strip():
                        continue
                    data = event.data.encode()
                    if await self._on_message(data, is_init) and _answers(data, request_id):
                        answered = True
        except (httpx.ReadError, httpx.RemoteProtocolError):
            pass  # connection cut: resumed by the caller
        return answered

    # ------------------------------------------------------------------ HTTP+SSE (2024-11-05)

    async def _open_legacy(self) -> bool:
        """Backwards compatibility: GET the URL and wait for the ``endpoint`` event."""
        ready = anyio.Event()
        self._tg.start_soon(self._legacy_stream, ready)
        with anyio.move_on_after(10):
            await ready.wait()
        return self.legacy_endpoint is not None

    async def _legacy_stream(self, ready: anyio.Event) -> None:
        parser = SSEParser()
        try:
            async with self.http.stream("GET", self.url, headers={
                "accept": "text/event-stream", **self.extra_headers},
                    auth=self.auth or httpx.USE_CLIENT_DEFAULT) as resp:
                if resp.status_code != 200:
                    ready.set()
                    return
                async for chunk in resp.aiter_bytes():
                    for event in parser.feed(chunk):
                        if event.event == "endpoint" and self.legacy_endpoint is None:
                            self.legacy_endpoint = urljoin(self.url, event.data.strip())
                            ready.set()
                        elif event.event == "message" and event.data.strip():
                            await self._on_message(event.data.encode(), False)
        except httpx.HTTPError as exc:
            if not self._closed:
                log.warning("the HTTP+SSE stream failed: %s", exc)
        finally:
            ready.set()
            self._send.close()  # the legacy session ends with its stream

    async def _post_legacy(self, line: bytes, msg: Any) -> None:
        assert self.legacy_endpoint is not None
        resp = await self.http.post(self.legacy_endpoint, content=line, headers={
            "content-type": "application/json", **self.extra_headers},
            auth=self.auth or httpx.USE_CLIENT_DEFAULT)
        if resp.status_code >= 400:
            detail = _error_message(resp.content) or resp.text[:300]
            await self._fail(msg, f"HTTP {resp.status_code} from the server: {detail}")

    async def _reinitialize(self) -> None:
        """The server forgot our session (404): start a new one with the same parameters.

        Runs under ``_reinit_lock``. The new id is adopted only once the session is set
        up (initialized, its GET stream open, as after the first handshake): requests
        sent meanwhile still carry the old id, get 404 and wait for the lock."""
        assert self._init_message is not None
        msg = {**self._init_message, "id": _REINIT_ID}
        headers = self._headers()
        headers.pop("mcp-session-id", None)
        resp = await self.http.post(self.url, content=orjson.dumps(msg), headers=headers,
                                    auth=self.auth or httpx.USE_CLIENT_DEFAULT)
        sid = resp.headers.get("mcp-session-id")
        if resp.status_code != 200 or not sid:
            raise httpx.HTTPStatusError("re-initialize failed", request=resp.request,
                                        response=resp)
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await self.http.post(self.url, content=note, headers={**headers, "mcp-session-id": sid},
                             auth=self.auth or httpx.USE_CLIENT_DEFAULT)
        self.session_id = sid
        self._get_started = False
        self._get_ready = anyio.Event()
        self._start_get_stream()
        with anyio.move_on_after(5):
            await self._get_ready.wait()

    def _start_get_stream(self) -> None:
        if self.open_get_stream and not self._get_started and self.session_id:
            self._get_started = True
            self._tg.start_soon(self._get_stream)

    async def _get_stream(self) -> None:
        parser = SSEParser()
        attempts = 0
        while not self._closed and attempts <= self.max_resumes:
            headers = self._headers(False)
            if parser.last_event_id:
                headers["last-event-id"] = parser.last_event_id
            try:
                async with self.http.stream("GET", self.url, headers=headers,
                                            auth=self.auth or httpx.USE_CLIENT_DEFAULT) as resp:
                    self._get_ready.set()
                    if resp.status_code != 200:
                        await resp.aread()
                        return  # 405: the server has no GET stream
                    attempts = 0
                    await self._consume(resp, parser, None, False)
            except httpx.HTTPError:
                self._get_ready.set()
                attempts += 1
            if self._closed:
                return
            attempts += 1
            await anyio.sleep((parser.retry or 1000) / 1000)


def _is_handshake(line: bytes) -> bool:
    """Whether ``line`` is ``initialize`` or ``notifications/initialized`` (its method, not
    merely the word somewhere in it: those two are sent in line, anything else is not)."""
    if b'"initialize"' not in line and b'"notifications/initialized"' not in line:
        return False
    try:
        msg = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(msg, dict) and msg.get("method") in ("initialize",
                                                           "notifications/initialized")


class _StreamBroke(Exception):
    """A 2026-07-28 answer stream ended before the answer (no resumption exists)."""


def _cancelled_id(line: bytes) -> Any:
    try:
        msg = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    params = msg.get("params") if isinstance(msg, dict) else None
    return params.get("requestId") if isinstance(params, dict) else None


def header_value(value: str) -> str:
    """A header-safe value (R26-07.HTTP.13): as is when printable ASCII without leading or
    trailing space, else ``=?base64?…?=`` — as is a value that itself looks like that form."""
    if (all(0x20 <= ord(c) <= 0x7E for c in value) and value.strip() == value
            and not (value.startswith("=?base64?") and value.endswith("?="))):
        return value
    import base64

    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


def param_header_value(value: Any) -> str | None:
    """An argument as an ``Mcp-Param-*`` header value (None: not a primitive)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return header_value(value)
    return None


def _modern_headers(msg: Any, param_headers: dict[str, dict[str, str]] | None = None
                    ) -> dict[str, str] | None:
    """MCP-Protocol-Version / Mcp-Method / Mcp-Name for a 2026-07-28 request, else None."""
    if not isinstance(msg, dict):
        return None
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or PROTOCOL_VERSION not in meta:
        return None
    assert isinstance(params, dict)
    method = str(msg.get("method", ""))
    headers = {"mcp-protocol-version": str(meta[PROTOCOL_VERSION]), "mcp-method": method}
    key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(method)
    name = params.get(key) if key else None
    if isinstance(name, str):
        headers["mcp-name"] = header_value(name)
        declared = (param_headers or {}).get(name) if method == "tools/call" else None
        arguments = params.get("arguments")
        if declared and isinstance(arguments, dict):
            for param, header in declared.items():
                value = param_header_value(arguments.get(param))
                if value is not None:
                    headers[f"mcp-param-{header.lower()}"] = value
    return headers


def _answers(data: bytes, request_id: Any) -> bool:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    items = obj if isinstance(obj, list) else [obj]
    return any(isinstance(o, dict) and o.get("id") == request_id and "method" not in o
               for o in items)


def _error_message(body: bytes) -> str | None:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
        return str(obj["error"].get("message"))
    return None
