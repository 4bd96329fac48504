"""``Server``: the registries, the MCP methods over them, and how to run it.

The declarative API is primary (``Server(tools=[fn, ...])``, ``server.add_tool(fn)``);
``@server.tool`` and friends are thin shims over it. Each MCP method is a small function
of (session, request) returning a result now (listing, lookups, argument errors) or a
coroutine when user code must run; only the latter costs a task.
"""

from __future__ import annotations

import base64
import binascii
import logging
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar, overload

import anyio
import orjson

from ..protocol.connection import Connection, NotificationReceived, RequestReceived
from ..protocol.errors import InvalidParams, ResourceNotFound
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE
from ..protocol.lifecycle import Role
from ..protocol.stateless import SUBSCRIPTION_ID, open_state, seal_state
from ..protocol.versions import LATEST_STATEFUL
from ..session import DEFAULT_DRAIN_TIMEOUT, ByteStream, HandlerResult, Session
from .context import Context, InputRequired
from .prompts import Prompt
from .resources import Resource, ResourceTemplate, check_uri
from .tools import Tool

log = logging.getLogger("mcpkit.server")
JSON = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])
Lifespan = Callable[["Server"], AbstractAsyncContextManager[Any]]
Completer = Callable[..., Any]


class Server:
    """An MCP server: tools, resources, prompts and completions, served over any transport.

    ``name``/``version``/``title``/``description``/``website_url``/``icons`` describe the
    server (``serverInfo``); ``instructions`` tell the model how to use it. ``lifespan`` is
    an async context manager factory entered once per process around serving.
    ``page_size`` bounds list results (cursors are opaque to clients).
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
        lifespan: Lifespan | None = None,
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
        self.page_size = page_size
        self.max_message_size = max_message_size
        #: Seconds in-flight handlers may finish after a stdio client closed its side (or
        #: SIGTERM arrived) before they are cancelled; answers finished by then are written.
        self.drain_timeout = drain_timeout
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}
        self._templates: dict[str, ResourceTemplate] = {}
        self._prompts: dict[str, Prompt] = {}
        self._completers: dict[tuple[str, str, str], Completer] = {}
        self._caps_cache: tuple[bool, JSON] | None = None
        self._tools_pages: dict[str | None, JSON] = {}  # serialized tools/list pages
        self._listeners: dict[tuple[Session, Any], JSON] = {}  # open subscriptions/listen
        self._state_key = state_key  # seals MRTR requestState; random unless given
        self._state_key_given = state_key is not None
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self._sessions: set[Session] = set()
        self._lifespan = lifespan
        self._lifespan_users = 0
        self._lifespan_cm: AbstractAsyncContextManager[Any] | None = None
        self.lifespan_state: Any = None
        self.on_roots_changed: Callable[[Context], Any] | None = None
        for t in tools:
            self.add_tool(t)
        for r in resources:
            self._add_resource_obj(r)
        for p in prompts:
            self.add_prompt(p)
        self._handlers: dict[str, Callable[[Session, RequestReceived], HandlerResult]] = {
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/templates/list": self._templates_list,
            "resources/read": self._resources_read,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "prompts/list": self._prompts_list,
            "prompts/get": self._prompts_get,
            "completion/complete": self._complete,
            "subscriptions/listen": self._listen,
        }

    # ------------------------------------------------------------------ registration

    def add_tool(self, fn: Callable[..., Any] | Tool, **options: Any) -> Tool:
        """Register a tool (a function, or a ready ``Tool``); returns the ``Tool``.

        Options: ``name``, ``title``, ``description``, ``input_schema`` (default: from the
        type hints, ``additionalProperties: false``), ``output_schema`` (default: from the
        return annotation), ``annotations`` (readOnlyHint, destructiveHint, …), ``icons``,
        ``meta``, ``structured_output`` (False: never structured).
        """
        if "output_schema" in options:
            options["output_schema_"] = options.pop("output_schema")
        tool = fn if isinstance(fn, Tool) else Tool(fn, **options)
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._list_changed("notifications/tools/list_changed")
        return tool

    def remove_tool(self, name: str) -> None:
        del self._tools[name]
        self._list_changed("notifications/tools/list_changed")

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(self, fn: None = None, /, **options: Any) -> Callable[[F], F]: ...

    def tool(self, fn: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
        """Decorator form of ``add_tool``: ``@server.tool`` or ``@server.tool(name=...)``."""
        if fn is not None:
            self.add_tool(fn)
            return fn

        def register(f: F) -> F:
            self.add_tool(f, **options)
            return f

        return register

    def add_resource(
        self, fn: Callable[..., Any] | str | bytes, uri: str, **options: Any
    ) -> Resource | ResourceTemplate:
        """Register a resource at ``uri`` or, when ``uri`` has ``{variables}``, a template.

        ``fn`` is called to read it (template variables as keyword arguments) and returns
        ``str`` (text), ``bytes`` (blob) or a JSON-able value; a plain ``str``/``bytes``
        value is served as is. Options: ``name``, ``title``, ``description``, ``mime_type``,
        ``annotations``, ``icons`` (+ ``size`` for fixed resources).
        """
        if isinstance(fn, str | bytes):
            value = fn
            options.setdefault("name", uri)

            async def fixed() -> str | bytes:  # async: answered without a thread hop
                return value

            fn = fixed
        if "{" in uri:
            options.pop("size", None)
            obj: Resource | ResourceTemplate = ResourceTemplate(fn, uri, **options)
        else:
            obj = Resource(fn, uri, **options)
        self._add_resource_obj(obj)
        return obj

    def _add_resource_obj(self, obj: Resource | ResourceTemplate) -> None:
        if isinstance(obj, ResourceTemplate):
            self._templates[obj.uri_template] = obj
        else:
            self._resources[obj.uri] = obj
        self._list_changed("notifications/resources/list_changed")

    def remove_resource(self, uri: str) -> None:
        if uri in self._templates:
            del self._templates[uri]
        else:
            del self._resources[uri]
        self._list_changed("notifications/resources/list_changed")

    def resource(self, uri: str, **options: Any) -> Callable[[F], F]:
        """Decorator form of ``add_resource``."""

        def register(f: F) -> F:
            self.add_resource(f, uri, **options)
            return f

        return register

    def add_prompt(self, fn: Callable[..., Any] | Prompt, **options: Any) -> Prompt:
        """Register a prompt; its parameters are its (string) arguments."""
        prompt = fn if isinstance(fn, Prompt) else Prompt(fn, **options)
        if prompt.name in self._prompts:
            raise ValueError(f"a prompt named {prompt.name!r} is already registered")
        self._prompts[prompt.name] = prompt
        self._list_changed("notifications/prompts/list_changed")
        return prompt

    def remove_prompt(self, name: str) -> None:
        del self._prompts[name]
        self._list_changed("notifications/prompts/list_changed")

    @overload
    def prompt(self, fn: F, /) -> F: ...

    @overload
    def prompt(self, fn: None = None, /, **options: Any) -> Callable[[F], F]: ...

    def prompt(self, fn: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
        """Decorator form of ``add_prompt``."""
        if fn is not None:
            self.add_prompt(fn)
            return fn

        def register(f: F) -> F:
            self.add_prompt(f, **options)
            return f

        return register

    def add_completion(
        self, *, argument: str, fn: Completer, prompt: str | None = None,
        resource_template: str | None = None,
    ) -> None:
        """Complete ``argument`` of a prompt or resource template.

        ``fn(value, context_arguments)`` returns candidate strings, best first (sync or
        async). At most 100 are sent; ``total``/``hasMore`` tell the client the rest.
        """
        if (prompt is None) == (resource_template is None):
            raise ValueError("give exactly one of prompt= or resource_template=")
        key = ("ref/prompt", prompt, argument) if prompt else (
            "ref/resource", str(resource_template), argument)
        self._completers[key] = fn

    def completion(
        self, *, argument: str, prompt: str | None = None, resource_template: str | None = None
    ) -> Callable[[F], F]:
        """Decorator form of ``add_completion``."""

        def register(f: F) -> F:
            self.add_completion(argument=argument, fn=f, prompt=prompt,
                                resource_template=resource_template)
            return f

        return register

    # ------------------------------------------------------------------ notifications

    def _list_changed(self, method: str) -> None:
        if method == "notifications/tools/list_changed":
            self._tools_pages.clear()
        flag = _LISTEN_FLAGS.get(method)
        for (session, rid), honoured in list(self._listeners.items()):
            if flag is not None and honoured.get(flag):
                session.notify(method, {"_meta": {SUBSCRIPTION_ID: rid}}, related=rid)
        for session in list(self._sessions):
            session.notify(method)

    def notify_list_changed(self, kind: str) -> None:
        """Announce that the ``"tools"``, ``"prompts"`` or ``"resources"`` list changed
        (registrations announce themselves; use this when the list depends on data)."""
        if kind not in ("tools", "prompts", "resources"):
            raise ValueError("kind must be 'tools', 'prompts' or 'resources'")
        self._list_changed(f"notifications/{kind}/list_changed")

    def notify_resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri`` (and every listen stream watching
        it) that it changed."""
        for session in list(self._sessions):
            if uri in session.state.get("subscriptions", ()):
                session.notify("notifications/resources/updated", {"uri": uri})
        for (session, rid), honoured in list(self._listeners.items()):
            if uri in honoured.get("resourceSubscriptions", ()):
                session.notify("notifications/resources/updated",
                               {"uri": uri, "_meta": {SUBSCRIPTION_ID: rid}}, related=rid)

    # ------------------------------------------------------------------ capabilities

    def capabilities(self) -> JSON:
        """The server capabilities declared in ``initialize`` (shared, do not mutate)."""
        key = bool(self._completers)
        cached = self._caps_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        caps: JSON = {"logging": {}}
        if self._completers:
            caps["completions"] = {}
        caps["prompts"] = {"listChanged": True}
        caps["resources"] = {"subscribe": True, "listChanged": True}
        caps["tools"] = {"listChanged": True}
        self._caps_cache = (key, caps)
        return caps

    # ------------------------------------------------------------------ serving

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

    async def serve(self, stream: ByteStream, *, stop_on_signals: bool = False) -> None:
        """Serve one client over ``stream`` until it closes (lifespan entered around it).

        ``stop_on_signals``: SIGTERM or SIGINT stops reading as if the input had ended
        (the drain window, then in-flight handlers are cancelled); a second one cancels at
        once. Only in the main thread, where signals can be received.
        """
        async with self.lifespan_scope():
            session = Session(
                self.connection(),
                stream,
                on_request=self._on_request,
                on_notification=self._on_notification,
            )
            session.drain_timeout = self.drain_timeout
            self._sessions.add(session)
            try:
                if stop_on_signals and _can_receive_signals():
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(_stop_on_signals, session, tg.cancel_scope)
                        await session.run()
                        tg.cancel_scope.cancel()
                else:
                    await session.run()
            finally:
                self._sessions.discard(session)

    async def serve_stdio(self) -> None:
        """Serve this process's stdin/stdout (see ``transports.stdio``) until end of input,
        SIGTERM or SIGINT (each: drain, then cancel; see ``drain_timeout``)."""
        from ..transports.stdio import StdioStream

        stream = StdioStream.for_server()
        try:
            await self.serve(stream, stop_on_signals=True)
        finally:
            await stream.aclose()

    @asynccontextmanager
    async def lifespan_scope(self) -> AsyncIterator[Any]:
        """Enter the lifespan once however many sessions run; exit after the last."""
        if self._lifespan is None:
            yield None
            return
        if self._lifespan_users == 0:
            cm = self._lifespan(self)
            self.lifespan_state = await cm.__aenter__()
            self._lifespan_cm = cm
        self._lifespan_users += 1
        try:
            yield self.lifespan_state
        finally:
            self._lifespan_users -= 1
            if self._lifespan_users == 0 and self._lifespan_cm is not None:
                cm, self._lifespan_cm = self._lifespan_cm, None
                await cm.__aexit__(None, None, None)

    @property
    def state_key(self) -> bytes:
        """The key that seals 2026-07-28 ``requestState`` (HMAC): the one given, the
        session store's shared secret, or a random one made on first use."""
        if self._state_key is None:
            import secrets

            self._state_key = secrets.token_bytes(32)
        return self._state_key

    @state_key.setter
    def state_key(self, key: bytes) -> None:
        self._state_key = key

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

        store = config.get("session_store")
        if store is not None and hasattr(store, "secret") and not self._state_key_given:
            self.state_key = store.secret()  # instances sharing the store share the key

        def on_session(session: Any, opened: bool) -> None:
            if opened:
                self._sessions.add(session)
            else:
                self._sessions.discard(session)

        return StreamableHTTPApp(
            self.connection,
            on_request=self._on_request,
            on_notification=self._on_notification,
            config=HttpConfig(path=path, **config),
            on_session=on_session,
            lifespan=self.lifespan_scope,
            param_headers=self._param_headers,
        )

    def _param_headers(self, name: str) -> dict[str, str]:
        """``{parameter: header}`` of a tool's ``x-mcp-header`` annotations (2026-07-28
        Mcp-Param-* headers the HTTP layer checks against the arguments)."""
        tool = self._tools.get(name)
        if tool is None:
            return {}
        if tool.param_headers is None:
            props = tool.input_schema.get("properties") or {}
            tool.param_headers = {
                p: sub["x-mcp-header"] for p, sub in props.items()
                if isinstance(sub, dict) and isinstance(sub.get("x-mcp-header"), str)
            }
        return tool.param_headers

    def run(self, transport: str = "stdio", **options: Any) -> None:
        """Run the server until it is stopped.

        ``"stdio"`` (default) serves stdin/stdout. ``"http"`` serves Streamable HTTP with
        uvicorn: ``host`` (default 127.0.0.1), ``port`` (8000), ``path`` ("/mcp"),
        ``header_timeout`` (seconds to send a request's headers, 10), and any ``asgi_app``
        option.
        """
        if not logging.getLogger().handlers:
            logging.basicConfig(
                level=options.pop("log_level", "WARNING"),
                format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                stream=sys.stderr,
            )
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

    # ------------------------------------------------------------------ dispatch

    def _on_request(self, session: Session, event: RequestReceived) -> HandlerResult:
        handler = self._handlers.get(event.method)
        if handler is None:
            from ..protocol.errors import MethodNotFound

            raise MethodNotFound(f"Method not found: '{event.method}' is not supported.")
        return handler(session, event)

    def _on_notification(self, session: Session, event: NotificationReceived) -> Any:
        if event.method == "notifications/roots/list_changed" and self.on_roots_changed:
            # Not a request: no id, so what the callback sends belongs to no client
            # request (over HTTP it goes on the GET stream).
            ctx = Context(self, session, None, event.method, None)
            return self.on_roots_changed(ctx)
        return None

    def _context(self, session: Session, event: RequestReceived) -> Context:
        params = event.params
        meta = params.get("_meta")
        if event.meta is None:
            return Context(self, session, event.id, event.method,
                           meta if isinstance(meta, dict) else None)
        answers: dict[str, Any] = {}
        if "requestState" in params:
            answers = open_state(self.state_key, event.method, params, params["requestState"])
        responses = params.get("inputResponses")
        if responses is not None:
            if not isinstance(responses, dict):
                raise InvalidParams("Invalid params: 'inputResponses' must be an object "
                                    "mapping each input key to its result.")
            for key, value in responses.items():
                if not isinstance(value, dict):
                    raise InvalidParams(
                        f"Invalid params: inputResponses[{key!r}] must be a result object "
                        "(an ElicitResult, CreateMessageResult or ListRootsResult), got "
                        f"{type(value).__name__}.")
            answers.update(responses)
        return Context(self, session, event.id, event.method,
                       meta if isinstance(meta, dict) else None, event.meta, answers)

    async def _mrtr(self, event: RequestReceived, ctx: Context,
                    work: Coroutine[Any, Any, JSON]) -> JSON:
        """Run a stateless handler; if it needs client input, answer ``input_required``
        with the inputs and a sealed ``requestState`` carrying the answers so far."""
        try:
            return await work
        except InputRequired as need:
            return {
                "resultType": "input_required",
                "inputRequests": need.requests,
                "requestState": seal_state(self.state_key, event.method, event.params,
                                           ctx._answers),
            }

    def _maybe_mrtr(self, event: RequestReceived, ctx: Context,
                    work: Coroutine[Any, Any, JSON]) -> HandlerResult:
        return work if event.meta is None else self._mrtr(event, ctx, work)

    def _page(self, event: RequestReceived, items: list[JSON], key: str) -> JSON:
        cursor = event.params.get("cursor")
        start = 0
        if cursor is not None:
            start = _decode_cursor(cursor)
            if start > len(items):
                raise _bad_cursor()
        end = start + self.page_size
        result: JSON = {key: items[start:end]}
        if end < len(items):
            result["nextCursor"] = _encode_cursor(end)
        return result

    def _tools_list(self, session: Session, event: RequestReceived) -> JSON:
        rev = session.conn.revision
        if event.meta is not None or rev is None or rev.version != LATEST_STATEFUL:
            # (a 2026-07-28 request is adapted item by item: never the serialized cache)
            return self._page(event, [t.definition for t in self._tools.values()], "tools")
        # Newest revision: serve each page from a cache of its serialized tools array, so
        # a large catalogue is not re-encoded on every call (cleared when tools change).
        cursor = event.params.get("cursor")
        key = cursor if isinstance(cursor, str) or cursor is None else None
        cached = self._tools_pages.get(key) if key is not None or cursor is None else None
        if cached is not None:
            return dict(cached)
        result = self._page(event, [t.definition for t in self._tools.values()], "tools")
        result["tools"] = orjson.Fragment(orjson.dumps(result["tools"]))
        if len(self._tools_pages) < 1024:
            self._tools_pages[key] = result
        return dict(result)

    def _tools_call(self, session: Session, event: RequestReceived) -> HandlerResult:
        params = event.params
        name = params.get("name")
        if not isinstance(name, str):
            raise InvalidParams("Invalid params: tools/call needs 'name' (string).")
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(list(self._tools)[:50]) or "none"
            raise InvalidParams(
                f"Unknown tool: '{name[:100]}'. Available tools: {available}. Call tools/list "
                "for their schemas.",
                {"name": name[:100]},
            )
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise InvalidParams("Invalid params: tools/call 'arguments' must be an object.")
        invalid = tool.invalid_arguments(arguments)
        if invalid is not None:
            rev = event.meta.revision if event.meta is not None else session.conn.revision
            if rev is not None and not rev.has("tool_input_errors"):
                raise InvalidParams(invalid["content"][0]["text"])
            return invalid
        ctx = self._context(session, event)
        return self._maybe_mrtr(event, ctx, tool.call(arguments, ctx))

    def _resources_list(self, session: Session, event: RequestReceived) -> JSON:
        items = [r.definition() for r in self._resources.values()]
        return self._page(event, items, "resources")

    def _templates_list(self, session: Session, event: RequestReceived) -> JSON:
        items = [t.definition() for t in self._templates.values()]
        return self._page(event, items, "resourceTemplates")

    def _resources_read(self, session: Session, event: RequestReceived) -> HandlerResult:
        uri = check_uri(event.params.get("uri"))
        ctx = self._context(session, event)
        resource = self._resources.get(uri)
        if resource is not None:
            return self._maybe_mrtr(event, ctx, _read_static(resource, ctx))
        for template in self._templates.values():
            values = template.match(uri)
            if values is not None:
                return self._maybe_mrtr(event, ctx, _read_template(template, uri, values, ctx))
        raise ResourceNotFound(
            f"Resource not found: {uri[:200]}. Call resources/list and "
            "resources/templates/list to see what this server offers.",
            {"uri": uri},
        )

    def _listen(self, session: Session, event: RequestReceived) -> HandlerResult:
        """``subscriptions/listen`` (2026-07-28): acknowledge, then stream the change
        notifications the client asked for until it ends the request."""
        wanted = event.params.get("notifications")
        if not isinstance(wanted, dict):
            raise InvalidParams("Invalid params: subscriptions/listen needs 'notifications' "
                                "(an object of the notification kinds to receive).")
        honoured: JSON = {k: True for k in _LISTEN_FLAGS.values() if wanted.get(k) is True}
        uris = wanted.get("resourceSubscriptions")
        if isinstance(uris, list) and uris:
            honoured["resourceSubscriptions"] = [u for u in uris if isinstance(u, str)][:1000]
        return self._run_listen(session, event.id, honoured)

    async def _run_listen(self, session: Session, rid: Any, honoured: JSON) -> JSON:
        key = (session, rid)
        self._listeners[key] = honoured
        try:
            session.notify("notifications/subscriptions/acknowledged",
                           {"_meta": {SUBSCRIPTION_ID: rid}, "notifications": honoured},
                           related=rid)
            await anyio.sleep_forever()
            return {}  # pragma: no cover - only ends by cancellation
        finally:
            self._listeners.pop(key, None)

    def _subscribe(self, session: Session, event: RequestReceived) -> JSON:
        uri = check_uri(event.params.get("uri"))
        session.state.setdefault("subscriptions", set()).add(uri)
        return {}

    def _unsubscribe(self, session: Session, event: RequestReceived) -> JSON:
        uri = check_uri(event.params.get("uri"))
        session.state.setdefault("subscriptions", set()).discard(uri)
        return {}

    def _prompts_list(self, session: Session, event: RequestReceived) -> JSON:
        items = [p.definition() for p in self._prompts.values()]
        return self._page(event, items, "prompts")

    def _prompts_get(self, session: Session, event: RequestReceived) -> HandlerResult:
        name = event.params.get("name")
        if not isinstance(name, str):
            raise InvalidParams("Invalid params: prompts/get needs 'name' (string).")
        prompt = self._prompts.get(name)
        if prompt is None:
            available = ", ".join(list(self._prompts)[:50]) or "none"
            raise InvalidParams(
                f"Unknown prompt: '{name[:100]}'. Available prompts: {available}."
            )
        args = prompt.check(event.params.get("arguments"))
        ctx = self._context(session, event)
        return self._maybe_mrtr(event, ctx, prompt.render(args, ctx))

    def _complete(self, session: Session, event: RequestReceived) -> HandlerResult:
        params = event.params
        ref = params.get("ref")
        argument = params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise InvalidParams("Invalid params: completion/complete needs 'ref' and 'argument'.")
        kind = ref.get("type")
        arg_name = argument.get("name")
        value = argument.get("value", "")
        if not isinstance(arg_name, str) or not isinstance(value, str):
            raise InvalidParams("Invalid params: 'argument' needs string 'name' and 'value'.")
        if kind == "ref/prompt":
            key = ref.get("name")
            prompt = self._prompts.get(key) if isinstance(key, str) else None
            if prompt is None:
                raise InvalidParams(f"Invalid params: unknown prompt {key!r}.")
            if arg_name not in prompt.names:
                raise InvalidParams(
                    f"Invalid params: prompt {key!r} has no argument {arg_name!r}."
                )
        elif kind == "ref/resource":
            key = ref.get("uri")
            if not isinstance(key, str) or (key not in self._templates and key not in (
                self._resources
            )):
                raise InvalidParams(f"Invalid params: unknown resource template {key!r}.")
        else:
            raise InvalidParams(
                "Invalid params: 'ref.type' must be 'ref/prompt' or 'ref/resource'."
            )
        assert isinstance(key, str)
        completer = self._completers.get((kind, key, arg_name))
        if completer is None:
            return {"completion": {"values": [], "total": 0, "hasMore": False}}
        context = params.get("context")
        ctx_args = context.get("arguments") if isinstance(context, dict) else None
        return _complete(completer, value, ctx_args if isinstance(ctx_args, dict) else {})


