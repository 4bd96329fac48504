"""The state the parts of a ``Connection`` share, and the parts that only touch it.

``ConnectionState`` names the fields (what the handshake settled, the requests in flight
both ways, the outbox); ``Connection`` holds them in its own slots. The behaviour is
written as functions over a ``ConnectionState``, one module per job, which ``Connection``
takes up as its methods (h11's shape: one state, tables of functions, no inheritance):

- here: the records kept per request in flight (``_Inbound``, ``_Outbound``,
  ``_Batch``), the error answers queued while receiving, and the draining of the outbox;
- ``answers``: answering the peer's requests, shaped for its revision; our
  notifications, progress and logs;
- ``outbound``: our requests to the peer: ids, progress tokens, cancellation;
- ``handshake``: the ``initialize`` exchange on both sides, and session snapshots;
- ``inbound``: reading the peer's messages: validation, classification, gating;
- ``connection``: ``Connection``, the fields and the functions of all of them.

A part imports from another only the functions it calls (``inbound`` takes
``on_initialize`` from ``handshake``, ``send_result`` from ``answers``, ...), so the parts
form no circle, and a call between them is a plain function call.
"""

from __future__ import annotations

from typing import Protocol

from .errors import ProtocolError
from .events import Event, Outgoing, ProtocolViolation
from .framing import LineBuffer
from .jsonrpc import JSONObject, RequestId, encode
from .jsonrpc import error as error_msg
from .lifecycle import Lifecycle, Role, State
from .record import Record
from .stateless import RequestMeta
from .versions import Revision


class _Inbound(Record):
    """A request of the peer's, from its arrival until it is answered or cancelled."""

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
        self.meta = meta  # a stateless (2026-07-28) request's own metadata


class _Batch(Record):
    """A batch of the peer's (2025-03-26): its answers, sent as one array when complete."""

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
        self.key = key  # its first element's request id (names its answer for HTTP)
        self.receiving = receiving  # still reading its elements: answers so far must wait


class _Outbound(Record):
    """A request of ours, from sending until its answer, cancellation or the end."""

    __slots__ = ("method", "progress_token")

    def __init__(self, method: str, progress_token: str | int | None) -> None:
        self.method = method
        self.progress_token = progress_token


_CANCELLED_KEPT = 1024
"""How many peer-cancelled request ids a connection remembers, so that a handler's late
answer to one is dropped quietly rather than refused as an answer to an unknown id."""


class ConnectionState(Protocol):
    """The fields every part of a ``Connection`` reads or writes (``Connection`` sets
    them up; see its ``__init__`` for what each one means)."""

    role: Role
    max_batch: int
    info: JSONObject
    capabilities: JSONObject
    instructions: str | None
    versions: tuple[str, ...]
    lifecycle: Lifecycle
    revision: Revision | None
    peer_info: JSONObject
    peer_capabilities: JSONObject
    peer_instructions: str | None
    log_level: str | None
    stateless_versions: tuple[str, ...]
    cache_ttl_ms: int
    cache_scope: str
    _lines: LineBuffer
    _outbox: list[Outgoing]
    _inbound: dict[RequestId, _Inbound]
    _cancelled: dict[RequestId, None]
    _outbound: dict[RequestId, _Outbound]
    _progress_tokens: dict[str | int, RequestId]
    _task_tokens: set[str | int]
    _next_id: int
    _latest: str
    _info_cache: dict[str, JSONObject]

    @property
    def state(self) -> State: ...


# ---------------------------------------------------------------------- state


def state(self: ConnectionState) -> State:
    """Where the handshake stands (``lifecycle``)."""
    return self.lifecycle.state


def in_flight(self: ConnectionState) -> int:
    """Inbound requests received and not yet answered or cancelled."""
    return len(self._inbound)


def queued(self: ConnectionState) -> int:
    """How many messages wait to be taken (``data_to_send``/``messages_to_send``)."""
    return len(self._outbox)


def progress_token(self: ConnectionState, request_id: RequestId) -> str | int | None:
    """The progress token inbound request ``request_id`` asked for, if it is in flight."""
    rec = self._inbound.get(request_id)
    return rec.progress_token if rec else None


# ---------------------------------------------------------------------- answering errors


def error_obj(self: ConnectionState, id: RequestId | None, err: JSONObject) -> JSONObject:
    """An error response; an unreadable id is ``null`` (JSON-RPC 2.0), or omitted in
    revisions whose schema makes it optional and forbids null (2025-11-25)."""
    msg = error_msg(id, err)
    if id is None and self.revision is not None and self.revision.has("omit_unreadable_id"):
        del msg["id"]
    return msg


def reject(self: ConnectionState, err: ProtocolError, id: RequestId | None,
           events: list[Event]) -> None:
    """Answer an unusable message with ``err`` and report it as ``ProtocolViolation``."""
    self._outbox.append(Outgoing(encode(error_obj(self, id, err.to_error())), id, True,
                                 error=err.code))
    events.append(ProtocolViolation(err))


def answer_error(
    self: ConnectionState, id: RequestId, err: ProtocolError, batch: _Batch | None,
    events: list[Event],
) -> None:
    """Refuse request ``id`` (never taken in flight) with ``err``, inside its batch if any."""
    data = encode(error_obj(self, id, err.to_error()))
    if batch is not None:
        batch.parts.append(data)
    else:
        self._outbox.append(Outgoing(data, id, True, error=err.code))
    events.append(ProtocolViolation(err))


def maybe_flush_batch(self: ConnectionState, batch: _Batch) -> None:
    """Queue ``batch``'s answers as one array once it is read and every request of it is
    answered (or cancelled)."""
    if batch.receiving or batch.pending:
        return
    if batch.parts:
        self._outbox.append(Outgoing(b"[" + b",".join(batch.parts) + b"]", batch.key, True))
        batch.parts = []
    elif batch.key is not None:  # every request of it was cancelled: no answer at all
        self._outbox.append(Outgoing(b"", batch.key, True))
    batch.key = None  # answered (or withdrawn) once


def remember_cancelled(self: ConnectionState, rid: RequestId) -> None:
    """Keep ``rid`` among the last ``_CANCELLED_KEPT`` ids the peer cancelled."""
    cancelled = self._cancelled
    cancelled[rid] = None
    if len(cancelled) > _CANCELLED_KEPT:
        del cancelled[next(iter(cancelled))]


# ---------------------------------------------------------------------- output


def data_to_send(self: ConnectionState) -> bytes:
    """Drain queued messages as newline-terminated lines (stream transports); a
    withdrawn answer (empty ``data``) has nothing to write on a stream."""
    box = self._outbox
    if not box:
        return b""
    self._outbox = []
    if len(box) == 1:
        data = box[0].data
        return data + b"\n" if data else b""
    lines = [o.data for o in box if o.data]
    return b"\n".join(lines) + b"\n" if lines else b""


def messages_to_send(self: ConnectionState) -> list[Outgoing]:
    """Drain queued messages one by one, each tagged with its related request."""
    box, self._outbox = self._outbox, []
    return box
