"""Many servers from one client: ``Clients``, from a host configuration.

``Clients.from_config(path_or_dict)`` reads the ``mcpServers`` (or VS Code's
``servers``) of any host configuration ``mcpkit check --config`` reads (Claude Desktop,
Claude Code, Cursor, VS Code, Gemini CLI, Windsurf: ``check/hosts.py``), or a dict of the
same shape. Entering it connects to every server at once, each in a task of its own, and
a server that cannot start or answer is set aside (``failed[name]``, logged) instead of
failing the others. Then:

- ``clients[name]`` is that server's ``Client``;
- ``list_tools()`` lists every server's tools, named ``<server>_<tool>`` as a mounted
  server's are (``Server.mount``), and ``call_tool("<server>_<tool>", ...)`` calls the
  right one (the longest server name that prefixes the name wins, so ``a_b`` and ``a``
  can both be servers);
- ``server()`` builds one in-process ``Server`` that serves all of them, tools, prompts,
  resources and templates namespaced the same way (resources as ``<server>+<uri>``),
  forwarding each request to its server: run it (``mcpkit proxy --config FILE``), mount
  it, or test it with ``mcpkit.testing.connect``.

The names in a configuration are the host user's; one that cannot be a name prefix
(``A-Z a-z 0-9 . -``, starting with a letter; ``_`` separates the prefix) is given
with its other characters replaced by ``-`` for ``server()``, which says so in its log.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import anyio.abc

from ..check.hosts import ServerEntry, entry, read_config, servers_in
from ..client import Client, Http, Stdio
from ..client import types as t
from ..protocol.errors import MCPError, RemoteError
from ..server import Server
from ..server.context import Context
from ..server.mount import PREFIX
from ..server.prompts import Prompt
from ..server.resources import ResourceTemplate
from .forward import relayed

log = logging.getLogger("mcpkit.client")
JSON = dict[str, Any]
_NOT_PREFIX = re.compile(r"[^A-Za-z0-9.-]")
_VARIABLE = re.compile(r"\{\+?([^}]*)\}")


def entries_of(config: str | os.PathLike[str] | Mapping[str, Any]) -> list[ServerEntry]:
    """The servers of ``config``: a host configuration file, a dict shaped like one
    (``{"mcpServers": {...}}``), or the ``{name: entry}`` dict itself. ``HostConfigError``
    (a ``ValueError``) for a file that cannot be read."""
    if not isinstance(config, Mapping):
        return read_config(os.fspath(config))
    doc = dict(config)
    found = servers_in(doc, "<dict>")
    return found if found is not None else [entry(str(n), raw, "<dict>")
                                            for n, raw in doc.items()]


def target_of(found: ServerEntry) -> Stdio | Http:
    """How to reach a configuration's server; ``ValueError`` saying why it cannot be."""
    if found.problem:
        raise ValueError(found.problem)
    if found.command is not None:
        return Stdio(found.command, env=found.env or None, cwd=found.cwd)
    assert found.url is not None
    if found.transport == "sse":
        raise ValueError("the entry uses the 2024-11-05 HTTP+SSE transport, which the "
                         "mcpkit client does not speak; point it at the server's "
                         "Streamable HTTP endpoint")
    return Http(found.url, headers=found.headers or None)


