"""Our requests to the peer: one job of a ``Connection``.

A request gets the next integer id and is tracked until its answer arrives (matched in
``inbound``), it is cancelled, the transport abandons it, or the connection ends. Sending
is gated: by the handshake state (``LocalProtocolError`` when too early), by the
negotiated revision's method set and by the peer's declared capabilities
(``CapabilityNotSupported``). A progress token names one request at a time.

Written as functions over a ``ConnectionState`` (``conn_base``), named ``self`` because
``Connection`` takes up the public ones as its methods; ``handshake`` calls
``queue_request`` (the ungated send) and ``inbound`` ``forget_token``.
"""

from __future__ import annotations

from .conn_base import ConnectionState, _Outbound
from .errors import CapabilityNotSupported, LocalProtocolError
from .events import Outgoing
from .jsonrpc import JSONObject, RequestId, encode
from .jsonrpc import notification as notification_msg
from .jsonrpc import request as request_msg
from .lifecycle import Role, State
from .methods import (
    CLIENT_CAPABILITY_FOR_REQUEST,
    SERVER_CAPABILITY_FOR_REQUEST,
    has_capability,
)
from .tasks import EXTENSION, EXTENSION_METHODS, declares_extension
from .versions import REVISIONS


def send_request(
    self: ConnectionState, method: str, params: JSONObject | None = None, *,
    related: RequestId | None = None,
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
        if rev is not None and rev.has("tasks_extension") and method in EXTENSION_METHODS:
            if not declares_extension(self.peer_capabilities):
                raise CapabilityNotSupported(
                    f"the server did not declare the {EXTENSION} extension needed for "
                    f"'{method}'")
            cap = None  # the extension, not the 2025-11-25 ``tasks`` capability
        if cap == "completions" and rev is not None and not rev.has("completions_capability"):
            cap = None  # no such flag before 2025-03-26: the server may say METHOD_NOT_FOUND
    if cap is not None and not has_capability(self.peer_capabilities, cap):
        raise CapabilityNotSupported(
            f"the peer did not declare the '{cap}' capability needed for '{method}'"
        )
    return queue_request(self, method, params, related)


def queue_request(
    self: ConnectionState, method: str, params: JSONObject | None, related: RequestId | None
) -> RequestId:
    """Queue request ``method`` without the gates of ``send_request`` (the handshake's
    own ``initialize`` passes here); returns its id. Raises ``LocalProtocolError`` when
    its progress token is already in use."""
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
    self._outbox.append(Outgoing(encode(request_msg(rid, method, params)), related,
                                 method=method, id=rid, params=params))
    return rid


def use_stateless(self: ConnectionState, version: str) -> None:
    """Client: speak the stateless revision ``version`` (no handshake; every request
    carries ``_meta``, added by the caller); ``peer_capabilities`` come from
    ``server/discover``."""
    self.revision = REVISIONS[version]


def use_stateful(self: ConnectionState) -> None:
    """Client: back to the handshake era (after a probe found a legacy server)."""
    self.revision = None


def cancel_request(self: ConnectionState, rid: RequestId, reason: str | None = None) -> bool:
    """Cancel our pending request ``rid``: notify the peer, ignore any late answer.

    False (nothing sent) when ``rid`` is no longer pending, which races with its
    answer and is not an error, or is ``initialize``, which must not be cancelled."""
    out = self._outbound.get(rid)
    if out is None or out.method == "initialize":
        return False
    del self._outbound[rid]
    forget_token(self, out)
    params: JSONObject = {"requestId": rid}
    if reason:
        params["reason"] = reason
    self._outbox.append(Outgoing(encode(notification_msg("notifications/cancelled", params)),
                                 method="notifications/cancelled", params=params))
    return True


def awaits(self: ConnectionState, rid: object) -> bool:
    """Whether our request ``rid`` is pending (an answer to it would be taken)."""
    return isinstance(rid, int | str) and not isinstance(rid, bool) and rid in self._outbound


def number_requests_from(self: ConnectionState, start: int) -> None:
    """Number our next requests after ``start``: instances of one deployment that
    share a session pick far-apart random starts, so an answer names one request."""
    self._next_id = max(self._next_id, start)


def abandon_request(self: ConnectionState, rid: RequestId) -> str | None:
    """Forget our pending request ``rid`` whose answer can never arrive: the transport
    could not deliver it, or lost its answer (an HTTP POST that failed). Nothing is
    sent to the peer; a late answer is ignored. Returns the request's method, or None
    when it is no longer pending (answered, cancelled, or never sent).

    Abandoning the first ``initialize`` ends the handshake: the connection closes, as
    when the server refuses it."""
    out = self._outbound.pop(rid, None)
    if out is None:
        return None
    forget_token(self, out)
    if out.method == "initialize" and self.lifecycle.state is State.INITIALIZING:
        self.lifecycle.close()
    return out.method


def release_task_token(self: ConnectionState, token: str | int) -> None:
    """The task that kept progress ``token`` valid has ended: forget it."""
    self._task_tokens.discard(token)


def fail_pending(self: ConnectionState) -> list[RequestId]:
    """Forget every pending outbound request (the connection is gone); return their ids."""
    ids = list(self._outbound)
    self._outbound.clear()
    self._progress_tokens.clear()
    self._task_tokens.clear()
    self.lifecycle.close()
    return ids


def forget_token(self: ConnectionState, out: _Outbound) -> None:
    """Free the progress token of our request ``out``, which is no longer pending."""
    if out.progress_token is not None:
        self._progress_tokens.pop(out.progress_token, None)
