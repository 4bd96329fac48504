"""``ProxyServer``: a remote MCP server served through mcpkit, on any mcpkit transport.

    server = proxy(["python", "server.py"])       # a stdio command ...
    server = proxy("https://example.com/mcp", headers={"Authorization": "Bearer ..."})
    server.run("http", port=8000)                  # ... served over Streamable HTTP

On start (the server's lifespan: ``run``, ``serve``, or the ASGI lifespan) the proxy
connects to the remote once, learns what it is (``serverInfo``, capabilities,
instructions: the proxy presents itself as the remote) and which eras it speaks, and
keeps that connection for the stateless (2026-07-28) requests it gets. Each stateful
session of the proxy gets a connection of its own to the remote, opened at its first
request and closed when it ends, in the same revision when the remote speaks it, so
subscriptions, log levels and the remote's requests stay with the session they belong
to. A remote that speaks only the other era is bridged: each side speaks its own.

Reconnection: a connection to the remote that died (the command exited, the connection
closed) is opened again by the next request that needs it, never in the background; that
request fails with an error naming the reason when it cannot be. What the remote kept for
the dead connection (subscriptions, its log level, tasks) is gone with it. A remote
reached over HTTP that forgot a session is given a new one by the HTTP client itself.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc

from ..client import Client
from ..protocol.connection import Connection, RequestReceived
from ..protocol.errors import HandshakeError, InternalError, MCPError
from ..protocol.jsonrpc import JSONObject
from ..protocol.lifecycle import Role
from ..server import Context, Server
from ..server.peers import Peers
from ..session import Session, Telemetry
from .forward import ProxyMethods, Tap
from .upstream import Link, RelayClient, Upstream, upstream_client

log = logging.getLogger("mcpkit.bridge")

MAX_TOOLS = 10_000
"""Tools whose ``x-mcp-header`` declarations the proxy keeps."""
CLOSE_TIMEOUT = 5.0
"""Seconds the remote connections get to close when the proxy stops."""


class _SessionPeers(Peers):
    """``Peers`` that also end a session's remote connection when the session ends."""

    def __init__(self, ended: Callable[[Session], None]) -> None:
        super().__init__()
        self._ended = ended

    def track(self, session: Session, opened: bool) -> None:
        super().track(session, opened)
        if not opened:
            self._ended(session)


