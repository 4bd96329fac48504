"""The sans-I/O MCP connection of the stateful era: bytes in, events out; calls in, bytes out.

``Connection.receive_data(bytes)`` returns a list of events; the ``send_*`` methods queue
outgoing messages, drained with ``data_to_send()`` (newline-framed, for stream transports)
or ``messages_to_send()`` (one serialized message each, tagged with the request they
belong to, for HTTP). Nothing here touches a socket, a loop or a clock, so tests wire two
connections back to back and assert the exact events.

Invariants kept here, whatever the caller does:
- Bad input never raises out of ``receive_*``: it is answered with the spec's error (id
  null when the id was unreadable) and reported as ``ProtocolViolation``.
- An inbound request id is in flight from arrival until answered or cancelled; a second
  request with the same id meanwhile is refused and the first is left alone.
- A cancelled request gets no response; progress is sent only for a request in flight
  that asked for it, with strictly increasing values, never after its response.
- The handshake is enforced (see ``lifecycle``), and so are the negotiated revision's
  method set and both sides' declared capabilities.
- ``initialize`` and ``ping`` are answered here; ``logging/setLevel`` is kept here.
"""

from __future__ import annotations

from typing import Any

from . import compat
from .errors import (
    RESOURCE_NOT_FOUND,
    CapabilityNotSupported,
    InvalidParams,
    InvalidRequest,
    LocalProtocolError,
    MethodNotFound,
    ParseError,
    ProtocolError,
    RemoteError,
)
from .framing import DEFAULT_MAX_MESSAGE_SIZE, TOO_LARGE, LineBuffer
from .jsonrpc import (
    BadMessage,
    ErrorResponse,
    JSONObject,
    Notification,
    Request,
    RequestId,
    Response,
    decode,
    encode,
    is_valid_id,
    parse_message,
)
from .jsonrpc import error as error_msg
from .jsonrpc import notification as notification_msg
from .jsonrpc import request as request_msg
from .jsonrpc import result as result_msg
from .lifecycle import Lifecycle, Role, State
from .methods import (
    CLIENT_CAPABILITY_FOR_NOTIFICATION,
    CLIENT_CAPABILITY_FOR_REQUEST,
    LOG_LEVEL_RANK,
    LOG_LEVELS,
    SERVER_CAPABILITY_FOR_NOTIFICATION,
    SERVER_CAPABILITY_FOR_REQUEST,
    has_capability,
)
from .record import Record
from .stateless import RequestMeta, is_modern, read_meta, stamp
from .versions import (
    LATEST_STATEFUL,
    REVISIONS,
    STATEFUL_VERSIONS,
    STATELESS_VERSIONS,
    Revision,
    negotiate,
)

# ---------------------------------------------------------------------------- events


class RequestReceived(Record):
    __slots__ = ("id", "meta", "method", "params")

    def __init__(
        self,
        id: RequestId,
        method: str,
        params: JSONObject,
        meta: RequestMeta | None = None,
    ) -> None:
        self.id = id
        self.method = method
        self.params = params
        self.meta = meta  # set for a modern (2026-07-28) request


class NotificationReceived(Record):
    __slots__ = ("method", "params")

    def __init__(self, method: str, params: JSONObject) -> None:
        self.method = method
        self.params = params


class ResponseReceived(Record):
    __slots__ = ("id", "result")

    def __init__(self, id: RequestId, result: JSONObject) -> None:
        self.id = id
        self.result = result


class ErrorReceived(Record):
    __slots__ = ("error", "id")

    def __init__(self, id: RequestId, error: RemoteError) -> None:
        self.id = id
        self.error = error


class CancelRequested(Record):
    """The peer cancelled its request ``id``: stop the work; no response will be sent."""

    __slots__ = ("id", "reason")

    def __init__(self, id: RequestId, reason: str | None) -> None:
        self.id = id
        self.reason = reason


