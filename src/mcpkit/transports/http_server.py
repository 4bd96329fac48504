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

Behind an authentication middleware (``StreamableHTTPApp(principal_key=...)``, see
``http_auth``):
each request's principal is handed to the session it feeds; a session belongs to the
identity of the principal that created it, and a request (POST, GET, resumption,
DELETE) of another identity presenting its id is answered exactly like one naming an
unknown session (404), its record in the session store included; every request of a
POST body is shown to the ``call_guard`` first (a refusal is a 403).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from ..protocol.connection import Connection, RequestReceived
from ..protocol.errors import INVALID_REQUEST
from ..protocol.jsonrpc import DEFAULT_MAX_BATCH, id_in_use, is_valid_id
from ..protocol.lifecycle import State
from ..protocol.stateless import is_stateless_request
from ..protocol.versions import DEFAULT_HTTP_VERSION, STATEFUL_VERSIONS
from ..session import HandlerResult, Principal, Session, SessionNotificationHandler
from ..storage.bus import SessionBus
from ..storage.events import EventStore, MemoryEventStore
from ..storage.faults import StoreUnavailable
from ..storage.sessions import MemorySessionStore, SessionStore
from .asgi import (
    OriginHostGuard,
    ReadDeadlines,
    Receive,
    Refused,
    Scope,
    Send,
    decode_json,
    error_body,
    headers_of,
    local_path,
    not_found,
    read_body,
    require_asyncio,
    require_json,
    respond,
    respond_refused,
    respond_withdrawn,
)
from .http_auth import CallGuard, identity_of, principal_of, refused_call, respond_denied
from .http_drain import RESTART_HEADERS, Drain, InFlight, refusal
from .http_lifespan import LifespanHolder
from .http_options import HttpOptions
from .http_resume import resume, write_sse
from .http_session import HttpSession, forget_stored
from .http_shared import SharedSessions
from .http_stalls import Stalls
from .http_stateless import StatelessRequests
from .http_streams import Listener, ResponseStream
from .keyed import KeyedLock

if TYPE_CHECKING:
    from .legacy_sse import LegacySSE

SESSION_NOT_FOUND = -32001
"""JSON-RPC code of the 404 for an unknown or expired ``Mcp-Session-Id``."""

log = logging.getLogger("mcpkit.http")


# ------------------------------------------------------------------------------ the app


