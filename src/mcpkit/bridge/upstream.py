"""The proxy's side toward the remote server: the upstream ``Client`` and one live link.

``upstream_client`` is the one place the proxy builds a ``Client`` (a command for stdio, a
URL for Streamable HTTP, with the caller's ``headers``/``auth``). Its server->client
requests (sampling, elicitation, roots) are not answered here: ``RelayClient`` hands each
one, raw, to a ``relay`` coroutine, which asks the proxy's own client and returns its
answer, in a session (a request the remote sent) and in the stateless revision (an input
request of an ``input_required`` result) alike.

A ``Link`` keeps one such client connected in a task of the proxy's task group (a task
group must be left by the task that entered it), says why it died when the remote went
away, and is started again by the next request that needs it (``ensure``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from ..client import Client, Http, Stdio
from ..client.connect import Transport, is_url, transport_for
from ..client.stateless import Stateless
from ..protocol.connection import RequestReceived
from ..protocol.errors import ConnectionClosed, MCPError, ProtocolError
from ..protocol.jsonrpc import JSONObject
from ..protocol.stateless import CLIENT_CAPABILITIES
from ..session import HandlerResult, ProgressCallback, Session, Telemetry

log = logging.getLogger("mcpkit.bridge")

Relay = Callable[[str, JSONObject], Awaitable[JSONObject]]
"""Answers one server->client request (method, params) of the remote."""
Notify = Callable[[str, JSONObject], Awaitable[None] | None]
"""Receives one notification (method, params) of the remote."""

RELAYED = frozenset({"sampling/createMessage", "elicitation/create", "roots/list"})
"""The remote's requests that are its client's to answer: relayed to the proxy's client."""


class Upstream:
    """Where and how to reach the remote server (what ``proxy(...)`` was given).

    ``target``: a command (list or shell-style string: stdio), an ``http(s)://`` URL, or
    an mcpkit ``Server`` object (served in this process, over a memory pipe);
    ``headers``/``auth`` (an ``httpx.Auth``): for every HTTP request to it; ``env``/``cwd``:
    of the command; ``timeout``: seconds one forwarded request may take (then it is
    cancelled on the remote and answered with an error); ``mode``: the era the proxy
    speaks to the remote when it may choose (``"auto"``: the stateless revision if the
    remote speaks it).
    """

    __slots__ = ("auth", "cwd", "env", "headers", "mode", "target", "timeout")

    def __init__(self, target: Any, *, headers: dict[str, str] | None = None,
                 auth: Any = None, env: dict[str, str] | None = None, cwd: str | None = None,
                 timeout: float = 300.0, mode: str = "auto") -> None:
        if isinstance(target, str) and not target.strip():
            raise ValueError("proxy target is empty: give a command or an http(s):// URL")
        if isinstance(target, list | tuple) and not target:
            raise ValueError("proxy target is empty: give a command or an http(s):// URL")
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if mode not in ("auto", "stateful", "stateless"):
            raise ValueError("mode must be 'auto', 'stateful' or 'stateless'")
        self.target = list(target) if isinstance(target, tuple) else target
        self.headers, self.auth, self.env, self.cwd = headers, auth, env, cwd
        self.timeout = timeout
        self.mode = mode

    def transport(self) -> Transport:
        """The client transport reaching the remote, with its options."""
        target = self.target
        if isinstance(target, str) and is_url(target):
            return Http(target, headers=self.headers, auth=self.auth)
        if isinstance(target, str | list):
            return Stdio(target, env=self.env, cwd=self.cwd)
        return transport_for(target)  # a Server object: in memory

    def describe(self) -> str:
        """The remote, for messages (a command joined, a URL as is)."""
        target = self.target
        if isinstance(target, list):
            return " ".join(str(part) for part in target)
        return target if isinstance(target, str) else f"(in-process {target.name!r})"


class RelayStateless(Stateless):
    """The stateless revision with every input request answered by the relay, raw."""

    __slots__ = ("relay",)

    def __init__(self, info: JSONObject, client: Client, relay: Relay) -> None:
        super().__init__(info, client.handlers)
        self.relay = relay

    def meta(self, params: JSONObject | None) -> JSONObject:
        """The per-request ``_meta``, keeping client capabilities the proxy passes on
        (its own client's, so the remote judges what that client can answer)."""
        given = (params or {}).get("_meta")
        caps = given.get(CLIENT_CAPABILITIES) if isinstance(given, dict) else None
        out = super().meta(params)
        if isinstance(caps, dict):
            out["_meta"][CLIENT_CAPABILITIES] = caps
        return out

    async def forward(self, session: Session, method: str, params: JSONObject, *,
                      timeout: float, on_progress: ProgressCallback | None) -> JSONObject:
        """Send ``method`` once and return its result as it came, ``input_required``
        included (its input requests are the proxy's client's to answer)."""
        return await self._send(session, method, self.meta(params), timeout, on_progress,
                                None)

    async def answer_input(self, request: Any) -> JSONObject:
        method = request.get("method") if isinstance(request, dict) else None
        params = request.get("params") if isinstance(request, dict) else None
        if method not in RELAYED:
            return await super().answer_input(request)
        return await self.relay(str(method), params if isinstance(params, dict) else {})