class Clients:
    """One ``Client`` per server of a configuration (module docstring).

    ``servers``: name -> what ``Client`` takes (a command, a URL, ``Stdio``/``Http``, a
    ``Server``) or a ``ServerEntry``. ``connect_timeout``: seconds each server gets to
    start and answer; ``options``: given to every ``Client`` (``timeout=``, handlers...).
    """

    def __init__(self, servers: Mapping[str, Any], *, connect_timeout: float = 30.0,
                 **options: Any) -> None:
        if not (isinstance(connect_timeout, int | float) and math.isfinite(connect_timeout)
                and connect_timeout > 0):
            raise ValueError(f"connect_timeout must be a positive number of seconds, got "
                             f"{connect_timeout!r}")
        self._servers = dict(servers)
        self._options = options
        self._connect_timeout = float(connect_timeout)
        #: The connected servers' clients, by name (filled on entering).
        self.clients: dict[str, Client] = {}
        #: Why each server that could not be connected was set aside, by name.
        self.failed: dict[str, Exception] = {}
        self._stack: AsyncExitStack | None = None

    @classmethod
    def from_config(cls, config: str | os.PathLike[str] | Mapping[str, Any],
                    **options: Any) -> Clients:
        """The servers of a host configuration (``entries_of``); ``options`` as for
        ``Clients``."""
        return cls({e.name: e for e in entries_of(config)}, **options)

    def __getitem__(self, name: str) -> Client:
        try:
            return self.clients[name]
        except KeyError:
            why = self.failed.get(name)
            raise KeyError(f"{name!r} is not connected: {why}" if why else (
                f"no server {name!r}; connected: {', '.join(self.clients) or 'none'}")
                ) from None

    # ------------------------------------------------------------------ connecting

    async def __aenter__(self) -> Clients:
        if self._stack is not None:
            raise RuntimeError("these Clients are already connected")
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)  # on leaving: close every client
            async with anyio.create_task_group() as starting:
                for name, spec in self._servers.items():
                    starting.start_soon(self._start, tg, name, spec)
        except BaseException:
            await stack.__aexit__(None, None, None)
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        self.clients.clear()
        if stack is not None:
            await stack.__aexit__(None, None, None)

    async def _start(self, tg: anyio.abc.TaskGroup, name: str, spec: Any) -> None:
        """Start server ``name`` in a task of its own in ``tg``, waiting until it is
        connected or has failed (then recorded in ``failed``)."""
        try:
            target = target_of(spec) if isinstance(spec, ServerEntry) else spec
            with anyio.fail_after(self._connect_timeout):
                self.clients[name] = await tg.start(self._hold, target)
        except Exception as exc:  # one server's failure is its own
            if isinstance(exc, TimeoutError):
                exc = TimeoutError(f"no answer within {self._connect_timeout:g}s")
            self.failed[name] = exc
            log.warning("server %r of the configuration is set aside: %s", name, exc)

    async def _hold(self, target: Any, *, task_status: Any) -> None:
        """Keep one client connected until the ``Clients`` are left."""
        async with Client(target, **self._options) as client:
            task_status.started(client)
            await anyio.sleep_forever()

    # ------------------------------------------------------------------ using them

    def route(self, name: str) -> tuple[str, str]:
        """(server, its own name) for a namespaced ``<server>_<name>``; ``ValueError``
        naming the servers when none prefixes it."""
        for server in sorted(self.clients, key=len, reverse=True):
            if name.startswith(server + "_") and len(name) > len(server) + 1:
                return server, name[len(server) + 1:]
        raise ValueError(f"no connected server for {name!r}: names are <server>_<name>, "
                         f"with the servers {', '.join(sorted(self.clients)) or 'none'}")

    async def list_tools(self) -> list[t.ToolInfo]:
        """Every connected server's tools, named ``<server>_<tool>``; a server whose
        listing fails is left out of this answer (logged)."""
        found: dict[str, list[t.ToolInfo]] = {}

        async def one(server: str, client: Client) -> None:
            try:
                tools = await client.list_tools()
            except (MCPError, OSError) as exc:
                log.warning("server %r: tools/list failed: %s", server, exc)
                return
            found[server] = [_renamed(tool, f"{server}_{tool.name}") for tool in tools]

        async with anyio.create_task_group() as tg:
            for server, client in self.clients.items():
                tg.start_soon(one, server, client)
        return [tool for server in self.clients for tool in found.get(server, [])]

    async def call_tool(self, name: str, arguments: JSON | None = None,
                        **options: Any) -> Any:
        """Call ``<server>_<tool>`` on its server (``options`` as for
        ``Client.call_tool``)."""
        server, tool = self.route(name)
        return await self.clients[server].call_tool(tool, arguments, **options)

    def as_server(self, name: str = "mcpkit-config", **options: Any) -> Server:
        """A ``Server`` that connects these clients when it starts (its lifespan) and
        serves them as ``server()`` does until it stops: what ``mcpkit proxy --config``
        runs. ``options``: any other ``Server`` option."""
        @asynccontextmanager
        async def lifespan(served: Server) -> AsyncIterator[Clients]:
            async with self:
                for prefix, client in self.clients.items():
                    await _serve(served, _prefix(prefix), client)
                yield self

        return Server(name, lifespan=lifespan, **options)

    async def server(self, name: str = "mcpkit-config") -> Server:
        """One in-process ``Server`` serving every connected server's tools, prompts,
        resources and templates, namespaced, each request forwarded (module docstring).
        What it serves is what the servers listed now."""
        served = Server(name)
        for prefix, client in self.clients.items():
            await _serve(served, _prefix(prefix), client)
        return served


def _renamed(tool: t.ToolInfo, name: str) -> t.ToolInfo:
    wire = tool.to_wire()
    wire["name"] = name
    return t.ToolInfo.from_wire(wire)


