"""Middleware: one typed chain around the requests and notifications a server answers.

What: a ``Middleware`` subclass overrides the hooks it needs; each hook gets the
``Request`` (method, params, request id, session id, principal, protocol version, era)
and ``call_next``, the rest of the chain. It may look at or change the request, call
``call_next`` and look at or change the result, or short-circuit: return a result of its
own without calling it, or raise a ``ProtocolError`` (``InvalidParams``, ...) which is
sent to the client as that JSON-RPC error. Hooks:

- ``on_request`` around every request the server's handlers answer;
- by kind, inside ``on_request``: ``on_call_tool``, ``on_read_resource``,
  ``on_get_prompt``, ``on_list_tools``, ``on_list_resources``,
  ``on_list_resource_templates``, ``on_list_prompts``, ``on_complete``;
- ``on_notification`` around every notification the server's handler receives.

The first middleware given is the outermost: ``Server(middleware=[a, b])`` runs
``a.on_request -> a.on_call_tool -> b.on_request -> b.on_call_tool -> the tool``.

Why it is shaped so: the chain of each method is composed once (``compose``), from only
the hooks a middleware overrides, and put in place of that method's handler; a server
without middleware keeps its handler table untouched, so its dispatch path is exactly the
one without this module (no extra call, await or allocation per message). With a chain,
every request it covers runs in a task of its own (the chain is a coroutine).

What it does not see: what the protocol core answers itself before any handler runs
(``initialize``, ``ping``, ``logging/setLevel``, ``server/discover``, a method the
revision or the server's capabilities do not have, cancellations, progress and
responses), and HTTP-level refusals (auth, 404 sessions) that never reach the session.

Failure modes: an exception other than a ``ProtocolError`` escaping the chain is logged
and answered as an internal error, as a handler's would be; a hook that forgets to
return the result answers ``None``, refused here with a ``TypeError`` naming the hook.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from ..protocol.connection import NotificationReceived, RequestReceived
from ..protocol.jsonrpc import JSONObject, RequestId
from ..protocol.stateless import RequestMeta
from ..session import HandlerResult, Session

if TYPE_CHECKING:
    from ..session.interfaces import Principal
    from .app import Server

CallNext = Callable[["Request"], Awaitable[JSONObject]]
"""The rest of a request's chain: give it the request, await the result."""
NotifyNext = Callable[["Request"], Awaitable[None]]
"""The rest of a notification's chain."""

KIND_HOOKS: Final[dict[str, str]] = {
    "tools/call": "on_call_tool",
    "tools/list": "on_list_tools",
    "resources/read": "on_read_resource",
    "resources/list": "on_list_resources",
    "resources/templates/list": "on_list_resource_templates",
    "prompts/get": "on_get_prompt",
    "prompts/list": "on_list_prompts",
    "completion/complete": "on_complete",
}
"""Method -> the hook by kind that wraps it."""

LIST_METHODS: Final = frozenset(
    {"tools/list", "resources/list", "resources/templates/list", "prompts/list"})


class Request:
    """One incoming request or notification as middleware sees it.

    ``method``, ``params`` (the message's params object; a hook may replace it before
    calling ``call_next``), ``id`` (None for a notification), ``session`` (the
    ``mcpkit.session.Session``), ``session_id`` (the Streamable HTTP session id; None on
    stdio, in memory and for stateless requests), ``principal`` (the verified token's
    ``AccessToken`` over a protected HTTP endpoint, else None), ``peer`` (the HTTP
    client's address), ``protocol_version`` (of the session, or of a 2026-07-28
    request), ``stateless`` (a 2026-07-28 request's ``_meta`` as ``Context.stateless``:
    no handshake, no session state; None otherwise), ``server`` and ``state``: a dict
    middleware share for this one request.
    ``principal`` and ``peer`` are read when the request arrives (an HTTP session's
    change with its next POST).
    """

    __slots__ = ("event", "id", "method", "peer", "principal", "server", "session",
                 "state")

    def __init__(self, server: Server, session: Session,
                 event: RequestReceived | NotificationReceived) -> None:
        self.server = server
        self.session = session
        self.event = event
        self.method = event.method
        self.id: RequestId | None = event.id if isinstance(event, RequestReceived) else None
        self.principal: Principal | None = event.origin.principal
        self.peer: str | None = event.origin.address
        self.state: dict[str, Any] = {}

    @property
    def params(self) -> JSONObject:
        return self.event.params

    @params.setter
    def params(self, params: JSONObject) -> None:
        if not isinstance(params, dict):
            raise TypeError(f"params must be a dict, got {type(params).__name__}")
        self.event.params = params

    @property
    def session_id(self) -> str | None:
        return self.session.session_id

    @property
    def stateless(self) -> RequestMeta | None:
        """A 2026-07-28 request's own ``_meta`` (revision, client capabilities and info,
        log level), as ``Context.stateless``; None on a session and for a notification."""
        event = self.event
        return event.stateless if type(event) is RequestReceived else None

    @property
    def protocol_version(self) -> str | None:
        event = self.event
        rev = event.revision if type(event) is RequestReceived else self.session.revision
        return None if rev is None else rev.version

    def __repr__(self) -> str:
        return f"Request({self.method!r}, id={self.id!r})"


