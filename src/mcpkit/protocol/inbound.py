"""Reading the peer: one job of a ``Connection``.

Bytes (or decoded JSON) become messages, each checked and classified: a bad one is
answered with the spec's error and reported as ``ProtocolViolation``; a batch is taken
only where the revision has batches; a request is gated by the handshake state, the
revision's method set and the declared capabilities before it becomes a
``RequestReceived`` (``ping`` and ``logging/setLevel`` are handled here, and
``server/discover`` for a 2026-07-28 request); a response is matched to our request; a
notification may cancel a request in flight or report progress on ours.

Written as functions over a ``ConnectionState`` (``conn_base``), named ``self`` because
``Connection`` takes up the public ones as its methods; it calls into
``handshake``, ``answers`` and ``outbound`` for the messages that concern them.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from . import compat
from .answers import send_error, send_result
from .conn_base import (
    ConnectionState,
    _Batch,
    _Inbound,
    answer_error,
    error_obj,
    maybe_flush_batch,
    reject,
    remember_cancelled,
)
from .errors import (
    INTERNAL_ERROR,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ParseError,
    ProtocolError,
    RemoteError,
)
from .events import (
    CancelRequested,
    ErrorReceived,
    Event,
    HandshakeFailed,
    NotificationReceived,
    Outgoing,
    ProgressReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    SessionReady,
)
from .framing import TooLarge
from .handshake import on_initialize, on_initialize_result
from .jsonrpc import (
    BadMessage,
    ErrorResponse,
    JSONObject,
    Notification,
    Request,
    RequestId,
    Response,
    batch_too_large,
    decode,
    encode,
    id_in_use,
    is_valid_id,
    parse_message,
)
from .lifecycle import Role, State
from .methods import (
    CLIENT_CAPABILITY_FOR_REQUEST,
    LOG_LEVEL_RANK,
    LOG_LEVELS,
    SERVER_CAPABILITY_FOR_REQUEST,
    has_capability,
)
from .outbound import forget_token
from .stateless import is_stateless_request, read_meta
from .versions import Revision

_NOT_INITIALIZED = (
    "Session not initialized: the first request must be 'initialize' (only 'ping' is "
    "allowed before it)."
)


_AWAITING_INITIALIZED = (
    "Session not ready: send the 'notifications/initialized' notification after the "
    "'initialize' result before other requests (only 'ping' is allowed until then)."
)


def receive_data(self: ConnectionState, data: bytes) -> list[Event]:
    """Feed bytes of a newline-framed stream (``b""`` = end of input)."""
    events: list[Event] = []
    for line in self._lines.feed(data):
        if isinstance(line, TooLarge):
            rid = _head_id(line.head)
            if rid is not None and _answer_too_large(self, rid, events):
                continue
            reject(  # a request: its id was not read (JSON-RPC: the error's id is null)
                self,
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
            reject(self, exc, None, events)
            continue
        if type(obj) is list and len(obj) > self.max_batch:
            size = len(obj)
            del obj  # freed before the refusal allocates: see jsonrpc.loads
            reject(self, batch_too_large(size, self.max_batch), None, events)
            continue
        _receive_obj(self, obj, events)
    return events


_HEAD_ID = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*'
                      rb'(-?[0-9]{1,18}|"(?:[^"\\]|\\.){1,200}")\s*,')


def _head_id(head: bytes) -> RequestId | None:
    """The ``id`` an oversized message's first bytes give (None: not among them)."""
    found = _HEAD_ID.match(head)
    if found is None:
        return None
    try:
        rid = orjson.loads(found.group(1))
    except orjson.JSONDecodeError:
        return None
    return rid if isinstance(rid, int | str) else None


