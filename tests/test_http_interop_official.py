"""Interop over Streamable HTTP with the official ``mcp`` Python SDK (2.3.0), both ways.

Part A: the official client (``streamable_http_client`` + ``ClientSession``, with
sampling, elicitation, logging and progress callbacks) drives examples/everything.py
served by real uvicorn on 127.0.0.1:

- as a subprocess (``python examples/everything.py --http --port N``), with the HTTP
  exchanges observed through httpx2 event hooks on the official client's HTTP client
  (which answers were JSON and which SSE, the session and version headers, the
  ``DELETE`` on close and the 404 for the ended session afterwards);
- in-process (uvicorn in a thread) behind ``tests/support/asgi_tap.AsgiTap``, so every
  message mcpkit's server put on the wire (JSON bodies and SSE events) is replayed
  through ``WireChecker(side="server")`` against the official schema of the negotiated
  revision, and the HTTP framing is checked (a POSTed request is answered on its own
  stream, the answer ends it, notifications get 202, SSE events carry ids).

The official client always offers ``LATEST_HANDSHAKE_VERSION`` (a module constant of
``mcp.client.session``); the older runs patch it, so the real client offers 2025-06-18
or 2025-03-26 (2024-11-05 has no Streamable HTTP).

Part B: mcpkit's ``Client`` drives tests/servers/official_http.py (``MCPServer`` served
with its own ``streamable_http_app()`` by uvicorn, in a subprocess), including the
server->client requests (sampling and elicitation on the tool call's SSE stream, roots
and ping on the standalone GET stream and on the request stream) answered by mcpkit's
handlers over HTTP. The fixture runs behind ``AsgiTap`` writing a log, which is
replayed through ``WireChecker(side="client")``; an httpx event hook on mcpkit's
``HttpClientTransport`` (the client's ``http_client``) records the HTTP requests it made. Every
session ends with the client's ``DELETE``, after which the server answers 404 for its
id. The last tests end the session behind the client's back: the next request gets 404
and the client must start exactly one new session (with its GET stream open before the
request is resent), however many requests were in flight.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp.client.session as mcp_client_session
import mcp.types as types
import pytest
import uvicorn
from anyio.abc import Process
from mcp import ClientSession
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT

from mcpkit import RemoteError, RequestTimeout
from mcpkit.client import Client, Http
from mcpkit.client import types as t
from tests.support.asgi_tap import AsgiTap, read_log
from tests.support.recording import Recording
from tests.support.schemas import WireChecker

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = ROOT / "examples" / "everything.py"
OFFICIAL_HTTP = ROOT / "tests" / "servers" / "official_http.py"

ORDER = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = "2025-11-25"
HTTP_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")  # newest first
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SAMPLED = "The answer is 4."
ROOT_URI = "file:///tmp/http-interop"
TEST_TIMEOUT = 45  # seconds per test (below pytest-timeout's 60)
SSE = "text/event-stream"
JSON = "application/json"

pytestmark = [
    pytest.mark.anyio,
    # logging/setLevel, sampling, roots and resources/(un)subscribe are deprecated by
    # the official SDK for 2026-07-28; they are current API at every revision here.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def at_least(version: str, minimum: str) -> bool:
    return ORDER.index(version) >= ORDER.index(minimum)


# ====================================================================== servers


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    url: str
    output: Any = None  # the subprocess's combined stdout/stderr (a temp file)

    def output_text(self) -> str:
        if self.output is None:
            return ""
        self.output.seek(0)
        return str(self.output.read())


async def wait_until_up(url: str, proc: Process | None, served: Served) -> None:
    """Until the endpoint answers HTTP at all (any status), bounded."""
    try:
        with anyio.fail_after(20):
            async with httpx.AsyncClient(timeout=2) as http:
                while True:
                    if proc is not None and proc.returncode is not None:
                        raise AssertionError(f"the server exited ({proc.returncode}):\n"
                                             f"{served.output_text()}")
                    try:
                        await http.get(f"{url}-probe")  # a 404, but an answer
                        return
                    except httpx.TransportError:
                        await anyio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"{url} did not answer within 20s:\n{served.output_text()}") from None


@asynccontextmanager
async def subprocess_server(argv: Callable[[int], list[str]]) -> AsyncIterator[Served]:
    """``python <argv(port)>`` on a free 127.0.0.1 port; killed (and reaped) on exit."""
    port = free_port()
    with tempfile.TemporaryFile("w+") as output:
        served = Served(f"http://127.0.0.1:{port}/mcp", output)
        proc = await anyio.open_process([sys.executable, *argv(port)], cwd=ROOT,
                                        stdin=subprocess.DEVNULL, stdout=output, stderr=output)
        try:
            await wait_until_up(served.url, proc, served)
            yield served
        finally:
            with anyio.CancelScope(shield=True):
                if proc.returncode is None:
                    proc.kill()
                with anyio.move_on_after(10):
                    await proc.wait()
                await proc.aclose()
            text = served.output_text()
            if text:
                print(f"--- server output ---\n{text}")


def load_everything() -> Any:
    """A fresh instance of examples/everything.py (its own Server and lifespan state)."""
    name = f"everything_http_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, EVERYTHING)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


@asynccontextmanager
async def threaded_server(app: Any) -> AsyncIterator[Served]:
    """Real uvicorn serving ``app`` on a pre-bound 127.0.0.1 socket, in its own thread."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan="on", log_level="warning", access_log=False,
                            timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    served = Served(f"http://127.0.0.1:{port}/mcp")
    try:
        with anyio.fail_after(10):
            while not server.started:
                if not thread.is_alive():
                    raise AssertionError("uvicorn stopped before it started")
                await anyio.sleep(0.02)
        await wait_until_up(served.url, None, served)
        yield served
    finally:
        server.should_exit = True
        await anyio.to_thread.run_sync(thread.join, 10)
        if thread.is_alive():
            server.force_exit = True
            await anyio.to_thread.run_sync(thread.join, 5)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not stop"


@asynccontextmanager
async def tapped_everything() -> AsyncIterator[tuple[Served, AsgiTap]]:
    tap = AsgiTap(load_everything().server.asgi_app("/mcp"))
    async with threaded_server(tap) as served:
        yield served, tap


# ====================================================================== HTTP observations


