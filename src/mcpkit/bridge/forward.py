"""What the proxy does with each message: forward it to the remote and bring the answer back.

Every request the proxy's protocol core does not answer itself (``initialize``, ``ping``,
``logging/setLevel`` and ``server/discover`` are answered from what the remote declared)
goes to the remote as it came: the method, the params with the proxy client's own
per-request ``_meta`` (revision, capabilities, client info, log level, progress token)
taken out, since the upstream client adds its own. Lists are forwarded page by page with
the remote's cursors, so nothing is listed before it is asked for. The remote's answer
comes back as it was, less its ``serverInfo`` (the proxy's core stamps its own) and, to
a handshake-era client, what only the stateless era has (``resultType``, ``ttlMs``,
``cacheScope``). The remote's
JSON-RPC errors come back with their code, message and data; a remote that cannot be
reached, dies or does not answer in time is an internal error (-32603) that says so.

A ``Tap`` is what one upstream link knows about the proxy's side: the proxy's session it
serves (None: the link shared by stateless requests) and the calls in flight through it.
The remote's server->client requests are relayed to the call they belong to (the one
whose forwarding task asks, in the stateless revision; else the newest in flight) with
``Context.request_inputs``, so a 2026-07-28 client gets them as ``input_required`` and a
handshake-era client as requests: a stateless call is then interrupted (cancelled on the
remote) and runs again when its client retries with the answers, the way a stateless
server runs a handler again.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from ..protocol.connection import NotificationReceived, RequestReceived
from ..protocol.errors import (
    CapabilityNotSupported,
    InternalError,
    InvalidRequest,
    MCPError,
    MethodNotFound,
    ProtocolError,
    RemoteError,
    RequestTimeout,
)
from ..protocol.jsonrpc import JSONObject, without_meta_key
from ..protocol.methods import LOG_LEVELS
from ..protocol.stateless import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    MRTR_METHODS,
    PROTOCOL_VERSION,
    SERVER_INFO,
    SUBSCRIPTION_ID,
)
from ..server.context import Context
from ..server.methods import Methods
from ..server.middleware import (
    Middleware,
    RequestFn,
    compose,
    compose_notifications,
    entry,
    terminal_of,
)
from ..server.mrtr import InputRequired
from ..server.peers import Peers
from ..session import HandlerResult, Session

if TYPE_CHECKING:
    from .proxy import ProxyServer

MAX_CHAINS = 256
"""Methods whose middleware chain the proxy keeps built (others are built per request)."""
INPUT_TIMEOUT = 600.0
"""Seconds the proxy's client has to answer a relayed sampling / elicitation / roots."""
_STRIPPED_META = frozenset({PROTOCOL_VERSION, CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL,
                            "progressToken"})
_PASSED_META = _STRIPPED_META - {CLIENT_CAPABILITIES}
_STAMPS = frozenset({"resultType", "ttlMs", "cacheScope"})
_CAPABILITY = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation",
               "roots/list": "roots"}
_LOCAL_NOTIFICATIONS = frozenset({"notifications/progress", "notifications/cancelled",
                                  "notifications/subscriptions/acknowledged"})


class Call:
    """One request of the proxy's client being forwarded."""

    __slots__ = ("asked", "ctx", "interrupted", "scope")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.scope: anyio.CancelScope | None = None
        self.interrupted: InputRequired | None = None
        self.asked = 0  # input requests relayed so far: their keys, stable across retries


_CURRENT: contextvars.ContextVar[Call | None] = contextvars.ContextVar(
    "mcpkit_bridge_call", default=None)


