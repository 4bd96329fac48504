"""What a session's users provide and rely on: handler shapes, the ``Output`` a transport
implements, and the session's fixed policies.

Kept apart from ``dispatch`` (the ``Session`` itself) so transports and the layers above
can name these without reading the dispatcher.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

from ..protocol.events import NotificationReceived, RequestReceived
from ..protocol.jsonrpc import JSONObject, RequestId

if TYPE_CHECKING:
    from .dispatch import Session


class Ready:
    """A request's result that is already there, as an awaitable: awaiting it gives
    ``value`` without suspending.

    What a handler returns when no code of its has to wait (a listing, a lookup, a tool
    function that never waits), so that every handler has one shape, an awaitable, and
    the layers between the session and the handler just ``await`` it; the session alone
    recognises this exact type and answers at once, without starting a task for it (the
    fast path the stdio and HTTP benchmarks measure)."""

    __slots__ = ("value",)

    def __init__(self, value: JSONObject) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, JSONObject]:
        return self.value
        yield  # (unreached: makes this a generator that never suspends)

    def __repr__(self) -> str:
        return f"Ready({self.value!r})"


HandlerResult = Awaitable[JSONObject]
"""What a request handler returns: an awaitable of its result, either ``Ready`` (the
result now, answered inline) or a coroutine (run in a task of its own, so a cancellation
stops exactly that request)."""
RequestHandler = Callable[["Session", RequestReceived], HandlerResult]
"""Answers an inbound request (see ``HandlerResult``); raising ``ProtocolError``, at once
or while awaited, answers with that error."""
SessionNotificationHandler = Callable[["Session", NotificationReceived], Awaitable[None] | None]
"""Takes an inbound notification of the session (the client-side callback type with the
same role is ``mcpkit.client.NotificationHandler``: method and params)."""
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]


DEFAULT_DRAIN_TIMEOUT = 1.0
"""Seconds in-flight handlers may run on after the input ended, before they are cancelled.
Short on purpose: MCP clients wait about 2 s after closing stdin before they SIGTERM."""


class Output(Protocol):
    """Where a session's outgoing messages go (a byte pump, or HTTP response streams),
    and how fast they may be produced."""

    def wake(self, now: bool) -> None:
        """Messages are queued in ``session.conn``: take them soon, without blocking.

        ``now``: the last running handler just finished, so nothing else will add to them
        in this turn of the event loop; an output that coalesces writes may write at once.
        """

    def congested(self, related: RequestId | None) -> Awaitable[None] | None:
        """None when the way to the peer for messages of ``related`` (the inbound request
        they belong to; None: the session's own) has room: the common case, and then this
        call is all it costs. Otherwise an awaitable that completes once there is room
        again, or once waiting became pointless (the stream or the session ended).

        A handler awaits it after queuing a message (``Context.report_progress``,
        ``Context.log``), so one that produces faster than the peer reads is paced
        instead of buffered without limit.
        """


class Principal(Protocol):
    """Who an authenticated request speaks for, as the layers below ``mcpkit.auth`` see it.

    An authentication middleware puts one in the ASGI scope; the HTTP transport hands it,
    unread, with each message it feeds a session (``Origin.principal``), and binds what
    the request creates (an HTTP session) to its ``identity``. ``mcpkit.auth.AccessToken`` is one.
    """

    @property
    def identity(self) -> str:
        """Who, as one string: requests of the same identity may use each other's state."""
        ...


ENDLESS_METHODS = frozenset({"subscriptions/listen"})
"""Requests answered only when the peer ends them (a 2026-07-28 listen stream): at the end
of input they are cancelled at once instead of being waited for."""