@dataclass
class Exchange:
    """One HTTP request a client made, and the head of the answer."""

    method: str
    request_headers: dict[str, str]
    body: Any  # the parsed JSON body (None without one)
    status: int
    response_headers: dict[str, str]

    @property
    def content_type(self) -> str:
        return self.response_headers.get("content-type", "").split(";")[0].strip()

    @property
    def rpc_method(self) -> str | None:
        return self.body.get("method") if isinstance(self.body, dict) else None


@dataclass
class HttpLog:
    """Event hooks (httpx and httpx2 alike) recording every exchange of a client."""

    exchanges: list[Exchange] = field(default_factory=list)

    async def on_response(self, response: Any) -> None:
        request = response.request
        content = request.content
        self.exchanges.append(Exchange(
            request.method,
            {k.lower(): v for k, v in request.headers.items()},
            json.loads(content) if content else None,
            response.status_code,
            {k.lower(): v for k, v in response.headers.items()},
        ))

    def hooks(self) -> dict[str, list[Any]]:
        return {"response": [self.on_response]}

    def posts(self, rpc_method: str, tool: str | None = None) -> list[Exchange]:
        return [x for x in self.exchanges if x.method == "POST" and x.rpc_method == rpc_method
                and (tool is None or x.body["params"]["name"] == tool)]

    def check_session_headers(self, version: str) -> str:
        """The session id came with the initialize answer and every later request carries
        it and the negotiated MCP-Protocol-Version; returns the session id."""
        init = self.exchanges[0]
        assert init.rpc_method == "initialize", init
        assert "mcp-session-id" not in init.request_headers
        assert init.status == 200
        sid = init.response_headers.get("mcp-session-id")
        assert sid, "the initialize answer carried no Mcp-Session-Id"
        for x in self.exchanges[1:]:
            assert x.request_headers.get("mcp-session-id") == sid, (x.method, x.body)
            assert x.request_headers.get("mcp-protocol-version") == version, (x.method, x.body)
        for x in self.exchanges:
            if x.method == "POST":
                accept = x.request_headers["accept"]
                assert JSON in accept and SSE in accept
                assert x.request_headers["content-type"].startswith(JSON)
        return sid


async def session_is_gone(url: str, sid: str, version: str) -> None:
    """The server refuses a terminated session: 404 for POST, GET and DELETE alike."""
    headers = {"mcp-session-id": sid, "mcp-protocol-version": version,
               "accept": f"{JSON}, {SSE}", "content-type": JSON}
    with anyio.fail_after(10):
        async with httpx.AsyncClient(timeout=5) as http:
            post = await http.post(url, headers=headers, content=json.dumps(
                {"jsonrpc": "2.0", "id": 99, "method": "tools/list"}))
            assert post.status_code == 404, (post.status_code, post.text)
            get = await http.get(url, headers={**headers, "accept": SSE})
            assert get.status_code == 404, (get.status_code, get.text)
            delete = await http.delete(url, headers=headers)
            assert delete.status_code == 404, (delete.status_code, delete.text)


# ====================================================================== part A: the client


@dataclass
class Callbacks(Recording):
    """What the official client's callbacks saw."""

    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)
    logs: list[types.LoggingMessageNotificationParams] = field(default_factory=list)
    sampling: list[types.CreateMessageRequestParams] = field(default_factory=list)
    elicitation: list[types.ElicitRequestParams] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    transport_errors: list[Exception] = field(default_factory=list)




    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self._record(self.progress, (progress, total, message))

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self._record(self.logs, params)

    async def on_sampling(self, context: ClientRequestContext,
                          params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self._record(self.sampling, params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=SAMPLED),
            model="http-interop-model", stop_reason="endTurn")

    async def on_elicitation(self, context: ClientRequestContext,
                             params: types.ElicitRequestParams) -> types.ElicitResult:
        self._record(self.elicitation, params)
        assert isinstance(params, types.ElicitRequestFormParams)
        return types.ElicitResult(action="accept", content={"response": "over http"})

    async def on_message(self, message: Exception | Any) -> None:
        if isinstance(message, Exception):
            self._record(self.transport_errors, message)
        elif isinstance(message, types.ResourceUpdatedNotification):
            self._record(self.updated, str(message.params.uri))


@asynccontextmanager
async def official_client(url: str, version: str, monkeypatch: pytest.MonkeyPatch,
                          cb: Callbacks, log: HttpLog) -> AsyncIterator[ClientSession]:
    """The official Streamable HTTP client + ClientSession offering ``version``; its
    httpx2 client records every exchange in ``log``. Closing it ends the session."""
    # What ClientSession.initialize() offers; see the module docstring.
    monkeypatch.setattr(mcp_client_session, "LATEST_HANDSHAKE_VERSION", version)
    http = create_mcp_http_client()
    http.event_hooks = log.hooks()
    async with http, streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(
            read, write, read_timeout_seconds=20,
            sampling_callback=cb.on_sampling, elicitation_callback=cb.on_elicitation,
            logging_callback=cb.on_log, message_handler=cb.on_message,
            client_info=types.Implementation(name="official-http-interop", version="2.3.0"),
        ) as session:
            init = await session.initialize()
            assert init.protocol_version == version
            yield session
            assert cb.transport_errors == []


def text_of(block: Any) -> str:
    assert isinstance(block, types.TextContent), block
    return block.text


async def expect_error(code: int, call: Any) -> MCPError:
    with pytest.raises(MCPError) as info:
        await call
    assert info.value.code == code, info.value
    return info.value


