"""Answering the peer, and telling it things: one job of a ``Connection``.

A result is shaped for the revision it goes to (``compat`` for an older stateful
revision, ``stateless.stamp`` for a 2026-07-28 request); an answer inside a batch waits
for the rest of the batch. A request is answered once: answering one that is not in
flight raises ``LocalProtocolError``, except the late answer to a request the peer
cancelled, which is dropped. Notifications, progress and logs are sent only when the
revision and the declared capabilities carry them (False otherwise).

Written as functions over a ``ConnectionState`` (``conn_base``), named ``self`` because
``Connection`` takes up the public ones as its methods; ``handshake`` and ``inbound``
call ``send_result``, ``send_error``, ``send_notification`` and ``queue_notification``.
"""

from __future__ import annotations

from typing import Any

from . import compat
from .conn_base import ConnectionState, _Inbound, error_obj, maybe_flush_batch
from .errors import RESOURCE_NOT_FOUND, InvalidParams, LocalProtocolError, ProtocolError
from .events import Outgoing
from .jsonrpc import JSONObject, RequestId, encode
from .jsonrpc import notification as notification_msg
from .jsonrpc import result as result_msg
from .lifecycle import Role
from .methods import (
    CLIENT_CAPABILITY_FOR_NOTIFICATION,
    LOG_LEVEL_RANK,
    LOG_LEVELS,
    SERVER_CAPABILITY_FOR_NOTIFICATION,
    has_capability,
)
from .stateless import stamp
from .versions import LATEST_STATEFUL, Revision


def send_notification(
    self: ConnectionState, method: str, params: JSONObject | None = None, *,
    related: RequestId | None = None,
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
    queue_notification(self, method, params, related)
    return True


def queue_notification(
    self: ConnectionState, method: str, params: JSONObject | None, related: RequestId | None = None
) -> None:
    """Queue a notification without the revision and capability checks (the caller
    knows it is due: progress, a renewed session's ``notifications/initialized``)."""
    self._outbox.append(Outgoing(encode(notification_msg(method, params)), related,
                                 method=method, params=params))


def _answering(self: ConnectionState, rid: RequestId) -> _Inbound | None:
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


def send_result(self: ConnectionState, rid: RequestId, value: JSONObject) -> bool:
    """Answer inbound request ``rid``; False (nothing sent) if the peer cancelled it.

    Raises ``LocalProtocolError`` for a request that is not in flight."""
    rec = _answering(self, rid)
    if rec is None:
        return False
    meta = rec.meta
    if meta is not None:
        mrev = meta.revision
        value = stamp(rec.method, compat.result(rec.method, value, mrev), mrev,
                      _stateless_info(self, mrev), self.cache_ttl_ms, self.cache_scope)
    else:
        rev = self.revision
        if rev is not None and rev.version != LATEST_STATEFUL:
            value = compat.result(rec.method, value, rev)
    data = encode(result_msg(rid, value))
    _deliver(self, rid, rec, data)
    return True


def _stateless_info(self: ConnectionState, rev: Revision) -> JSONObject:
    info = self._info_cache.get(rev.version)
    if info is None:
        info = self._info_cache[rev.version] = compat.implementation(self.info, rev)
    return info


def send_error(self: ConnectionState, rid: RequestId, err: ProtocolError) -> bool:
    """Answer inbound request ``rid`` with an error; False (nothing sent) if the peer
    cancelled it. Raises ``LocalProtocolError`` for a request that is not in flight."""
    rec = _answering(self, rid)
    if rec is None:
        return False
    rev = rec.meta.revision if rec.meta is not None else self.revision
    if err.code == RESOURCE_NOT_FOUND and rev is not None and not rev.has(
        "resource_not_found_32002"
    ):
        err = InvalidParams(err.message, err.data)  # a revision without -32002: -32602
    _deliver(self, rid, rec, encode(error_obj(self, rid, err.to_error())), err.code)
    return True


def _deliver(self: ConnectionState, rid: RequestId, rec: _Inbound, data: bytes,
             error: int | None = None) -> None:
    batch = rec.batch
    if batch is None:
        self._outbox.append(Outgoing(data, rid, True, error=error))
        return
    batch.pending.discard(rid)
    batch.parts.append(data)
    maybe_flush_batch(self, batch)


def send_progress(
    self: ConnectionState,
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
    queue_notification(self, "notifications/progress", params, rid)
    return True


def wants_log(self: ConnectionState, level: str) -> bool:
    """Whether a log message at ``level`` passes the client's ``logging/setLevel``."""
    if not has_capability(self.capabilities, "logging"):
        return False
    threshold = self.log_level
    return threshold is None or LOG_LEVEL_RANK.get(level, 0) >= LOG_LEVEL_RANK[threshold]


def send_log(
    self: ConnectionState,
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
        # stateless: only for a request that asked for logs, at its own level
        threshold = rec.meta.log_level
        if threshold is None or LOG_LEVEL_RANK[level] < LOG_LEVEL_RANK[threshold]:
            return False
    elif not wants_log(self, level):
        return False
    params: JSONObject = {"level": level, "data": data}
    if logger is not None:
        params["logger"] = logger
    return send_notification(self, "notifications/message", params, related=related)