def _answer_too_large(self: ConnectionState, rid: RequestId, events: list[Event]) -> bool:
    """An oversized line that is the answer to a request of ours (``rid`` is one we wait
    for): that request fails now, saying why, instead of waiting for its timeout."""
    out = self._outbound.pop(rid, None)
    if out is None:
        return False
    forget_token(self, out)
    limit = self._lines.max_size
    error = RemoteError(INTERNAL_ERROR, f"the answer to '{out.method}' is larger than this "
                        f"connection takes ({limit} bytes, max_message_size): ask for less "
                        "(a smaller page, fewer items) or raise the limit",
                        {"limit": limit, "local": True})
    if out.method == "initialize":
        self.lifecycle.close()
        events.append(HandshakeFailed(f"initialize refused: {error}"))
    else:
        events.append(ErrorReceived(rid, error))
    return True


def receive_message(self: ConnectionState, obj: Any) -> list[Event]:
    """Feed one already-decoded JSON value (an object, or a batch array)."""
    events: list[Event] = []
    _receive_obj(self, obj, events)
    return events


def receive_eof(self: ConnectionState) -> list[Event]:
    """The input ended; deliver a last unterminated line, if any."""
    return receive_data(self, b"")


def _receive_obj(self: ConnectionState, obj: Any, events: list[Event]) -> None:
    if type(obj) is list:
        _receive_batch(self, obj, events)
        return
    try:
        msg = parse_message(obj)
    except BadMessage as bad:
        reject(self, bad.error, bad.id, events)
        return
    _dispatch(self, msg, events, None)


def _receive_batch(self: ConnectionState, items: list[Any], events: list[Event]) -> None:
    rev = self.revision
    if rev is None or not rev.batches:
        where = f"protocol revision {rev.version}" if rev else "this session before initialize"
        reject(
            self,
            InvalidRequest(
                f"Invalid Request: JSON-RPC batches are not supported in {where}; send "
                "one message at a time."
            ),
            None,
            events,
        )
        return
    if not items:
        reject(self, InvalidRequest("Invalid Request: empty batch."), None, events)
        return
    if len(items) > self.max_batch:
        reject(self, batch_too_large(len(items), self.max_batch), None, events)
        return
    batch = _Batch(key=_first_request_id(items))
    for item in items:
        try:
            msg = parse_message(item)
        except BadMessage as bad:
            batch.parts.append(encode(error_obj(self, bad.id, bad.error.to_error())))
            events.append(ProtocolViolation(bad.error))
            continue
        if isinstance(msg, Request) and msg.method == "initialize":
            err = InvalidRequest("Invalid Request: 'initialize' must not be part of a batch.")
            batch.parts.append(encode(error_obj(self, msg.id, err.to_error())))
            events.append(ProtocolViolation(err))
            continue
        _dispatch(self, msg, events, batch)
    batch.receiving = False
    maybe_flush_batch(self, batch)


def _dispatch(
    self: ConnectionState,
    msg: Request | Notification | Response | ErrorResponse,
    events: list[Event],
    batch: _Batch | None,
) -> None:
    if type(msg) is Request:
        _on_request(self, msg, events, batch)
    elif type(msg) is Notification:
        _on_notification(self, msg, events)
    elif type(msg) is Response:
        out = self._outbound.pop(msg.id, None)
        if out is None:
            return  # unknown, or cancelled/timed out: ignored (the race is allowed)
        forget_token(self, out)
        if out.progress_token is not None and _creates_task(msg.result, self.revision):
            self._task_tokens.add(out.progress_token)  # valid for the task's lifetime
        if out.method == "initialize":
            on_initialize_result(self, msg.result, events)
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
        forget_token(self, out)
        remote = RemoteError(msg.code, msg.message, msg.data)
        if out.method == "initialize":
            self.lifecycle.close()
            events.append(HandshakeFailed(f"initialize refused: {remote}"))
            return
        events.append(ErrorReceived(msg.id, remote))


