"""``Client``: talk to any MCP server: in-process, a stdio command, or Streamable HTTP.

    async with Client(Stdio("python server.py")) as client:   # or Http(url), a Server
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2}, result_type=int)
        print(result.data)

The client offers the newest revision it speaks, accepts an older stateful one, and
refuses (``HandshakeError``) a revision it does not know; with ``mode="stateless"`` (or
``"auto"``) it speaks the stateless revision (2026-07-28, ``client.stateless``). It
declares only the capabilities it has handlers for (``client.handlers``), and never
calls a method the server did not declare. Every request has a timeout; on timeout
``notifications/cancelled`` is sent and the session stays usable.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, Never, TypeVar, overload

import anyio

from ..protocol.connection import Connection, Event, RequestReceived, SessionStarted
from ..protocol.errors import (
    AuthorizationFailed,
    CapabilityNotSupported,
    ConnectionClosed,
    HandshakeError,
    ServerUnreachable,
)
from ..protocol.jsonrpc import JSONObject, RequestId
from ..protocol.lifecycle import Role
from ..protocol.methods import LOG_LEVELS, has_capability
from ..protocol.versions import REVISIONS, STATEFUL_VERSIONS, STATELESS_VERSIONS, Revision
from ..session import ByteStream, HandlerResult, ProgressCallback, Session, Telemetry
from ..session.loop import running_asyncio_loop
from . import types as t
from .cache import ClientCache, view_for
from .connect import (
    Http,
    Target,
    Transport,
    client_telemetry,
    keep_alive,
    open_stream,
    process_exit,
    transport_for,
)
from .handlers import (
    ElicitationHandler,
    Handlers,
    LogHandler,
    NotificationHandler,
    RootsType,
    SamplingHandler,
)
from .inbox import Inbox
from .listen import Listens, ListenStream, wanted
from .results import OutputSchemas, all_pages, parse, parse_list, read_data, routable
from .stateless import Stateless, described
from .task_host import TaskHost
from .tasks import (
    TaskHandle,
    TaskWatchers,
    cancel_params,
    offers,
    read_plain,
    read_task,
    start_tool_call,
)

if TYPE_CHECKING:
    from ..transports.http_client import HttpClientTransport
    from .hosting import Host

log = logging.getLogger("mcpkit.client")
R = TypeVar("R")


class Client:
    """An MCP client session (see the module docstring).

    ``target``: what to talk to (``connect``): ``Stdio(command, env=, cwd=, stderr=)``,
    ``Http(url, headers=, auth=, http_client=)``, or a ``Server`` object (in memory);
    shortcuts: an ``http(s)://`` URL is ``Http(url)``, another string or a list of strings
    is ``Stdio(command)``. A transport's options go to its object: given to ``Client``
    they raise ``TypeError`` naming the transport that takes them.
    Handlers (docs/client.md): ``sampling``, ``elicitation``, ``roots`` (a list, or a
    callable returning one), ``on_log(params)``, ``on_notification(method, params)``.
    ``cache``: keep 2026-07-28 list and read results while their ``ttlMs`` lasts (a
    ``ClientCache`` of its own, or one shared with other clients, or False; docs/client.md).
    ``ping_interval``: seconds between keep-alive pings; an unanswered ping closes the
    connection. ``tasks`` (docs/tasks.md): accept tasks from the server (the 2026-07-28
    extension is declared) and run the server's task-augmented sampling / elicitation
    (2025-11-25); ``task_timeout``: how long, by default, a task is waited for.
    ``raise_on_error``: ``call_tool`` raises ``ToolError`` for a result with
    ``is_error`` (each call may say otherwise).
    ``telemetry``: trace requests with OpenTelemetry (True, or a ``session.Telemetry``;
    docs/middleware.md).

    Entering raises ``ServerUnreachable`` (nothing answered: no listener, the process
    exited) or ``HandshakeError`` (the server refused or did not answer). Every request
    method raises what ``request`` raises, and ``InvalidResult`` for a result without the
    protocol's shape.
    """

    def __init__(
        self,
        target: Target,
        *,
        name: str = "mcpkit-client",
        version: str = "0.1.0",
        sampling: SamplingHandler | None = None,
        sampling_tools: bool = False,
        elicitation: ElicitationHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
        roots: RootsType | None = None,
        on_log: LogHandler | None = None,
        on_notification: NotificationHandler | None = None,
        timeout: float = 30.0,
        ping_interval: float | None = None,
        mode: Literal["stateful", "stateless", "auto"] = "stateful",
        protocol_version: str | None = None,
        versions: Sequence[str] = STATEFUL_VERSIONS,
        tasks: bool = True,
        task_timeout: float = 600.0,
        telemetry: bool | Telemetry = False,
        raise_on_error: bool = False,
        cache: bool | ClientCache = True,
        **transport_options: Never,
    ) -> None:
        self.transport: Transport = transport_for(target, transport_options)
        self.raise_on_error = raise_on_error  # call_tool: an is_error result raises ToolError
        self.info: JSONObject = {"name": name, "version": version}
        self.timeout = timeout
        self.ping_interval = ping_interval  # seconds between keep-alive pings (None: off)
        if mode not in ("auto", "stateless", "stateful"):
            raise ValueError("mode must be 'auto', 'stateless' or 'stateful'")
        self.mode = mode
        self.handlers = Handlers(sampling, sampling_tools, elicitation, elicitation_modes,
                                 roots, tasks)
        self.task_timeout = task_timeout  # how long a task is waited for, by default
        self.task_watchers = TaskWatchers()  # status notifications for the tasks waited on
        self._task_host = TaskHost()  # the tasks run for the server (2025-11-25)
        self.stateless = Stateless(self.info, self.handlers)
        self._listens = Listens()
        self._offer = protocol_version
        self._versions = tuple(versions)
        self._stack: AsyncExitStack | None = None
        self._host: Host | None = None  # on asyncio: the task holding the connection
        self._session: Session | None = None
        self._outputs = OutputSchemas()
        self._cache = view_for(cache, self)
        self.cache: ClientCache | None = self._cache.store  # (None: cache=False)
        #: Serves the server's requests and routes its notifications.
        self._inbox = Inbox(self.handlers, self._task_host, self._listens, self.task_watchers,
                            self._outputs, self._cache, on_log, on_notification)
        self._progress_ids = itertools.count(1)  # progress tokens: unique per session
        self.server_info: JSONObject = {}
        self.server_capabilities: JSONObject = {}
        self.instructions: str | None = None
        self.stream: ByteStream | None = None  # a Server object's or a command's
        self.http_transport: HttpClientTransport | None = None  # a URL's
        self.telemetry = client_telemetry(telemetry, self.transport)
        self._on_request = self._answer if self.telemetry is None else functools.partial(
            self.telemetry.answering, answer=self._answer)  # server -> client requests

    @property
    def stateless_version(self) -> str | None:
        """The stateless revision spoken (2026-07-28), or None in a handshake-era session."""
        return self.stateless.version

    def capabilities(self) -> JSONObject:
        """The capabilities this client declares: only those it has handlers for."""
        offer = self._offer or (max(self._versions) if self._versions else None)
        return self.handlers.capabilities(REVISIONS.get(offer) if offer else None)

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Client:
        if self._stack is not None or self._host is not None:
            raise RuntimeError("this Client is already open; use one `async with` at a time")
        if running_asyncio_loop() is not None:  # plain asyncio: leaving may be another task
            from .hosting import Host, needed

            if needed():
                self._host = await Host.start(self._connect)
                return self
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            await self._connect(stack)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc: object) -> None:
        host, self._host = self._host, None
        if host is not None:
            await host.close()
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()
        self._cache.close()

    async def _open_stream(self, stack: AsyncExitStack, tg: anyio.abc.TaskGroup) -> ByteStream:
        """The byte stream to a ``Server`` object or a ``Stdio`` command (see ``connect``)."""
        assert not isinstance(self.transport, Http)
        return await open_stream(self.transport, tg)

    async def _open_session(self, stack: AsyncExitStack, tg: anyio.abc.TaskGroup,
                            conn: Connection) -> Session:
        """The session over the target's transport, running in ``tg``."""
        http = self.transport
        if isinstance(http, Http):
            from ..transports.http_client import HttpClientTransport

            transport = HttpClientTransport(
                http.url, conn, tg, on_request=self._on_request,
                on_notification=self._inbox.notification, on_event=self._on_event,
                headers=http.headers, auth=http.auth, http=http.http_client,
                timeout=self.timeout)
            self.http_transport = transport
            stack.push_async_callback(transport.aclose)
            return transport.session
        stream = self.stream = await self._open_stream(stack, tg)
        stack.push_async_callback(stream.aclose)
        session = Session(conn, stream, on_request=self._on_request,
                          on_notification=self._inbox.notification, on_event=self._on_event)
        await tg.start(session.run)
        return session

    async def _close_transport(self) -> None:
        if self.http_transport is not None:
            await self.http_transport.aclose()
        elif self.stream is not None:
            await self.stream.aclose()

    async def _connect(self, stack: AsyncExitStack) -> None:
        try:
            await self._start(stack)
        except HandshakeError as exc:
            transport = self.http_transport
            if transport is not None and transport.unreachable is not None and not isinstance(
                    exc, ServerUnreachable):
                raise ServerUnreachable(
                    f"cannot reach {transport.url}: {transport.unreachable}") from None
            raise

    async def _start(self, stack: AsyncExitStack) -> None:
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        conn = Connection(Role.CLIENT, info=self.info, capabilities=self.capabilities(),
                          versions=self._versions)
        session = self._session = await self._open_session(stack, tg, conn)
        session.telemetry = self.telemetry
        mode = self.mode
        if mode == "auto" and self._offer is not None:
            mode = "stateless" if self._offer in STATELESS_VERSIONS else "stateful"
        if mode != "stateful" and await self._discover(session, required=mode == "stateless"):
            return
        if not session.closed:  # (a server that died at once ended it: handshake_error)
            conn.start_handshake(self._offer)
            session.flush()
        with anyio.move_on_after(self.timeout):
            await session.started.wait()
        if not session.started.is_set():
            raise HandshakeError(f"the server did not answer initialize within {self.timeout}s")
        if session.handshake_error is not None:
            exited = await process_exit(self.stream) if session.closed else None
            if exited is not None:
                raise ServerUnreachable(exited)
            if isinstance(session.handshake_cause, AuthorizationFailed):
                raise session.handshake_cause  # as the caller's auth raised it
            raise HandshakeError(f"cannot start the session: {session.handshake_error}"
                                 ) from session.handshake_cause
        if self.ping_interval:
            tg.start_soon(keep_alive, self.ping_interval, self.timeout, self.ping,
                          lambda: self._session is None or self._session.closed,
                          self._close_transport)

    def _on_event(self, session: Session, event: Event) -> None:
        """What the server said of itself in ``initialize`` — again when the transport had
        to start a new session (an expired HTTP session)."""
        if isinstance(event, SessionStarted):
            self.server_info = event.peer_info
            self.server_capabilities = event.peer_capabilities
            self.instructions = event.instructions

    async def _discover(self, session: Session, *, required: bool) -> bool:
        """Try the stateless revision; True when the server speaks it."""
        res = await self.stateless.discover(session, self._offer, min(self.timeout, 10.0),
                                            required=required)
        if res is None:
            return False
        self.server_capabilities, self.server_info, self.instructions = described(res)
        session.conn.peer_capabilities = self.server_capabilities
        return True

    @property
    def session(self) -> Session:
        if self._session is None or self._session.closed:
            raise ConnectionClosed("the client is not connected")
        return self._session

    @property
    def revision(self) -> Revision:
        rev = self.session.revision
        assert rev is not None
        return rev

    @property
    def protocol_version(self) -> str:
        return self.revision.version

    # ------------------------------------------------------------------ server -> client

    def _answer(self, session: Session, event: RequestReceived) -> HandlerResult:
        """The answer to the server's request ``event`` (a subclass may route some)."""
        return self._inbox.answer(session, event)

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
    ) -> AsyncIterator[ListenStream]:
        """Receive change notifications (2026-07-28 ``subscriptions/listen``).

            async with client.listen(tools=True) as changes:
                async for note in changes:      # {"method": ..., "params": ...}
                    ...

        ``task_ids``: the ``notifications/tasks`` of these tasks (the tasks extension);
        a ``TaskHandle`` waiting on one of them is woken by them instead of its next
        poll. The first item is the server's acknowledgement. Leaving the block ends the
        subscription (over HTTP by closing its stream, on stdio with a cancellation).
        Raises ``CapabilityNotSupported`` in a handshake-era session (there, use
        ``subscribe`` and ``on_notification``). If the server refuses the subscription or
        the connection fails, reading ``changes`` raises that error (``RemoteError``,
        ``ConnectionClosed``, …) once the notifications before it are read; if the server
        ends it with a result, the iteration just ends."""
        if self.stateless_version is None:
            raise CapabilityNotSupported(
                "subscriptions/listen exists in 2026-07-28 only; in this session use "
                "subscribe() and on_notification"
            )

        async def subscribe(params: JSONObject, on_sent: Callable[[RequestId], None]) -> None:
            # Answered only when the client ends it: no per-request timeout applies.
            await self.request("subscriptions/listen", params, timeout=math.inf,
                               on_sent=on_sent)

        async with self._listens.open(
                subscribe, wanted(tools, prompts, resources, resource_uris, task_ids)
        ) as changes:
            yield changes

    async def roots_changed(self) -> None:
        """Tell the server the roots changed (``notifications/roots/list_changed``)."""
        self.session.notify("notifications/roots/list_changed")

    # ------------------------------------------------------------------ requests

    async def request(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        on_sent: Callable[[RequestId], None] | None = None,
    ) -> JSONObject:
        """Send any request and return its result.

        Raises ``RemoteError`` (the server answered with an error), ``RequestTimeout``,
        ``ConnectionClosed``, ``CapabilityNotSupported`` (the server did not declare what
        ``method`` needs), ``TransportError`` (HTTP could not carry this request: the
        server is unreachable or answered with an HTTP error; other requests go on) and,
        in the stateless revision, what ``Stateless.request`` adds."""
        if on_progress is not None:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta.setdefault("progressToken", self.progress_token())
            params["_meta"] = meta
        wait = self.timeout if timeout is None else timeout
        if self.stateless_version is None:
            return await self.session.request(method, params, timeout=wait,
                                              on_progress=on_progress, on_sent=on_sent)
        return await self.stateless.request(self.session, method, params, timeout=wait,
                                            on_progress=on_progress, on_sent=on_sent)

    def progress_token(self) -> str:
        """A progress token not used before in this session."""
        return f"p{next(self._progress_ids)}"

    async def ping(self) -> None:
        """Check the server answers (``ping``; ``server/discover`` in 2026-07-28)."""
        await self.request("server/discover" if self.stateless_version else "ping")

    async def list_tools(self, *, fresh: bool = False) -> list[t.ToolInfo]:
        """Every tool, following ``nextCursor`` (a repeating cursor raises); as every
        listing and ``read_resource``, from the cache while ``ttlMs`` lasts, unless ``fresh``.

        A tool whose ``x-mcp-header`` declarations are invalid (empty, not a header token,
        duplicated, or on a non-primitive parameter) is left out, with a warning: calling
        it could not be routed correctly over HTTP."""
        kept, headers = routable(await self._cache.pages("tools/list", "tools", t.ToolInfo, fresh))
        self._outputs.replace(kept)
        if self.http_transport is not None:
            self.http_transport.param_headers = headers
        return kept

    async def list_tools_page(self, cursor: str | None = None, *, fresh: bool = False
                              ) -> tuple[list[t.ToolInfo], str | None]:
        """One page of ``tools/list`` and the cursor of the next (None: the last)."""
        res = await self._cache.get("tools/list", {"cursor": cursor} if cursor else None, fresh)
        tools = parse_list(t.ToolInfo, res.get("tools", []), "tools/list", "tools")
        return tools, res.get("nextCursor")

    @overload
    async def call_tool(self, name: str, arguments: JSONObject | None = None, *,
                        timeout: float | None = None, on_progress: ProgressCallback | None = None,
                        task: Literal[False] = False, result_type: None = None,
                        raise_on_error: bool | None = None) -> t.CallToolResult[Any]: ...

    @overload
    async def call_tool(self, name: str, arguments: JSONObject | None = None, *,
                        timeout: float | None = None, on_progress: ProgressCallback | None = None,
                        task: Literal[False] = False, result_type: type[R],
                        raise_on_error: bool | None = None) -> t.CallToolResult[R]: ...

    @overload
    async def call_tool(self, name: str, arguments: JSONObject | None = None, *,
                        timeout: float | None = None, on_progress: ProgressCallback | None = None,
                        task: Literal[True] | JSONObject, result_type: Any = None,
                        raise_on_error: bool | None = None) -> TaskHandle: ...

    async def call_tool(
        self,
        name: str,
        arguments: JSONObject | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        task: bool | JSONObject = False,
        result_type: Any = None,
        raise_on_error: bool | None = None,
    ) -> t.CallToolResult[Any] | TaskHandle:
        """Call a tool. ``structuredContent`` is checked against the tool's ``outputSchema``
        (``OutputSchemaError`` on mismatch) and becomes ``.data``: as is, or read as
        ``result_type`` (a pydantic model, a dataclass, a TypedDict, a primitive type;
        ``OutputSchemaError`` when it is not one). A tool failure is a result with
        ``is_error=True``, not an exception, unless ``raise_on_error`` (default: the
        client's) asks for a ``ToolError`` carrying its text.

        ``task=True`` (or the 2025-11-25 ``{"ttl": ms}``) returns a ``TaskHandle``
        instead (docs/tasks.md); ``CapabilityNotSupported`` when the server or the tool
        cannot run it as a task. Without it, a tool that must run as a task, or a task
        the server chose to create, is followed to its end (``timeout``, by default the
        client's ``task_timeout``, bounds the wait: ``TaskTimeout``)."""
        params: JSONObject = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        raising = self.raise_on_error if raise_on_error is None else raise_on_error
        read = functools.partial(self._tool_result, name, result_type, raising)
        handle = await start_tool_call(self, params, task, timeout=timeout,
                                       on_progress=on_progress, read=read)
        return handle if task is not False else await handle.result(timeout)

    async def _tool_result(self, name: str, result_type: Any, raise_on_error: bool,
                           res: JSONObject) -> t.CallToolResult[Any]:
        """What ``call_tool`` returns for ``res``, the result of calling tool ``name``."""
        result: t.CallToolResult[Any] = parse(t.CallToolResult, res, "tools/call")
        if not result.is_error and self.revision.has("structured_content"):
            await self._outputs.verify(name, result, self.list_tools)
        declared = None
        if result_type is None:  # an in-process server reads back its declared type
            reader = getattr(self.transport, "result_reader", None)
            declared = reader(name) if reader is not None else None
        read_data(name, result, result_type, raise_on_error, declared)
        return result

    async def task_support(self, name: str, *, fetch: bool = True) -> str | None:
        """Tool ``name``'s ``execution.taskSupport`` (2025-11-25), listing the tools when
        it is not known yet (``forbidden`` for a tool the server does not list); with
        ``fetch=False``, None instead of listing."""
        if fetch and not self._outputs.knows(name):
            await self.list_tools()
        return self._outputs.task_support(name) or ("forbidden" if fetch else None)

    async def list_tasks(self) -> list[t.Task]:
        """Every task of this client's on the server (2025-11-25 ``tasks/list``, following
        ``nextCursor``); ``CapabilityNotSupported`` when the server does not offer it
        (2026-07-28 has no listing)."""
        if self.stateless_version is not None:
            raise CapabilityNotSupported("the tasks extension (2026-07-28) has no tasks/list: "
                                         "a task is reached by its id")
        if not offers(self.server_capabilities, "list"):
            raise CapabilityNotSupported("the server did not declare tasks.list")
        return await all_pages(self.request, "tasks/list", "tasks", t.Task)

    async def get_task(self, task_id: str) -> t.Task:
        """The state of task ``task_id`` (``tasks/get``; an unknown id is the server's
        ``RemoteError``, -32602)."""
        return read_task(await self.request("tasks/get", {"taskId": task_id}), "tasks/get")

    async def cancel_task(self, task_id: str) -> t.Task | None:
        """Ask the server to cancel task ``task_id``; its state in 2025-11-25 (a task that
        has ended: ``RemoteError`` -32602; ``CapabilityNotSupported`` without
        ``tasks.cancel``), None in 2026-07-28 (an acknowledgement)."""
        res = await self.request("tasks/cancel", cancel_params(self, task_id))
        return None if self.stateless_version else read_task(res, "tasks/cancel")

    async def follow_task(self, task_id: str) -> TaskHandle:
        """A handle on task ``task_id``, created earlier (perhaps by another process):
        its result is read as a ``tools/call`` result, without ``outputSchema`` checks."""
        return TaskHandle(self, await self.get_task(task_id), read_plain,
                          stateless=self.stateless_version is not None)

    async def list_resources(self, *, fresh: bool = False) -> list[t.ResourceInfo]:
        """Every resource, following ``nextCursor``."""
        return await self._cache.pages("resources/list", "resources", t.ResourceInfo, fresh)

    async def list_resource_templates(self, *, fresh: bool = False
                                      ) -> list[t.ResourceTemplateInfo]:
        """Every resource template, following ``nextCursor``."""
        return await self._cache.pages("resources/templates/list", "resourceTemplates",
                                       t.ResourceTemplateInfo, fresh)

    async def read_resource(self, uri: str, *, fresh: bool = False) -> t.ReadResourceResult:
        """The contents of ``uri`` (an unknown URI is the server's ``RemoteError``)."""
        res = await self._cache.get("resources/read", {"uri": uri}, fresh)
        return parse(t.ReadResourceResult, res, "resources/read")

    async def subscribe(self, uri: str) -> None:
        """Be told when ``uri`` changes (``notifications/resources/updated``)."""
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        """Stop being told when ``uri`` changes."""
        await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self, *, fresh: bool = False) -> list[t.PromptInfo]:
        """Every prompt, following ``nextCursor``."""
        return await self._cache.pages("prompts/list", "prompts", t.PromptInfo, fresh)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None
                         ) -> t.GetPromptResult:
        """Prompt ``name`` filled in with ``arguments``."""
        params: JSONObject = {"name": name}
        if arguments:
            params["arguments"] = arguments
        return parse(t.GetPromptResult, await self.request("prompts/get", params),
                     "prompts/get")

    async def complete(
        self,
        ref: JSONObject,
        argument: str,
        value: str,
        context: dict[str, str] | None = None,
    ) -> t.Completion:
        """Completion candidates for ``argument`` of ``ref`` (``{"type": "ref/prompt",
        "name": ...}`` or ``{"type": "ref/resource", "uri": ...}``)."""
        params: JSONObject = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context and self.revision.has("completion_context"):
            params["context"] = {"arguments": context}
        res = await self.request("completion/complete", params)
        return parse(t.Completion, res.get("completion", {}), "completion/complete")

    async def set_logging_level(self, level: str) -> None:
        """Ask for log messages at ``level`` and above (``ValueError`` for an unknown one);
        in 2026-07-28 the level travels in every later request."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
        if self.stateless_version is not None:
            self.stateless.log_level = level  # 2026-07-28: sent in every request's _meta
            return
        await self.request("logging/setLevel", {"level": level})

    def supports(self, capability: str) -> bool:
        """Whether the server declared ``capability`` (dotted, e.g. ``resources.subscribe``)."""
        return has_capability(self.server_capabilities, capability)


__all__ = ["Client"]
