"""What a ``Connection`` reports and emits: the events ``receive_*`` returns, and the
``Outgoing`` messages it queues.

Events are small records (see ``record``): compare them with ``==`` in tests, match them
with ``type(event) is ...`` in a dispatcher. None of them holds a reference back to the
connection.
"""

from __future__ import annotations

from typing import Any

from .errors import ProtocolError, RemoteError
from .jsonrpc import JSONObject, RequestId
from .record import Record
from .stateless import RequestMeta
from .versions import Revision


class Origin(Record):
    """Who sent a message and from where, as the transport knows it: ``principal`` (the
    verified access token of a protected HTTP endpoint, else None) and ``address`` (the
    HTTP client's address, else None). Handed to ``Session.receive_message`` with each
    message, never kept on the session: an HTTP session's POSTs may each carry their own."""

    __slots__ = ("address", "principal")

    def __init__(self, principal: Any = None, address: str | None = None) -> None:
        self.principal = principal
        self.address = address


NO_ORIGIN = Origin()
"""The origin of a message on stdio or in memory: nobody authenticated, no address."""


class RequestReceived(Record):
    """One inbound request, and the facts that govern it, decided once when it arrives:

    - ``id``, ``method``, ``params``: the message;
    - ``stateless``: a 2026-07-28 request's own ``_meta``, read (None on a session);
    - ``revision``: the revision this request is served under (its ``_meta``'s, else the
      session's); ``peer_capabilities`` and ``peer_info``: the sender's, from the same
      place (its ``_meta``, else its ``initialize``);
    - ``progress_token``: the token it asked progress on (a valid one), else None;
    - ``origin``: who sent it and from where (:class:`Origin`), stamped by the session
      from what the transport handed it with the message.

    Handlers, middleware, tasks and telemetry read these rather than the connection.
    Equality compares the message (``id``, ``method``, ``params``, ``stateless``): the rest
    is context the connection adds.
    """

    __slots__ = ("id", "method", "origin", "params", "peer_capabilities", "peer_info",
                 "progress_token", "revision", "stateless")

    def __init__(
        self,
        id: RequestId,
        method: str,
        params: JSONObject,
        stateless: RequestMeta | None = None,
        revision: Revision | None = None,
        peer_capabilities: JSONObject | None = None,
        peer_info: JSONObject | None = None,
        progress_token: RequestId | None = None,
    ) -> None:
        self.id = id
        self.method = method
        self.params = params
        self.stateless = stateless
        if stateless is not None:
            revision = stateless.revision
            peer_capabilities = stateless.client_capabilities
            peer_info = stateless.client_info
        self.revision = revision
        self.peer_capabilities: JSONObject = peer_capabilities or {}
        self.peer_info: JSONObject = peer_info or {}
        self.progress_token = progress_token
        self.origin = NO_ORIGIN

    def __eq__(self, other: object) -> bool:
        if type(other) is not RequestReceived:
            return NotImplemented
        return (self.id == other.id and self.method == other.method
                and self.params == other.params and self.stateless == other.stateless)


class NotificationReceived(Record):
    """One inbound notification; ``origin`` as on :class:`RequestReceived` (equality
    compares the message)."""

    __slots__ = ("method", "origin", "params")

    def __init__(self, method: str, params: JSONObject) -> None:
        self.method = method
        self.params = params
        self.origin = NO_ORIGIN

    def __eq__(self, other: object) -> bool:
        if type(other) is not NotificationReceived:
            return NotImplemented
        return self.method == other.method and self.params == other.params


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
    """One serialized message, and what a message-level transport needs to know about it
    without reading ``data`` back: the inbound request it belongs to (``related``, for a
    server's HTTP routing) and, for a request or notification of ours, its ``method``,
    ``params`` and (a request) ``id`` (for a client's HTTP headers and cancellation).
    ``params`` is the object that was encoded: read it, never change it. An error answer
    carries its JSON-RPC ``error`` code (a Streamable HTTP stateless answer's status is
    decided by it, without decoding ``data``).

    Empty ``data`` (with ``final``) is a *withdrawn answer*: the peer cancelled request
    ``related`` (or every request of the batch named ``related``), so no answer will come
    (basic/utilities/cancellation: "send no response"). A stream transport writes nothing
    for it; a transport holding an exchange open for ``related`` (a Streamable HTTP POST)
    ends that exchange."""

    __slots__ = ("data", "error", "final", "id", "method", "params", "related")

    def __init__(
        self,
        data: bytes,
        related: RequestId | None = None,
        final: bool = False,
        *,
        method: str | None = None,
        id: RequestId | None = None,
        params: JSONObject | None = None,
        error: int | None = None,
    ) -> None:
        self.data = data
        self.related = related
        self.final = final  # a response (or error) ending the exchange of ``related``
        self.method = method  # a request's or notification's method; None for an answer
        self.id = id  # the id of a request of ours; None for anything else
        self.params = params
        self.error = error  # the code of an error answer; None for anything else

