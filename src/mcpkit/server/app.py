"""``Server``: the public face of the framework, assembled from parts with one job each.

The declarative API is primary (``Server(tools=[fn, ...])``, ``server.add_tool(fn)``);
``@server.tool`` and friends are thin shims over it. What a server offers lives in
``registry.py``; the answers to MCP requests in ``methods.py``; who is told about changes
in ``peers.py``; 2026-07-28 input requests in ``mrtr.py``; the lifespan and stream serving
in ``serving.py``; ``run("http")``'s uvicorn in ``running.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar, overload

import anyio

from ..protocol.connection import Connection
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE
from ..protocol.lifecycle import Role
from ..session import DEFAULT_DRAIN_TIMEOUT, ByteStream
from .context import Context
from .methods import Methods
from .mrtr import StateSeal
from .peers import Peers
from .prompts import Prompt
from .registry import Completer, Registry, decorator
from .resources import Resource, ResourceTemplate
from .serving import LifespanFactory, SharedLifespan, log_to_stderr, serve_stream
from .tools import Tool

JSON = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])


class Server:
    """An MCP server: tools, resources, prompts and completions, served over any transport.

    ``name``/``version``/``title``/``description``/``website_url``/``icons`` describe the
    server (``serverInfo``); ``instructions`` tell the model how to use it. ``lifespan`` is
    an async context manager factory entered once per process around serving.
    ``page_size`` bounds list results (cursors are opaque to clients). ``state_key`` seals
    2026-07-28 ``requestState`` (see ``state_key``); ``cache_ttl_ms``/``cache_scope`` are
    the caching hints stamped on 2026-07-28 results.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        website_url: str | None = None,
        icons: list[JSON] | None = None,
        instructions: str | None = None,
        tools: Iterable[Callable[..., Any] | Tool] = (),
        resources: Iterable[Resource | ResourceTemplate] = (),
        prompts: Iterable[Callable[..., Any] | Prompt] = (),
        lifespan: LifespanFactory | None = None,
        page_size: int = 1000,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        state_key: bytes | None = None,
        cache_ttl_ms: int = 0,
        cache_scope: str = "private",
        drain_timeout: float = DEFAULT_DRAIN_TIMEOUT,
    ) -> None:
        info: JSON = {"name": name, "version": version}
        if title:
            info["title"] = title
        if description:
            info["description"] = description
        if website_url:
            info["websiteUrl"] = website_url
        if icons:
            info["icons"] = icons
        self.name = name
        self.info = info
        self.instructions = instructions
        self.max_message_size = max_message_size
        #: Seconds in-flight handlers may finish after a stdio client closed its side (or
        #: SIGTERM arrived) before they are cancelled; answers finished by then are written.
        self.drain_timeout = drain_timeout
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        #: Called with a ``Context`` when a client says its roots changed.
        self.on_roots_changed: Callable[[Context], Any] | None = None
        self._peers = Peers()
        self._registry = Registry(page_size=page_size, announce=self._peers.list_changed)
        self._seal = StateSeal(state_key)
        self._lifespan = SharedLifespan(lifespan, self)
        self._methods = Methods(self, self._registry, self._peers, self._seal)
        for t in tools:
            self.add_tool(t)
        for r in resources:
            self._registry.add_readable(r)
        for p in prompts:
            self.add_prompt(p)

    @property
    def page_size(self) -> int:
        """Items per page of a list result."""
        return self._registry.page_size

    @page_size.setter
    def page_size(self, size: int) -> None:
        self._registry.page_size = size

    @property
    def lifespan_state(self) -> Any:
        """What the lifespan yielded, while it is entered (None without one)."""
        return self._lifespan.state

    # ------------------------------------------------------------------ registration

    def add_tool(self, fn: Callable[..., Any] | Tool, **options: Any) -> Tool:
        """Register a tool (a function, or a ready ``Tool``); returns the ``Tool``.

        Options: ``name``, ``title``, ``description``, ``input_schema`` (default: from the
        type hints, ``additionalProperties: false``), ``output_schema`` (default: from the
        return annotation), ``annotations`` (readOnlyHint, destructiveHint, …), ``icons``,
        ``meta``, ``structured_output`` (False: never structured). A second tool of the
        same name is a ``ValueError``.
        """
        return self._registry.add_tool(fn, **options)

    def remove_tool(self, name: str) -> None:
        """Remove the tool ``name`` (``KeyError`` if there is none)."""
        self._registry.remove_tool(name)

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(self, fn: None = None, /, **options: Any) -> Callable[[F], F]: ...

    def tool(self, fn: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
        """Decorator form of ``add_tool``: ``@server.tool`` or ``@server.tool(name=...)``."""
        register = decorator(lambda f: self.add_tool(f, **options))
        return register if fn is None else register(fn)

    def add_resource(
        self, fn: Callable[..., Any] | str | bytes, uri: str, **options: Any
    ) -> Resource | ResourceTemplate:
        """Register a resource at ``uri`` or, when ``uri`` has ``{variables}``, a template.

        ``fn`` is called to read it (template variables as keyword arguments) and returns
        ``str`` (text), ``bytes`` (blob) or a JSON-able value; a plain ``str``/``bytes``
        value is served as is. Options: ``name``, ``title``, ``description``, ``mime_type``,
        ``annotations``, ``icons``, ``cache_ttl_ms``/``cache_scope`` (2026-07-28 caching
        hints of its reads) (+ ``size`` for fixed resources).
        """
        return self._registry.add_resource(fn, uri, **options)

    def remove_resource(self, uri: str) -> None:
        """Remove the template written ``uri``, else the resource at ``uri`` (``KeyError``
        if there is neither)."""
        self._registry.remove_resource(uri)

    def resource(self, uri: str, **options: Any) -> Callable[[F], F]:
        """Decorator form of ``add_resource``."""
        return decorator(lambda f: self.add_resource(f, uri, **options))

    def add_prompt(self, fn: Callable[..., Any] | Prompt, **options: Any) -> Prompt:
        """Register a prompt; its parameters are its (string) arguments. Options: ``name``,
        ``title``, ``description``, ``icons``."""
        return self._registry.add_prompt(fn, **options)

    def remove_prompt(self, name: str) -> None:
        """Remove the prompt ``name`` (``KeyError`` if there is none)."""
        self._registry.remove_prompt(name)

    @overload
    def prompt(self, fn: F, /) -> F: ...

    @overload
    def prompt(self, fn: None = None, /, **options: Any) -> Callable[[F], F]: ...

    def prompt(self, fn: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
        """Decorator form of ``add_prompt``."""
        register = decorator(lambda f: self.add_prompt(f, **options))
        return register if fn is None else register(fn)

    def add_completion(
        self, *, argument: str, fn: Completer, prompt: str | None = None,
        resource_template: str | None = None,
    ) -> None:
        """Complete ``argument`` of a prompt or resource template (give exactly one).

        ``fn(value, context_arguments)`` returns candidate strings, best first (sync or
        async). At most 100 are sent; ``total``/``hasMore`` tell the client the rest.
        """
        self._registry.add_completion(argument, fn, prompt, resource_template)

    def completion(
        self, *, argument: str, prompt: str | None = None, resource_template: str | None = None
    ) -> Callable[[F], F]:
        """Decorator form of ``add_completion``."""
        return decorator(lambda f: self.add_completion(
            argument=argument, fn=f, prompt=prompt, resource_template=resource_template))

    # ------------------------------------------------------------------ notifications

    def notify_list_changed(self, kind: str) -> None:
        """Announce that the ``"tools"``, ``"prompts"`` or ``"resources"`` list changed
        (registrations announce themselves; use this when the list depends on data)."""
        self._registry.changed(kind)

    def notify_resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri`` (and every listen stream watching
        it) that it changed."""
        self._peers.resource_updated(uri)

    # ------------------------------------------------------------------ protocol

    def capabilities(self) -> JSON:
        """The server capabilities declared in ``initialize`` (shared, do not mutate)."""
        return self._registry.capabilities()

    def connection(self) -> Connection:
        """A fresh protocol connection for one client session."""
        conn = Connection(
            Role.SERVER,
            info=self.info,
            capabilities=self.capabilities(),
            instructions=self.instructions,
            max_message_size=self.max_message_size,
        )
        conn.cache_ttl_ms = self.cache_ttl_ms
        conn.cache_scope = self.cache_scope
        return conn

    @property
    def state_key(self) -> bytes:
        """The key that seals 2026-07-28 ``requestState`` (HMAC): the one given, the
        session store's shared secret, or a random one made on first use."""
        return self._seal.key

    @state_key.setter
    def state_key(self, key: bytes) -> None:
        self._seal.key = key

    # ------------------------------------------------------------------ serving

    def lifespan_scope(self) -> AbstractAsyncContextManager[Any]:
        """Enter the lifespan once however many sessions run; exit after the last. (An app
        that mounts ``asgi_app`` without forwarding the ASGI lifespan enters this.)"""
        return self._lifespan.scope()

    async def serve(self, stream: ByteStream, *, stop_on_signals: bool = False) -> None:
        """Serve one client over ``stream`` until it closes (lifespan entered around it).

        ``stop_on_signals``: SIGTERM or SIGINT stops reading as if the input had ended
        (the drain window, then in-flight handlers are cancelled); a second one cancels at
        once. Only in the main thread, where signals can be received. The stream is not
        closed.
        """
        async with self.lifespan_scope():
            await serve_stream(stream, self.connection(), self._methods, self._peers,
                               drain_timeout=self.drain_timeout,
                               stop_on_signals=stop_on_signals)

    async def serve_stdio(self) -> None:
        """Serve this process's stdin/stdout (see ``transports.stdio``) until end of input,
        SIGTERM or SIGINT (each: drain, then cancel; see ``drain_timeout``)."""
        from ..transports.stdio import StdioStream

        stream = StdioStream.for_server()
        try:
            await self.serve(stream, stop_on_signals=True)
        finally:
            await stream.aclose()

    def asgi_app(self, path: str = "/mcp", **config: Any) -> Any:
        """A plain ASGI app serving this server over Streamable HTTP at ``path``.

        ``config`` sets ``HttpConfig`` fields: ``response_mode`` ("auto", "json", "sse"),
        ``allowed_hosts``, ``allowed_origins``, ``trusted_proxies``, ``max_body``,
        ``max_sessions``, ``session_idle_timeout``, ``max_in_flight``, ``retry_ms``,
        ``enable_get``, ``allow_delete``, ``event_store`` (e.g. ``SQLiteEventStore``),
        ``body_timeout`` (seconds to receive a body, 30; then 408), ``sweep_interval``
        (seconds between sweeps for idle sessions and late bodies, 1).
        """
        from ..transports.http_server import HttpConfig, StreamableHTTPApp

        self._seal.share(config.get("session_store"))
        return StreamableHTTPApp(
            self.connection,
            on_request=self._methods.on_request,
            on_notification=self._methods.on_notification,
            config=HttpConfig(path=path, **config),
            on_session=self._peers.track,
            lifespan=self.lifespan_scope,
            param_headers=self._registry.param_headers,
        )

    def run(self, transport: str = "stdio", **options: Any) -> None:
        """Run the server until it is stopped.

        ``"stdio"`` (default) serves stdin/stdout. ``"http"`` serves Streamable HTTP with
        uvicorn: ``host`` (default 127.0.0.1), ``port`` (8000), ``path`` ("/mcp"),
        ``header_timeout`` (seconds to send a request's headers, 10), and any ``asgi_app``
        option.
        """
        log_to_stderr(options.pop("log_level", "WARNING"))
        if "drain_timeout" in options:
            self.drain_timeout = float(options.pop("drain_timeout"))
        if transport == "http":
            from .running import run_http

            host = options.pop("host", "127.0.0.1")
            port = int(options.pop("port", 8000))
            http_impl = options.pop("http", "auto")  # uvicorn's parser: auto|h11|httptools
            loop_impl = options.pop("loop", "auto")  # uvicorn's loop: auto|asyncio|uvloop
            path = options.pop("path", "/mcp")
            header_timeout = float(options.pop("header_timeout", 10.0))
            run_http(self.asgi_app(path, **options), host=host, port=port, path=path,
                     http=http_impl, loop=loop_impl, header_timeout=header_timeout)
            return
        if transport != "stdio":
            raise ValueError(f"unknown transport {transport!r}: use 'stdio' or 'http'")
        try:
            anyio.run(self.serve_stdio)
        except KeyboardInterrupt:
            pass
