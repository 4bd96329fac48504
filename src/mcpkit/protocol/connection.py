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

``Connection`` is assembled from one module per job (``conn_base`` lists them): reading
the peer (``inbound``), the handshake (``handshake``), our requests (``outbound``) and our
answers and notifications (``answers``); the events are in ``events``. This module is the
public home of all of it.
"""

from __future__ import annotations

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
from .inbound import Receiving


class Connection(Receiving):
    """One side (client or server) of one stateful MCP session.

    Misuse by the caller (a request the handshake state does not allow yet, answering a
    request that is not in flight or answering it twice, …) raises ``LocalProtocolError``
    and changes nothing.
    """

    __slots__ = ()


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