def _with_hints(result: JSON, item: Resource | ResourceTemplate, ctx: Context) -> JSON:
    """Per-resource caching hints on a 2026-07-28 read (the server's defaults otherwise)."""
    if ctx.stateless is not None:
        if item.cache_ttl_ms is not None:
            result["ttlMs"] = item.cache_ttl_ms
        if item.cache_scope is not None:
            result["cacheScope"] = item.cache_scope
    return result


async def _read_static(resource: Resource, ctx: Context) -> JSON:
    return _with_hints({"contents": await resource.read(ctx)}, resource, ctx)


async def _read_template(
    template: ResourceTemplate, uri: str, values: dict[str, str], ctx: Context
) -> JSON:
    return _with_hints({"contents": await template.read(uri, values, ctx)}, template, ctx)


async def _complete(completer: Completer, value: str, context: dict[str, Any]) -> JSON:
    out = completer(value, context)
    if isinstance(out, Coroutine):
        out = await out
    values = [str(v) for v in (out or [])]
    return {
        "completion": {
            "values": values[:100],
            "total": len(values),
            "hasMore": len(values) > 100,
        }
    }


_LISTEN_FLAGS = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"mcpkit:{offset}".encode()).decode().rstrip("=")


def _bad_cursor() -> InvalidParams:
    return InvalidParams(
        "Invalid params: the cursor is not one this server issued (or it expired); call "
        "again without a cursor to start from the first page."
    )


def _decode_cursor(cursor: Any) -> int:
    if not isinstance(cursor, str) or len(cursor) > 64:
        raise _bad_cursor()
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        prefix, _, num = text.partition(":")
        if prefix != "mcpkit" or not num.isdigit():
            raise ValueError
        return int(num)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise _bad_cursor() from None


def _can_receive_signals() -> bool:
    """Signal handlers can only be installed from the main thread, and not on Windows."""
    import threading

    return sys.platform != "win32" and threading.current_thread() is threading.main_thread()


async def _stop_on_signals(session: Session, scope: anyio.CancelScope) -> None:
    """First SIGTERM/SIGINT: stop reading and drain; a second one: cancel everything."""
    import signal

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        count = 0
        async for signum in signals:
            count += 1
            if count == 1:
                log.info("%s: finishing in-flight requests, then exiting",
                         signal.Signals(signum).name)
                session.stop_input()
            else:
                scope.cancel()
                return
