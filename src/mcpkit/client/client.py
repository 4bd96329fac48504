"""``Client``: talk to any MCP server: in-process, a stdio command, or (later) HTTP.

    async with Client(["python", "server.py"]) as client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})

The client offers the newest revision it speaks, accepts an older stateful one, and
refuses (``HandshakeError``) a revision it does not know. It declares only the
capabilities it has handlers for, and never calls a method the server did not declare.
Every request has a timeout; on timeout ``notifications/cancelled`` is sent and the
session stays usable.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import re
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import BaseModel, ValidationError

from ..protocol.connection import Connection, NotificationReceived, RequestReceived
from ..protocol.errors import (
    UNSUPPORTED_PROTOCOL_VERSION,
    CapabilityNotSupported,
    ConnectionClosed,
    HandshakeError,
    InvalidParams,
    InvalidResult,
    MCPError,
    MethodNotFound,
    OutputSchemaError,
    PaginationError,
    ProtocolError,
    RemoteError,
    RequestTimeout,
    ServerUnreachable,
)
from ..protocol.jsonrpc import JSONObject
from ..protocol.lifecycle import Role
from ..protocol.methods import LOG_LEVELS, has_capability
from ..protocol.stateless import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION,
    SERVER_INFO,
    SUBSCRIPTION_ID,
)
from ..protocol.versions import REVISIONS, STATEFUL_VERSIONS, STATELESS_VERSIONS, Revision
from ..session import ByteStream, HandlerResult, ProgressCallback, Session
from ..transports.memory import memory_pair
from ..transports.process import ProcessStream
from . import types as t
from .handlers import (
    ElicitationHandler,
    RootsType,
    SamplingHandler,
    handle_elicitation,
    handle_sampling,
    normalize_roots,
)

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger("mcpkit.client")
MAX_PAGES = 10_000
MAX_INPUT_ROUNDS = 16


_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


def param_headers(schema: Any) -> dict[str, str]:
    """``{parameter: header name}`` from ``x-mcp-header`` annotations of an input schema
    (2026-07-28); ``ValueError`` naming the first invalid declaration."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    out: dict[str, str] = {}
    seen: set[str] = set()
    for param, sub in (props.items() if isinstance(props, dict) else ()):
        if not isinstance(sub, dict) or "x-mcp-header" not in sub:
            continue
        name = sub["x-mcp-header"]
        if not isinstance(name, str) or not name:
            raise ValueError(f"parameter {param!r}: x-mcp-header must be a non-empty string")
        if not _TOKEN.match(name):
            raise ValueError(f"parameter {param!r}: x-mcp-header {name!r} is not a header token")
        if name.lower() in seen:
            raise ValueError(f"x-mcp-header {name!r} is declared twice")
        kind = sub.get("type")
        if kind not in ("string", "integer", "boolean"):
            raise ValueError(f"parameter {param!r}: x-mcp-header needs a string, integer or "
                             f"boolean parameter (got {kind!r})")
        seen.add(name.lower())
        out[param] = name
    return out


