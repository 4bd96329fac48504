"""The HTTP+SSE transport of revision 2024-11-05, server side, for old clients.

``GET <sse_path>`` opens the session's event stream; its first event is ``endpoint``,
whose data is the URI to POST messages to (``<messages_path>?session_id=…``). Every
message the server sends — responses included — is a ``message`` event on that one
stream; POSTs are answered ``202 Accepted``. The session ends when the stream closes.
Origin/Host checks, body limits, the binding of a session to the identity of the
principal that opened it (a POST of another identity is answered like one for an unknown
session) and the ``call_guard`` are those of the Streamable HTTP app it sits beside.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sized
from dataclasses import dataclass, field
from typing import Any

from ..session import Principal
from .asgi import (
    SSE_HEADERS,
    OriginHostGuard,
    ReadDeadlines,
    Receive,
    Refused,
    Scope,
    Send,
    decode_json,
    headers_of,
    local_path,
    read_body,
    require_json,
    respond,
    respond_refused,
)
from .http_auth import CallGuard, identity_of, principal_of, refused_call, respond_denied
from .http_drain import refusal
from .http_session import HttpSession, OpenSession
from .http_stalls import Stalls
from .http_streams import ResponseStream, relay_sse


@dataclass(slots=True, kw_only=True, eq=False)
class LegacySSE:
    """Serves ``sse_path`` (GET) and ``messages_path`` (POST) for 2024-11-05 clients, with
    exactly what it uses of the Streamable HTTP app beside it: its ``guard`` (Origin and
    Host, the client's address), ``draining`` (new work is refused), ``open_session``,
    ``opened`` and ``ended`` (the app's session hooks), its ``sessions`` (counted with
    these against ``max_sessions``), ``stalls``, ``body_deadlines``, ``call_guard`` and
    ``principal_key``, and its limits."""

    sse_path: str
    messages_path: str
    guard: OriginHostGuard
    draining: Callable[[], bool]
    open_session: OpenSession
    opened: Callable[[HttpSession], None]
    ended: Callable[[HttpSession], None]
    stalls: Stalls
    body_deadlines: ReadDeadlines
    call_guard: CallGuard | None
    principal_key: str | None
    others: Sized  # the app's own sessions
    max_sessions: int
    max_body: int
    max_batch: int
    stream_limit: int
    sessions: dict[str, HttpSession] = field(default_factory=dict, init=False)

    def handles(self, path: str) -> bool:
        return path.rstrip("/") in (self.sse_path.rstrip("/"), self.messages_path.rstrip("/"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = headers_of(scope)
        principal = principal_of(scope, self.principal_key)
        try:
            self.guard.check(scope, headers)
            path = local_path(scope).rstrip("/")
            method = scope["method"]
            if path == self.sse_path.rstrip("/") and method == "GET":
                await self._stream(scope, send, receive, principal)
            elif path == self.messages_path.rstrip("/") and method == "POST":
                await self._post(scope, headers, receive, send, principal)
            else:
                raise Refused(405, "Method not allowed on this legacy HTTP+SSE endpoint.")
        except Refused as exc:
            await respond_refused(send, exc)

    async def _stream(self, scope: Scope, send: Send, receive: Receive,
                      principal: Principal | None) -> None:
        if self.draining():
            raise refusal()
        if len(self.others) + len(self.sessions) >= self.max_sessions:
            raise Refused(503, "Service unavailable: too many open sessions; retry later.")
        sid = secrets.token_urlsafe(24)
        session = self.open_session(sid, owner=identity_of(principal))
        stream = ResponseStream(session, session.new_stream_id(), standalone=True,
                                limit=self.stream_limit)
        session.standalone = stream
        self.sessions[sid] = session
        self.opened(session)
        root = scope.get("root_path", "")
        endpoint = f"{root}{self.messages_path}?session_id={sid}"
        sender = self.stalls.guard(send, receive)
        try:
            await sender({"type": "http.response.start", "status": 200,
                          "headers": SSE_HEADERS})
            await sender({"type": "http.response.body", "more_body": True,
                          "body": b"event: endpoint\ndata: " + endpoint.encode() + b"\n\n"})
            # until the session ends (closed, drained), or its reader falls behind the
            # bound, or goes away
            await relay_sse(stream, sender, receive)
        finally:
            self.stalls.release(sender)
            self.sessions.pop(sid, None)
            session.close()
            self.ended(session)

    async def _post(self, scope: Scope, headers: dict[str, str], receive: Receive,
                    send: Send, principal: Principal | None) -> None:
        query = scope.get("query_string", b"").decode("latin-1")
        params = dict(p.partition("=")[::2] for p in query.split("&") if p)
        session = self.sessions.get(params.get("session_id", ""))
        if session is None or session.owner != identity_of(principal):
            raise Refused(404, "Session not found: open the SSE stream first and POST to the "
                               "endpoint it announced.")
        require_json(headers)
        body = await read_body(headers, receive, self.max_body, self.body_deadlines)
        obj: Any = decode_json(body, self.max_batch)
        messages = obj if isinstance(obj, list) else [obj]
        if self.draining() and any(isinstance(m, dict) and "method" in m and "id" in m
                                   for m in messages):
            raise refusal()  # new work, while the server drains (answers still go in)
        refused = refused_call(self.call_guard, principal, messages)
        if refused is not None:
            await respond_denied(send, *refused)
            return
        direct = session.feed(obj, principal, self.guard.client_address(scope, headers))
        for data in direct:  # errors for unreadable messages also travel on the stream
            assert session.standalone is not None
            session.standalone.push(data, False)
        await respond(send, 202, b"Accepted", content_type=b"text/plain")