class Middleware:
    """Base class of middleware: override the hooks you need (see the module docstring).

    Each request hook is ``async def hook(self, request, call_next) -> dict`` and must
    return the result (usually ``await call_next(request)``); ``on_notification``
    returns None. ``setup(server)`` is called once when the middleware is installed, for
    those that need the server (a cache listening for list changes, say)."""

    def setup(self, server: Server) -> None:
        """Called once, when installed on ``server``."""

    async def on_request(self, request: Request, call_next: CallNext) -> JSONObject:
        return await call_next(request)

    async def on_notification(self, request: Request, call_next: NotifyNext) -> None:
        await call_next(request)

    async def on_call_tool(self, request: Request, call_next: CallNext) -> JSONObject:
        return await call_next(request)

    async def on_read_resource(self, request: Request, call_next: CallNext) -> JSONObject:
        return await call_next(request)

    async def on_get_prompt(self, request: Request, call_next: CallNext) -> JSONObject:
        return await call_next(request)

    async def on_list_tools(self, request: Request, call_next: CallNext) -> JSONObject:
        return await call_next(request)

    async def on_list_resources(self, request: Request, call_next: CallNext) -> JSONObject:
        return await call_next(request)

    async def on_list_resource_templates(self, request: Request,
                                         call_next: CallNext) -> JSONObject:
        return await call_next(request)

    async def on_list_prompts(self, request: Request, call_next: CallNext) -> JSONObject:
        return await call_next(request)

    async def on_complete(self, request: Request, call_next: CallNext) -> JSONObject:
        return await call_next(request)


def _overrides(mw: Middleware, hook: str) -> bool:
    return getattr(type(mw), hook, None) is not getattr(Middleware, hook)


def _link(mw: Middleware, hook: str, inner: CallNext) -> CallNext:
    """``inner`` wrapped by ``mw``'s ``hook`` (a result that is not a dict: TypeError)."""
    bound: Callable[[Request, CallNext], Awaitable[JSONObject]] = getattr(mw, hook)

    async def link(request: Request) -> JSONObject:
        result = await bound(request, inner)
        if type(result) is not dict:
            raise TypeError(f"{type(mw).__name__}.{hook} returned {type(result).__name__}, "
                            "not the result dict; return await call_next(request)")
        return result

    return link


def compose(middleware: Iterable[Middleware], method: str,
            terminal: CallNext) -> CallNext | None:
    """The chain of ``method``'s requests around ``terminal``, or None when no
    middleware has a hook for it."""
    kind = KIND_HOOKS.get(method)
    chain = terminal
    linked = False
    for mw in reversed(list(middleware)):
        for hook in (kind, "on_request"):
            if hook is not None and _overrides(mw, hook):
                chain = _link(mw, hook, chain)
                linked = True
    return chain if linked else None


def compose_notifications(middleware: Iterable[Middleware],
                          terminal: NotifyNext) -> NotifyNext | None:
    """The chain around notifications, or None when no middleware hooks them."""
    chain = terminal
    linked = False
    for mw in reversed(list(middleware)):
        if _overrides(mw, "on_notification"):
            hook: Callable[[Request, NotifyNext], Awaitable[None]] = mw.on_notification
            chain = _bind_notification(hook, chain)
            linked = True
    return chain if linked else None


def _bind_notification(hook: Callable[[Request, NotifyNext], Awaitable[None]],
                       inner: NotifyNext) -> NotifyNext:
    async def link(request: Request) -> None:
        await hook(request, inner)

    return link


RequestFn = Callable[[Session, RequestReceived], HandlerResult]


def terminal_of(handler: RequestFn) -> CallNext:
    """A table handler as the innermost link: its awaitable, awaited."""

    async def terminal(request: Request) -> JSONObject:
        event = request.event
        assert isinstance(event, RequestReceived)
        return await handler(request.session, event)

    return terminal


def entry(server: Server, chain: CallNext) -> RequestFn:
    """A handler-table entry that runs ``chain`` (in the request's task)."""

    def run(session: Session, event: RequestReceived) -> HandlerResult:
        return chain(Request(server, session, event))

    return run