async def drive_everything(session: ClientSession, cb: Callbacks, version: str) -> None:
    """Every feature of everything.py through the official client (any transport)."""
    init = session.initialize_result
    assert init is not None
    assert init.server_info.name == "mcpkit-everything"
    assert init.instructions and "test_" in init.instructions
    caps = init.capabilities
    assert caps.tools is not None and caps.prompts is not None and caps.logging is not None
    assert caps.resources is not None and caps.resources.subscribe is True
    assert caps.completions is not None  # completions exist from 2025-03-26 on
    assert (init.server_info.title == "mcpkit everything server") == at_least(version,
                                                                              "2025-06-18")
    assert isinstance(await session.send_ping(), types.EmptyResult)

    # -- tools
    listing = await session.list_tools()
    tools = {tool.name: tool for tool in listing.tools}
    assert {"echo", "add", "test_tool_with_progress", "test_tool_with_logging",
            "test_sampling", "test_elicitation", "test_image_content"} <= set(tools)
    add = tools["add"]
    assert add.input_schema["properties"]["a"]["type"] == "integer"
    assert add.annotations is not None and add.annotations.read_only_hint is True
    if at_least(version, "2025-06-18"):
        assert add.output_schema is not None
        assert add.output_schema["properties"]["result"]["type"] == "integer"
    else:
        assert add.output_schema is None

    res = await session.call_tool("add", {"a": 1, "b": 2})
    assert not res.is_error and text_of(res.content[0]) == "3"
    expected = {"result": 3} if at_least(version, "2025-06-18") else None
    assert res.structured_content == expected

    res = await session.call_tool("echo", {"text": "hello over http ✓"})
    assert [text_of(b) for b in res.content] == ["hello over http ✓"]

    res = await session.call_tool("test_image_content", {})
    (image,) = res.content
    assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(PNG_MAGIC)

    res = await session.call_tool("test_error_handling", {})
    assert res.is_error and "intentionally returns an error" in text_of(res.content[0])
    await expect_error(-32602, session.call_tool("no_such_tool", {}))

    # -- progress: notifications on the tools/call's SSE stream reach the callback
    res = await session.call_tool("test_tool_with_progress", {},
                                  progress_callback=cb.on_progress)
    assert not res.is_error
    await cb.wait_until(lambda: len(cb.progress) >= 3, "three progress notifications")
    assert [(p, total) for p, total, _ in cb.progress] == [(0, 100), (50, 100), (100, 100)]
    assert [m for _, _, m in cb.progress] == [f"Completed step {s} of 100" for s in (0, 50, 100)]

    # -- logging: three info messages on the call's stream; at "error" none
    await session.set_logging_level("info")
    res = await session.call_tool("test_tool_with_logging", {})
    assert text_of(res.content[0]) == "Tool with logging executed successfully"
    await cb.wait_until(lambda: len(cb.logs) >= 3, "three log messages")
    assert [(m.level, m.data) for m in cb.logs] == [
        ("info", "Tool execution started"), ("info", "Tool processing data"),
        ("info", "Tool execution completed")]
    await session.set_logging_level("error")
    res = await session.call_tool("test_tool_with_logging", {})
    assert not res.is_error
    await anyio.sleep(0.1)
    assert len(cb.logs) == 3

    # -- sampling: the server's request rides the call's SSE stream, the answer is POSTed
    res = await session.call_tool("test_sampling", {"prompt": "What is 2+2?"})
    assert not res.is_error, res
    assert text_of(res.content[0]) == f"LLM response: {SAMPLED}"
    (asked,) = cb.sampling
    assert asked.max_tokens == 100
    assert text_of(asked.messages[0].content) == "What is 2+2?"

    # -- elicitation (2025-06-18 on; before that the server must not send it)
    res = await session.call_tool("test_elicitation", {"message": "Say something"})
    if at_least(version, "2025-06-18"):
        assert not res.is_error, res
        (asked_user,) = cb.elicitation
        assert isinstance(asked_user, types.ElicitRequestFormParams)
        assert asked_user.message == "Say something"
        assert text_of(res.content[0]) == (
            "User response: action=accept, content={'response': 'over http'}")
    else:
        assert res.is_error and cb.elicitation == []
        assert "elicitation/create" in text_of(res.content[0])

    # -- resources
    listing_r = await session.list_resources()
    assert {"test://static-text", "test://static-binary"} <= {
        str(r.uri) for r in listing_r.resources}
    read = await session.read_resource("test://static-text")
    (text,) = read.contents
    assert isinstance(text, types.TextResourceContents)
    assert text.text == "This is the content of the static text resource."
    assert text.mime_type == "text/plain"
    read = await session.read_resource("test://static-binary")
    (blob,) = read.contents
    assert isinstance(blob, types.BlobResourceContents) and blob.mime_type == "image/png"
    assert base64.b64decode(blob.blob).startswith(PNG_MAGIC)
    read = await session.read_resource("test://template/42/data")
    (templated,) = read.contents
    assert isinstance(templated, types.TextResourceContents)
    assert str(templated.uri) == "test://template/42/data"
    assert json.loads(templated.text) == {"id": "42", "templateTest": True,
                                          "data": "Data for ID: 42"}
    err = await expect_error(-32002, session.read_resource("test://no-such-resource"))
    assert "test://no-such-resource" in err.message
    templates = await session.list_resource_templates()
    assert "test://template/{id}/data" in {x.uri_template for x in templates.resource_templates}

    # -- prompts
    prompts = {p.name: p for p in (await session.list_prompts()).prompts}
    assert {"test_simple_prompt", "test_prompt_with_arguments"} <= set(prompts)
    got = await session.get_prompt("test_simple_prompt")
    assert [text_of(m.content) for m in got.messages] == ["This is a simple prompt for testing."]
    got = await session.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
    assert [text_of(m.content) for m in got.messages] == [
        "Prompt with arguments: arg1='a', arg2='b'"]
    await expect_error(-32602, session.get_prompt("test_prompt_with_arguments", {"arg1": "x"}))

    # -- completion
    ref = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
    done = await session.complete(ref, {"name": "arg1", "value": "a"})
    assert done.completion.values == ["alpha"]
    template = types.ResourceTemplateReference(type="ref/resource",
                                               uri="test://template/{id}/data")
    done = await session.complete(template, {"name": "id", "value": "4"})
    assert done.completion.values == ["42"]

    assert isinstance(await session.send_ping(), types.EmptyResult)


