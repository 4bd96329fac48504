"""Streamable HTTP, client side (httpx): the ``Output`` of a client ``Session``.

``HttpClientTransport`` owns the client's ``Session``, as ``HttpSession`` does on the
server. Each message the connection queues is POSTed in a task of its own (a long SSE
answer never holds up the next message), and what the server sends back — a JSON body,
the events of a POST's SSE stream or of the standalone GET stream — is decoded once and
fed to ``Session.receive_message``. The transport knows what it sends from the
``Outgoing`` records (method, id, params); it never reads its own bytes back. On the way
it:

- sends ``Accept: application/json, text/event-stream``, ``Mcp-Session-Id`` once the
  server assigned one, and ``MCP-Protocol-Version`` once negotiated; a stateless
  (2026-07-28) request goes without a session, with its routing headers instead
  (``http_routing``);
- holds other messages back while the handshake ends (``notifications/initialized``
  POSTed, the GET stream open), since a server may use that stream at once;
- resumes a cut SSE answer with ``GET`` + ``Last-Event-ID`` (``http_answers``);
- on a 404 for its session, starts a new one through the connection
  (``Connection.start_renewal``: the answer is checked and updates what the client knows
  of the server), once for all the requests that got the 404, then sends them again;
- cancels a stateless request by closing its POST (that revision's cancellation);
- falls back to HTTP+SSE (2024-11-05) when the server refuses ``initialize`` with 400,
  404 or 405 and offers that transport;
- sends ``DELETE`` when closed.

Failure modes: a request that cannot be carried — the server unreachable, an HTTP error
without a JSON-RPC answer, a cut stream that cannot be resumed — fails alone with a
``TransportError`` (``Session.fail_request``); the cut answer stream of a stateless
request fails with ``AnswerLost``, which the client answers by sending it again. A
notification or answer that cannot be carried is logged. If the server forgot the
session and refuses a new one, the session ends (``ConnectionClosed``).

``headers`` are added to every request; ``auth`` is an ``httpx.Auth`` (e.g. a bearer
token flow) applied to every request. Its ``AuthorizationFailed`` fails the request as
is; a host it could not reach (an authorization server) is named in the
``TransportError`` and does not count as this server being unreachable.
``credentials`` is a digest of who the last answered request said it was (its headers,
less those that describe the message), for the client's cache of ``private`` results.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from urllib.parse import urljoin

import anyio
import httpx
from anyio.abc import TaskGroup

from ..protocol.connection import Connection, Event, Outgoing
from ..protocol.errors import AuthorizationFailed, LocalProtocolError, MCPError, TransportError
from ..protocol.jsonrpc import RequestId
from ..protocol.lifecycle import State
from ..protocol.sse import SSEParser
from ..session import RequestHandler, Session, SessionNotificationHandler
from .http_answers import AnswerReader, error_detail, redirected, server_words
from .http_routing import routing_headers

log = logging.getLogger("mcpkit.client.http")
ACCEPT = "application/json, text/event-stream"

HANDSHAKE = frozenset({"initialize", "notifications/initialized"})
"""Sent in order, never held back, never sent again after a 404."""

PER_MESSAGE = frozenset({"accept", "accept-encoding", "connection", "content-length",
                         "content-type", "dpop", "host", "last-event-id", "user-agent"})
"""Request headers that describe the message or the connection, not who sends it."""


def credentials_digest(headers: httpx.Headers) -> str:
    """A digest of what in ``headers`` may say who the sender is: every header but
    ``PER_MESSAGE`` and the ``Mcp-*`` routing headers. Not only ``Authorization``: a
    cookie, an API key header of any name, a custom ``httpx.Auth``'s header all count,
    so two senders that differ in any of them never share a ``private`` result. A
    header that changes with every request only costs cache hits, never leaks one."""
    kept = sorted((k.lower(), v) for k, v in headers.multi_items()
                  if k.lower() not in PER_MESSAGE and not k.lower().startswith("mcp-"))
    return hashlib.sha256(repr(kept).encode()).hexdigest()[:32]


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


def _failed_url(exc: httpx.TransportError) -> str | None:
    """The URL of the request that failed, when httpx recorded it."""
    try:
        return str(exc.request.url)
    except RuntimeError:  # raised outside a request
        return None


class HttpClientTransport:
    """A client ``Session`` over a Streamable HTTP endpoint (see the module docstring)."""

    def __init__(
        self,
        url: str,
        conn: Connection,
        tg: TaskGroup,
        *,
        on_request: RequestHandler | None = None,
        on_notification: SessionNotificationHandler | None = None,
        on_event: Callable[[Session, Event], None] | None = None,
        headers: dict[str, str] | None = None,
        auth: httpx.Auth | None = None,
        http: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        max_resumes: int = 10,
        open_get_stream: bool = True,
    ) -> None:
        """``http``: an httpx client of the caller's (it is not closed here); by default
        one is made with ``timeout`` for connecting and writing and no read timeout (an
        SSE answer may take as long as its request does). ``max_resumes``: how often a
        cut SSE stream is resumed before its request fails."""
        self.url = url
        self._tg = tg
        self._own_http = http is None
        self.http = http or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, read=None), follow_redirects=False
        )
        self.auth: httpx.Auth | None = auth
        self.extra_headers = dict(headers or {})
        self.timeout = timeout
        self.open_get_stream = open_get_stream
        self.session = Session(conn, output=self, on_request=on_request,
                               on_notification=on_notification, on_event=on_event)
        self.session.attach(tg)
        self.reader = AnswerReader(self, max_resumes)
        self.param_headers: dict[str, dict[str, str]] = {}  # tool -> {param: x-mcp-header}
        self.legacy_endpoint: str | None = None  # set when talking HTTP+SSE (2024-11-05)
        # Why the server could not be reached at all (nothing listening, unknown host, no
        # answer to the connection attempt), set on the first such failure; ``None`` while
        # every connection attempt got through.
        self.unreachable: str | None = None
        self.credentials: str | None = None  # credentials_digest of the last answered POST
        self._legacy_tried = False
        self._posts: dict[RequestId, anyio.CancelScope] = {}  # a stateless request's POST
        self._ready = anyio.Event()  # cleared while the handshake's last step is under way
        self._ready.set()
        self._renew_lock = anyio.Lock()  # after a 404: one new session, not one per request
        self._renewal: anyio.Event | None = None  # set when a renewal ended (either way)
        self._next_session_id: str | None = None  # a renewal's id, adopted once it is set up
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether ``aclose`` ran: nothing more is sent, and streams are not reopened."""
        return self._closed

    # ------------------------------------------------------------------ Output

    def wake(self, now: bool) -> None:
        """``Output``: POST every message the connection queued, each in its own task."""
        for out in self.session.conn.messages_to_send():
            if self._closed or not out.data:  # (a withdrawn answer: nothing to POST)
                continue
            if out.method == "notifications/cancelled" and self._close_post(out):
                continue
            if out.method == "notifications/initialized":
                self._ready = anyio.Event()  # later messages wait for the GET stream
            self._tg.start_soon(self._send, out)

    def congested(self, related: RequestId | None) -> None:
        """``Output``: never congested. Nothing is queued here: each message is handed to
        httpx at once, in a POST of its own, and a client queues no messages in a loop
        of its own making (its requests wait for their answers; its handlers answer one
        request each), so there is no byte queue to pace anyone by."""
        return None

    def _close_post(self, out: Outgoing) -> bool:
        """Cancel a stateless request by closing its POST (True), not with a message."""
        rid = (out.params or {}).get("requestId")
        scope = self._posts.get(rid) if isinstance(rid, str | int) else None
        if scope is None:
            return False
        scope.cancel()
        return True

    # ------------------------------------------------------------------ closing

    async def aclose(self) -> None:
        """End the session: pending requests fail with ``ConnectionClosed``, running
        handlers are cancelled, and the server is told (``DELETE``, bounded to 5 s) if it
        assigned a session. Safe to call twice; HTTP errors on the way are ignored."""
        if self._closed:
            return
        self._closed = True
        self.session.end()
        with anyio.CancelScope(shield=True):
            await self.session.cancel_handlers()
            if self.session_id is not None:
                try:
                    with anyio.move_on_after(5):
                        await self.http.delete(self.url, headers=self.headers(post=False),
                                               auth=self.auth or httpx.USE_CLIENT_DEFAULT)
                except httpx.HTTPError:
                    pass
            if self._own_http:
                await self.http.aclose()

    # ------------------------------------------------------------------ sending

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` the server gave (None before, or without one): the
        session's ``key``."""
        return self.session.session_id

    @session_id.setter
    def session_id(self, sid: str | None) -> None:
        self.session.session_id = sid

    def headers(self, *, post: bool = True, session_id: str | None = None) -> dict[str, str]:
        """The headers of a request in this session (``session_id``: instead of the
        current one, for a session being set up)."""
        h = {"accept": ACCEPT if post else "text/event-stream", **self.extra_headers}
        if post:
            h["content-type"] = "application/json"
        sid = session_id or self.session_id
        if sid:
            h["mcp-session-id"] = sid
        rev = self.session.revision
        if rev is not None and rev.stateful:
            h["mcp-protocol-version"] = rev.version
        return h

    async def _send(self, out: Outgoing) -> None:
        """POST one message; a failure fails its request (or is logged)."""
        if out.method not in HANDSHAKE:
            await self._ready.wait()
        rid, routing = out.id, None
        if rid is not None and out.method is not None:
            routing = routing_headers(out.method, out.params, self.param_headers)
        try:
            if rid is not None and routing is not None:
                with anyio.CancelScope() as scope:
                    self._posts[rid] = scope
                    try:
                        await self._post(out, routing)
                    finally:
                        self._posts.pop(rid, None)
            else:
                await self._post(out)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            target = _failed_url(exc) or self.url
            reason = connect_failure(target, exc)
            if httpx.URL(target).netloc == httpx.URL(self.url).netloc:
                self.unreachable = self.unreachable or reason
                self._fail(out, TransportError(f"cannot reach {self.url}: {reason}"))
            else:  # another host on the way (an ``auth=``'s authorization server)
                self._fail(out, TransportError(f"cannot reach {target}: {reason}"))
        except (TransportError, AuthorizationFailed) as exc:  # no token: the reason as is
            self._fail(out, exc)
        except httpx.HTTPError as exc:
            self._fail(out, TransportError(
                f"HTTP transport error: {exc.__class__.__name__}: {exc}"))
        except Exception as exc:  # a fault of ours: fail the request rather than hang it
            log.exception("POST of %s failed", out.method or "an answer")
            self._fail(out, TransportError(f"HTTP transport failure: {exc}"))
        finally:
            self._handshake_step_done(out)

    def _fail(self, out: Outgoing, error: MCPError) -> None:
        if out.id is not None:
            self.session.fail_request(out.id, error)
        elif not self._closed:
            log.warning("could not send %s: %s", out.method or "an answer", error)

    async def _post(self, out: Outgoing, routing: dict[str, str] | None = None, *,
                    retry: bool = True) -> None:
        if self.legacy_endpoint is not None:
            await self._post_legacy(out)
            return
        method = out.method
        if routing is not None:  # stateless: no session; the routing headers instead
            headers = {**self.headers(), **routing}
            headers.pop("mcp-session-id", None)
        elif method == "initialize":
            headers = self.headers()
            headers.pop("mcp-session-id", None)
        else:
            headers = self.headers(session_id=self._next_session_id if (
                method == "notifications/initialized") else None)
        sent_sid = headers.get("mcp-session-id")
        async with self.http.stream("POST", self.url, content=out.data, headers=headers,
                                    auth=self.auth or httpx.USE_CLIENT_DEFAULT) as resp:
            status = resp.status_code
            self.credentials = credentials_digest(resp.request.headers)  # (auth's retry)
            if (moved := redirected(resp)) is not None:
                await resp.aread()
                raise moved
            if routing is None and status != 200 and status != 202:
                body = await resp.aread()
                if await self._stateful_refusal(out, status, sent_sid, retry, body):
                    return
            if status == 202:
                await resp.aread()
                if method == "notifications/initialized" and sent_sid:
                    await self._session_set_up(sent_sid)
                return
            if status >= 400:
                await self.reader.refusal(resp, out)
                return
            sid = resp.headers.get("mcp-session-id")
            if sid and method == "initialize":
                if self._renewal is None:
                    self.session_id = sid
                else:
                    self._next_session_id = sid
            await self.reader.answer(resp, out, stateless=routing is not None)

    async def _stateful_refusal(self, out: Outgoing, status: int, sent_sid: str | None,
                                retry: bool, body: bytes) -> bool:
        """React to an HTTP refusal within a session; True when it was dealt with
        (the message was sent another way), False to treat it as an error. A refused
        ``initialize`` with no HTTP+SSE endpoint either fails with what the server said."""
        if out.method == "initialize" and status in (400, 404, 405) and (
                not self._legacy_tried and self._renewal is None):
            self._legacy_tried = True
            if not await self._open_legacy():
                said = server_words(body)
                said = f": {said}" if said else ""
                raise TransportError(f"HTTP {status} from the server{said} (and it has no "
                                     "HTTP+SSE (2024-11-05) endpoint either)", status=status)
            await self._post_legacy(out)
            return True
        if status == 404 and sent_sid and retry and out.method not in HANDSHAKE:
            if not await self._renew(sent_sid):
                raise TransportError("the server ended this session (HTTP 404) and no new "
                                     "one could be started", status=404)
            await self._post(out, retry=False)
            return True
        return False

    # ------------------------------------------------------------------ the session

    async def _session_set_up(self, sid: str) -> None:
        """``notifications/initialized`` was accepted: open the session's GET stream (up
        to 5 s), then adopt the session (a renewal's id replaces the expired one)."""
        if self.open_get_stream:
            ready = anyio.Event()
            self._tg.start_soon(self.reader.get_stream, sid, ready)
            with anyio.move_on_after(5):
                await ready.wait()
        if self._renewal is not None and self._next_session_id == sid:
            self.session_id = sid

    def _handshake_step_done(self, out: Outgoing) -> None:
        """After the POST of a handshake message, whatever its outcome: let held messages
        go, and end a renewal that cannot go further."""
        if out.method == "notifications/initialized":
            self._ready.set()
            if self._renewal is not None:
                self._renewal.set()
        elif out.method == "initialize" and self._renewal is not None and (
                self._next_session_id is None or self.session.conn.state is not State.READY):
            self._renewal.set()  # no new session: refused, failed, or another revision

    async def _renew(self, stale: str) -> bool:
        """The server answered 404 for session ``stale``: start a new session through the
        connection (once, however many requests got the 404). True when a new session is
        in place; when the server refused one (the connection closed), the session ends."""
        async with self._renew_lock:
            if self.session_id != stale:  # renewed meanwhile by another request
                return self.session_id is not None
            self._renewal = done = anyio.Event()
            self._next_session_id = None
            try:
                self.session.conn.start_renewal()
            except LocalProtocolError:  # the connection closed meanwhile
                self._renewal = None
                return False
            self.session.flush()
            with anyio.move_on_after(self.timeout):
                await done.wait()
            self._renewal = self._next_session_id = None
            if self.session.conn.state is State.CLOSED:
                log.warning("the server ended the session and refused a new one: %s",
                            self.session.handshake_error)
                self.session.end()
            return self.session_id != stale

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
                    return
                async for chunk in resp.aiter_bytes():
                    for event in parser.feed(chunk):
                        if event.event == "endpoint" and self.legacy_endpoint is None:
                            self.legacy_endpoint = urljoin(self.url, event.data.strip())
                            ready.set()
                        elif event.event == "message" and event.data.strip():
                            self.reader.deliver(event.data, None)
        except httpx.HTTPError as exc:
            if not self._closed:
                log.warning("the HTTP+SSE stream failed: %s", exc)
        finally:
            ready.set()
            if self.legacy_endpoint is not None:
                self.session.end()  # the legacy session ends with its stream

    async def _post_legacy(self, out: Outgoing) -> None:
        assert self.legacy_endpoint is not None
        resp = await self.http.post(
            self.legacy_endpoint, content=out.data,
            headers={"content-type": "application/json", **self.extra_headers},
            auth=self.auth or httpx.USE_CLIENT_DEFAULT)
        if (moved := redirected(resp)) is not None:
            raise moved
        if resp.status_code >= 400:
            detail = error_detail(resp.content)
            raise TransportError(f"HTTP {resp.status_code} from the server: {detail}",
                                 status=resp.status_code)