class StreamableHTTPApp:
    """The ASGI application of one MCP endpoint (see the module docstring).

    ``new_connection()`` builds a server ``Connection`` for a new session; ``on_request``
    and ``on_notification`` are the session handlers (as for stdio); ``config``: the
    endpoint's ``HttpOptions`` (read, never changed); ``on_session`` learns of each
    session opened (True) and ended (False); ``call_guard`` judges each request of a POST
    body against its principal before any session sees it (None: all pass).

    What the layer assembling the app decides: ``max_batch`` (messages in one batch, 400
    with -32600 past it), ``principal_key`` (the ``scope["state"]`` key of the request's
    principal, see ``http_auth``), ``bus`` (to the other instances sharing the session
    store, see ``http_shared``; the stores in ``config`` are then the shared ones).
    """

    def __init__(
        self,
        new_connection: Callable[[], Connection],
        *,
        on_request: Callable[[Session, RequestReceived], HandlerResult],
        on_notification: SessionNotificationHandler | None = None,
        config: HttpOptions | None = None,
        max_batch: int = DEFAULT_MAX_BATCH,
        principal_key: str | None = None,
        bus: SessionBus | None = None,
        on_session: Callable[[Session, bool], None] | None = None,
        lifespan: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
        param_headers: Callable[[str], dict[str, str]] | None = None,
        call_guard: CallGuard | None = None,
    ) -> None:
        self.config = cfg = HttpOptions() if config is None else config
        self.max_batch = max_batch
        self.principal_key = principal_key
        #: The stores of this app: the ones ``config`` names, else its own, in memory.
        self.event_store: EventStore = (MemoryEventStore() if cfg.event_store is None
                                        else cfg.event_store)
        self.session_store: SessionStore = (MemorySessionStore() if cfg.session_store is None
                                            else cfg.session_store)
        self.call_guard = call_guard
        self.drain = Drain(self, cfg.drain)
        #: Where a request for another path goes (the server's routes, ``server/routes``);
        #: None: ``not_found``.
        self.routes: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None
        self.not_found = functools.partial(not_found, cfg.path)
        self.lifespan = LifespanHolder(lifespan, self._shutdown, self.drain.hook_signals)
        self.new_connection = new_connection
        self.on_request = on_request
        self.on_notification = on_notification
        self._on_session = on_session
        # Least recently seen first: a sweep stops at the first session still fresh.
        self.sessions: OrderedDict[str, HttpSession] = OrderedDict()
        self._restoring = KeyedLock()  # one restore of a session at a time
        self.answering = InFlight()  # POSTed requests being answered, all sessions
        self.guard = OriginHostGuard(cfg.allowed_hosts, cfg.allowed_origins,
                                     cfg.trusted_proxies)
        self.body_deadlines = ReadDeadlines(cfg.body_timeout)
        self.stalls = Stalls(cfg.stall_timeout)
        self._housekeeper: asyncio.Task[None] | None = None
        self.shared = None if bus is None else SharedSessions(
            self.session_store, self.event_store, bus)
        self.stateless = StatelessRequests(
            open_session=self.open_session, in_flight=self.answering,
            exchanges=self.drain.stateless, stalls=self.stalls, param_headers=param_headers,
            limit=cfg.max_stream_buffer, sse=cfg.response_mode == "sse")
        self.legacy: LegacySSE | None = None
        if cfg.legacy_sse:
            from .legacy_sse import LegacySSE

            self.legacy = LegacySSE(
                sse_path=cfg.legacy_sse_path, messages_path=cfg.legacy_messages_path,
                guard=self.guard, draining=lambda: self.drain.active,
                open_session=self.open_session, opened=self.session_opened,
                ended=self.session_ended, stalls=self.stalls,
                body_deadlines=self.body_deadlines, call_guard=call_guard,
                principal_key=principal_key, others=self.sessions,
                max_sessions=cfg.max_sessions, max_body=cfg.max_body, max_batch=max_batch,
                stream_limit=cfg.max_stream_buffer)

    @property
    def in_flight(self) -> int:
        """POSTed requests being answered, all sessions."""
        return self.answering.count

    def open_session(self, sid: str, conn: Connection | None = None,
                     owner: str | None = None) -> HttpSession:
        """The one way this app makes an ``HttpSession``: ``conn`` (a restored one) or a
        new connection, this app's event store and handlers, and its stall timeout (how
        long a paced producer waits for a reader)."""
        return HttpSession(conn if conn is not None else self.new_connection(), sid,
                           self.event_store, on_request=self.on_request,
                           on_notification=self.on_notification, owner=owner,
                           patience=self.config.stall_timeout)

    def session_opened(self, session: HttpSession) -> None:
        if self._on_session is not None:
            self._on_session(session.session, True)

    def session_ended(self, session: HttpSession) -> None:
        if self._on_session is not None:
            self._on_session(session.session, False)

    # ------------------------------------------------------------------ ASGI entry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self.lifespan.serve(receive, send)
            return
        if kind != "http":
            return
        if self._housekeeper is None:
            self._start_housekeeping()
        if not self.lifespan.ready:  # mounted in a host app that did not start it
            try:
                await self.lifespan.wait()
            except Refused as exc:
                await respond_refused(send, exc)
                return
        path = local_path(scope)
        if path.rstrip("/") != self.config.path.rstrip("/"):  # the MCP endpoint first
            if self.legacy is not None and self.legacy.handles(path):
                await self.legacy(scope, receive, send)
            elif self.routes is not None:  # the server's own routes (server/routes.py)
                await self.routes(scope, receive, send)
            else:
                await self.not_found(scope, receive, send)
            return
        headers = headers_of(scope)
        principal = None if self.principal_key is None else principal_of(scope,
                                                                         self.principal_key)
        try:
            self.guard.check(scope, headers)
            method = scope["method"]
            if method == "POST":
                await self._post(headers, receive, send, principal,
                                 self.guard.client_address(scope, headers))
            elif method == "GET":
                await self._get(headers, send, receive, principal)
            elif method == "DELETE":
                await self._delete(headers, send, principal)
            else:
                raise Refused(405, "Method not allowed: use POST, GET or DELETE.",
                              headers=[(b"allow", b"GET, POST, DELETE")])
        except Refused as exc:
            await respond_refused(send, exc)
        except StoreUnavailable as exc:  # a shared store is down: retry, never a hang
            await respond_refused(send, Refused(503, str(exc), headers=[
                (b"retry-after", str(exc.retry_after).encode())]))

    def _start_housekeeping(self) -> None:
        require_asyncio()
        self._housekeeper = asyncio.get_running_loop().create_task(self._housekeeping())

    async def _housekeeping(self) -> None:
        """Every ``sweep_interval`` seconds: end sessions idle past their timeout and fail
        body reads past theirs. Each sweep visits only what expired (and one more)."""
        cfg = self.config
        while True:
            await asyncio.sleep(cfg.sweep_interval)
            try:
                now = time.monotonic()
                self.body_deadlines.sweep(now)
                self.stalls.sweep(now)
                self._expire_idle(now, limit=cfg.sweep_batch)
            except Exception:
                log.exception("housekeeping failed; retrying at the next sweep")

    async def _shutdown(self) -> None:
        """The ASGI lifespan's shutdown: the drain's end (``Drain.finish``), then every
        session closed."""
        await self.drain.finish()
        self.close_all()

    def close_all(self) -> None:
        """End every session (server shutdown): handlers cancelled, streams ended."""
        sessions = list(self.sessions.values())
        if self.legacy is not None:
            sessions += list(self.legacy.sessions.values())
        for session in sessions:
            session.close()
        self.sessions.clear()
        if self._housekeeper is not None:
            self._housekeeper.cancel()
            self._housekeeper = None

    # ------------------------------------------------------------------ sessions

    def _touch(self, session: HttpSession) -> None:
        session.last_seen = time.monotonic()
        self.sessions.move_to_end(session.session_id)

    async def _session(self, headers: dict[str, str], principal: Principal | None,
                       *, asks: bool = False) -> HttpSession:
        """The session the request names, if it exists and belongs to the request's
        principal; else the 404 of an unknown session (another identity's session is not
        touched: its idle clock and its record stay as they were). ``asks``: the body
        holds requests (a shared session still initializing is then read again)."""
        sid = headers.get("mcp-session-id")
        if not sid:
            raise Refused(400, "Bad request: the Mcp-Session-Id header is required; send "
                               "'initialize' first to get one.")
        owner = None if principal is None else principal.identity
        session = self.sessions.get(sid)
        if session is not None and session.owner != owner:
            session = None
        elif session is not None and (
            time.monotonic() - session.last_seen > self.config.session_idle_timeout
        ):
            self._end(sid)
            session = None
        elif session is None and len(sid) <= 100:
            session = await self._restore(sid, owner)
        if session is not None and self.shared is not None and not (
                await self.shared.alive(session, asks)):
            self._end(sid, forget=False)  # ended (or expired) on another instance
            session = None
        if session is None:
            raise Refused(404, "Session not found: it expired or was ended; start a new one "
                               "with 'initialize' (without Mcp-Session-Id).",
                          code=SESSION_NOT_FOUND)
        self._touch(session)
        return session

    async def _restore(self, sid: str, owner: str | None) -> HttpSession | None:
        """A session of an earlier run (or another instance's) from the session store,
        when its record names ``owner`` (no owner: unauthenticated requests only). One
        restore at a time: two copies, the later replacing the earlier in ``sessions``,
        left a stream on a copy that the drain never ended and no message reached."""
        async with self._restoring.hold(sid):
            known = self.sessions.get(sid)
            if known is not None:  # restored by the request this one waited for
                return known if known.owner == owner else None
            return await self._load(sid, owner)

    async def _load(self, sid: str, owner: str | None) -> HttpSession | None:
        record = await self.session_store.load(sid)
        if record is None or record.get("owner") != owner or (
                len(self.sessions) >= self.config.max_sessions):
            return None
        conn = self.new_connection()
        try:
            conn.restore(record)
        except ValueError:
            return None
        session = self.open_session(sid, conn, owner)
        session.saved = session.record()
        if self.shared is not None:
            await self.shared.adopt(session, self._ended_elsewhere)
        self.sessions[sid] = session
        self.session_opened(session)
        return session

    def _ended_elsewhere(self, sid: str) -> None:
        """Another instance deleted the session: drop this instance's copy."""
        self._end(sid, forget=False)

    async def _persist(self, session: HttpSession) -> None:
        """Save the session's handshake state when it changed (initialized, log level)."""
        conn, saved = session.conn, session.saved
        if saved is not None and saved["log_level"] == conn.log_level and saved["ready"] == (
            conn.state is State.READY
        ):
            return  # the common case, checked without building a snapshot
        snap = session.record()
        if snap != saved:
            await self.session_store.save(session.session_id, snap)
            session.saved = snap  # (once saved: a failed save is tried again)
            if self.shared is not None:
                await self.shared.changed(session)

    async def _persist_fed(self, session: HttpSession) -> None:
        """``_persist`` once a POST was fed to the session: its messages were taken, so a
        store that cannot be reached does not refuse them (a 503 would have the client
        send them again); the record is saved at the session's next POST instead."""
        try:
            await self._persist(session)
        except StoreUnavailable as exc:
            log.warning("session %s: its record is saved at its next request: %s",
                        session.session_id, exc)

    def _check_version(self, headers: dict[str, str], session: HttpSession) -> None:
        version = headers.get("mcp-protocol-version")
        negotiated = session.conn.revision.version if session.conn.revision else None
        if version is None:
            return  # absent: the server assumes 2025-03-26, or knows it from the session
        if version not in STATEFUL_VERSIONS or (negotiated and version != negotiated):
            raise Refused(400, f"Bad request: unsupported MCP-Protocol-Version {version!r}; "
                               f"this session uses {negotiated or DEFAULT_HTTP_VERSION}.")

    def _end(self, sid: str, forget: bool = True) -> None:
        """Close the session here; ``forget``: also remove what the stores keep of it."""
        session = self.sessions.pop(sid, None)
        if session is not None:
            if self.shared is not None:
                self.shared.leave(session)
            session.close()
            self.session_ended(session)
            if forget:
                forget_stored(sid, self.event_store, self.session_store)

    def _expire_idle(self, now: float, limit: int | None = None) -> int:
        """End sessions idle past the timeout, least recently seen first, stopping at the
        first fresh one (or after ``limit``); a session with requests in progress counts
        as seen now. Returns how many ended."""
        timeout = self.config.session_idle_timeout
        ended = 0
        for sid in list(self.sessions):
            session = self.sessions[sid]
            if now - session.last_seen <= timeout:
                break
            if session.streams or session.session.in_flight:
                self._touch(session)
                continue
            self._end(sid, forget=self.shared is None)  # shared: the store's TTL decides
            ended += 1
            if limit is not None and ended >= limit:
                break
        return ended

    # ------------------------------------------------------------------ POST

    async def _post(self, headers: dict[str, str], receive: Receive, send: Send,
                    principal: Principal | None, peer: str | None) -> None:
        require_json(headers)
        accept = headers.get("accept", "").lower()
        if not (("application/json" in accept or "*/*" in accept)
                and ("text/event-stream" in accept or "*/*" in accept)):
            raise Refused(406, "Not acceptable: the Accept header must list both "
                               "application/json and text/event-stream.")
        body = await read_body(headers, receive, self.config.max_body, self.body_deadlines)
        obj = decode_json(body, self.max_batch)
        messages = obj if isinstance(obj, list) else [obj]
        if self.drain.active and any(isinstance(m, dict) and "method" in m and "id" in m
                                     for m in messages):
            raise refusal()  # new work, while the server drains (answers still go in)
        if self.call_guard is not None:  # scopes per tool: only a protected app has one
            refused = refused_call(self.call_guard, principal, messages)
            if refused is not None:
                await respond_denied(send, *refused)
                return
        if isinstance(obj, dict) and (
            is_stateless_request(obj.get("params")) or (
                "mcp-session-id" not in headers and obj.get("method") != "initialize")
        ):
            # 2026-07-28: self-describing requests (and any session-less request, which
            # is judged by the stateless rules: missing _meta -> -32602)
            await self.stateless.serve(obj, headers, send, receive, principal, peer)
            return
        is_init = any(isinstance(m, dict) and m.get("method") == "initialize" for m in messages)
        if is_init and "mcp-session-id" not in headers:
            if isinstance(obj, list):
                raise Refused(400, "Invalid request: 'initialize' must not be in a batch.")
            await self._initialize(obj, send, principal, peer)
            return
        request_ids = [m["id"] for m in messages if isinstance(m, dict) and "method" in m
                       and "id" in m and is_valid_id(m["id"])]
        session = await self._session(headers, principal, asks=bool(request_ids))
        self._check_version(headers, session)
        if not request_ids:
            if self.shared is not None:  # answers awaited by another instance go there
                obj = await self.shared.forward_answers(session, obj)
                if obj is None:
                    await respond(send, 202)
                    return
            direct = session.feed(obj, principal, peer)
            await self._persist_fed(session)
            if direct:
                await respond(send, 400, direct[0])
            else:
                await respond(send, 202)
            return
        if session.session.in_flight + len(request_ids) > self.config.max_in_flight:
            raise Refused(429, "Too many requests in flight on this session; wait for some "
                               "answers and retry.", headers=[(b"retry-after", b"1")])
        if self.answering.count >= self.config.max_in_flight_total:
            raise Refused(503, "Service unavailable: the server is at its limit of requests "
                               "in flight; retry shortly.", headers=[(b"retry-after", b"1")])
        key = request_ids[0]
        if key in session.streams or (
                not isinstance(obj, list) and session.session.is_handling(key)):
            # (its stream is keyed by the id: refused here, in the connection's words)
            await respond(send, 200, error_body(INVALID_REQUEST, id_in_use(key).message))
            return
        stream = ResponseStream(session, session.new_stream_id(),
                                limit=self.config.max_stream_buffer)
        session.streams[key] = stream
        direct = session.feed(obj, principal, peer)
        await self._persist_fed(session)
        if direct and not stream.queue:
            session.streams.pop(key, None)
            await respond(send, 400, direct[0])
            return
        mode = "json" if isinstance(obj, list) else self.config.response_mode
        with self.answering:
            await self._answer(stream, mode, send, receive)

    async def _initialize(self, obj: Any, send: Send, principal: Principal | None,
                          peer: str | None) -> None:
        if len(self.sessions) >= self.config.max_sessions:
            self._expire_idle(time.monotonic())
        if len(self.sessions) >= self.config.max_sessions:
            raise Refused(503, "Service unavailable: too many open sessions; retry later.",
                           headers=[(b"retry-after", b"5")])
        sid = secrets.token_urlsafe(24)
        session = self.open_session(sid, owner=identity_of(principal))
        rid = obj.get("id") if isinstance(obj, dict) else None
        if not is_valid_id(rid):
            direct = session.feed(obj, principal, peer)
            await respond(send, 400, direct[0] if direct else error_body(
                INVALID_REQUEST, "Invalid Request: initialize needs a string or integer id."))
            return
        assert isinstance(rid, str | int)
        if self.shared is not None:
            await self.shared.adopt(session, self._ended_elsewhere)
        stream = ResponseStream(session, session.new_stream_id())
        session.streams[rid] = stream
        session.feed(obj, principal, peer)
        data, _final = await stream.first()
        if session.conn.revision is None:  # initialize was refused (bad params)
            if self.shared is not None:
                self.shared.leave(session)
            await respond(send, 200, data)
            return
        if self.shared is not None:
            try:  # stored before another instance can be asked for it
                await self._persist(session)
            except StoreUnavailable:
                self.shared.leave(session)
                session.close()
                raise
        self.sessions[sid] = session
        self.session_opened(session)
        await self._persist(session)
        await respond(send, 200, data, [(b"mcp-session-id", sid.encode())])

    async def _answer(self, stream: ResponseStream, mode: str, send: Send,
                      receive: Receive) -> None:
        data, final = await stream.first()
        if mode == "json" or (mode == "auto" and final):
            if mode == "json":
                while not final:  # intermediate messages go to the standalone stream
                    stream.pop_first()
                    if stream.session.standalone is not None:
                        stream.session.standalone.push(data, False)
                    data, final = await stream.first()
            stream.take_queue()
            if not data:
                await respond_withdrawn(send)
            elif stream.cut_off:  # the drain's deadline passed before an answer came
                await respond(send, 503, data, RESTART_HEADERS)
            else:
                await respond(send, 200, data)
            return
        if not data:
            await respond_withdrawn(send)
            return
        listener = Listener(self.config.max_stream_buffer)
        stream.listener = listener
        stream.start_sse()
        await write_sse(stream, listener, send, receive, self.config.retry_ms, None,
                        stalls=self.stalls)

    # ------------------------------------------------------------------ GET / DELETE

    async def _get(self, headers: dict[str, str], send: Send, receive: Receive,
                   principal: Principal | None) -> None:
        if self.drain.active:
            raise refusal()
        if "text/event-stream" not in headers.get("accept", "").lower():
            raise Refused(406, "Not acceptable: GET needs Accept: text/event-stream.")
        if not self.config.enable_get:
            raise Refused(405, "Method not allowed: this server has no GET stream.",
                           headers=[(b"allow", b"POST, DELETE")])
        session = await self._session(headers, principal)
        self._check_version(headers, session)
        last = headers.get("last-event-id")
        cfg = self.config
        if last is not None:
            await resume(session, last.strip(), send, receive, cfg.retry_ms,
                         cfg.session_idle_timeout, self.stalls, cfg.max_stream_buffer,
                         lambda: self.drain.active)
            return
        if self.drain.active:  # it began while the session was looked up (a shared store
            raise refusal()    # awaits): the drain has ended the streams it knew of
        if session.standalone is not None and not session.standalone.done:
            raise Refused(409, "Conflict: this session already has an open GET stream.")
        listener = Listener(cfg.max_stream_buffer)
        stream = ResponseStream(session, session.new_stream_id(True), standalone=True,
                                limit=cfg.max_stream_buffer)
        session.open_standalone(stream, listener)
        try:
            await write_sse(stream, listener, send, receive, cfg.retry_ms, None,
                            stalls=self.stalls)
        finally:
            session.release_standalone(stream)

    async def _delete(self, headers: dict[str, str], send: Send,
                      principal: Principal | None) -> None:
        if not self.config.allow_delete:
            raise Refused(405, "Method not allowed: sessions end when they expire.",
                           headers=[(b"allow", b"GET, POST")])
        session = await self._session(headers, principal)
        if self.shared is not None:
            await self.shared.delete(session.session_id)  # seen by every instance
        self._end(session.session_id, forget=self.shared is None)
        await respond(send, 200)