@pytest.mark.parametrize("version", HTTP_VERSIONS)
async def test_official_client_drives_everything_over_http(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/everything.py as its own uvicorn process, the official client over TCP."""
    cb = Callbacks()
    log = HttpLog()
    with anyio.fail_after(TEST_TIMEOUT):
        async with subprocess_server(
            lambda port: [str(EVERYTHING), "--http", "--port", str(port)]
        ) as served:
            async with official_client(served.url, version, monkeypatch, cb, log) as session:
                await drive_everything(session, cb, version)
            sid = log.check_session_headers(version)

            # the session ended with the client: DELETE, and the id is refused afterwards
            last = log.exchanges[-1]
            assert (last.method, last.status) == ("DELETE", 200)
            await session_is_gone(served.url, sid, version)

    # how the answers travelled: plain results as JSON, streams for what the tool emits
    (init,) = log.posts("initialize")
    assert init.content_type == JSON
    (initialized,) = log.posts("notifications/initialized")
    assert initialized.status == 202
    gets = [x for x in log.exchanges if x.method == "GET"]
    assert gets and gets[0].status == 200 and gets[0].content_type == SSE
    assert {x.content_type for x in log.posts("tools/call", "add")} == {JSON}
    assert {x.content_type for x in log.posts("tools/list")} == {JSON}
    for tool in ("test_tool_with_progress", "test_sampling"):
        assert [x.content_type for x in log.posts("tools/call", tool)] == [SSE], tool
    # the first logging call streams its log messages; the second, at level error,
    # has nothing to stream before its result
    assert [x.content_type for x in log.posts("tools/call", "test_tool_with_logging")] == [
        SSE, JSON]
    answers = [x for x in log.exchanges if x.method == "POST" and isinstance(x.body, dict)
               and "method" not in x.body]
    expected = 2 if at_least(version, "2025-06-18") else 1  # sampling (+ elicitation)
    assert len(answers) == expected and {x.status for x in answers} == {202}


# ---------------------------------------------------------------------- the tapped wire


@dataclass
class Wire:
    entries: list[dict[str, Any]]
    checker: WireChecker

    def requests(self) -> dict[int, dict[str, Any]]:
        return {e["n"]: e for e in self.entries if e["ev"] == "request"}

    def responses(self) -> dict[int, dict[str, Any]]:
        return {e["n"]: e for e in self.entries if e["ev"] == "response"}

    def of(self, n: int, ev: str) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["n"] == n and e["ev"] == ev]

    def posted(self) -> list[tuple[int, Any]]:
        return [(e["n"], e["msg"]) for e in self.entries if e["ev"] == "c2s"]

    def server_messages(self) -> list[dict[str, Any]]:
        return [e["msg"] for e in self.entries if e["ev"] == "s2c"]


def mcp_exchanges(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries of exchanges with the /mcp endpoint (not the start-up probe)."""
    probes = {e["n"] for e in entries if e["ev"] == "request" and e["path"] != "/mcp"}
    return [e for e in entries if e["n"] not in probes]


def until_delete(entries: list[dict[str, Any]], sid: str) -> list[dict[str, Any]]:
    """The entries before the client's DELETE of session ``sid``."""
    end = next(i for i, e in enumerate(entries) if e["ev"] == "request"
               and e["method"] == "DELETE" and e["headers"].get("mcp-session-id") == sid)
    return entries[:end]


def replay_server_side(entries: list[dict[str, Any]]) -> Wire:
    """Every message mcpkit's server sent (JSON bodies and SSE data) through WireChecker."""
    entries = mcp_exchanges(entries)
    bad = [e for e in entries if e["ev"] in ("c2s", "s2c") and "msg" not in e]
    assert not bad, f"bodies or SSE data that are not JSON: {bad[:3]}"
    checker = WireChecker("server")
    for e in entries:
        if e["ev"] == "c2s":
            checker.saw_peer(e["msg"])
        elif e["ev"] == "s2c":
            assert e["status"] == 200, e  # no HTTP errors in a good session
            checker.check(e["msg"])  # raises SchemaViolation
    return Wire(entries, checker)


def check_server_framing(wire: Wire, version: str) -> None:
    """What a schema cannot see: which HTTP answer carried which message."""
    requests, responses = wire.requests(), wire.responses()
    sid = None
    init_n = None
    event_ids: list[str] = []
    for n, msg in wire.posted():
        head = responses[n]
        if isinstance(msg, dict) and "method" in msg and "id" in msg:
            on_stream = wire.of(n, "s2c")
            finals = [e["msg"] for e in on_stream if "method" not in e["msg"]]
            # exactly one answer, to this request, on this POST's own answer, last
            assert finals == [on_stream[-1]["msg"]], (msg, on_stream)
            assert finals[0]["id"] == msg["id"]
            assert wire.of(n, "end"), f"the answer to {msg['method']} did not end"
            ctype = head["headers"]["content-type"].split(";")[0]
            if ctype == SSE:
                events = [e for e in wire.entries if e["n"] == n
                          and e["ev"] in ("sse-prime", "s2c", "end")]
                # from 2025-11-25 on, a priming event (id + retry, no data) first (older
                # clients choke on empty data, so before that the first message carries the
                # retry); the answer last, then the end
                if version == "2025-11-25":
                    assert events[0]["ev"] == "sse-prime", events[:2]
                else:
                    assert all(e["ev"] != "sse-prime" for e in events), events[:2]
                assert events[0]["id"], events[0]
                if version == "2025-11-25":
                    assert events[0]["retry"], events[0]
                assert [e["ev"] for e in events[-2:]] == ["s2c", "end"], events[-2:]
                assert all(e["id"] for e in on_stream), "an SSE event without an id"
                assert {e["event"] for e in on_stream} == {"message"}
                event_ids.extend(e["id"] for e in events if e["ev"] != "end")
                token = (msg.get("params") or {}).get("_meta", {}).get("progressToken")
                for e in on_stream[:-1]:  # what the handler emitted belongs to it
                    m = e["msg"]
                    if m["method"] == "notifications/progress":
                        assert m["params"]["progressToken"] == token
                    else:
                        assert m["method"] in ("notifications/message",
                                               "sampling/createMessage", "elicitation/create")
            else:
                assert ctype == JSON and len(on_stream) == 1, (msg, on_stream)
            if msg["method"] == "initialize":
                sid, init_n = head["headers"]["mcp-session-id"], n
                assert ctype == JSON
                assert msg["params"]["protocolVersion"] == version
                assert finals[0]["result"]["protocolVersion"] == version
        else:  # notifications and the client's answers: 202, no body
            assert head["status"] == 202, (msg, head)
            assert wire.of(n, "s2c") == []
    assert sid
    assert len(event_ids) == len(set(event_ids)), "SSE event ids repeat within the session"
    for n, req in requests.items():
        if n != init_n:
            assert req["headers"].get("mcp-session-id") == sid
    # the standalone GET stream carries no answers
    for n, req in requests.items():
        if req["method"] == "GET":
            assert responses[n]["status"] == 200
            assert all("method" in e["msg"] for e in wire.of(n, "s2c"))


@pytest.mark.parametrize("version", HTTP_VERSIONS)
async def test_everything_over_http_wire_is_schema_valid(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same flow against everything.py's ASGI app behind AsgiTap (uvicorn in a
    thread): every server message is valid for the negotiated revision, and framed right."""
    cb = Callbacks()
    log = HttpLog()
    with anyio.fail_after(TEST_TIMEOUT):
        async with tapped_everything() as (served, tap):
            async with official_client(served.url, version, monkeypatch, cb, log) as session:
                await drive_everything(session, cb, version)
            sid = log.check_session_headers(version)
            await session_is_gone(served.url, sid, version)
            entries = list(tap.entries)

    wire = replay_server_side(until_delete(entries, sid))
    assert wire.checker.revision == version
    assert wire.checker.checked >= 34, f"only {wire.checker.checked} server messages checked"
    check_server_framing(wire, version)
    methods = [m["method"] for m in wire.server_messages() if "method" in m]
    assert methods.count("notifications/progress") == 3
    assert methods.count("notifications/message") == 3  # none at level "error"
    assert methods.count("sampling/createMessage") == 1
    assert methods.count("elicitation/create") == (1 if at_least(version, "2025-06-18") else 0)
    results = [m["result"] for m in wire.server_messages() if "result" in m]
    if not at_least(version, "2025-06-18"):
        assert not any("structuredContent" in r for r in results)
        assert not any("outputSchema" in tool for r in results for tool in r.get("tools", []))
    # the DELETE ended the session in the app too
    deletes = [e["n"] for e in entries if e["ev"] == "request" and e["method"] == "DELETE"
               and e["headers"].get("mcp-session-id") == sid]
    statuses = [e["status"] for n in deletes for e in entries
                if e["ev"] == "response" and e["n"] == n]
    assert statuses == [200, 404]  # the client's DELETE, then session_is_gone's


async def test_resource_updates_arrive_on_the_get_stream(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notification unrelated to any request (everything.py updates
    test://watched-resource every 3 s) reaches the subscriber on the standalone GET stream."""
    cb = Callbacks()
    log = HttpLog()
    with anyio.fail_after(TEST_TIMEOUT):
        async with tapped_everything() as (served, tap):
            async with official_client(served.url, LATEST, monkeypatch, cb, log) as session:
                await session.subscribe_resource("test://watched-resource")
                await cb.wait_until(lambda: bool(cb.updated), "notifications/resources/updated",
                                    timeout=10)
                assert cb.updated[0] == "test://watched-resource"
                await session.unsubscribe_resource("test://watched-resource")
            entries = list(tap.entries)
    wire = replay_server_side(entries)
    (get,) = [n for n, r in wire.requests().items() if r["method"] == "GET"]
    updates = [e for e in wire.of(get, "s2c")
               if e["msg"].get("method") == "notifications/resources/updated"]
    assert updates and updates[0]["msg"]["params"] == {"uri": "test://watched-resource"}
    assert updates[0]["id"], "a GET stream event without an id cannot be resumed"


async def test_official_client_cancels_over_http(monkeypatch: pytest.MonkeyPatch) -> None:
    """The official client gives up on a slow call and POSTs notifications/cancelled;
    the server never answers that request and the session keeps working."""
    cb = Callbacks()
    log = HttpLog()
    with anyio.fail_after(TEST_TIMEOUT):
        async with tapped_everything() as (served, tap):
            async with official_client(served.url, LATEST, monkeypatch, cb, log) as session:
                await expect_error(REQUEST_TIMEOUT, session.call_tool(
                    "sleep", {"seconds": 30}, read_timeout_seconds=0.5))
                res = await session.call_tool("echo", {"text": "still here"})
                assert [text_of(b) for b in res.content] == ["still here"]
                await anyio.sleep(0.3)
                assert isinstance(await session.send_ping(), types.EmptyResult)
            entries = list(tap.entries)
    wire = replay_server_side(entries)
    (sleep_id,) = [m["id"] for _, m in wire.posted()
                   if m.get("method") == "tools/call" and m["params"]["name"] == "sleep"]
    cancels = [(n, m) for n, m in wire.posted() if m.get("method") == "notifications/cancelled"]
    assert [m["params"]["requestId"] for _, m in cancels] == [sleep_id]
    assert wire.responses()[cancels[0][0]]["status"] == 202
    answered = [m for m in wire.server_messages() if "method" not in m and m.get("id") == sleep_id]
    assert answered == [], "the server answered a cancelled request"


# ====================================================================== part B


@dataclass
class Recorder(Recording):
    """What mcpkit's client handlers saw."""

    sampling: list[dict[str, Any]] = field(default_factory=list)
    elicitation: list[dict[str, Any]] = field(default_factory=list)
    logs: list[dict[str, Any]] = field(default_factory=list)
    notifications: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)
    roots_asked: int = 0




    async def on_sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        self._record(self.sampling, params)
        return {"role": "assistant", "content": {"type": "text", "text": SAMPLED},
                "model": "mcpkit-http-model", "stopReason": "endTurn"}

    async def on_elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        self._record(self.elicitation, params)
        return {"action": "accept", "content": {"name": "Ada", "guests": 4}}

    def roots(self) -> list[Any]:
        self.roots_asked += 1
        return [{"uri": ROOT_URI, "name": "project"}]

    async def on_log(self, params: dict[str, Any]) -> None:
        self._record(self.logs, params)

    async def on_notification(self, method: str, params: dict[str, Any]) -> None:
        self._record(self.notifications, (method, params))

    async def on_progress(self, progress: float, total: float | None,
                          message: str | None) -> None:
        self._record(self.progress, (progress, total, message))