class Tap:
    """What one upstream link knows of the proxy's side (see the module docstring)."""

    __slots__ = ("calls", "peers", "session")

    def __init__(self, session: Session | None, peers: Peers) -> None:
        self.session = session  # the proxy's session this link serves; None: shared
        self.peers = peers
        self.calls: list[Call] = []

    def _call(self) -> Call | None:
        call = _CURRENT.get()
        if call is not None and call in self.calls:
            return call
        return self.calls[-1] if self.calls else None

    async def relay(self, method: str, params: JSONObject) -> JSONObject:
        """Answer the remote's ``method`` request with the proxy's client's answer."""
        call = self._call()
        if call is None:
            session = self.session
            if session is None or session.closed:
                raise InvalidRequest(f"{method}: the proxy has no client request in flight "
                                     "to relay it to; send it while a request is running")
            try:
                return await session.request(method, params, timeout=INPUT_TIMEOUT)
            except RemoteError as exc:
                raise relayed(exc) from None
        ctx = call.ctx
        try:
            ctx.require_capability(_CAPABILITY[method])
        except CapabilityNotSupported as exc:
            raise MethodNotFound(f"Method not found: the proxy's client cannot answer "
                                 f"{method}: {exc}") from None
        call.asked += 1
        key = f"{method.split('/')[0]}-{call.asked}"
        try:
            answers = await ctx.request_inputs({key: (method, params)}, timeout=INPUT_TIMEOUT)
        except InputRequired as exc:
            if _CURRENT.get() is call or call.scope is None:
                raise  # (the remote's input request: it ends the call's request)
            call.interrupted = exc  # the remote's request in its session: end the call
            call.scope.cancel()
            raise InternalError("Internal error: the proxy's client answers this on the "
                                "retry of its request; this call is cancelled") from None
        except RemoteError as exc:
            raise relayed(exc) from None
        return answers[key]

    async def notify(self, method: str, params: JSONObject) -> None:
        """Pass one notification of the remote on to the proxy's side."""
        if method in _LOCAL_NOTIFICATIONS:
            return  # answered by the upstream client itself (progress: on_progress)
        params = without_meta_key(params, SUBSCRIPTION_ID)  # the listen stream's tag
        if method == "notifications/message":
            level = params.get("level")
            if level not in LOG_LEVELS:
                return
            call = self._call()
            logger = params.get("logger")
            logger = logger if isinstance(logger, str) else None
            if call is not None:
                await call.ctx.log(level, params.get("data"), logger)
            elif self.session is not None:
                self.session.log(level, params.get("data"), logger, None)
            return
        if self.session is None:  # the shared link: only listen streams take these
            if method.endswith("/list_changed"):
                self.peers.heard_list_changed(method, sessions=False)
            elif method == "notifications/resources/updated" and isinstance(
                    params.get("uri"), str):
                self.peers.heard_resource_updated(params["uri"])
            return
        if not self.session.closed:
            self.session.notify(method, params or None)


_RELAYED_ERRORS: dict[int, type[ProtocolError]] = {}


def relayed(exc: RemoteError) -> ProtocolError:
    """The remote's JSON-RPC error as the proxy's answer: same code, message and data."""
    code = exc.code
    cls = _RELAYED_ERRORS.get(code)
    if cls is None:
        cls = type(f"Relayed{code}".replace("-", "_"), (ProtocolError,), {
            "code": code, "__doc__": "An error answer of the remote server, passed on."})
        if len(_RELAYED_ERRORS) < 256:  # codes come from the remote: bounded
            _RELAYED_ERRORS[code] = cls
    return cls(exc.message if isinstance(exc.message, str) else str(exc.message), exc.data)


def outgoing(event: RequestReceived, log_level: str | None, passing: bool) -> JSONObject:
    """The params to send the remote (see the module docstring); ``log_level``: the
    level a stateless remote is to be told in ``_meta``; ``passing``: a stateless
    request passed to a stateless remote, which keeps its client's capabilities and its
    answers to the remote's input requests."""
    params = dict(event.params)
    meta = params.pop("_meta", None)
    if not passing and event.method in MRTR_METHODS and event.stateless is not None:
        params.pop("inputResponses", None)  # answered here; the remote asks again
        params.pop("requestState", None)
    dropped = _PASSED_META if passing else _STRIPPED_META
    kept = {k: v for k, v in meta.items() if k not in dropped} if isinstance(
        meta, dict) else {}
    if log_level is not None:
        kept[LOG_LEVEL] = log_level
    if kept:
        params["_meta"] = kept
    return params


def incoming(result: JSONObject, stateless: bool) -> JSONObject:
    """The remote's result less its ``serverInfo`` and, for a ``stateless`` (2026-07-28)
    request, nothing else: its caching hints stand (the proxy's core stamps only what
    is missing); a handshake-era request's result loses what that era lacks."""
    if not stateless and result.get("resultType", "complete") == "complete" and not (
            result.keys().isdisjoint(_STAMPS)):  # (a task's ttlMs is the task's own)
        result = {k: v for k, v in result.items() if k not in _STAMPS}
    meta = result.get("_meta")
    if isinstance(meta, dict) and SERVER_INFO in meta:
        rest = {k: v for k, v in meta.items() if k != SERVER_INFO}
        result = {k: v for k, v in result.items() if k != "_meta"}
        if rest:
            result["_meta"] = rest
    return result