class ProxyServer(Server):
    """A ``Server`` whose every request is answered by a remote server (module docstring).

    ``upstream``: where the remote is and how to reach it. ``name``: present the proxy
    under this name instead of the remote's. ``max_connections`` (64): stateful sessions
    with a connection to the remote at once (for a command, processes): a session
    beyond it is answered with an error until another ends. ``options``: any other
    ``Server`` option (``page_size`` and the registrations have no use here).
    """

    def __init__(self, upstream: Upstream, *, name: str | None = None,
                 max_connections: int = 64, **options: Any) -> None:
        if not isinstance(max_connections, int) or max_connections < 1:
            raise ValueError(f"max_connections must be a positive integer, got "
                             f"{max_connections!r}")
        super().__init__(name or "mcpkit-proxy", lifespan=_remote_lifespan, **options)
        self.max_connections = max_connections
        self.upstream = upstream
        self._own_name = name
        self._tg: anyio.abc.TaskGroup | None = None
        self._peers = _SessionPeers(self._session_ended)
        self._methods = ProxyMethods(self, self._registry, self._peers, self._seal)
        self._compose()  # the middleware given to Server.__init__, around forwarding
        self._links: dict[Session, tuple[Link, Tap]] = {}
        self._shared_tap = Tap(None, self._peers)
        self._shared = Link(self._shared_client, self._listening(self._shared_tap))
        #: The remote's capabilities, as the proxy declares them (known once started).
        self.remote_capabilities: JSONObject = {}
        #: Which eras the remote speaks (known once started).
        self.remote_stateful = True
        self.remote_stateless = False
        #: Tool name -> its ``x-mcp-header`` declarations, from the remote's listings.
        self._tool_headers: dict[str, dict[str, str]] = {}

    # ------------------------------------------------------------------ what it is

    def capabilities(self) -> JSONObject:
        return self.remote_capabilities

    def connection(self) -> Connection:
        conn = Connection(Role.SERVER, info=self.info, capabilities=self.remote_capabilities,
                          instructions=self.instructions,
                          max_message_size=self.max_message_size, max_batch=self.max_batch)
        conn.cache_ttl_ms = self.cache_ttl_ms
        conn.cache_scope = self.cache_scope
        return conn

    # ------------------------------------------------------------------ the remote

    def _telemetry(self) -> Telemetry | None:
        """The telemetry of the proxy's ``OpenTelemetry`` middleware, if it has one."""
        if not self.middleware:
            return None
        from ..server.telemetry import OpenTelemetry

        for mw in self.middleware:
            if isinstance(mw, OpenTelemetry):
                return mw.telemetry
        return None

    def _shared_client(self) -> RelayClient:
        tap = self._shared_tap
        return upstream_client(self.upstream, tap.relay, tap.notify, caps=None,
                               mode=self.upstream.mode, telemetry=self._telemetry())

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Connect to the remote and learn what it is; on exit, close every connection
        to it. The lifespan does this (``lifespan_scope()`` enters it once for any number
        of users); entering it twice at once is a ``RuntimeError``."""
        if self._tg is not None:
            raise RuntimeError("this proxy is running already; enter lifespan_scope() to "
                               "share it")
        self._shared = Link(self._shared_client, self._listening(self._shared_tap))
        failure: MCPError | None = None
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                await self._learn(tg)
            except MCPError as exc:  # raised below, not wrapped in an exception group
                failure = exc
            try:
                if failure is None:
                    yield
            finally:
                links = [link for link, _ in self._links.values()] + [self._shared]
                self._links.clear()
                with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
                    for link in links:
                        await link.aclose()
                tg.cancel_scope.cancel()
                self._tg = None
        if failure is not None:
            raise failure

    async def _learn(self, tg: anyio.abc.TaskGroup) -> None:
        client = await self._shared.ensure(tg)
        described = client
        if client.stateless_version is not None:
            self.remote_stateless = True
            self.remote_stateful = False
            if self.upstream.mode == "auto":
                probe = upstream_client(self.upstream, self._shared_tap.relay,
                                        self._shared_tap.notify, caps=None, mode="stateful")
                try:
                    async with probe:
                        self.remote_stateful = True
                        self._describe(probe)
                        # each revision drops what it lacks (tasks, extensions)
                        self.remote_capabilities = {**client.server_capabilities,
                                                    **probe.server_capabilities}
                        return
                except HandshakeError as exc:
                    log.info("the remote speaks only the stateless revision: %s", exc)
        self._describe(described)

    def _describe(self, client: Client) -> None:
        """Present the proxy as the remote ``client`` is connected to."""
        self.remote_capabilities = dict(client.server_capabilities)
        if self._own_name is None and client.server_info.get("name"):
            self.info = dict(client.server_info)
            self.name = str(client.server_info["name"])
        if self.instructions is None:
            self.instructions = client.instructions

    @staticmethod
    def _listening(tap: Tap) -> Callable[[Client, anyio.abc.TaskGroup], Awaitable[None]]:
        """What a link runs once connected: on a stateless connection, hear the remote's
        list changes (which that revision sends only on a ``subscriptions/listen``
        stream) and hand them to ``tap``."""

        async def after(client: Client, tg: anyio.abc.TaskGroup) -> None:
            if client.stateless_version is None:
                return
            caps = client.server_capabilities
            kinds = {k: isinstance(caps.get(k), dict) and caps[k].get("listChanged") is True
                     for k in ("tools", "prompts", "resources")}
            if any(kinds.values()):
                tg.start_soon(_listen, client, tap, kinds)

        return after

    async def upstream_for(self, session: Session, event: RequestReceived,
                           ctx: Context) -> tuple[RelayClient, Tap]:
        """The connected client ``event`` goes through, and its tap: the shared one for a
        stateless request, else the session's own (opened now if needed)."""
        tg = self._tg
        if tg is None:
            raise InternalError("Internal error: the proxy is not connected to its remote "
                                "server (its lifespan has not been entered); start it with "
                                "run(), serve() or an ASGI server that runs the lifespan.")
        if event.stateless is not None:
            link, tap = self._shared, self._shared_tap
        else:
            found = self._links.get(session)
            if found is None:
                if len(self._links) >= self.max_connections:
                    raise InternalError(
                        f"Internal error: the proxy already holds {self.max_connections} "
                        "sessions' connections to its remote server; retry once another "
                        "session has ended.")
                found = self._links[session] = self._session_link(session)
            link, tap = found
        try:
            client = await link.ensure(tg)
        except MCPError as exc:
            raise InternalError(f"Internal error: cannot reach the remote server "
                                f"{self.upstream.describe()}: {exc}") from None
        if client.stateless_version is None and "logging" in client.server_capabilities:
            # The remote filters by the level of its own session; the proxy's session
            # filters again by the level its client set.
            want = ctx.log_level if event.stateless is None else "debug"
            if want is not None and want != link.level:
                link.level = want
                try:
                    await client.set_logging_level(want)
                except MCPError as exc:
                    log.info("the remote refused logging/setLevel: %s", exc)
        return client, tap

    def _session_link(self, session: Session) -> tuple[Link, Tap]:
        """A remote connection of ``session``'s own, declaring what its client declared,
        in its revision when the remote speaks it."""
        tap = Tap(session, self._peers)
        rev = session.revision
        caps = dict(session.peer_capabilities)
        mode = "stateful" if self.remote_stateful else "stateless"
        version = rev.version if rev is not None and self.remote_stateful else None

        def build() -> RelayClient:
            return upstream_client(self.upstream, tap.relay, tap.notify, caps=caps,
                                   mode=mode, protocol_version=version,
                                   telemetry=self._telemetry())

        return Link(build, self._listening(tap)), tap

    def param_headers(self, name: str) -> dict[str, str]:
        """The ``x-mcp-header`` declarations of the remote's tool ``name``, as its last
        listing through the proxy gave them."""
        return self._tool_headers.get(name, {})

    def learn_tools(self, tools: Any) -> None:
        """Keep the ``x-mcp-header`` declarations of a listing's tools (bounded)."""
        for tool in tools if isinstance(tools, list) else ():
            name = tool.get("name") if isinstance(tool, dict) else None
            schema = tool.get("inputSchema") if isinstance(tool, dict) else None
            props = schema.get("properties") if isinstance(schema, dict) else None
            if not isinstance(name, str) or not isinstance(props, dict):
                continue
            headers = {p: sub["x-mcp-header"] for p, sub in props.items()
                       if isinstance(sub, dict) and isinstance(sub.get("x-mcp-header"), str)}
            if headers:
                if len(self._tool_headers) < MAX_TOOLS or name in self._tool_headers:
                    self._tool_headers[name] = headers
            else:
                self._tool_headers.pop(name, None)

    def _session_ended(self, session: Session) -> None:
        found = self._links.pop(session, None)
        if found is not None:
            found[0].close()

    def remote_gone(self, tap: Tap) -> str:
        """What to add to an error when the remote connection of ``tap`` has died."""
        link = self._shared if tap is self._shared_tap else next(
            (lk for lk, tp in self._links.values() if tp is tap), None)
        if link is None or link.alive:
            return ""
        return (" (the connection to the remote server ended; the next request opens a "
                "new one, without this session's subscriptions)")

    async def roots_changed(self, session: Session) -> None:
        """Tell the session's remote connection that its client's roots changed."""
        found = self._links.get(session)
        if found is not None and found[0].alive and found[0].client is not None:
            try:
                await found[0].client.roots_changed()
            except MCPError as exc:
                log.info("could not pass roots/list_changed on: %s", exc)