class LoggedHttpClient(Client):
    """mcpkit's ``Client`` over Streamable HTTP whose httpx client records exchanges."""

    def __init__(self, url: str, log: HttpLog, **options: Any) -> None:
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(options.get("timeout", 30.0),
                                                            read=None),
                                      event_hooks=log.hooks())
        super().__init__(Http(url, http_client=self.http), **options)
        self.http_log = log

    async def __aexit__(self, *exc: object) -> None:
        try:
            await super().__aexit__(*exc)
        finally:
            await self.http.aclose()  # after the transport's own aclose (DELETE)


@dataclass
class BRun:
    client: LoggedHttpClient
    rec: Recorder
    http: HttpLog
    url: str
    tap_log: Path
    session_id: str | None = None  # the first session's
    final_session_id: str | None = None  # the session's when the client closed
    wire: Wire | None = None


def replay_client_side(entries: list[dict[str, Any]], revision: str | None) -> Wire:
    """Every message mcpkit's client POSTed through WireChecker(side="client")."""
    entries = mcp_exchanges(entries)
    bad = [e for e in entries if e["ev"] in ("c2s", "s2c") and "msg" not in e]
    assert not bad, f"bodies or SSE data that are not JSON: {bad[:3]}"
    checker = WireChecker("client", revision=revision)
    for e in entries:
        if e["ev"] == "c2s":
            checker.check(e["msg"])  # raises SchemaViolation
        elif e["ev"] == "s2c":
            checker.saw_peer(e["msg"])
    return Wire(entries, checker)