class ProxyMethods(Methods):
    """The proxy's answers: every request forwarded (module docstring), except
    ``subscriptions/listen``, answered from the notifications the shared link hears."""

    def __init__(self, proxy: ProxyServer, *parts: Any) -> None:
        super().__init__(proxy, *parts)
        self._proxy = proxy
        self._middleware: list[Middleware] = []
        #: Method -> the middleware chain around forwarding it (None: no middleware).
        self._chains: dict[str, RequestFn] | None = None

    def use_middleware(self, middleware: list[Middleware]) -> None:
        """Run ``middleware`` around every forwarded request (chains built per method on
        first use) and notification; an empty list restores plain forwarding."""
        self._middleware = list(middleware)
        self._chains = {} if middleware else None
        self._notify_chain = compose_notifications(middleware, self._plain_notification)

    def on_request(self, session: Session, event: RequestReceived) -> HandlerResult:
        chains = self._chains
        if chains is None:
            return self._forwarding(session, event)
        run = chains.get(event.method)
        if run is None:
            chain = compose(self._middleware, event.method, terminal_of(self._forwarding))
            run = self._forwarding if chain is None else entry(self._proxy, chain)
            if len(chains) < MAX_CHAINS:  # method names come from the client: bounded
                chains[event.method] = run
        return run(session, event)

    def _forwarding(self, session: Session, event: RequestReceived) -> HandlerResult:
        if event.method == "subscriptions/listen":
            return self._listen(session, event)
        passing = event.stateless is not None and self._proxy.remote_stateless
        if event.method in MRTR_METHODS and not passing:
            ctx = self._context(session, event)
            return self._seal.run(event, ctx, self._forward(session, event, ctx))
        ctx = Context(self._proxy, session, event)
        return self._forward(session, event, ctx, passing)

    def _notified(self, session: Session, event: NotificationReceived) -> Any:
        """``notifications/roots/list_changed`` goes on to the remote (the innermost
        step of the notification chain when middleware hooks notifications)."""
        if event.method == "notifications/roots/list_changed":
            return self._proxy.roots_changed(session)
        return None

    async def _forward(self, session: Session, event: RequestReceived, ctx: Context,
                       passing: bool = False) -> JSONObject:
        proxy = self._proxy
        client, tap = await proxy.upstream_for(session, event, ctx)
        level = ctx.log_level if client.stateless_version is not None else None
        passing = passing and client.stateless_version is not None
        params = outgoing(event, level, passing)
        call = Call(ctx)
        on_progress: Callable[[float, float | None, str | None], Coroutine[Any, Any, None]
                              ] | None = None
        if ctx.progress_token is not None:
            on_progress = ctx.report_progress
        token = _CURRENT.set(call)
        tap.calls.append(call)
        try:
            with anyio.CancelScope() as scope:
                call.scope = scope
                if passing:  # input_required and all: the proxy's client answers
                    result = await client.forward(event.method, params,
                                                  on_progress=on_progress)
                else:
                    result = await client.request(event.method, params,
                                                  on_progress=on_progress)
                    if client.stateless_version is None:
                        # let the remote's notifications sent before its answer (logs)
                        # reach this call before it ends
                        await anyio.lowlevel.checkpoint()
            if call.interrupted is not None:
                raise call.interrupted
        except ProtocolError:
            raise
        except RemoteError as exc:
            raise relayed(exc) from None
        except RequestTimeout:
            raise InternalError(
                f"Internal error: the remote server did not answer {event.method} within "
                f"{proxy.upstream.timeout:g}s; the request was cancelled there.") from None
        except CapabilityNotSupported as exc:
            raise MethodNotFound(f"Method not found: the remote server does not offer "
                                 f"{event.method}: {exc}") from None
        except MCPError as exc:
            raise InternalError(f"Internal error: the remote server failed {event.method}: "
                                f"{exc}{proxy.remote_gone(tap)}") from None
        finally:
            _CURRENT.reset(token)
            tap.calls.remove(call)
        if event.method == "tools/list":
            proxy.learn_tools(result.get("tools"))
        return incoming(result, event.stateless is not None)