def _on_request(self: ConnectionState, req: Request, events: list[Event],
                batch: _Batch | None) -> None:
    rid, method = req.id, req.method
    if rid in self._inbound:
        answer_error(self, rid, id_in_use(rid), batch, events)
        return
    params = req.params if req.params is not None else {}
    if self.role is Role.SERVER and is_stateless_request(params):
        _on_stateless_request(self, rid, method, params, events, batch)  # 2026-07-28
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
        answer_error(self, rid, InvalidRequest(msg), batch, events)
        return
    if self.role is Role.SERVER:
        if method == "initialize":
            on_initialize(self, rid, params, events)
            return
        refused = _server_refuses(self, method, self.revision)
        if refused is not None:
            answer_error(self, rid, refused, batch, events)
            return
    else:
        rev = self.revision
        if method != "ping" and (rev is None or method not in rev.server_requests):
            answer_error(self, rid, _method_not_found(method, rev), batch, events)
            return
        cap = CLIENT_CAPABILITY_FOR_REQUEST.get(method)
        if cap is not None and not has_capability(self.capabilities, cap):
            answer_error(
                self,
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
    self._inbound[rid] = rec
    if self._cancelled:
        self._cancelled.pop(rid, None)  # the id is live again: answers go to this one
    if method == "ping":
        send_result(self, rid, {})
        return
    if method == "logging/setLevel" and self.role is Role.SERVER:
        level = params.get("level")
        if not isinstance(level, str) or level not in LOG_LEVEL_RANK:
            send_error(
                self,
                rid,
                InvalidParams(
                    f"Invalid params: unknown log level {level!r}; use one of "
                    f"{', '.join(LOG_LEVELS)}."
                ),
            )
            return
        self.log_level = level
        send_result(self, rid, {})
        return
    events.append(RequestReceived(rid, method, params, None, self.revision,
                                  self.peer_capabilities, self.peer_info, token))


def _server_refuses(self: ConnectionState, method: str,
                    rev: Revision | None) -> MethodNotFound | None:
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


def _on_stateless_request(
    self: ConnectionState,
    rid: RequestId,
    method: str,
    params: JSONObject,
    events: list[Event],
    batch: _Batch | None,
) -> None:
    """A stateless (2026-07-28) request: judged on its own ``_meta``, whatever the
    connection's handshake state."""
    try:
        meta = read_meta(params, self.stateless_versions)
    except ProtocolError as exc:
        answer_error(self, rid, exc, batch, events)
        return
    assert meta is not None
    rev = meta.revision
    refused = _server_refuses(self, method, rev)
    if refused is not None:
        answer_error(self, rid, refused, batch, events)
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
            "supportedVersions": list(self.stateless_versions),
            "capabilities": compat.server_capabilities(self.capabilities, rev),
        }
        if self.instructions:
            discover["instructions"] = self.instructions
        send_result(self, rid, discover)
        return
    events.append(RequestReceived(rid, method, params, meta, progress_token=token))


def _on_notification(self: ConnectionState, note: Notification, events: list[Event]) -> None:
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
        remember_cancelled(self, rid)
        if rec.batch is not None:
            rec.batch.pending.discard(rid)
            maybe_flush_batch(self, rec.batch)
        else:  # no answer will come: a transport holding the exchange open ends it
            self._outbox.append(Outgoing(b"", rid, True))
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
            if token in self._task_tokens:  # a task's, after its CreateTaskResult
                events.append(NotificationReceived(method, params))
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


def _creates_task(result: Any, rev: Revision | None) -> bool:
    """Whether ``result`` is a 2025-11-25 ``CreateTaskResult``: the progress token of its
    request "remains valid throughout the task lifetime" (basic/utilities/tasks)."""
    return (rev is not None and rev.has("tool_execution") and type(result) is dict
            and type(result.get("task")) is dict)


def _first_request_id(items: list[Any]) -> RequestId | None:
    """The id a batch's answer is named by: that of its first element with a ``method``
    and a readable ``id``, however that element is answered (an error, a refusal, a
    2026-07-28 request): Streamable HTTP opens the POST's stream under this id."""
    for item in items:
        if type(item) is dict and "method" in item and is_valid_id(item.get("id")):
            rid: RequestId = item["id"]
            return rid
    return None


def _method_not_found(method: str, rev: Revision | None) -> MethodNotFound:
    where = f" in protocol revision {rev.version}" if rev else ""
    return MethodNotFound(f"Method not found: '{method}' does not exist{where}.")