@asynccontextmanager
async def mcpkit_client(tmp_path: Path, *, version: str | None = None, json_mode: bool = False,
                        **options: Any) -> AsyncIterator[BRun]:
    """mcpkit's Client against tests/servers/official_http.py (a tapped subprocess). On a
    clean exit the tap log is replayed (``run.wire``) and the ended session is probed."""
    tap_log = tmp_path / "official-http-tap.jsonl"
    extra = ["--json"] if json_mode else []
    async with subprocess_server(
        lambda port: [str(OFFICIAL_HTTP), str(port), "--tap", str(tap_log), *extra]
    ) as served:
        rec, http = Recorder(), HttpLog()
        client = LoggedHttpClient(
            served.url, http, sampling=rec.on_sampling, elicitation=rec.on_elicitation,
            roots=rec.roots, on_log=rec.on_log, on_notification=rec.on_notification,
            protocol_version=version, timeout=15.0, **options)
        run = BRun(client, rec, http, served.url, tap_log)
        async with client:
            assert client.http_transport is not None
            run.session_id = client.http_transport.session_id
            assert run.session_id
            yield run
            run.final_session_id = client.http_transport.session_id
        entries = read_log(tap_log)
        # the DELETE went out when the client closed, and ended the session
        last = http.exchanges[-1]
        assert (last.method, last.status) == ("DELETE", 200), last
        assert last.request_headers["mcp-session-id"] == run.final_session_id
        assert run.final_session_id
        await session_is_gone(served.url, run.final_session_id, client_version(entries))
    run.wire = replay_client_side(entries, version)
    negotiated = version or LATEST
    assert run.wire.checker.revision == negotiated
    if run.final_session_id == run.session_id:  # (not when the test ended one itself)
        assert http.check_session_headers(negotiated) == run.session_id


def client_version(entries: list[dict[str, Any]]) -> str:
    init = next(e for e in mcp_exchanges(entries) if e["ev"] == "s2c" and "result" in e["msg"])
    return str(init["msg"]["result"]["protocolVersion"])


def answers_to(wire: Wire, method: str) -> list[tuple[int, dict[str, Any]]]:
    """(exchange, message) for each answer the client POSTed to a server ``method``."""
    ids = {m["id"] for m in wire.server_messages() if m.get("method") == method and "id" in m}
    return [(n, m) for n, m in wire.posted() if "method" not in m and m.get("id") in ids]


def where_sent(wire: Wire, method: str) -> list[str]:
    """For each server request ``method``: the HTTP method of the exchange carrying it."""
    requests = wire.requests()
    return [requests[e["n"]]["method"] for e in wire.entries
            if e["ev"] == "s2c" and e["msg"].get("method") == method]


