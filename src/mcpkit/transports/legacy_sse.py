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
from typing import TYPE_CHECKING, Any

from ..session import Principal
from .asgi import (
    SSE_HEADERS,
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
    watch_disconnect,
)
from .http_auth import identity_of, principal_of, refused_call, respond_denied
from .http_drain import refusal
from .http_session import HttpSession
from .http_streams import ResponseStream, relay

if TYPE_CHECKING:
    from .http_server import StreamableHTTPApp


class LegacySSE:
    """Serves ``sse_path`` (GET) and ``messages_path`` (POST) for 2024-11-05 clients."""

    def __init__(self, app: StreamableHTTPApp, sse_path: str, messages_path: str) -> None:
        self.app = app
        self.sse_path = sse_path
        self.messages_path = messages_path
        self.sessions: dict[str, HttpSession] = {}

    def handles(self, path: str) -> bool:
        return path.rstrip("/") in (self.sse_path.rstrip("/"), self.messages_path.rstrip("/"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = headers_of(scope)
        principal = principal_of(scope, self.app.principal_key)
        try:
            self.app.check_origin_and_host(scope, headers)
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
        app = self.app
        if app.drain.active:
            raise refusal()
        if len(app.sessions) + len(self.sessions) >= app.config.max_sessions:
            raise Refused(503, "Service unavailable: too many open sessions; retry later.")
        sid = secrets.token_urlsafe(24)
        session = app.open_session(sid, owner=identity_of(principal))
        stream = ResponseStream(session, session.new_stream_id(), standalone=True,
                                limit=app.config.max_stream_buffer)
        session.standalone = stream
        self.sessions[sid] = session
        app.session_opened(session)
        root = scope.get("root_path", "")
        endpoint = f"{root}{self.messages_path}?session_id={sid}"
        sender = app.stalls.guard(send, receive)
        await sender({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await sender({"type": "http.response.body", "more_body": True,
                      "body": b"event: endpoint\ndata: " + endpoint.encode() + b"\n\n"})

        gone = False

        def went() -> None:
            nonlocal gone
            gone = True
            stream.wakeup.set()

        watcher = watch_disconnect(receive, went)
        try:
            await relay(stream, sender, lambda: gone)
            if not gone:  # the session ended (closed, drained), or its reader fell
                # behind the bound: say so
                await sender({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass
        finally:
            watcher.cancel()
            app.stalls.release(sender)
            self.sessions.pop(sid, None)
            session.close()
            app.session_ended(session)

    async def _post(self, scope: Scope, headers: dict[str, str], receive: Receive,
                    send: Send, principal: Principal | None) -> None:
        query = scope.get("query_string", b"").decode("latin-1")
        params = dict(p.partition("=")[::2] for p in query.split("&") if p)
        session = self.sessions.get(params.get("session_id", ""))
        if session is None or session.owner != identity_of(principal):
            raise Refused(404, "Session not found: open the SSE stream first and POST to the "
                               "endpoint it announced.")
        require_json(headers)
        body = await read_body(headers, receive, self.app.config.max_body,
                               self.app.body_deadlines)
        obj: Any = decode_json(body, self.app.max_batch)
        messages = obj if isinstance(obj, list) else [obj]
        if self.app.drain.active and any(isinstance(m, dict) and "method" in m and "id" in m
                                         for m in messages):
            raise refusal()  # new work, while the server drains (answers still go in)
        refused = refused_call(self.app.call_guard, principal, messages)
        if refused is not None:
            await respond_denied(send, *refused)
            return
        direct = session.feed(obj, principal, self.app.guard.client_address(scope, headers))
        for data in direct:  # errors for unreadable messages also travel on the stream
            assert session.standalone is not None
            session.standalone.push(data, False)
        await respond(send, 202, b"Accepted", content_type=b"text/plain")