class ProgressReceived(Record):
    """Progress for our request ``request_id``."""

    __slots__ = ("message", "progress", "request_id", "total")

    def __init__(
        self,
        request_id: RequestId,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> None:
        self.request_id = request_id
        self.progress = progress
        self.total = total
        self.message = message


class SessionStarted(Record):
    """Server: ``initialize`` answered. Client: ``initialize`` result accepted."""

    __slots__ = ("instructions", "peer_capabilities", "peer_info", "revision")

    def __init__(
        self,
        revision: Revision,
        peer_info: JSONObject,
        peer_capabilities: JSONObject,
        instructions: str | None = None,
    ) -> None:
        self.revision = revision
        self.peer_info = peer_info
        self.peer_capabilities = peer_capabilities
        self.instructions = instructions


class SessionReady(Record):
    """Server: ``notifications/initialized`` arrived; normal operation may start."""

    __slots__ = ()

class HandshakeFailed(Record):
    """Client: the server chose a revision we do not speak, or refused ``initialize``."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class ProtocolViolation(Record):
    """The peer sent something invalid; it was answered (if it could be) and dropped."""

    __slots__ = ("error",)

    def __init__(self, error: ProtocolError) -> None:
        self.error = error


Event = (
    RequestReceived
    | NotificationReceived
    | ResponseReceived
    | ErrorReceived
    | CancelRequested
    | ProgressReceived
    | SessionStarted
    | SessionReady
    | HandshakeFailed
    | ProtocolViolation
)


class Outgoing(Record):
    """One serialized message, and the inbound request it belongs to (for HTTP routing)."""

    __slots__ = ("data", "final", "related")

    def __init__(self, data: bytes, related: RequestId | None = None, final: bool = False) -> None:
        self.data = data
        self.related = related
        self.final = final  # a response (or error) ending the exchange of ``related``


class _Inbound(Record):
    __slots__ = ("batch", "last_progress", "meta", "method", "progress_token")

    def __init__(
        self,
        method: str,
        progress_token: str | int | None,
        last_progress: float | None = None,
        batch: _Batch | None = None,
        meta: RequestMeta | None = None,
    ) -> None:
        self.method = method
        self.progress_token = progress_token
        self.last_progress = last_progress
        self.batch = batch
        self.meta = meta  # a modern (stateless) request's own metadata


class _Batch(Record):
    __slots__ = ("key", "parts", "pending", "receiving")

    def __init__(
        self,
        pending: set[RequestId] | None = None,
        parts: list[bytes] | None = None,
        key: RequestId | None = None,
        receiving: bool = True,
    ) -> None:
        self.pending = set() if pending is None else pending
        self.parts = [] if parts is None else parts
        self.key = key  # the first request id in it (names its answer for HTTP)
        self.receiving = receiving  # still reading its elements: answers so far must wait


class _Outbound(Record):
    __slots__ = ("method", "progress_token")

    def __init__(self, method: str, progress_token: str | int | None) -> None:
        self.method = method
        self.progress_token = progress_token


_NOT_INITIALIZED = (
    "Session not initialized: the first request must be 'initialize' (only 'ping' is "
    "allowed before it)."
)
_AWAITING_INITIALIZED = (
    "Session not ready: send the 'notifications/initialized' notification after the "
    "'initialize' result before other requests (only 'ping' is allowed until then)."
)


_CANCELLED_KEPT = 1024
"""How many peer-cancelled request ids a connection remembers, so that a handler's late
answer to one is dropped quietly rather than refused as an answer to an unknown id."""


class Connection:
    """One side (client or server) of one stateful MCP session.

    Misuse by the caller (a request the handshake state does not allow yet, answering a
    request that is not in flight or answering it twice, …) raises ``LocalProtocolError``
    and changes nothing.
    """

    __slots__ = (
        "_cancelled",
        "_inbound",
        "_info_cache",
        "_latest",
        "_lines",
        "_next_id",
        "_outbound",
        "_outbox",
        "_progress_tokens",
        "cache_scope",
        "cache_ttl_ms",
        "capabilities",
        "info",
        "instructions",
        "lifecycle",
        "log_level",
        "modern_versions",
        "peer_capabilities",
        "peer_info",
        "peer_instructions",
        "revision",
        "role",
        "versions",
    )

    def __init__(
        self,
        role: Role,
        *,
        info: JSONObject,
        capabilities: JSONObject | None = None,
        instructions: str | None = None,
        versions: tuple[str, ...] = STATEFUL_VERSIONS,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self.role = role
        self.info = info
        self.capabilities: JSONObject = capabilities or {}
        self.instructions = instructions
        self.versions = versions
        self.lifecycle = Lifecycle(role)
        self.revision: Revision | None = None
        self.peer_info: JSONObject = {}
        self.peer_capabilities: JSONObject = {}
        self.peer_instructions: str | None = None  # client: the server's instructions
        self.log_level: str | None = None  # server: set by logging/setLevel
        self._lines = LineBuffer(max_message_size)
        self._outbox: list[Outgoing] = []
        self._inbound: dict[RequestId, _Inbound] = {}
        self._cancelled: dict[RequestId, None] = {}  # cancelled by the peer, oldest first
        self._outbound: dict[RequestId, _Outbound] = {}
        self._progress_tokens: dict[str | int, RequestId] = {}
        self._next_id = 0
        self._latest = max(versions)
        self.modern_versions: tuple[str, ...] = STATELESS_VERSIONS  # served per request
        self.cache_ttl_ms = 0  # caching hints on modern list/read/discover results
        self.cache_scope = "private"
        self._info_cache: dict[str, JSONObject] = {}

    # ------------------------------------------------------------------ state

    @property
    def state(self) -> State:
        return self.lifecycle.state

    @property
    def in_flight(self) -> int:
        """Inbound requests received and not yet answered or cancelled."""
        return len(self._inbound)

    def progress_token(self, request_id: RequestId) -> str | int | None:
        rec = self._inbound.get(request_id)
        return rec.progress_token if rec else None

    def snapshot(self) -> dict[str, Any]:
        """What the handshake settled, for a session store (see ``restore``)."""
        return {
            "version": self.revision.version if self.revision else None,
            "peer_info": self.peer_info,
            "peer_capabilities": self.peer_capabilities,
            "ready": self.lifecycle.state is State.READY,
            "log_level": self.log_level,
        }

    def restore(self, record: dict[str, Any]) -> None:
        """Take back a session from ``snapshot()`` (e.g. after a server restart).

        Raises ``LocalProtocolError`` (a ``ValueError``) for a record this connection
        cannot resume."""
        version = record.get("version")
        if not isinstance(version, str) or version not in self.versions:
            raise LocalProtocolError(f"cannot restore a session of revision {version!r}")
        self.revision = REVISIONS[version]
        info, caps = record.get("peer_info"), record.get("peer_capabilities")
        self.peer_info = info if isinstance(info, dict) else {}
        self.peer_capabilities = caps if isinstance(caps, dict) else {}
        level = record.get("log_level")
        self.log_level = level if level in LOG_LEVEL_RANK else None
        self.lifecycle.state = State.READY if record.get("ready") else State.INITIALIZING

    # ------------------------------------------------------------------ receiving

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed bytes of a newline-framed stream (``b""`` = end of input)."""
        events: list[Event] = []
        for line in self._lines.feed(data):
            if line is TOO_LARGE:
                self._reject(
                    InvalidRequest(
                        f"Message too large: the limit is {self._lines.max_size} bytes per "
                        "message; send smaller messages.",
                    ),
                    None,
                    events,
                )
                continue
            assert isinstance(line, bytes)
            try:
                obj = decode(line)
            except ParseError as exc:
                self._reject(exc, None, events)
                continue
            self._receive_obj(obj, events)
        return events

    def receive_message(self, obj: Any) -> list[Event]:
        """Feed one already-decoded JSON value (an object, or a batch array)."""
        events: list[Event] = []
        self._receive_obj(obj, events)
        return events

    def receive_eof(self) -> list[Event]:
        """The input ended; deliver a last unterminated line, if any."""
        return self.receive_data(b"")

    def _receive_obj(self, obj: Any, events: list[Event]) -> None:
        if type(obj) is list:
            self._receive_batch(obj, events)
            return
        try:
            msg = parse_message(obj)
        except BadMessage as bad:
            self._reject(bad.error, bad.id, events)
            return
        self._dispatch(msg, events, None)

    def _receive_batch(self, items: list[Any], events: list[Event]) -> None:
        rev = self.revision
        if rev is None or not rev.batches:
            where = f"protocol revision {rev.version}" if rev else "this session before initialize"
            self._reject(
                InvalidRequest(
                    f"Invalid Request: JSON-RPC batches are not supported in {where}; send "
                    "one message at a time."
                ),
                None,
                events,
            )
            return
        if not items:
            self._reject(InvalidRequest("Invalid Request: empty batch."), None, events)
            return
        batch = _Batch()
        for item in items:
            try:
                msg = parse_message(item)
            except BadMessage as bad:
                batch.parts.append(encode(self._error_obj(bad.id, bad.error.to_error())))
                events.append(ProtocolViolation(bad.error))
                continue
            if isinstance(msg, Request) and msg.method == "initialize":
                err = InvalidRequest("Invalid Request: 'initialize' must not be part of a batch.")
                batch.parts.append(encode(self._error_obj(msg.id, err.to_error())))
                events.append(ProtocolViolation(err))
                continue
            self._dispatch(msg, events, batch)
        batch.receiving = False
        self._maybe_flush_batch(batch)

    def _error_obj(self, id: RequestId | None, err: JSONObject) -> JSONObject:
        """An error response; an unreadable id is ``null`` (JSON-RPC 2.0), or omitted in
        revisions whose schema makes it optional and forbids null (2025-11-25)."""
        msg = error_msg(id, err)
        if id is None and self.revision is not None and self.revision.has("omit_unreadable_id"):
            del msg["id"]
        return msg

    def _reject(self, err: ProtocolError, id: RequestId | None, events: list[Event]) -> None:
        self._outbox.append(Outgoing(encode(self._error_obj(id, err.to_error())), id, True))
        events.append(ProtocolViolation(err))

    def _answer_error(
        self, id: RequestId, err: ProtocolError, batch: _Batch | None, events: list[Event]
    ) -> None:
        data = encode(self._error_obj(id, err.to_error()))
        if batch is not None:
            batch.parts.append(data)
        else:
            self._outbox.append(Outgoing(data, id, True))
        events.append(ProtocolViolation(err))

    def _dispatch(
        self,
        msg: Request | Notification | Response | ErrorResponse,
        events: list[Event],
        batch: _Batch | None,
    ) -> None:
        if type(msg) is Request:
            self._on_request(msg, events, batch)
        elif type(msg) is Notification:
            self._on_notification(msg, events)
        elif type(msg) is Response:
            out = self._outbound.pop(msg.id, None)
            if out is None:
                return  # unknown, or cancelled/timed out: ignored (the race is allowed)
            self._forget_token(out)
            if out.method == "initialize":
                self._on_initialize_result(msg.result, events)
                return
            events.append(ResponseReceived(msg.id, msg.result))
        else:
            assert isinstance(msg, ErrorResponse)
            if msg.id is None:
                events.append(ProtocolViolation(InvalidRequest(msg.message, msg.data)))
                return
            out = self._outbound.pop(msg.id, None)
            if out is None:
                return
            self._forget_token(out)
            remote = RemoteError(msg.code, msg.message, msg.data)
            if out.method == "initialize":
                self.lifecycle.close()
                events.append(HandshakeFailed(f"initialize refused: {remote}"))
                return
            events.append(ErrorReceived(msg.id, remote))

    def _forget_token(self, out: _Outbound) -> None:
        if out.progress_token is not None:
            self._progress_tokens.pop(out.progress_token, None)

    def _on_request(self, req: Request, events: list[Event], batch: _Batch | None) -> None:
        rid, method = req.id, req.method
        if rid in self._inbound:
            self._answer_error(
                rid,
                InvalidRequest(
                    f"Invalid Request: request id {rid!r} is already in use by a request that "
                    "is still in progress; use a new id for every request."
                ),
                batch,
                events,
            )
            return
        params = req.params if req.params is not None else {}
        if self.role is Role.SERVER and is_modern(params):
            self._on_modern_request(rid, method, params, events, batch)
            return
        lc = self.lifecycle
        if not lc.peer_may_request(method):
            if method == "initialize":
                msg = "Invalid Request: the session is already initialized; 'initialize' is "
                msg += "sent once per session."
            elif lc.state is State.NEW:
                msg = _NOT_INITIALIZED
            elif lc.state is State.INITIALIZING:
                msg = _AWAITING_INITIALIZED
            else:
                msg = "Invalid Request: the session is closed."
            self._answer_error(rid, InvalidRequest(msg), batch, events)
            return
        if self.role is Role.SERVER:
            if method == "initialize":
                self._on_initialize(rid, params, events)
                return
            refused = self._server_refuses(method, self.revision)
            if refused is not None:
                self._answer_error(rid, refused, batch, events)
                return
        else:
            rev = self.revision
            if method != "ping" and (rev is None or method not in rev.server_requests):
                self._answer_error(rid, _method_not_found(method, rev), batch, events)
                return
            cap = CLIENT_CAPABILITY_FOR_REQUEST.get(method)
            if cap is not None and not has_capability(self.capabilities, cap):
                self._answer_error(
                    rid,
                    MethodNotFound(
                        f"Method not found: this client does not support '{method}' (no "
                        f"'{cap}' capability was declared)."
                    ),
                    batch,
                    events,
                )
                return
        meta = params.get("_meta")
        token = meta.get("progressToken") if type(meta) is dict else None
        if token is not None and not is_valid_id(token):
            token = None
        rec = _Inbound(method, token, None, batch)
        if batch is not None:
            batch.pending.add(rid)
            if batch.key is None:
                batch.key = rid
        self._inbound[rid] = rec
        if self._cancelled:
            self._cancelled.pop(rid, None)  # the id is live again: answers go to this one
        if method == "ping":
            self.send_result(rid, {})
            return
        if method == "logging/setLevel" and self.role is Role.SERVER:
            level = params.get("level")
            if not isinstance(level, str) or level not in LOG_LEVEL_RANK:
                self.send_error(
                    rid,
                    InvalidParams(
                        f"Invalid params: unknown log level {level!r}; use one of "
                        f"{', '.join(LOG_LEVELS)}."
                    ),
                )
                return
            self.log_level = level
            self.send_result(rid, {})
            return
        events.append(RequestReceived(rid, method, params))

    def _server_refuses(self, method: str, rev: Revision | None) -> MethodNotFound | None:
        """Server: why ``method`` cannot be served in ``rev`` (unknown there, or gated by a
        capability this server did not declare), or None."""
        if rev is not None and method not in rev.client_requests:
            return _method_not_found(method, rev)
        cap = SERVER_CAPABILITY_FOR_REQUEST.get(method)
        if cap is not None and not has_capability(self.capabilities, cap):
            return MethodNotFound(
                f"Method not found: '{method}' is not offered by this server (it does "
                f"not declare the '{cap}' capability)."
            )
        return None

    def _on_modern_request(
        self,
        rid: RequestId,
        method: str,
        params: JSONObject,
        events: list[Event],
        batch: _Batch | None,
    ) -> None:
        """A stateless (2026-07-28) request: judged on its own ``_meta``, whatever the
        connection's handshake state."""
        try:
            meta = read_meta(params, self.modern_versions)
        except ProtocolError as exc:
            self._answer_error(rid, exc, batch, events)
            return
        assert meta is not None
        rev = meta.revision
        refused = self._server_refuses(method, rev)
        if refused is not None:
            self._answer_error(rid, refused, batch, events)
            return
        token = params["_meta"].get("progressToken")
        if token is not None and not is_valid_id(token):
            token = None
        self._inbound[rid] = _Inbound(method, token, None, batch, meta)
        if self._cancelled:
            self._cancelled.pop(rid, None)
        if batch is not None:
            batch.pending.add(rid)
        if method == "server/discover":
            discover: JSONObject = {
                "supportedVersions": list(self.modern_versions),
                "capabilities": compat.server_capabilities(self.capabilities, rev),
            }
            if self.instructions:
                discover["instructions"] = self.instructions
            self.send_result(rid, discover)
            return
        events.append(RequestReceived(rid, method, params, meta))

    def _on_initialize(self, rid: RequestId, params: JSONObject, events: list[Event]) -> None:
        version = params.get("protocolVersion")
        caps = params.get("capabilities")
        info = params.get("clientInfo")
        problems = []
        if not isinstance(version, str):
            problems.append("'protocolVersion' (string) is required")
        if not isinstance(caps, dict):
            problems.append("'capabilities' (object) is required")
        if not isinstance(info, dict) or not isinstance(info.get("name"), str):
            problems.append("'clientInfo' with 'name' and 'version' is required")
        if problems:
            self._answer_error(rid, InvalidParams(
                "Invalid params for initialize: " + "; ".join(problems) + "."), None, events)
            return
        assert isinstance(caps, dict) and isinstance(info, dict)
        chosen = negotiate(version, self.versions)
        rev = REVISIONS[chosen]
        self.revision = rev
        self.peer_info = _shared(info)
        self.peer_capabilities = _shared(caps)
        self.lifecycle.advance("recv:initialize")
        res: JSONObject = {
            "protocolVersion": chosen,
            "capabilities": compat.server_capabilities(self.capabilities, rev),
            "serverInfo": compat.implementation(self.info, rev),
        }
        if self.instructions:
            res["instructions"] = self.instructions
        self._outbox.append(Outgoing(encode(result_msg(rid, res)), rid, True))
        events.append(SessionStarted(rev, info, caps, self.instructions))

    def _on_initialize_result(self, res: JSONObject, events: list[Event]) -> None:
        version = res.get("protocolVersion")
        if not isinstance(version, str) or version not in self.versions:
            self.lifecycle.close()
            events.append(
                HandshakeFailed(
                    f"the server chose protocol revision {version!r}, which this client does "
                    f"not support (supported: {', '.join(self.versions)})"
                )
            )
            return
        rev = REVISIONS[version]
        caps = res.get("capabilities")
        info = res.get("serverInfo")
        self.revision = rev
        self.peer_capabilities = caps if isinstance(caps, dict) else {}
        self.peer_info = info if isinstance(info, dict) else {}
        instructions = res.get("instructions")
        if isinstance(instructions, str):
            self.peer_instructions = instructions
        self.send_notification("notifications/initialized")
        events.append(
            SessionStarted(
                rev,
                self.peer_info,
                self.peer_capabilities,
                instructions if isinstance(instructions, str) else None,
            )
        )

    def _remember_cancelled(self, rid: RequestId) -> None:
        cancelled = self._cancelled
        cancelled[rid] = None
        if len(cancelled) > _CANCELLED_KEPT:
            del cancelled[next(iter(cancelled))]

    def _on_notification(self, note: Notification, events: list[Event]) -> None:
        method = note.method
        params = note.params if note.params is not None else {}
        if method == "notifications/cancelled":
            rid = params.get("requestId")
            if not is_valid_id(rid):
                return
            assert isinstance(rid, str | int)
            rec = self._inbound.get(rid)
            if rec is None or rec.method == "initialize":
                return  # unknown, finished or uncancellable: ignored
            del self._inbound[rid]
            self._remember_cancelled(rid)
            if rec.batch is not None:
                rec.batch.pending.discard(rid)
                self._maybe_flush_batch(rec.batch)
            reason = params.get("reason")
            events.append(CancelRequested(rid, reason if isinstance(reason, str) else None))
            return
        if method == "notifications/progress":
            token = params.get("progressToken")
            progress = params.get("progress")
            if not is_valid_id(token) or type(progress) not in (int, float):
                return
            assert isinstance(token, str | int)
            target = self._progress_tokens.get(token)
            if target is None:
                return
            total = params.get("total")
            message = params.get("message")
            events.append(
                ProgressReceived(
                    target,
                    float(progress),  # type: ignore[arg-type]
                    float(total) if type(total) in (int, float) else None,  # type: ignore[arg-type]
                    message if isinstance(message, str) else None,
                )
            )
            return
        if method == "notifications/initialized":
            if self.role is Role.SERVER and self.lifecycle.advance(
                "recv:notifications/initialized"
            ):
                events.append(SessionReady())
            return
        if self.lifecycle.state is State.NEW and (self.revision is None
                                                  or self.revision.stateful):
            return  # nothing but the handshake means anything yet (stateless: no handshake)
        events.append(NotificationReceived(method, params))

    # ------------------------------------------------------------------ sending

    def start_handshake(self, version: str | None = None) -> RequestId:
        """Client: send ``initialize`` offering ``version`` (default: the newest we speak)."""
        if self.role is not Role.CLIENT:
            raise LocalProtocolError("only a client starts the handshake")
        if not self.lifecycle.may_request("initialize"):
            raise LocalProtocolError(
                f"cannot send 'initialize' in handshake state {self.state.value}"
            )
        params = {
            "protocolVersion": version or self._latest,
            "capabilities": self.capabilities,
            "clientInfo": self.info,
        }
        return self._send_request("initialize", params, None)

    def send_request(
        self, method: str, params: JSONObject | None = None, *, related: RequestId | None = None
    ) -> RequestId:
        """Queue a request to the peer; returns its id.

        Raises ``CapabilityNotSupported`` if the negotiated revision lacks ``method`` or
        the peer did not declare the capability it needs, and ``LocalProtocolError`` if
        the handshake does not allow it yet or its progress token is already in use.
        """
        rev = self.revision
        stateless = self.role is Role.CLIENT and rev is not None and not rev.stateful
        if not stateless and not self.lifecycle.may_request(method):
            raise LocalProtocolError(
                f"cannot send {method!r} in handshake state {self.state.value}"
            )
        if self.role is Role.SERVER:
            if method != "ping" and (rev is None or method not in rev.server_requests):
                raise CapabilityNotSupported(
                    f"'{method}' does not exist in protocol revision "
                    f"{rev.version if rev else '(none)'}"
                )
            cap = CLIENT_CAPABILITY_FOR_REQUEST.get(method)
        else:
            if method not in ("ping", "initialize") and (
                rev is None or method not in rev.client_requests
            ):
                raise CapabilityNotSupported(f"'{method}' does not exist in this revision")
            cap = SERVER_CAPABILITY_FOR_REQUEST.get(method)
            if cap == "completions" and rev is not None and not rev.has("completions_capability"):
                cap = None  # no such flag before 2025-03-26: the server may say METHOD_NOT_FOUND
        if cap is not None and not has_capability(self.peer_capabilities, cap):
            raise CapabilityNotSupported(
                f"the peer did not declare the '{cap}' capability needed for '{method}'"
            )
        return self._send_request(method, params, related)

    def _send_request(
        self, method: str, params: JSONObject | None, related: RequestId | None
    ) -> RequestId:
        token = None
        if params:
            meta = params.get("_meta")
            if isinstance(meta, dict):
                token = meta.get("progressToken")
                if token is not None and token in self._progress_tokens:
                    raise LocalProtocolError(f"progress token {token!r} is already in use")
        self._next_id += 1
        rid = self._next_id
        if token is not None:
            self._progress_tokens[token] = rid
        self._outbound[rid] = _Outbound(method, token)
        if method == "initialize":
            self.lifecycle.advance("send:initialize")
        self._outbox.append(Outgoing(encode(request_msg(rid, method, params)), related))
        return rid

    def use_stateless(self, version: str) -> None:
        """Client: speak the stateless revision ``version`` (no handshake; every request
        carries ``_meta``, added by the caller); ``peer_capabilities`` come from
        ``server/discover``."""
        self.revision = REVISIONS[version]

    def use_stateful(self) -> None:
        """Client: back to the handshake era (after a probe found a legacy server)."""
        self.revision = None

    def cancel_request(self, rid: RequestId, reason: str | None = None) -> bool:
        """Cancel our pending request ``rid``: notify the peer, ignore any late answer.

        False (nothing sent) when ``rid`` is no longer pending, which races with its
        answer and is not an error, or is ``initialize``, which must not be cancelled."""
        out = self._outbound.get(rid)
        if out is None or out.method == "initialize":
            return False
        del self._outbound[rid]
        self._forget_token(out)
        params: JSONObject = {"requestId": rid}
        if reason:
            params["reason"] = reason
        self._outbox.append(Outgoing(encode(notification_msg("notifications/cancelled", params))))
        return True

    def fail_pending(self) -> list[RequestId]:
        """Forget every pending outbound request (the connection is gone); return their ids."""
        ids = list(self._outbound)
        self._outbound.clear()
        self._progress_tokens.clear()
        self.lifecycle.close()
        return ids

    def send_notification(
        self, method: str, params: JSONObject | None = None, *, related: RequestId | None = None
    ) -> bool:
        """Queue a notification; False (nothing sent) if the revision or our declared
        capabilities do not carry it (a server announces changes to every session and each
        session keeps what its peer can take).

        ``notifications/initialized`` is the handshake's own (sent here when the
        ``initialize`` result is accepted): sending it in another state raises
        ``LocalProtocolError``."""
        if method == "notifications/initialized":
            if not self.lifecycle.advance("send:notifications/initialized"):
                raise LocalProtocolError(
                    f"cannot send 'notifications/initialized' in handshake state "
                    f"{self.state.value} (a {self.role.value} sends it once, after the "
                    "initialize result)"
                )
        else:
            rev = self.revision
            rec = self._inbound.get(related) if related is not None else None
            if rec is not None and rec.meta is not None:
                rev = rec.meta.revision
            if rev is None:
                return False
            if self.role is Role.SERVER:
                allowed = rev.server_notifications
                cap = SERVER_CAPABILITY_FOR_NOTIFICATION.get(method)
            else:
                allowed = rev.client_notifications
                cap = CLIENT_CAPABILITY_FOR_NOTIFICATION.get(method)
            if method not in allowed:
                return False
            if cap is not None and not has_capability(self.capabilities, cap):
                return False
        self._outbox.append(Outgoing(encode(notification_msg(method, params)), related))
        return True

    def _answering(self, rid: RequestId) -> _Inbound | None:
        """Take inbound request ``rid`` out of flight to answer it; None when the peer
        cancelled it (the answer is dropped: that race is the peer's right), and
        ``LocalProtocolError`` when it was never received or is already answered."""
        rec = self._inbound.pop(rid, None)
        if rec is None and rid not in self._cancelled:
            raise LocalProtocolError(
                f"request {rid!r} is not in flight: it was never received, or it was already "
                "answered (a request is answered once)"
            )
        return rec

    def send_result(self, rid: RequestId, value: JSONObject) -> bool:
        """Answer inbound request ``rid``; False (nothing sent) if the peer cancelled it.

        Raises ``LocalProtocolError`` for a request that is not in flight."""
        rec = self._answering(rid)
        if rec is None:
            return False
        meta = rec.meta
        if meta is not None:
            mrev = meta.revision
            value = stamp(rec.method, compat.result(rec.method, value, mrev), mrev,
                          self._modern_info(mrev), self.cache_ttl_ms, self.cache_scope)
        else:
            rev = self.revision
            if rev is not None and rev.version != LATEST_STATEFUL:
                value = compat.result(rec.method, value, rev)
        data = encode(result_msg(rid, value))
        self._deliver(rid, rec, data)
        return True

    def _modern_info(self, rev: Revision) -> JSONObject:
        info = self._info_cache.get(rev.version)
        if info is None:
            info = self._info_cache[rev.version] = compat.implementation(self.info, rev)
        return info

    def send_error(self, rid: RequestId, err: ProtocolError) -> bool:
        """Answer inbound request ``rid`` with an error; False (nothing sent) if the peer
        cancelled it. Raises ``LocalProtocolError`` for a request that is not in flight."""
        rec = self._answering(rid)
        if rec is None:
            return False
        rev = rec.meta.revision if rec.meta is not None else self.revision
        if err.code == RESOURCE_NOT_FOUND and rev is not None and not rev.has(
            "resource_not_found_32002"
        ):
            err = InvalidParams(err.message, err.data)  # a revision without -32002: -32602
        self._deliver(rid, rec, encode(self._error_obj(rid, err.to_error())))
        return True

    def _deliver(self, rid: RequestId, rec: _Inbound, data: bytes) -> None:
        batch = rec.batch
        if batch is None:
            self._outbox.append(Outgoing(data, rid, True))
            return
        batch.pending.discard(rid)
        batch.parts.append(data)
        self._maybe_flush_batch(batch)

    def _maybe_flush_batch(self, batch: _Batch) -> None:
        if batch.receiving or batch.pending or not batch.parts:
            return
        self._outbox.append(Outgoing(b"[" + b",".join(batch.parts) + b"]", batch.key, True))
        batch.parts = []

    def send_progress(
        self,
        rid: RequestId,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> bool:
        """Progress for inbound request ``rid``; False (dropped) when the request did not
        ask for progress, is no longer in flight, or ``progress`` does not increase.
        (Progress is best-effort: a handler may report it whatever the peer asked for.)"""
        rec = self._inbound.get(rid)
        if rec is None or rec.progress_token is None:
            return False
        if rec.last_progress is not None and not progress > rec.last_progress:
            return False
        rec.last_progress = progress
        params: JSONObject = {"progressToken": rec.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        rev = rec.meta.revision if rec.meta is not None else self.revision
        if message is not None and rev is not None and rev.has("progress_message"):
            params["message"] = message
        self._outbox.append(
            Outgoing(encode(notification_msg("notifications/progress", params)), rid)
        )
        return True

    def wants_log(self, level: str) -> bool:
        """Whether a log message at ``level`` passes the client's ``logging/setLevel``."""
        if not has_capability(self.capabilities, "logging"):
            return False
        threshold = self.log_level
        return threshold is None or LOG_LEVEL_RANK.get(level, 0) >= LOG_LEVEL_RANK[threshold]

    def send_log(
        self,
        level: str,
        data: Any,
        logger: str | None = None,
        *,
        related: RequestId | None = None,
    ) -> bool:
        """Server: a ``notifications/message``, if logging is declared and the level passes.

        Raises ``LocalProtocolError`` for a level that is not one of ``LOG_LEVELS``."""
        if level not in LOG_LEVEL_RANK:
            raise LocalProtocolError(
                f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}"
            )
        rec = self._inbound.get(related) if related is not None else None
        if rec is not None and rec.meta is not None:
            # modern: only for a request that asked for logs, at its own level
            threshold = rec.meta.log_level
            if threshold is None or LOG_LEVEL_RANK[level] < LOG_LEVEL_RANK[threshold]:
                return False
        elif not self.wants_log(level):
            return False
        params: JSONObject = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        return self.send_notification("notifications/message", params, related=related)

    # ------------------------------------------------------------------ output

    def data_to_send(self) -> bytes:
        """Drain queued messages as newline-terminated lines (stream transports)."""
        box = self._outbox
        if not box:
            return b""
        self._outbox = []
        if len(box) == 1:
            return box[0].data + b"\n"
        return b"\n".join([o.data for o in box]) + b"\n"

    def messages_to_send(self) -> list[Outgoing]:
        """Drain queued messages one by one, each tagged with its related request."""
        box, self._outbox = self._outbox, []
        return box


_SHARED: dict[bytes, JSONObject] = {}


def _shared(value: JSONObject) -> JSONObject:
    """One shared copy of identical client info/capabilities across sessions (a server
    holding thousands of sessions from the same client keeps one dict, not thousands).
    The values are treated as read-only."""
    key = encode(value)
    if len(key) > 4096:
        return value
    found = _SHARED.get(key)
    if found is None:
        if len(_SHARED) >= 1024:
            _SHARED.clear()
        _SHARED[key] = found = value
    return found


def _method_not_found(method: str, rev: Revision | None) -> MethodNotFound:
    where = f" in protocol revision {rev.version}" if rev else ""
    return MethodNotFound(f"Method not found: '{method}' does not exist{where}.")