def _parse(model: type[M], value: Any, method: str) -> M:
    """``model`` from a server's result; ``InvalidResult`` (not pydantic's error) if malformed."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<result>'}: {e['msg']}"
                          for e in exc.errors()[:3])
        raise InvalidResult(f"the server's answer to {method} is malformed: {where}") from exc


def _parse_list(model: type[M], value: Any, method: str, key: str) -> list[M]:
    if not isinstance(value, list):
        raise InvalidResult(f"the server's answer to {method} is malformed: {key!r} must be "
                            f"an array, got {type(value).__name__}")
    return [_parse(model, item, method) for item in value]


class ListenStream:
    """The notifications of one ``Client.listen`` block, as ``{"method", "params"}`` dicts.

    Read with ``await changes.receive()`` or ``async for note in changes``. When the
    subscription ends with an error (the server refused it, the connection closed), the
    read that finds nothing left raises that error; when it ends normally, ``receive``
    raises ``anyio.EndOfStream`` and iteration stops.
    """

    __slots__ = ("_receive", "error")

    def __init__(self, receive: MemoryObjectReceiveStream[JSONObject]) -> None:
        self._receive = receive
        self.error: MCPError | None = None

    async def receive(self) -> JSONObject:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            if self.error is not None:
                raise self.error from None
            raise

    def __aiter__(self) -> ListenStream:
        return self

    async def __anext__(self) -> JSONObject:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._receive.close()

    async def aclose(self) -> None:
        self._receive.close()


class Client:
    """An MCP client session (see the module docstring).

    ``target``: a ``Server`` object (in-memory), a command (``["python", "s.py"]`` or a
    shell-style string) for stdio, or an ``http(s)://`` URL (Streamable HTTP; ``headers``
    and ``auth`` — an ``httpx.Auth`` — apply to every HTTP request).
    Handlers: ``sampling``, ``elicitation``, ``roots`` (a list, or a callable returning
    one), ``on_log(params)``, ``on_notification(method, params)``. ``ping_interval``:
    seconds between keep-alive pings; an unanswered ping closes the connection.
    """

    def __init__(
        self,
        target: Any,
        *,
        name: str = "mcpkit-client",
        version: str = "0.1.0",
        sampling: SamplingHandler | None = None,
        sampling_tools: bool = False,
        elicitation: ElicitationHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
        roots: RootsType | None = None,
        on_log: Callable[[JSONObject], Awaitable[None] | None] | None = None,
        on_notification: Callable[[str, JSONObject], Awaitable[None] | None] | None = None,
        timeout: float = 30.0,
        ping_interval: float | None = None,
        mode: str = "stateful",
        protocol_version: str | None = None,
        versions: Sequence[str] = STATEFUL_VERSIONS,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stderr: Any = None,
        headers: dict[str, str] | None = None,
        auth: Any = None,
    ) -> None:
        self.target = target
        self.info: JSONObject = {"name": name, "version": version}
        self.timeout = timeout
        self.ping_interval = ping_interval  # seconds between keep-alive pings (None: off)
        if mode not in ("auto", "stateless", "stateful"):
            raise ValueError("mode must be 'auto', 'stateless' or 'stateful'")
        self.mode = mode
        self.stateless_version: str | None = None  # set when speaking 2026-07-28
        self._log_level: str | None = None
        self._listens: dict[Any, MemoryObjectSendStream[JSONObject]] = {}
        self._sampling = sampling
        self._sampling_tools = sampling_tools
        self._elicitation = elicitation
        self._elicitation_modes = tuple(elicitation_modes)
        self._roots = roots
        self._on_log = on_log
        self._on_notification = on_notification
        self._offer = protocol_version
        self._versions = tuple(versions)
        self._env, self._cwd, self._stderr = env, cwd, stderr
        self._headers, self._auth = headers, auth  # HTTP: extra headers, an httpx.Auth
        self._stack: AsyncExitStack | None = None
        self._session: Session | None = None
        self._output_schemas: dict[str, Any] = {}
        self._output_validators: dict[str, Any] = {}
        self._progress_ids = itertools.count(1)  # progress tokens: unique per session
        self.server_info: JSONObject = {}
        self.server_capabilities: JSONObject = {}
        self.instructions: str | None = None
        self.stream: ByteStream | None = None

    # ------------------------------------------------------------------ lifecycle

    def capabilities(self) -> JSONObject:
        """The capabilities this client declares: only those it has handlers for."""
        caps: JSONObject = {}
        offer = self._offer or (max(self._versions) if self._versions else None)
        offered = REVISIONS.get(offer) if offer else None  # what initialize will offer
        if self._roots is not None:
            caps["roots"] = {"listChanged": True}
        if self._sampling is not None:
            tools = self._sampling_tools and (offered is None or offered.has("sampling_tools"))
            caps["sampling"] = {"tools": {}} if tools else {}
        if self._elicitation is not None and (offered is None or offered.has("elicitation")):
            modes: JSONObject = {m: {} for m in self._elicitation_modes}
            caps["elicitation"] = {} if modes == {"form": {}} else modes
        return caps

    async def __aenter__(self) -> Client:
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
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def _open_stream(self, stack: AsyncExitStack, tg: anyio.abc.TaskGroup) -> ByteStream:
        target = self.target
        if hasattr(target, "serve") and hasattr(target, "connection"):
            ours, theirs = memory_pair()

            async def serve() -> None:
                try:
                    await target.serve(theirs)
                finally:
                    await theirs.aclose()  # Server.serve does not close the stream it is given

            tg.start_soon(serve)
            return ours
        if isinstance(target, str) and target.startswith(("http://", "https://")):
            from ..transports.http_client import HttpClientStream

            return HttpClientStream(target, tg, headers=self._headers, auth=self._auth,
                                    timeout=self.timeout)
        command = shlex.split(target) if isinstance(target, str) else list(target)
        if not command:
            raise ValueError("empty server command")
        return await ProcessStream.open(command, env=self._env, cwd=self._cwd,
                                        stderr=self._stderr)

    async def _connect(self, stack: AsyncExitStack) -> None:
        try:
            await self._start(stack)
        except HandshakeError as exc:
            reason = self._http_unreachable()
            if reason is not None and not isinstance(exc, ServerUnreachable):
                raise ServerUnreachable(reason) from None
            raise

    def _http_unreachable(self) -> str | None:
        """Why an HTTP server could not be reached, if that is why the session failed."""
        if isinstance(self.target, str) and self.target.startswith(("http://", "https://")):
            from ..transports.http_client import HttpClientStream

            stream = self.stream
            if isinstance(stream, HttpClientStream) and stream.unreachable is not None:
                return f"cannot reach {self.target}: {stream.unreachable}"
        return None

    async def _process_exit(self) -> str | None:
        """After the server's output ended before it answered: its exit status, if the
        process is gone (it crashed, or the command is not an MCP server)."""
        stream = self.stream
        if not isinstance(stream, ProcessStream):
            return None
        with anyio.move_on_after(1.0):
            status = await stream.process.wait()
            return (f"the server process exited with status {status} before answering "
                    f"(command: {shlex.join(stream.command)}); its stderr may say why")
        return None

    async def _start(self, stack: AsyncExitStack) -> None:
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        stream = await self._open_stream(stack, tg)
        self.stream = stream
        stack.push_async_callback(stream.aclose)
        conn = Connection(Role.CLIENT, info=self.info, capabilities=self.capabilities(),
                          versions=self._versions)
        session = Session(conn, stream, on_request=self._on_request,
                          on_notification=self._notification)
        self._session = session
        await tg.start(session.run)
        mode = self.mode
        if mode == "auto" and self._offer is not None:
            mode = "stateless" if self._offer in STATELESS_VERSIONS else "stateful"
        if mode != "stateful" and await self._discover(required=mode == "stateless"):
            return
        conn.start_handshake(self._offer)
        session._kick()
        with anyio.move_on_after(self.timeout):
            await session.started.wait()
        if not session.started.is_set():
            raise HandshakeError(f"the server did not answer initialize within {self.timeout}s")
        if session.handshake_error is not None:
            exited = await self._process_exit() if session.closed else None
            if exited is not None:
                raise ServerUnreachable(exited)
            raise HandshakeError(f"cannot start the session: {session.handshake_error}")
        self.server_info = conn.peer_info
        self.server_capabilities = conn.peer_capabilities
        self.instructions = conn.peer_instructions
        if self.ping_interval:
            tg.start_soon(self._keepalive, self.ping_interval)

    async def _discover(self, *, required: bool) -> bool:
        """Try the stateless revision: ``server/discover``. True when the server speaks it;
        False (back to ``initialize``) when it does not and ``required`` is off."""
        session = self.session
        version = self._offer if self._offer in STATELESS_VERSIONS else STATELESS_VERSIONS[-1]
        assert version is not None
        session.conn.use_stateless(version)
        self.stateless_version = version
        try:
            try:
                res = await session.request("server/discover", self._with_meta(None),
                                            timeout=min(self.timeout, 10.0))
            except RemoteError as exc:
                # the refusal lists the versions the server speaks: retry once with a shared one
                data = exc.data if isinstance(exc.data, dict) else {}
                shared = [v for v in data.get("supported") or () if v in STATELESS_VERSIONS]
                if exc.code != UNSUPPORTED_PROTOCOL_VERSION or not shared:
                    raise
                self.stateless_version = version = shared[-1]
                session.conn.use_stateless(version)
                res = await session.request("server/discover", self._with_meta(None),
                                            timeout=min(self.timeout, 10.0))
        except MCPError as exc:
            self.stateless_version = None
            session.conn.use_stateful()
            if required:
                raise HandshakeError(f"the server does not speak {version}: {exc}") from None
            return False
        versions = res.get("supportedVersions")
        if not isinstance(versions, list) or version not in versions:
            self.stateless_version = None
            session.conn.use_stateful()
            if required:
                raise HandshakeError(f"the server does not list {version} in server/discover")
            return False
        caps = res.get("capabilities")
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        session.conn.peer_capabilities = self.server_capabilities
        meta = res.get("_meta")
        info = meta.get(SERVER_INFO) if isinstance(meta, dict) else None
        self.server_info = info if isinstance(info, dict) else {}
        instructions = res.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        return True

    def _modern_capabilities(self) -> JSONObject:
        caps: JSONObject = {}
        if self._roots is not None:
            caps["roots"] = {}
        if self._sampling is not None:
            caps["sampling"] = {"tools": {}} if self._sampling_tools else {}
        if self._elicitation is not None:
            caps["elicitation"] = {m: {} for m in self._elicitation_modes}
        return caps

    def _with_meta(self, params: JSONObject | None) -> JSONObject:
        """``params`` with this client's per-request metadata (stateless revision)."""
        out = dict(params or {})
        meta = dict(out.get("_meta") or {})
        meta[PROTOCOL_VERSION] = self.stateless_version
        meta[CLIENT_CAPABILITIES] = self._modern_capabilities()
        meta[CLIENT_INFO] = self.info
        if self._log_level is not None:
            meta[LOG_LEVEL] = self._log_level
        out["_meta"] = meta
        return out

    async def _answer_input(self, request: Any) -> JSONObject:
        """Answer one MRTR input request with the application's handlers."""
        method = request.get("method") if isinstance(request, dict) else None
        params = request.get("params") if isinstance(request, dict) else None
        params = params if isinstance(params, dict) else {}
        if method == "sampling/createMessage" and self._sampling is not None:
            return await handle_sampling(self._sampling, params, self._sampling_tools)
        if method == "elicitation/create" and self._elicitation is not None:
            return await handle_elicitation(self._elicitation, params, self._elicitation_modes)
        if method == "roots/list" and self._roots is not None:
            return await self._list_roots()
        raise CapabilityNotSupported(f"the server asked for {method!r}, which this client "
                                     "has no handler for")

    async def _keepalive(self, interval: float) -> None:
        """Ping every ``interval`` seconds; a ping that goes unanswered within the request
        timeout means the server is gone: the connection is closed, so every pending and
        later call fails with ``ConnectionClosed`` instead of hanging."""
        while True:
            await anyio.sleep(interval)
            session = self._session
            if session is None or session.closed:
                return
            try:
                await self.ping()  # server/discover in 2026-07-28, which has no ping
            except RequestTimeout:
                log.warning("the server did not answer a keep-alive ping within %ss; "
                            "closing the connection", self.timeout)
                if self.stream is not None:
                    await self.stream.aclose()
                return
            except MCPError as exc:
                if not isinstance(exc, ConnectionClosed):  # closed: nothing left to watch
                    log.warning("keep-alive pings stopped: %s", exc)
                return

    @property
    def session(self) -> Session:
        if self._session is None or self._session.closed:
            raise ConnectionClosed("the client is not connected")
        return self._session

    @property
    def revision(self) -> Revision:
        rev = self.session.conn.revision
        assert rev is not None
        return rev

    @property
    def protocol_version(self) -> str:
        return self.revision.version

    # ------------------------------------------------------------------ server -> client

    def _on_request(self, session: Session, event: RequestReceived) -> HandlerResult:
        method = event.method
        if method == "sampling/createMessage" and self._sampling is not None:
            return handle_sampling(self._sampling, event.params, self._sampling_tools)
        if method == "elicitation/create" and self._elicitation is not None:
            return handle_elicitation(self._elicitation, event.params, self._elicitation_modes)
        if method == "roots/list" and self._roots is not None:
            return self._list_roots()
        raise MethodNotFound(f"Method not found: this client does not handle '{method}'.")

    async def _list_roots(self) -> JSONObject:
        roots = self._roots
        value: Any = roots() if callable(roots) else roots
        if inspect.isawaitable(value):
            value = await value
        return {"roots": normalize_roots(value)}

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
    ) -> AsyncIterator[ListenStream]:
        """Receive change notifications (2026-07-28 ``subscriptions/listen``).

            async with client.listen(tools=True) as changes:
                async for note in changes:      # {"method": ..., "params": ...}
                    ...

        The first item is the server's acknowledgement. Leaving the block ends the
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
        wanted: JSONObject = {}
        if tools:
            wanted["toolsListChanged"] = True
        if prompts:
            wanted["promptsListChanged"] = True
        if resources:
            wanted["resourcesListChanged"] = True
        if resource_uris:
            wanted["resourceSubscriptions"] = list(resource_uris)
        send, receive = anyio.create_memory_object_stream[JSONObject](256)
        changes = ListenStream(receive)
        ids: list[Any] = []

        def sent(rid: Any) -> None:
            ids.append(rid)
            self._listens[rid] = send

        async def run() -> None:
            try:
                await self.request("subscriptions/listen", {"notifications": wanted},
                                   timeout=None, on_sent=sent)
            except MCPError as exc:
                log.debug("subscriptions/listen ended with an error: %s", exc)
                changes.error = exc  # raised to the reader once the stream is drained
            finally:
                send.close()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                yield changes
            finally:
                tg.cancel_scope.cancel()
                for rid in ids:
                    self._listens.pop(rid, None)
                receive.close()

    async def _notification(self, session: Session, event: NotificationReceived) -> None:
        meta = event.params.get("_meta")
        sub = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        listener = self._listens.get(sub) if sub is not None else None
        if listener is not None:
            try:
                listener.send_nowait({"method": event.method, "params": event.params})
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                log.warning("a listen stream is not being read; a notification was dropped")
        if event.method == "notifications/message" and self._on_log is not None:
            res = self._on_log(event.params)
            if res is not None:
                await res
        if event.method == "notifications/tools/list_changed":
            self._output_schemas.clear()
            self._output_validators.clear()
        if self._on_notification is not None:
            res = self._on_notification(event.method, event.params)
            if res is not None:
                await res

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
        on_sent: Callable[[Any], None] | None = None,
    ) -> JSONObject:
        """Send any request; raises ``RemoteError``, ``RequestTimeout``, ``ConnectionClosed``
        or ``CapabilityNotSupported`` (the server did not declare what ``method`` needs)."""
        if on_progress is not None:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = f"p{next(self._progress_ids)}"
            params["_meta"] = meta
        wait = self.timeout if timeout is None else timeout
        if self.stateless_version is None:
            return await self.session.request(method, params, timeout=wait,
                                              on_progress=on_progress, on_sent=on_sent)
        base = self._with_meta(params)
        sent = base
        for _ in range(MAX_INPUT_ROUNDS):
            res = await self.session.request(method, sent, timeout=wait, on_progress=on_progress,
                                             on_sent=on_sent)
            kind = res.get("resultType", "complete")  # older servers send none: complete
            if kind == "complete":
                return res
            if kind != "input_required":
                raise InvalidResult(f"{method}: unknown resultType {kind!r}")
            if not self.revision.has("mrtr"):
                raise InvalidResult(f"{method}: an input_required result, which protocol "
                                    f"revision {self.revision.version} does not have")
            requests = res.get("inputRequests")
            answers = {key: await self._answer_input(req)
                       for key, req in (requests.items() if isinstance(requests, dict) else ())}
            sent = dict(base)  # a new request (new id) with the original params
            if answers:
                sent["inputResponses"] = answers
            if "requestState" in res:
                sent["requestState"] = res["requestState"]
        raise MCPError(f"{method}: the server still needed input after {MAX_INPUT_ROUNDS} "
                       "rounds; giving up")

    async def ping(self) -> None:
        """Check the server answers (``ping``; ``server/discover`` in 2026-07-28)."""
        await self.request("server/discover" if self.stateless_version else "ping")

    async def _all_pages(self, method: str, key: str, model: type[M]) -> list[M]:
        items: list[M] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            res = await self.request(method, {"cursor": cursor} if cursor else None)
            items.extend(_parse_list(model, res.get(key, []), method, key))
            nxt = res.get("nextCursor")
            if not nxt:
                return items
            if not isinstance(nxt, str) or nxt in seen:
                raise PaginationError(
                    f"the server repeated cursor {str(nxt)[:40]!r} for {method}; stopping"
                )
            seen.add(nxt)
            cursor = nxt
        raise PaginationError(f"{method} did not end after {MAX_PAGES} pages")

    async def list_tools(self) -> list[t.Tool]:
        """Every tool, following ``nextCursor`` (a repeating cursor raises).

        A tool whose ``x-mcp-header`` declarations are invalid (empty, not a header token,
        duplicated, or on a non-primitive parameter) is left out, with a warning: calling
        it could not be routed correctly over HTTP."""
        tools = await self._all_pages("tools/list", "tools", t.Tool)
        kept: list[t.Tool] = []
        headers: dict[str, dict[str, str]] = {}
        for tool in tools:
            try:
                declared = param_headers(tool.input_schema)
            except ValueError as exc:
                log.warning("ignoring tool %r: %s", tool.name, exc)
                continue
            if declared:
                headers[tool.name] = declared
            kept.append(tool)
        self._output_schemas = {tool.name: tool.output_schema for tool in kept}
        self._output_validators.clear()
        if self.stream is not None and hasattr(self.stream, "param_headers"):
            self.stream.param_headers = headers
        return kept

    async def list_tools_page(self, cursor: str | None = None) -> tuple[list[t.Tool], str | None]:
        res = await self.request("tools/list", {"cursor": cursor} if cursor else None)
        tools = _parse_list(t.Tool, res.get("tools", []), "tools/list", "tools")
        return tools, res.get("nextCursor")

    async def call_tool(
        self,
        name: str,
        arguments: JSONObject | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> t.CallToolResult:
        """Call a tool. ``structuredContent`` is checked against the tool's ``outputSchema``
        (``OutputSchemaError`` on mismatch). A tool failure is a result with
        ``is_error=True``, not an exception."""
        params: JSONObject = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        res = await self.request("tools/call", params, timeout=timeout, on_progress=on_progress)
        result = _parse(t.CallToolResult, res, "tools/call")
        if not result.is_error and self.revision.has("structured_content"):
            await self._check_output(name, result)
        return result

    async def _check_output(self, name: str, result: t.CallToolResult) -> None:
        if name not in self._output_schemas:
            try:
                await self.list_tools()
            except MCPError as exc:  # the call itself succeeded: return its result
                log.warning("cannot check the structuredContent of tool %r against its "
                            "outputSchema: tools/list failed: %s", name, exc)
                return
        schema = self._output_schemas.get(name)
        if not schema:
            return
        if result.structured_content is None:
            raise OutputSchemaError(
                f"tool {name!r} declares an outputSchema but returned no structuredContent"
            )
        validator = self._output_validators.get(name)
        if validator is None:  # compiled once per tool (until the tool list changes)
            import jsonschema_rs

            validator = self._output_validators[name] = jsonschema_rs.validator_for(schema)
        errors = [e.message for e in validator.iter_errors(result.structured_content)]
        if errors:
            raise OutputSchemaError(
                f"tool {name!r} returned structuredContent that does not match its "
                f"outputSchema: {'; '.join(errors[:3])}"
            )

    async def list_resources(self) -> list[t.Resource]:
        return await self._all_pages("resources/list", "resources", t.Resource)

    async def list_resource_templates(self) -> list[t.ResourceTemplate]:
        return await self._all_pages("resources/templates/list", "resourceTemplates",
                                     t.ResourceTemplate)

    async def read_resource(self, uri: str) -> t.ReadResourceResult:
        return _parse(t.ReadResourceResult, await self.request("resources/read", {"uri": uri}),
                      "resources/read")

    async def subscribe(self, uri: str) -> None:
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self) -> list[t.Prompt]:
        return await self._all_pages("prompts/list", "prompts", t.Prompt)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None
                         ) -> t.GetPromptResult:
        params: JSONObject = {"name": name}
        if arguments:
            params["arguments"] = arguments
        return _parse(t.GetPromptResult, await self.request("prompts/get", params),
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
        return _parse(t.Completion, res.get("completion", {}), "completion/complete")

    async def set_logging_level(self, level: str) -> None:
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
        if self.stateless_version is not None:
            self._log_level = level  # 2026-07-28: sent in every request's _meta
            return
        await self.request("logging/setLevel", {"level": level})

    def supports(self, capability: str) -> bool:
        """Whether the server declared ``capability`` (dotted, e.g. ``resources.subscribe``)."""
        return has_capability(self.server_capabilities, capability)


__all__ = [
    "CapabilityNotSupported",
    "Client",
    "HandshakeError",
    "ListenStream",
    "InvalidParams",
    "InvalidResult",
    "OutputSchemaError",
    "PaginationError",
    "ProtocolError",
    "ServerUnreachable",
]