class RelayClient(Client):
    """A ``Client`` whose server->client requests go, raw, to the proxy's client."""

    def __init__(self, target: Any, relay: Relay, **options: Any) -> None:
        super().__init__(target, **options)
        self.relay = relay
        self.stateless: RelayStateless = RelayStateless(self.info, self, relay)

    async def forward(self, method: str, params: JSONObject, *,
                      on_progress: ProgressCallback | None) -> JSONObject:
        """Send ``method`` once in the stateless revision and return its result as it
        came, ``input_required`` included (``RelayStateless.forward``)."""
        if on_progress is not None:
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = self.progress_token()
            params = {**params, "_meta": meta}
        return await self.stateless.forward(self.session, method, params,
                                            timeout=self.timeout, on_progress=on_progress)

    def _answer(self, session: Session, event: RequestReceived) -> HandlerResult:
        # (Client's answer to a server->client request; the handlers' checks and
        # rewrites are the proxy's client's to make, so the request goes on raw)
        if event.method in RELAYED and "task" not in event.params:
            return self.relay(event.method, event.params)
        return super()._answer(session, event)


async def _unused(params: JSONObject) -> JSONObject:  # pragma: no cover - never called
    raise ProtocolError("relayed requests never reach the client's own handlers")


def upstream_client(upstream: Upstream, relay: Relay, notify: Notify, *,
                    caps: JSONObject | None, mode: str,
                    protocol_version: str | None = None,
                    telemetry: Telemetry | None = None) -> RelayClient:
    """The ``Client`` the proxy talks to the remote with: ``mode`` and
    ``protocol_version`` as ``Client`` takes them; it declares what ``caps`` (the proxy's
    own client's capabilities; None: everything it could relay) allow, its handlers
    being the relay; ``telemetry``: the proxy's own (its requests to the remote are
    spans in the trace of the request they forward)."""
    everything = caps is None
    caps = caps or {}
    elicit = caps.get("elicitation")
    modes = ["form", "url"] if everything else (
        [m for m in ("form", "url") if m in elicit] or ["form"]
        if isinstance(elicit, dict) else ["form"])
    sampling = caps.get("sampling")
    options: dict[str, Any] = {
        "name": "mcpkit-proxy",
        "timeout": upstream.timeout,
        "mode": mode,
        "protocol_version": protocol_version,
        "sampling": _unused if everything or "sampling" in caps else None,
        "sampling_tools": everything or (isinstance(sampling, dict) and "tools" in sampling),
        "elicitation": _unused if everything or "elicitation" in caps else None,
        "elicitation_modes": modes,
        "roots": (lambda: []) if everything or "roots" in caps else None,
        "on_notification": notify,
        "telemetry": telemetry or False,
    }
    return RelayClient(upstream.transport(), relay, **options)


class Link:
    """One upstream client kept connected for as long as it is needed (module docstring).

    ``build`` makes a fresh ``Client`` each time the link (re)connects; ``after`` runs
    once it is connected (in the link's task: background listens, the log level).
    """

    def __init__(self, build: Callable[[], RelayClient],
                 after: Callable[[Client, anyio.abc.TaskGroup], Awaitable[None]] | None = None
                 ) -> None:
        self._build = build
        self._after = after
        self.client: RelayClient | None = None
        self._stop: anyio.Event | None = None
        self._ended: anyio.Event | None = None
        self._lock = anyio.Lock()
        self.closed = False
        self.failure: str | None = None  # why the last connection ended or failed
        self.level: str | None = None  # the log level last set on a stateful remote

    @property
    def alive(self) -> bool:
        """Whether the client is connected (its session open)."""
        if self.client is None:
            return False
        try:
            return not self.client.session.closed
        except ConnectionClosed:
            return False

    async def ensure(self, tg: anyio.abc.TaskGroup) -> RelayClient:
        """The connected client, (re)connecting it first if the remote is not connected
        (raises what connecting raises: ``ServerUnreachable``, ``HandshakeError``)."""
        if self.alive:
            assert self.client is not None
            return self.client
        async with self._lock:
            if self.closed:
                raise ConnectionClosed("the proxy is shutting down this session")
            if not self.alive:
                await self._stopped()
                self.level = None
                await tg.start(self._run)
            assert self.client is not None
            return self.client

    async def _run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        client = self._build()
        self._stop, self._ended = anyio.Event(), anyio.Event()
        started = False
        try:
            async with client, anyio.create_task_group() as tg:
                self.client = client
                if self._after is not None:
                    await self._after(client, tg)
                task_status.started()
                started = True
                await self._stop.wait()
                tg.cancel_scope.cancel()
        except MCPError as exc:
            self.failure = str(exc)
            if not started:
                raise
            log.warning("the connection to the remote server ended: %s", exc)
        finally:
            self._ended.set()

    async def _stopped(self) -> None:
        """End the current connection, if any, and wait until its task is done."""
        if self._stop is not None and self._ended is not None:
            self._stop.set()
            await self._ended.wait()
        self.client = None

    def close(self) -> None:
        """Disconnect (the task leaves the client: the command is stopped, an HTTP
        session deleted); for good."""
        self.closed = True
        if self._stop is not None:
            self._stop.set()

    async def aclose(self) -> None:
        """``close`` and wait until the connection is gone."""
        self.closed = True
        await self._stopped()