def _prefix(name: str) -> str:
    """``name`` as a mount prefix would be (``mount.PREFIX``), cleaned if it is not one."""
    if PREFIX.match(name):
        return name
    clean = _NOT_PREFIX.sub("-", name)
    if not clean[:1].isalpha():
        clean = "s" + clean
    clean = clean[:64]
    log.warning("server %r is served as %r (a prefix is A-Z a-z 0-9 . -, starting with a "
                "letter)", name, clean)
    return clean


async def _serve(served: Server, prefix: str, client: Client) -> None:
    """Add forwarding copies of ``client``'s tools, prompts, resources and templates to
    ``served`` under ``prefix``."""
    caps = client.server_capabilities
    for tool in await client.list_tools() if "tools" in caps else []:
        wire = tool.to_wire()
        served.add_tool(_forward_tool(client, tool.name), name=f"{prefix}_{tool.name}",
                        title=tool.title, description=tool.description or "",
                        input_schema=wire["inputSchema"],
                        output_schema=wire.get("outputSchema"),
                        structured_output=None if "outputSchema" in wire else False,
                        annotations=wire.get("annotations"), icons=wire.get("icons"))
    if "prompts" in caps:
        for prompt in await client.list_prompts():
            served.add_prompt(_ForwardedPrompt(client, prompt, f"{prefix}_{prompt.name}"))
    if "resources" in caps:
        scheme = prefix.lower() + "+"
        for res in await client.list_resources():
            served.add_resource(_forward_read(client, res.uri, scheme), scheme + res.uri,
                                name=res.name, title=res.title,
                                description=res.description or "", mime_type=res.mime_type)
        for tpl in await client.list_resource_templates():
            try:
                template = _ForwardedTemplate(client, tpl, scheme)
            except ValueError as exc:  # a template mcpkit cannot match URIs against
                log.warning("server %r: not serving template %r: %s", prefix,
                            tpl.uri_template, exc)
                continue
            served._registry.add_readable(template)


def _forward_tool(client: Client, name: str) -> Any:
    async def forward(**arguments: Any) -> JSON:
        try:
            result = await client.call_tool(name, arguments, raise_on_error=False)
        except RemoteError as exc:
            raise relayed(exc) from None
        wire: JSON = result.to_wire()
        wire.setdefault("isError", False)
        return wire
    return forward


async def _read(client: Client, uri: str, scheme: str) -> list[JSON]:
    """``uri``'s contents from ``client``, their URIs served under ``scheme``."""
    try:
        result = await client.read_resource(uri)
    except RemoteError as exc:
        raise relayed(exc) from None
    contents = [c.to_wire() for c in result.contents]
    for c in contents:
        c["uri"] = scheme + c["uri"]
    return contents


def _forward_read(client: Client, uri: str, scheme: str) -> Any:
    async def read() -> list[JSON]:
        return await _read(client, uri, scheme)
    return read


class _ForwardedTemplate(ResourceTemplate):
    """A server's resource template, its reads forwarded (``ValueError`` for a template
    whose variables are not names)."""

    def __init__(self, client: Client, tpl: t.ResourceTemplateInfo, scheme: str) -> None:
        odd = [v for v in _VARIABLE.findall(tpl.uri_template) if not v.isidentifier()]
        if odd:
            raise ValueError(f"its expressions {odd[:3]} are not plain variables")

        def unused(**values: str) -> str:  # reads go to the server (read below)
            raise AssertionError("a forwarded template is read from its server")
        super().__init__(unused, scheme + tpl.uri_template, name=tpl.name, title=tpl.title,
                         description=tpl.description or "", mime_type=tpl.mime_type)
        self._client, self._scheme = client, scheme

    async def read(self, uri: str, values: dict[str, str], ctx: Context) -> list[JSON]:
        return await _read(self._client, uri[len(self._scheme):], self._scheme)


class _ForwardedPrompt(Prompt):
    """A server's prompt, got from it."""

    def __init__(self, client: Client, prompt: t.PromptInfo, name: str) -> None:
        async def render(**arguments: str) -> JSON:
            return {}
        super().__init__(render, name=name, title=prompt.title,
                         description=prompt.description or "")
        self.arguments = [a.to_wire() for a in prompt.arguments or []]
        self.required = {a.name for a in prompt.arguments or [] if a.required}
        self.names = {a.name for a in prompt.arguments or []}
        self._client, self._upstream = client, prompt.name

    async def render(self, arguments: dict[str, str], ctx: Context) -> JSON:
        try:
            result = await self._client.get_prompt(self._upstream, arguments)
        except RemoteError as exc:
            raise relayed(exc) from None
        return result.to_wire()