async def test_mcpkit_client_drives_official_http_server(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with mcpkit_client(tmp_path) as run:
            client, rec = run.client, run.rec
            assert client.protocol_version == LATEST
            assert client.server_info == {"name": "official-http", "version": "2.3.0-http"}
            assert client.instructions and "official-SDK" in client.instructions
            for cap in ("tools", "resources", "resources.subscribe", "prompts", "logging",
                        "completions"):
                assert client.supports(cap), cap
            await client.ping()

            # -- tools
            tools = {tool.name: tool for tool in await client.list_tools()}
            assert {"echo", "add", "slow_count", "chatter", "broadcast", "ask_llm",
                    "book_table", "show_roots", "show_roots_here", "ping_client"} <= set(tools)
            assert tools["add"].title == "Add two integers"
            assert tools["add"].output_schema is not None
            res = await client.call_tool("add", {"a": 2, "b": 3})
            assert not res.is_error and res.structured_content == {"a": 2, "b": 3, "sum": 5}
            res = await client.call_tool("echo", {"text": "héllo over http ✓"})
            assert res.text == "héllo over http ✓"
            res = await client.call_tool("pixel")
            (image,) = res.content
            assert isinstance(image, t.ImageContent) and image.mime_type == "image/png"
            assert base64.b64decode(image.data).startswith(PNG_MAGIC)
            res = await client.call_tool("fail", {"reason": "bad input"})
            assert res.is_error and "failed on purpose: bad input" in res.text

            # -- progress (SSE)
            res = await client.call_tool("slow_count", {"steps": 3},
                                         on_progress=rec.on_progress)
            assert res.text == "counted to 3"
            await rec.wait_until(lambda: len(rec.progress) >= 3, "3 progress notifications")
            assert rec.progress == [(i, 3, f"step {i}/3") for i in (1, 2, 3)]

            # -- logging: on the call's stream, and on the standalone GET stream
            await client.set_logging_level("debug")
            assert (await client.call_tool("chatter", {"text": "hi"})).text == "logged"
            await rec.wait_until(lambda: len(rec.logs) >= 3, "3 log messages")
            assert rec.logs == [
                {"level": "debug", "data": "debug: hi"},
                {"level": "info", "data": "info: hi"},
                {"level": "warning", "logger": "chatter", "data": {"warning": "hi"}},
            ]
            assert (await client.call_tool("broadcast", {"text": "all"})).text == "sent"
            await rec.wait_until(lambda: len(rec.logs) >= 4, "the broadcast log message")
            assert rec.logs[3] == {"level": "notice", "logger": "broadcast",
                                   "data": "broadcast: all"}

            # -- server->client requests answered by mcpkit's handlers over HTTP
            res = await client.call_tool("ask_llm", {"question": "What is 2+2?"})
            assert not res.is_error, res.text
            assert json.loads(res.text) == {"model": "mcpkit-http-model", "role": "assistant",
                                            "text": SAMPLED, "stopReason": "endTurn"}
            (sampled,) = rec.sampling
            assert sampled["maxTokens"] == 64 and sampled["systemPrompt"] == "Answer briefly."
            assert sampled["messages"] == [
                {"role": "user", "content": {"type": "text", "text": "What is 2+2?"}}]

            res = await client.call_tool("book_table", {"date": "2030-01-01"})
            assert json.loads(res.text) == {"action": "accept", "name": "Ada", "guests": 4,
                                            "vegetarian": False}
            (asked,) = rec.elicitation
            assert asked["message"] == "Book a table on 2030-01-01?"
            assert asked["defaults"] == {"guests": 2, "vegetarian": False}

            expected_roots = [{"uri": ROOT_URI, "name": "project"}]
            assert json.loads((await client.call_tool("show_roots")).text) == expected_roots
            assert json.loads((await client.call_tool("show_roots_here")).text) == \
                expected_roots
            assert rec.roots_asked == 2
            assert (await client.call_tool("ping_client")).text == "pong"

            # -- resources and subscriptions
            resources = await client.list_resources()
            assert [(r.uri, r.name, r.mime_type) for r in resources] == [
                ("info://server", "server-info", "application/json")]
            templates = await client.list_resource_templates()
            assert [x.uri_template for x in templates] == ["greeting://{name}"]
            read = await client.read_resource("info://server")
            assert json.loads(read.contents[0].text or "") == {"sdk": "mcp",
                                                               "transport": "streamable-http"}
            read = await client.read_resource("greeting://Grace")
            assert [(c.uri, c.text) for c in read.contents] == [
                ("greeting://Grace", "Hello, Grace!")]
            with pytest.raises(RemoteError):
                await client.read_resource("nothing://here")
            await client.subscribe("info://server")
            assert (await client.call_tool("touch", {"uri": "info://server"})).text == "notified"
            await rec.wait_until(
                lambda: ("notifications/resources/updated", {"uri": "info://server"})
                in rec.notifications, "notifications/resources/updated")
            await client.unsubscribe("info://server")
            status = json.loads((await client.call_tool("status")).text)
            assert status == {"level": "debug", "subscriptions": []}

            # -- prompts and completion
            (review,) = await client.list_prompts()
            assert review.name == "review" and review.title == "Review code"
            got = await client.get_prompt("review", {"code": "fn main() {}",
                                                     "language": "rust"})
            assert [m.role for m in got.messages] == ["user", "assistant"]
            assert isinstance(got.messages[0].content, t.TextContent)
            assert got.messages[0].content.text == "Please review this rust code:\nfn main() {}"
            with pytest.raises(RemoteError):
                await client.get_prompt("review")
            done = await client.complete({"type": "ref/prompt", "name": "review"}, "language",
                                         "r", {"code": "fn main() {}"})
            assert done.values == ["rust"]
            done = await client.complete({"type": "ref/resource", "uri": "greeting://{name}"},
                                         "name", "al")
            assert done.values == ["alice", "albert"]
            await client.ping()

    wire = run.wire
    assert wire is not None
    assert wire.checker.checked >= 35, f"only {wire.checker.checked} client messages checked"
    # where the official server put its requests, and how mcpkit's answers went back
    assert where_sent(wire, "sampling/createMessage") == ["POST"]
    assert where_sent(wire, "elicitation/create") == ["POST"]
    assert sorted(where_sent(wire, "roots/list")) == ["GET", "POST"]
    assert where_sent(wire, "ping") == ["GET"]
    responses = wire.responses()
    for method in ("sampling/createMessage", "elicitation/create", "roots/list", "ping"):
        answers = answers_to(wire, method)
        assert answers, method
        for n, msg in answers:
            assert "result" in msg, msg
            assert responses[n]["status"] == 202, (method, responses[n])
    (_, elicited), = answers_to(wire, "elicitation/create")
    assert elicited["result"] == {"action": "accept",
                                  "content": {"guests": 4, "vegetarian": False, "name": "Ada"}}
    assert [m["result"] for _, m in answers_to(wire, "roots/list")] == [
        {"roots": [{"uri": ROOT_URI, "name": "project"}]}] * 2
    # the GET stream opened right after notifications/initialized, before anything else
    assert [(x.method, x.rpc_method) for x in run.http.exchanges[:3]] == [
        ("POST", "initialize"), ("POST", "notifications/initialized"), ("GET", None)]
    assert run.http.exchanges[2].content_type == SSE


@pytest.mark.parametrize("version", ("2025-06-18", "2025-03-26"))
async def test_mcpkit_client_older_revisions_over_http(tmp_path: Path, version: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with mcpkit_client(tmp_path, version=version) as run:
            client, rec = run.client, run.rec
            assert client.protocol_version == version
            await client.ping()
            res = await client.call_tool("add", {"a": 40, "b": 2})
            assert json.loads(res.text)["sum"] == 42
            res = await client.call_tool("slow_count", {"steps": 2},
                                         on_progress=rec.on_progress)
            assert res.text == "counted to 2"
            await rec.wait_until(lambda: len(rec.progress) >= 2, "2 progress notifications")
            res = await client.call_tool("ask_llm", {"question": "2+2?"})
            assert json.loads(res.text)["text"] == SAMPLED
            assert json.loads((await client.call_tool("show_roots")).text)[0]["uri"] == ROOT_URI
            if at_least(version, "2025-06-18"):
                res = await client.call_tool("book_table", {"date": "2030-01-01"})
                assert json.loads(res.text)["name"] == "Ada"
            else:  # no elicitation before 2025-06-18: not declared, refused
                with pytest.raises(RemoteError) as info:
                    await client.call_tool("book_table", {"date": "2030-01-01"})
                assert info.value.code == -32601
                assert rec.elicitation == []
            read = await client.read_resource("greeting://Old")
            assert read.contents[0].text == "Hello, Old!"
            got = await client.get_prompt("review", {"code": "x"})
            assert [m.role for m in got.messages] == ["user", "assistant"]
    assert run.wire is not None
    assert run.wire.checker.checked >= 12
    init = run.wire.posted()[0][1]
    assert init["params"]["protocolVersion"] == version
    assert ("elicitation" in init["params"]["capabilities"]) == at_least(version, "2025-06-18")


async def test_mcpkit_client_with_json_responses(tmp_path: Path) -> None:
    """The official server answering every POST with application/json (json_response)."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with mcpkit_client(tmp_path, json_mode=True) as run:
            client = run.client
            res = await client.call_tool("add", {"a": 1, "b": 1})
            assert res.structured_content == {"a": 1, "b": 1, "sum": 2}
            assert json.loads((await client.call_tool("show_roots")).text)[0]["uri"] == ROOT_URI
            assert (await client.call_tool("ping_client")).text == "pong"
            read = await client.read_resource("greeting://Json")
            assert read.contents[0].text == "Hello, Json!"
    assert run.wire is not None
    calls = run.http.posts("tools/call")
    assert calls and {x.content_type for x in calls} == {JSON}


async def test_mcpkit_client_timeout_cancels_over_http(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with mcpkit_client(tmp_path) as run:
            client = run.client
            with pytest.raises(RequestTimeout):
                await client.call_tool("nap", {"seconds": 30}, timeout=0.5)
            await client.ping()
            assert (await client.call_tool("echo", {"text": "still here"})).text == "still here"
    assert run.wire is not None
    (nap,) = [m for _, m in run.wire.posted()
              if m.get("method") == "tools/call" and m["params"]["name"] == "nap"]
    cancels = [(n, m) for n, m in run.wire.posted()
               if m.get("method") == "notifications/cancelled"]
    assert [m["params"]["requestId"] for _, m in cancels] == [nap["id"]]
    assert run.wire.responses()[cancels[0][0]]["status"] == 202


async def test_mcpkit_client_initialize_word_does_not_block_the_session(tmp_path: Path) -> None:
    """A request whose *arguments* contain the JSON string "initialize" must be sent like
    any other: while the server waits on that call for a sampling answer, the client must
    still be able to POST the answer."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with mcpkit_client(tmp_path) as run:
            res = await run.client.call_tool("ask_llm", {"question": "initialize"},
                                             timeout=10)
            assert json.loads(res.text)["text"] == SAMPLED
            assert run.rec.sampling[0]["messages"][0]["content"]["text"] == "initialize"



async def test_mcpkit_client_starts_a_new_session_after_404(tmp_path: Path) -> None:
    """The official server forgets the session (someone DELETEs it): the next request gets
    404, and mcpkit's client re-initializes a new session and resends it transparently."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with mcpkit_client(tmp_path) as run:
            first = run.session_id
            assert first is not None and run.client.http_transport is not None
            async with httpx.AsyncClient(timeout=5) as http:
                gone = await http.delete(run.url, headers={"mcp-session-id": first,
                                                           "mcp-protocol-version": LATEST})
            assert gone.status_code == 200
            res = await run.client.call_tool("echo", {"text": "again"})
            assert res.text == "again"
            second = run.client.http_transport.session_id
            assert second and second != first
            # the new session is complete: server->client requests work in it too
            res = await run.client.call_tool("ask_llm", {"question": "still there?"})
            assert json.loads(res.text)["text"] == SAMPLED
            assert json.loads((await run.client.call_tool("show_roots")).text)[0]["uri"] \
                == ROOT_URI
    assert run.wire is not None
    inits = [m for _, m in run.wire.posted() if m.get("method") == "initialize"]
    assert len(inits) == 2
    assert {k: v for k, v in inits[1].items() if k != "id"} == {
        k: v for k, v in inits[0].items() if k != "id"}
    initialized = [m for _, m in run.wire.posted()
                   if m.get("method") == "notifications/initialized"]
    assert len(initialized) == 2
    echoes = [x for x in run.http.posts("tools/call", "echo")]
    assert [(x.status, x.request_headers["mcp-session-id"]) for x in echoes] == [
        (404, first), (200, second)]


async def forget_session(url: str, sid: str) -> None:
    """End session ``sid`` on the server behind the client's back."""
    with anyio.fail_after(10):
        async with httpx.AsyncClient(timeout=5) as http:
            gone = await http.delete(url, headers={"mcp-session-id": sid,
                                                   "mcp-protocol-version": LATEST})
    assert gone.status_code == 200


async def test_mcpkit_client_new_session_has_its_get_stream_first(tmp_path: Path) -> None:
    """After a 404 the client starts a new session; its first request may make the server
    use the standalone GET stream at once (roots/list), so that stream must be open
    before the request is resent, as in the first handshake."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with mcpkit_client(tmp_path) as run:
            assert run.session_id is not None and run.client.http_transport is not None
            await run.client.ping()
            for _ in range(3):
                await forget_session(run.url, run.client.http_transport.session_id or "")
                res = await run.client.call_tool("show_roots", timeout=10)
                assert json.loads(res.text)[0]["uri"] == ROOT_URI
    assert run.wire is not None
    assert len([m for _, m in run.wire.posted() if m.get("method") == "initialize"]) == 4


async def test_mcpkit_client_concurrent_requests_share_one_new_session(tmp_path: Path) -> None:
    """Several requests in flight when the session is lost all get 404: exactly one new
    session is started, and every request is resent in it and answered."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with mcpkit_client(tmp_path) as run:
            client = run.client
            assert client.http_transport is not None
            await client.ping()
            first = client.http_transport.session_id
            assert first is not None
            await forget_session(run.url, first)
            texts: list[str] = []

            async def echo(i: int) -> None:
                texts.append((await client.call_tool("echo", {"text": f"m{i}"},
                                                     timeout=10)).text)

            async with anyio.create_task_group() as tg:
                for i in range(5):
                    tg.start_soon(echo, i)
            assert sorted(texts) == [f"m{i}" for i in range(5)]
            second = client.http_transport.session_id
            assert second and second != first
            await client.ping()
    assert run.wire is not None
    inits = [m for _, m in run.wire.posted() if m.get("method") == "initialize"]
    assert len(inits) == 2, "one new session, not one per failed request"
    retried = [x for x in run.http.posts("tools/call", "echo") if x.status == 200]
    assert {x.request_headers["mcp-session-id"] for x in retried} == {second}
