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
- Misuse by the caller raises ``LocalProtocolError`` and changes nothing.

``Connection`` is composed, not inherited: it holds the fields that
``conn_base.ConnectionState`` names in its own slots, and its methods are the functions of
one module per job, taken up here at class level: reading the peer (``inbound``), the
handshake (``handshake``), our requests (``outbound``), our answers and notifications
(``answers``) and the outbox (``conn_base``), its properties too. A method call is thus one
plain call, as on any class, and a connection holds no part objects. The events are in
``events``. This module is the public home of all of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import answers, conn_base, handshake, inbound, outbound
from .conn_base import ConnectionState, _Inbound, _Outbound
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
    SessionStarted,
)
from .framing import DEFAULT_MAX_MESSAGE_SIZE, LineBuffer
from .jsonrpc import DEFAULT_MAX_BATCH, JSONObject, RequestId
from .lifecycle import Lifecycle, Role, State
from .versions import STATEFUL_VERSIONS, STATELESS_VERSIONS, Revision


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

    if TYPE_CHECKING:  # what the properties below give (mypy types property(f) as Any)
        @property
        def state(self) -> State: ...
        @property
        def in_flight(self) -> int: ...
        @property
        def queued(self) -> int: ...
    else:
        state = property(conn_base.state)
        in_flight = property(conn_base.in_flight)
        queued = property(conn_base.queued)
    # reading the peer (inbound)
    receive_data = inbound.receive_data
    receive_message = inbound.receive_message
    receive_eof = inbound.receive_eof
    # the handshake (handshake)
    start_handshake = handshake.start_handshake
    start_renewal = handshake.start_renewal
    snapshot = handshake.snapshot
    restore = handshake.restore
    # our requests (outbound)
    send_request = outbound.send_request
    cancel_request = outbound.cancel_request
    abandon_request = outbound.abandon_request
    awaits = outbound.awaits
    number_requests_from = outbound.number_requests_from
    use_stateless = outbound.use_stateless
    use_stateful = outbound.use_stateful
    release_task_token = outbound.release_task_token
    fail_pending = outbound.fail_pending
    # our answers and notifications (answers)
    send_result = answers.send_result
    send_error = answers.send_error
    send_notification = answers.send_notification
    send_progress = answers.send_progress
    send_log = answers.send_log
    wants_log = answers.wants_log
    # in flight, and the outbox (conn_base)
    progress_token = conn_base.progress_token
    data_to_send = conn_base.data_to_send
    messages_to_send = conn_base.messages_to_send


if TYPE_CHECKING:  # mypy: a Connection has every field the parts' functions read
    _HAS_THE_FIELDS: type[ConnectionState] = Connection


__all__ = [
    "CancelRequested",
    "Connection",
    "ErrorReceived",
    "Event",
    "HandshakeFailed",
    "NotificationReceived",
    "Outgoing",
    "ProgressReceived",
    "ProtocolViolation",
    "RequestReceived",
    "ResponseReceived",
    "SessionReady",
    "SessionStarted",
]
