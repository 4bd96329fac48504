"""``Server``: the public face of the framework, assembled from parts with one job each.

The declarative API is primary (``Server(tools=[fn, ...])``, ``server.add_tool(fn)``);
``@server.tool`` and friends are thin shims over it. What a server offers lives in
``registry.py``; the answers to MCP requests in ``methods.py``; who is told about changes
in ``peers.py``; 2026-07-28 input requests in ``mrtr.py``; the lifespan and stream serving
in ``serving.py``; ``run("http")``'s uvicorn in ``running.py``; another server served
inside this one (``mount``) in ``mount.py``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Unpack, overload

import anyio

from ..protocol.connection import Connection
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE
from ..protocol.jsonrpc import DEFAULT_MAX_BATCH
from ..protocol.lifecycle import Role
from ..session import DEFAULT_DRAIN_TIMEOUT, DEFAULT_OUTPUT_BUFFER, ByteStream
from . import declared
from .audit import AuditHook
from .context import Context
from .limits import BucketStore, Limiter, MemoryBuckets, RateLimit, as_limit
from .methods import Methods
from .middleware import Middleware
from .mrtr import StateSeal
from .peers import Peers
from .prompts import Prompt
from .registry import Completer, Registry, decorator
from .resources import Resource, ResourceTemplate
from .serving import LifespanFactory, SharedLifespan, log_to_stderr, serve_stream
from .tools import Tool
from .visibility import make_rule, revise
from .watch import CallWatch

if TYPE_CHECKING:
    from ..auth.server.config import Auth
    from ..auth.server.middleware import BearerAuth
    from ..storage.tasks import TaskStore
    from ..transports.http_options import HttpKeywords
    from ..transports.http_server import StreamableHTTPApp
    from .routes import RouteSpec
    from .task_runs import TaskManager

JSON = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])


class Server:
    """An MCP server: tools, resources, prompts and completions, served over any transport.

    ``name``/``version``/``title``/``description``/``website_url``/``icons`` describe the
    server (``serverInfo``); ``instructions`` tell the model how to use it. ``lifespan`` is
    an async context manager factory entered once per process around serving.
    ``page_size`` bounds list results (cursors are opaque to clients). ``max_message_size``
    (4 MiB) bounds a stdio line; ``max_batch`` (100) a JSON-RPC batch, on every transport
    (docs/limits.md, "Input limits"). ``state_key`` seals
    2026-07-28 ``requestState`` (see ``state_key``); ``cache_ttl_ms``/``cache_scope`` are
    the caching hints stamped on 2026-07-28 results.

    ``rate_limit`` (none): how often one caller may call the tools without a limit of
    their own, together (a ``RateLimit`` or a string such as ``"60/minute"``); a call over
    it is answered with an ``isError`` result saying when to retry. Callers are told
    apart by their access token's identity, else their HTTP address (see
    ``mcpkit.server.limits``). ``rate_limit_store``: where the buckets live (a
    ``BucketStore``; default: in memory, per server). ``audit``: called with an
    ``AuditRecord`` after every ``tools/call`` (``AuditLog()`` writes JSON lines to a
    logger); ``audit_arguments``: put the call's arguments in the records (off: they
    may hold personal data or secrets). Invalid values are ``ValueError``s.

    ``task_store``: where task records live (``MemoryTaskStore`` by default;
    ``SQLiteTaskStore`` keeps finished results across restarts); ``max_tasks``: the tasks
    one owner (principal, else session) may have running at once. See docs/tasks.md.

    ``middleware``: ``Middleware`` around every request and notification the handlers
    answer, the first outermost (see ``add_middleware`` and docs/middleware.md).
    ``telemetry``: trace and measure every request with OpenTelemetry (an
    ``OpenTelemetry()`` middleware put first; needs the ``mcpkit[otel]`` extra).
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        website_url: str | None = None,
        icons: list[declared.ObjectLike] | None = None,
        instructions: str | None = None,
        tools: Iterable[Callable[..., Any] | Tool] = (),
        resources: Iterable[Resource | ResourceTemplate] = (),
        prompts: Iterable[Callable[..., Any] | Prompt] = (),
        lifespan: LifespanFactory | None = None,
        page_size: int = 1000,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_batch: int = DEFAULT_MAX_BATCH,
        state_key: bytes | None = None,
        cache_ttl_ms: int = 0,
        cache_scope: str = "private",
        drain_timeout: float = DEFAULT_DRAIN_TIMEOUT,
        output_buffer: int = DEFAULT_OUTPUT_BUFFER,
        rate_limit: RateLimit | str | None = None,
        rate_limit_store: BucketStore | None = None,
        audit: AuditHook | None = None,
        audit_arguments: bool = False,
        task_store: TaskStore | None = None,
        max_tasks: int = 256,
        middleware: Iterable[Middleware] = (),
        telemetry: bool = False,
    ) -> None:
        info: JSON = {"name": name, "version": version}
        if title:
            info["title"] = title
        if description:
            info["description"] = description
        if website_url:
            info["websiteUrl"] = website_url
        if icons:
            info["icons"] = declared.icons(icons)
        self.name = name
        self.info = info
        self.instructions = instructions
        self.max_message_size = max_message_size
        self.max_batch = max_batch  # messages in a JSON-RPC batch (2025-03-26), -32600 past
        #: Seconds in-flight handlers may finish after a stdio client closed its side (or
        #: SIGTERM arrived) before they are cancelled; answers finished by then are written.
        self.drain_timeout = drain_timeout
        #: Bytes of answers and notifications a stdio client may leave unread before its
        #: requests are no longer read and handlers that report wait (docs/server.md).
        self.output_buffer = output_buffer
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        #: Called with a ``Context`` when a client says its roots changed.
        self.on_roots_changed: Callable[[Context], Any] | None = None
        self._peers = Peers()
        self._registry = Registry(page_size=page_size, announce=self._peers.list_changed)
        self._seal = StateSeal(state_key)
        self._lifespan = SharedLifespan(lifespan, self)
        self._task_store = task_store
        self._max_tasks = max_tasks
        self._tasks: TaskManager | None = None  # made on first use: see tasks
        self._own_task_store = task_store is None  # an asgi_app(store=...) shares its own
        self._methods = Methods(self, self._registry, self._peers, self._seal)
        if audit is not None and not callable(audit):
            raise ValueError(f"audit must be a callable taking an AuditRecord, got {audit!r}")
        if not isinstance(audit_arguments, bool):
            raise ValueError(f"audit_arguments must be True or False, got {audit_arguments!r}")
        if rate_limit_store is not None and not callable(getattr(rate_limit_store, "take",
                                                                 None)):
            raise ValueError("rate_limit_store must be a BucketStore (with a take(key, "
                             f"cost, rate, burst) method), got {rate_limit_store!r}")
        default = as_limit(rate_limit, "Server(rate_limit=...)")
        self._own_buckets = rate_limit_store is None  # an asgi_app(store=...) shares its own
        store = MemoryBuckets() if rate_limit_store is None else rate_limit_store
        #: The servers mounted in this one, by prefix (``mount``).
        self.mounts: dict[str, Server] = {}
        #: The HTTP routes beside the MCP endpoint (``route``; ``server/routes.py``).
        self.routes: list[RouteSpec] = []
        self._watch = CallWatch(self._registry.tools, Limiter(default, store), audit,
                                audit_arguments)
        self._middleware: list[Middleware] = []
        self._chained = False  # whether the handler table holds a middleware chain
        #: The handler tables of the apps that keep a seal, tasks or buckets of their own
        #: (``_handlers``), each with its call watch, kept in step by ``_compose``; held
        #: weakly: an app dropped takes its table along.
        self._apps: weakref.WeakKeyDictionary[Methods, CallWatch] = (
            weakref.WeakKeyDictionary())
        if telemetry:
            from .telemetry import OpenTelemetry

            self.add_middleware(OpenTelemetry())
        for mw in middleware:
            self.add_middleware(mw)
        for t in tools:
            self.add_tool(t)
        self._compose()
        for r in resources:
            self._registry.add_readable(r)
        for p in prompts:
            self.add_prompt(p)

    @property
    def tasks(self) -> TaskManager:
        """The tasks of this server (``task_runs.TaskManager``): tools registered with
        ``task="optional"|"required"`` run as tasks, kept in ``task_store``. Made on first
        use: a server no task request reaches never loads the task machinery."""
        if self._tasks is None:
            from .task_runs import TaskManager

            self._tasks = TaskManager(self._task_store, max_live=self._max_tasks)
        return self._tasks

    @property
    def page_size(self) -> int:
        """Items per page of a list result."""
        return self._registry.page_size

    @page_size.setter
    def page_size(self, size: int) -> None:
        self._registry.page_size = size

    @property
    def lifespan_state(self) -> Any:
        """What the lifespan yielded when last entered (None before that, or without
        one); handlers read it as ``ctx.lifespan``."""
        return self._lifespan.state

    # ------------------------------------------------------------------ registration

    def add_tool(self, fn: Callable[..., Any] | Tool, **options: Any) -> Tool:
        """Register a tool (a function, or a ready ``Tool``); returns the ``Tool``.

        Options: ``name``, ``title``, ``description``, ``input_schema`` (default: from the
        type hints, ``additionalProperties: false``), ``output_schema`` (default: from the
        return annotation), ``annotations`` (readOnlyHint, destructiveHint, …), ``icons``,
        ``meta``, ``structured_output`` (False: never structured), ``scopes`` (OAuth
        scopes a call needs when served over HTTP with ``auth=``: a token without all of
        them is answered 403 ``insufficient_scope``; no effect on stdio or without
        ``auth=``), ``rate_limit`` (the tool's own limit per caller, a ``RateLimit`` or a
        string such as ``"10/minute"``, drawn from a budget of its own instead of the
        server's ``rate_limit``; None exempts the tool from the server's), ``tags`` (what
        ``enable``/``disable`` select it by). A second tool
        of the same name is a ``ValueError``, as is a scope name that is not an RFC 6750
        scope-token, or an invalid rate limit.
        """
        tool = self._registry.add_tool(fn, **options)
        if isinstance(tool.rate_limit, RateLimit):
            self._compose()  # the rate limits may be needed from now on
        return tool

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

    def result_reader(self, tool: str) -> Callable[[Any, str], Any] | None:
        """How an in-process ``Client`` reads ``tool``'s result back (``Tool.result_reader``)."""
        found = self._registry.tools.get(tool)
        return None if found is None else found.result_reader()

    def add_resource(
        self, fn: Callable[..., Any] | str | bytes, uri: str, **options: Any
    ) -> Resource | ResourceTemplate:
        """Register a resource at ``uri`` or, when ``uri`` has ``{variables}``, a template.

        ``fn`` is called to read it (template variables as keyword arguments) and returns
        ``str`` (text), ``bytes`` (blob) or a JSON-able value; a plain ``str``/``bytes``
        value is served as is. Options: ``name``, ``title``, ``description``, ``mime_type``,
        ``annotations``, ``icons``, ``cache_ttl_ms``/``cache_scope`` (2026-07-28 caching
        hints of its reads), ``scopes`` (OAuth scopes a read needs, as for
        ``add_tool``; completions of a template's arguments need them too), ``tags`` (+
        ``size`` for fixed resources).
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
        ``title``, ``description``, ``icons``, ``scopes`` (OAuth scopes getting it, or
        completing its arguments, needs; as for ``add_tool``), ``tags``."""
        return self._registry.add_prompt(fn, **options)

    def remove_prompt(self, name: str) -> None:
        """Remove the prompt ``name`` (``KeyError`` if there is none)."""
        self._registry.remove_prompt(name)

    def enable(self, *, names: Iterable[str] | None = None, tags: Iterable[str] | None = None,
               kinds: Iterable[str] | None = None, only: bool = False) -> None:
        """Show the components matching all the criteria given (``only``: and hide the
        rest of those kinds), announcing ``list_changed`` (``server/visibility.py``)."""
        revise(self._registry, make_rule(True, names, tags, kinds, only))

    def disable(self, *, names: Iterable[str] | None = None, tags: Iterable[str] | None = None,
                kinds: Iterable[str] | None = None) -> None:
        """Hide the components matching all the criteria given (see ``enable``)."""
        revise(self._registry, make_rule(False, names, tags, kinds, False))

    def reset_visibility(self) -> None:
        """Drop every rule ``enable`` and ``disable`` made."""
        revise(self._registry, None)

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
        async); a parameter annotated ``Context`` gets the request's context
        (``ctx.auth``, ...). At most 100 are sent; ``total``/``hasMore`` tell the client
        the rest.
        """
        self._registry.add_completion(argument, fn, prompt, resource_template)

    def completion(
        self, *, argument: str, prompt: str | None = None, resource_template: str | None = None
    ) -> Callable[[F], F]:
        """Decorator form of ``add_completion``."""
        return decorator(lambda f: self.add_completion(
            argument=argument, fn=f, prompt=prompt, resource_template=resource_template))

    def route(self, path: str, methods: Iterable[str] | None = None, *,
              name: str | None = None, auth: bool = False) -> Callable[[F], F]:
        """Serve ``path`` beside the MCP endpoint with the decorated function, which takes
        a Starlette ``Request`` and returns a Starlette ``Response`` (sync ones run in a
        worker thread); ``methods`` default to GET; ``{name}`` parameters in the path
        land in ``request.path_params``. Public unless ``auth=True``, which, on a
        protected app (``asgi_app(auth=...)``), asks for the endpoint's bearer token.
        Apps built afterwards serve it; a path the endpoint serves, or declared twice,
        is a ``ValueError`` when the app is built (``mcpkit.server.routes``)."""
        from .routes import RouteSpec, route_methods

        route_methods(path, methods)  # a wrong path or method: said at the decorator

        def register(fn: F) -> F:
            self.routes.append(RouteSpec(path, fn, methods, name=name, auth=auth))
            return fn

        return register

    def custom_route(self, path: str, methods: Iterable[str] | None = None, *,
                     name: str | None = None, include_in_schema: bool = True,
                     auth: bool = False) -> Callable[[F], F]:
        """FastMCP's name for ``route`` (``include_in_schema``: accepted, unused)."""
        return self.route(path, methods, name=name, auth=auth)

    @classmethod
    def from_openapi(cls, document: Any, client: Any, **options: Any) -> Server:
        """A server calling an HTTP API's operations with ``client`` (``server/openapi.py``)."""
        from .openapi import build
        return build(cls, document, client, **options)

    @classmethod
    def from_fastapi(cls, app: Any, **options: Any) -> Server:
        """``from_openapi`` for a FastAPI or Starlette app in this process."""
        from .openapi import build_asgi
        return build_asgi(cls, app, **options)

    def mount(self, prefix: str, server: Server) -> None:
        """Serve ``server``'s tools, prompts, resources, templates and completions as this
        server's own: tool and prompt ``x`` as ``<prefix>_x``, resource ``file:///a`` as
        ``<prefix lowercased>+file:///a`` (templates likewise). ``prefix``: 1-64 of
        ``A-Z a-z 0-9 . -``, starting with a letter.

        Calls run in this process (``ctx.server`` is ``server``); later additions and
        removals, resource updates, lifespan and instructions follow (docs/composition.md).
        A colliding name, a prefix already used or a mount containing itself: ValueError.
        """
        from .mount import mount

        mount(self, prefix, server)

    def add_middleware(self, middleware: Middleware) -> None:
        """Add ``middleware`` inside those added before (the first is the outermost; see
        ``mcpkit.server.middleware`` and docs/middleware.md). It applies to every
        session from its next request on. Not a ``Middleware``: ``TypeError``."""
        if not isinstance(middleware, Middleware):
            raise TypeError(f"expected a mcpkit.server.middleware.Middleware, got "
                            f"{middleware!r}")
        middleware.setup(self)
        self._middleware.append(middleware)
        self._compose()

    @property
    def middleware(self) -> tuple[Middleware, ...]:
        """The middleware added, outermost first (the rate limits and audit log, when
        configured, run inside them all)."""
        return tuple(self._middleware)

    def _compose(self) -> None:
        """Build the chains once, now, in the server's handler table and its apps': a
        table is left as it is while there is no middleware at all (the plain dispatch
        path)."""
        chain = self._chain(self._watch)
        if chain or self._chained:
            self._methods.use_middleware(chain)
            for methods, watch in list(self._apps.items()):
                methods.use_middleware(self._chain(watch))
            self._chained = bool(chain)

    def _chain(self, watch: CallWatch) -> list[Middleware]:
        """The middleware of a handler table whose tool calls ``watch`` rate-limits."""
        return [*self._middleware, watch] if self._watch.needed else self._middleware

    def _handlers(self, seal: StateSeal, tasks: TaskManager | None,
                  buckets: BucketStore | None) -> Methods:
        """The handler table of an app (``http_app``) sealing with ``seal``, keeping its
        tasks in ``tasks`` and its rate-limit buckets in ``buckets`` (None: the
        server's): the server's own table when all are the server's, else one of the
        app's own over the same registries, peers and middleware."""
        if seal is self._seal and tasks is None and buckets is None:
            return self._methods
        watch = self._watch
        if buckets is not None:
            watch = CallWatch(self._registry.tools, Limiter(watch.limiter.default, buckets),
                              watch.audit, watch.audit_arguments)
        methods = Methods(self, self._registry, self._peers, seal, tasks)
        self._apps[methods] = watch
        if self._chained:
            methods.use_middleware(self._chain(watch))
        return methods

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
        conn = Connection(Role.SERVER, info=self.info, capabilities=self.capabilities(),
                          instructions=self.instructions,
                          max_message_size=self.max_message_size, max_batch=self.max_batch)
        conn.cache_ttl_ms = self.cache_ttl_ms
        conn.cache_scope = self.cache_scope
        return conn

    def param_headers(self, name: str) -> dict[str, str]:
        """``{parameter: header}``: the ``x-mcp-header`` declarations of tool ``name``,
        which the HTTP transport checks a 2026-07-28 call's ``Mcp-Param-*`` headers
        against (none for an unknown tool)."""
        return self._registry.param_headers(name)

    @property
    def state_key(self) -> bytes:
        """The key that seals 2026-07-28 ``requestState`` (HMAC): the one given, else a
        random one made on first use. An HTTP app whose session store keeps a shared
        secret (``SQLiteSessionStore``, ``store=``) seals with that secret instead,
        unless a key was given to ``Server(state_key=...)``."""
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
                               drain_timeout=self.drain_timeout, output_buffer=self.output_buffer,
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

    @overload
    def asgi_app(self, path: str = "/mcp", *, auth: None = None,
                 **options: Unpack[HttpKeywords]) -> StreamableHTTPApp: ...

    @overload
    def asgi_app(self, path: str = "/mcp", *, auth: Auth,
                 **options: Unpack[HttpKeywords]) -> BearerAuth: ...

    @overload
    def asgi_app(self, path: str = "/mcp", *, auth: Auth | None,
                 **options: Unpack[HttpKeywords]) -> StreamableHTTPApp | BearerAuth: ...

    def asgi_app(self, path: str = "/mcp", *, auth: Auth | None = None,
                 **options: Unpack[HttpKeywords]) -> StreamableHTTPApp | BearerAuth:
        """A plain ASGI app serving this server over Streamable HTTP at ``path``.

        - ``auth``: serve it as an OAuth 2.1 resource server (an ``mcpkit.auth.Auth``):
          the app returned is then a ``BearerAuth`` around the plain one, serving the
          Protected Resource Metadata at both well-known paths of the host root and
          refusing requests without a valid token (401), with a malformed header (400)
          or without ``auth.required_scopes`` (403); a call of a tool, resource or
          prompt declaring ``scopes`` needs them too (403 ``insufficient_scope``
          naming them, with a JSON-RPC error body, code -32600, ``data.requiredScopes``).
          Handlers see the token as ``ctx.auth``; a session, its streams and MRTR
          ``requestState`` belong to the token's subject (another subject's request for
          them is answered as if they did not exist: 404, or -32602 for a state). The
          verifier is closed when the app's lifespan ends. Put the app at the host's
          root (the metadata paths are there).

        The other options, each with its type, default and meaning, are the fields of
        ``mcpkit.transports.http_options.HttpOptions`` (docs/http.md); an unknown one is
        a ``TypeError``. Building an app changes nothing in the server: what it keeps
        of its own (its stores, the ``requestState`` key of a session store's secret,
        with ``store=`` the rate-limit buckets and tasks on Redis) is the app's alone
        (``mcpkit.server.http_app``), so several apps of one server each serve with theirs.
        """
        from ..transports.http_options import HttpOptions
        from .http_app import build_app

        return build_app(self, HttpOptions(path=path, **options), auth)

    def run(
        self,
        transport: Literal["stdio", "http"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        http: Literal["auto", "h11", "httptools"] = "auto",
        loop: Literal["auto", "asyncio", "uvloop"] = "auto",
        header_timeout: float = 10.0,
        log_level: str | int = "WARNING",
        drain_timeout: float | None = None,
        auth: Auth | None = None,
        **options: Unpack[HttpKeywords],
    ) -> None:
        """Run the server until it is stopped.

        ``"stdio"`` (default) serves stdin/stdout until end of input, SIGTERM or SIGINT.
        ``"http"`` serves Streamable HTTP with uvicorn on ``host`` and ``port`` (0: a free
        one) at ``path``, with uvicorn's ``http`` parser and event ``loop`` ("auto": the
        fastest installed); ``header_timeout``: seconds a client may take to send a
        request's headers; ``auth`` and ``options``: any of ``asgi_app``'s (``auth``
        protects the endpoint; it is refused for ``"stdio"``, where MCP takes credentials
        from the environment instead).

        ``log_level``: of the stderr logging set up when the application configured none.
        ``drain_timeout``: replaces the server's (None: keep it).
        """
        log_to_stderr(log_level)
        if drain_timeout is not None:
            self.drain_timeout = drain_timeout
        if transport == "http":
            from .running import run_http

            run_http(self.asgi_app(path, auth=auth, **options), host=host, port=port,
                     path=path, http=http, loop=loop, header_timeout=header_timeout)
            return
        if transport != "stdio":
            raise ValueError(f"unknown transport {transport!r}: use 'stdio' or 'http'")
        if auth is not None:
            raise ValueError("auth= protects an HTTP endpoint; a stdio server takes its "
                             "credentials from the environment (MCP authorization)")
        try:
            anyio.run(self.serve_stdio)
        except KeyboardInterrupt:
            pass