async def _listen(client: Client, tap: Tap, kinds: dict[str, bool]) -> None:
    """Hand the remote's change notifications to ``tap`` until the listen ends."""
    try:
        async with client.listen(tools=kinds["tools"], prompts=kinds["prompts"],
                                 resources=kinds["resources"]) as changes:
            async for note in changes:
                params = note.get("params")
                if isinstance(note.get("method"), str):
                    await tap.notify(note["method"], params if isinstance(params, dict)
                                     else {})
    except MCPError as exc:
        log.info("the remote's change notifications stopped: %s", exc)


@asynccontextmanager
async def _remote_lifespan(server: Server) -> AsyncIterator[None]:
    assert isinstance(server, ProxyServer)
    async with server.running():
        yield


def proxy(target: str | Sequence[str] | Server, *, headers: dict[str, str] | None = None,
          auth: Any = None, env: dict[str, str] | None = None, cwd: str | None = None,
          timeout: float = 300.0, mode: str = "auto", name: str | None = None,
          max_connections: int = 64, **options: Any) -> ProxyServer:
    """A ``Server`` serving the remote MCP server ``target`` (a command for stdio, an
    ``http(s)://`` URL, or a ``Server`` object in this process), on any transport
    (``run``, ``serve``, ``asgi_app``).

    ``headers``/``auth`` (an ``httpx.Auth``, e.g. ``mcpkit.auth.OAuth``): for every HTTP
    request to the remote. ``env``/``cwd``: of the command. ``timeout``: seconds one
    forwarded request may take. ``mode``: the era spoken to the remote (``"auto"``: its
    newest). ``name``: present the proxy under this name rather than the remote's.
    ``max_connections``: stateful sessions connected to the remote at once (see
    ``ProxyServer``). ``options``: ``Server``'s (``max_message_size``,
    ``drain_timeout``, ...). Invalid values are ``ValueError``s. See ``ProxyServer`` for
    sessions and reconnection.
    """
    upstream = Upstream(target, headers=headers, auth=auth, env=env, cwd=cwd,
                        timeout=timeout, mode=mode)
    return ProxyServer(upstream, name=name, max_connections=max_connections, **options)
