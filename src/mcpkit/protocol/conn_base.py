"""The state every part of a ``Connection`` shares, and the parts that only touch it.

``ConnectionBase`` holds the fields (what the handshake settled, the requests in flight
both ways, the outbox), the records kept per request in flight (``_Inbound``,
``_Outbound``, ``_Batch``), the error answers queued while receiving, and the draining of
the outbox. The behaviour is layered on top of it, one module per job:

- ``answers``: answering the peer's requests, shaped for its revision; our
  notifications, progress and logs;
- ``outbound``: our requests to the peer: ids, progress tokens, cancellation;
- ``handshake``: the ``initialize`` exchange on both sides, and session snapshots;
- ``inbound``: reading the peer's messages: validation, classification, gating;
- ``connection``: ``Connection``, which is all of them.
"""

from __future__ import annotations

from .errors import ProtocolError
from .events import Event, Outgoing, ProtocolViolation
from .framing import DEFAULT_MAX_MESSAGE_SIZE, LineBuffer
from .jsonrpc import DEFAULT_MAX_BATCH, JSONObject, RequestId, encode
from .jsonrpc import error as error_msg
from .lifecycle import Lifecycle, Role, State
from .record import Record
from .stateless import RequestMeta
from .versions import STATEFUL_VERSIONS, STATELESS_VERSIONS, Revision


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


class ConnectionBase:
    """The fields of a ``Connection`` (see ``connection``); not used on its own."""

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
        "_task_tokens",
        "cache_scope",
        "cache_ttl_ms",
        "capabilities",
        "info",
        "instructions",
        "lifecycle",
        "log_level",
        "max_batch",
        "peer_capabilities",
        "peer_info",
        "peer_instructions",
        "revision",
        "role",
        "stateless_versions",
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
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        self.role = role
        #: Messages a peer's batch may hold; a bigger one is refused whole (-32600).
        self.max_batch = max_batch
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
        #: Progress tokens of our 2025-11-25 task-augmented requests, valid for the task's
        #: lifetime after its CreateTaskResult (their progress is a NotificationReceived).
        self._task_tokens: set[str | int] = set()
        self._next_id = 0
        self._latest = max(versions)
        self.stateless_versions: tuple[str, ...] = STATELESS_VERSIONS  # served per request
        self.cache_ttl_ms = 0  # caching hints on stateless list/read/discover results
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

    # ------------------------------------------------------------------ answering errors

    def _error_obj(self, id: RequestId | None, err: JSONObject) -> JSONObject:
        """An error response; an unreadable id is ``null`` (JSON-RPC 2.0), or omitted in
        revisions whose schema makes it optional and forbids null (2025-11-25)."""
        msg = error_msg(id, err)
        if id is None and self.revision is not None and self.revision.has("omit_unreadable_id"):
            del msg["id"]
        return msg

    def _reject(self, err: ProtocolError, id: RequestId | None, events: list[Event]) -> None:
        self._outbox.append(Outgoing(encode(self._error_obj(id, err.to_error())), id, True,
                                     error=err.code))
        events.append(ProtocolViolation(err))

    def _answer_error(
        self, id: RequestId, err: ProtocolError, batch: _Batch | None, events: list[Event]
    ) -> None:
        data = encode(self._error_obj(id, err.to_error()))
        if batch is not None:
            batch.parts.append(data)
        else:
            self._outbox.append(Outgoing(data, id, True, error=err.code))
        events.append(ProtocolViolation(err))

    def _maybe_flush_batch(self, batch: _Batch) -> None:
        if batch.receiving or batch.pending:
            return
        if batch.parts:
            self._outbox.append(Outgoing(b"[" + b",".join(batch.parts) + b"]", batch.key, True))
            batch.parts = []
        elif batch.key is not None:  # every request of it was cancelled: no answer at all
            self._outbox.append(Outgoing(b"", batch.key, True))
        batch.key = None  # answered (or withdrawn) once

    def _remember_cancelled(self, rid: RequestId) -> None:
        cancelled = self._cancelled
        cancelled[rid] = None
        if len(cancelled) > _CANCELLED_KEPT:
            del cancelled[next(iter(cancelled))]

    # ------------------------------------------------------------------ output

    @property
    def queued(self) -> int:
        """How many messages wait to be taken (``data_to_send``/``messages_to_send``)."""
        return len(self._outbox)

    def data_to_send(self) -> bytes:
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

    def messages_to_send(self) -> list[Outgoing]:
        """Drain queued messages one by one, each tagged with its related request."""
        box, self._outbox = self._outbox, []
        return box
