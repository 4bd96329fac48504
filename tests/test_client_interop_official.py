"""Interop: mcpkit's ``Client`` drives a server written with the official ``mcp`` SDK.

The server is tests/servers/official_everything.py (``mcp.server.mcpserver.MCPServer``,
mcp 2.3.0) over stdio. Every feature is exercised from the client side: tools (text,
structured, image, progress, logging, errors, timeouts), the server->client requests
(sampling, form elicitation, roots) answered by mcpkit's handlers, resources and
templates, subscriptions, prompts, completions, ``logging/setLevel`` and ``ping``.

The server command is wrapped in tests/support/wiretap.py, which forwards stdio byte for
byte and records every line. After each session the recording is replayed through
``WireChecker(side="client")``: every message mcpkit's client sent is validated against
the official JSON schema of the negotiated revision, and a few facts a schema cannot see
(ids, ordering, defaults filled in, fields an old revision must not carry) are asserted
on the recorded messages.

Older revisions: a subset runs with ``protocol_version`` 2025-06-18, 2025-03-26 and
2024-11-05. The official server accepts each of them (the test skips, saying so, only if
it ever refuses one).
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit import RemoteError, RequestTimeout
from mcpkit.client import Client, HandshakeError, Stdio
from mcpkit.client import types as t
from tests.support.recording import Recording
from tests.support.schemas import WireChecker

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "servers" / "official_everything.py"
WIRETAP = ROOT / "tests" / "support" / "wiretap.py"

LATEST = "2025-11-25"
OLDER = ("2025-06-18", "2025-03-26", "2024-11-05")
ORDER = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SAMPLED = "The answer is 4."
ROOT_URI = "file:///tmp/project"
TEST_TIMEOUT = 60  # seconds, per test (each starts one server process)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def at_least(version: str, minimum: str) -> bool:
    return ORDER.index(version) >= ORDER.index(minimum)


# ---------------------------------------------------------------------- client side


@dataclass
class Recorder(Recording):
    """What mcpkit's client handlers saw, and what they answer."""

    sampling: list[dict[str, Any]] = field(default_factory=list)
    elicitation: list[dict[str, Any]] = field(default_factory=list)
    elicitation_answer: dict[str, Any] = field(
        default_factory=lambda: {"action": "accept", "content": {"name": "Ada", "guests": 4}}
    )
    logs: list[dict[str, Any]] = field(default_factory=list)
    notifications: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)
    sampling_reply: Callable[[dict[str, Any]], dict[str, Any]] | None = None




    async def on_sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        self._record(self.sampling, params)
        if self.sampling_reply is not None:
            return self.sampling_reply(params)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": SAMPLED},
            "model": "interop-model-1",
            "stopReason": "endTurn",
        }

    async def on_elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        self._record(self.elicitation, params)
        return self.elicitation_answer

    async def on_log(self, params: dict[str, Any]) -> None:
        self._record(self.logs, params)

    async def on_notification(self, method: str, params: dict[str, Any]) -> None:
        self._record(self.notifications, (method, params))

    async def on_progress(self, progress: float, total: float | None,
                          message: str | None) -> None:
        self._record(self.progress, (progress, total, message))


@dataclass
class Wire:
    """The recorded stdio traffic of one session."""

    entries: list[dict[str, Any]]
    checker: WireChecker

    def sent(self) -> list[dict[str, Any]]:
        """Messages mcpkit's client sent, in order."""
        return [e["msg"] for e in self.entries if e["dir"] == "c2s"]

    def received(self) -> list[dict[str, Any]]:
        return [e["msg"] for e in self.entries if e["dir"] == "s2c"]

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.sent() if m.get("method") == method and "id" in m]

    def answers_to(self, method: str) -> list[dict[str, Any]]:
        """The client's answers to the server's ``method`` requests."""
        ids = {m["id"] for m in self.received() if m.get("method") == method and "id" in m}
        return [m for m in self.sent() if "method" not in m and m.get("id") in ids]


def replay(log: Path, revision: str | None) -> Wire:
    """Validate every c2s message against the official schema (learning from s2c)."""
    assert log.exists(), "the wiretap wrote no log: was the server command wrapped?"
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    raw = [e for e in entries if "msg" not in e]
    assert not raw, f"lines on the wire that are not JSON: {raw[:3]}"
    checker = WireChecker(side="client", revision=revision)
    for e in entries:
        if e["dir"] == "c2s":
            checker.check(e["msg"])  # raises SchemaViolation (an AssertionError)
        else:
            assert e["dir"] == "s2c", e
            checker.saw_peer(e["msg"])
    return Wire(entries, checker)


@dataclass
class Run:
    client: Client
    rec: Recorder
    log: Path
    wire: Wire | None = None


@asynccontextmanager
async def session(
    tmp_path: Path,
    *,
    version: str | None = None,
    roots: Any = (ROOT_URI,),
    min_checked: int = 5,
    **options: Any,
) -> AsyncIterator[Run]:
    """A tapped session with the official server. On a clean exit the whole recording is
    validated and ``run.wire`` is set; at least ``min_checked`` client messages must have
    been checked."""
    rec = Recorder()
    log = tmp_path / f"wire-{version or 'default'}.jsonl"
    client = Client(
        Stdio([sys.executable, str(WIRETAP), str(log), "--", sys.executable, str(SERVER)],
              cwd=str(ROOT)),
        sampling=rec.on_sampling,
        elicitation=rec.on_elicitation,
        roots=list(roots) if isinstance(roots, tuple) else roots,
        on_log=rec.on_log,
        on_notification=rec.on_notification,
        protocol_version=version,
        timeout=20.0,
        **options,
    )
    run = Run(client, rec, log)
    try:
        await client.__aenter__()
    except HandshakeError as exc:
        if version is not None and "version" in str(exc):
            pytest.skip(f"the official mcp 2.3.0 server refused protocol {version}: {exc}")
        raise
    try:
        if version is not None and client.protocol_version != version:
            pytest.skip(f"the official mcp 2.3.0 server refused protocol {version} "
                        f"(it answered {client.protocol_version})")
        yield run
    finally:
        await client.__aexit__(None, None, None)
    run.wire = replay(log, version)
    assert run.wire.checker.checked >= min_checked, (
        f"only {run.wire.checker.checked} client messages were validated"
    )
    assert run.wire.checker.revision == (version or max(options.get("versions", (LATEST,))))


def text_of(block: Any) -> str:
    assert isinstance(block, t.TextContent), block
    return block.text


# ---------------------------------------------------------------------- latest revision


async def test_handshake(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=3) as run:
            client = run.client
            assert client.protocol_version == LATEST
            assert client.server_info["name"] == "official-everything"
            assert client.server_info["version"] == "2.3.0-test"
            assert client.instructions and "official MCP SDK" in client.instructions
            for cap in ("tools", "resources", "resources.subscribe", "prompts", "logging",
                        "completions", "tools.listChanged"):
                assert client.supports(cap), cap
            await client.ping()
    assert run.wire is not None
    sent = run.wire.sent()
    init = sent[0]
    assert init["method"] == "initialize" and init["params"]["protocolVersion"] == LATEST
    assert init["params"]["clientInfo"]["name"] == "mcpkit-client"
    caps = init["params"]["capabilities"]
    assert caps["roots"] == {"listChanged": True}
    assert caps["sampling"] == {}
    assert caps["elicitation"] == {}  # form only
    # notifications/initialized is sent only after the initialize answer arrived
    entries = run.wire.entries
    answer_at = next(i for i, e in enumerate(entries)
                     if e["dir"] == "s2c" and e["msg"].get("id") == init["id"])
    initialized_at = next(i for i, e in enumerate(entries)
                          if e["msg"].get("method") == "notifications/initialized")
    assert answer_at < initialized_at
    assert sent[1] == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert [m["method"] for m in sent if "method" in m][-1] == "ping"


async def test_tools(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=9) as run:
            client = run.client
            tools = {tool.name: tool for tool in await client.list_tools()}
            assert set(tools) >= {"echo", "add", "slow_count", "chatter", "fail", "crash",
                                  "pixel", "ask_llm", "book_table", "show_roots", "nap"}
            assert all(isinstance(tool, t.Tool) for tool in tools.values())
            add = tools["add"]
            assert add.title == "Add two integers"
            assert add.description and add.description.startswith("Add two integers")
            assert add.input_schema["properties"]["a"]["type"] == "integer"
            assert sorted(add.input_schema["required"]) == ["a", "b"]
            assert add.output_schema is not None
            assert add.output_schema["properties"]["sum"]["type"] == "integer"
            assert tools["pixel"].output_schema is None

            res = await client.call_tool("add", {"a": 2, "b": 3})
            assert isinstance(res, t.CallToolResult) and not res.is_error
            assert res.structured_content == {"a": 2, "b": 3, "sum": 5}
            assert json.loads(res.text) == {"a": 2, "b": 3, "sum": 5}

            res = await client.call_tool("echo", {"text": "héllo ✓"})
            assert not res.is_error and text_of(res.content[0]) == "héllo ✓"
            assert res.structured_content == {"result": "héllo ✓"}

            res = await client.call_tool("pixel")
            assert not res.is_error and len(res.content) == 1
            image = res.content[0]
            assert isinstance(image, t.ImageContent)
            assert image.mime_type == "image/png"
            assert base64.b64decode(image.data).startswith(PNG_MAGIC)

            res = await client.call_tool("fail", {"reason": "bad input"})
            assert res.is_error is True
            assert "failed on purpose: bad input" in res.text
            assert res.structured_content is None

            res = await client.call_tool("crash", {})
            assert res.is_error is True
            assert "internal detail" not in res.text  # the SDK masks unexpected errors
            assert "crash" in res.text

            # a tool failure is a result; bad arguments are a result too (SDK validation)
            res = await client.call_tool("add", {"a": "two", "b": 3})
            assert res.is_error is True
    assert run.wire is not None
    calls = run.wire.requests("tools/call")
    assert [c["params"]["name"] for c in calls] == ["add", "echo", "pixel", "fail", "crash",
                                                    "add"]
    assert "arguments" not in calls[2]["params"]  # call_tool("pixel") sends no arguments


async def test_progress(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=4) as run:
            rec = run.rec
            res = await run.client.call_tool("slow_count", {"steps": 4},
                                             on_progress=rec.on_progress)
            assert res.text == "counted to 4"
            await rec.wait_until(lambda: len(rec.progress) >= 4, "4 progress notifications")
            assert rec.progress == [(i, 4, f"step {i}/4") for i in range(1, 5)]
            # without a callback no progress token is sent and no progress arrives
            res = await run.client.call_tool("slow_count", {"steps": 2})
            assert res.text == "counted to 2"
            assert len(rec.progress) == 4
    assert run.wire is not None
    with_cb, without_cb = run.wire.requests("tools/call")
    token = with_cb["params"]["_meta"]["progressToken"]
    assert isinstance(token, str | int)
    assert "_meta" not in without_cb["params"]
    progress = [m for m in run.wire.received() if m.get("method") == "notifications/progress"]
    assert len(progress) == 4
    assert {m["params"]["progressToken"] for m in progress} == {token}


async def test_concurrent_progress(tmp_path: Path) -> None:
    """Concurrent calls, two sharing one callback: each gets its own progress token and
    every update reaches the callback of the call it belongs to."""
    own: list[tuple[float, float | None]] = []
    shared: list[tuple[float, float | None]] = []
    all_in = anyio.Event()  # 4 + 3 + 2 updates

    def on_own(progress: float, total: float | None, message: str | None) -> None:
        own.append((progress, total))
        if len(own) + len(shared) == 9:
            all_in.set()

    def on_shared(progress: float, total: float | None, message: str | None) -> None:
        shared.append((progress, total))
        if len(own) + len(shared) == 9:
            all_in.set()

    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=5) as run:
            client = run.client
            texts: list[str] = []

            async def call(steps: int, cb: Any) -> None:
                texts.append((await client.call_tool("slow_count", {"steps": steps},
                                                     on_progress=cb)).text)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, 3, on_shared)
                tg.start_soon(call, 2, on_shared)
                tg.start_soon(call, 4, on_own)
            assert sorted(texts) == ["counted to 2", "counted to 3", "counted to 4"]
            with anyio.fail_after(5):
                await all_in.wait()
    assert own == [(i, 4) for i in range(1, 5)]
    assert sorted(shared) == sorted([(i, 3) for i in range(1, 4)] + [(1, 2), (2, 2)])
    assert run.wire is not None
    tokens = [c["params"]["_meta"]["progressToken"] for c in run.wire.requests("tools/call")]
    assert len(set(tokens)) == 3


async def test_logging(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=5) as run:
            client, rec = run.client, run.rec
            await client.set_logging_level("debug")
            with pytest.raises(ValueError):
                await client.set_logging_level("verbose")  # never reaches the wire
            res = await client.call_tool("chatter", {"text": "hi"})
            assert res.text == "logged"
            await rec.wait_until(lambda: len(rec.logs) >= 3, "3 log messages")
            assert rec.logs == [
                {"level": "debug", "data": "debug: hi"},
                {"level": "info", "data": "info: hi"},
                {"level": "warning", "logger": "chatter", "data": {"warning": "hi"}},
            ]
            # on_notification sees them too
            assert [m for m, _ in rec.notifications].count("notifications/message") == 3
            await client.set_logging_level("warning")
            status = json.loads((await client.call_tool("status")).text)
            assert status["level"] == "warning"
    assert run.wire is not None
    levels = [m["params"]["level"] for m in run.wire.requests("logging/setLevel")]
    assert levels == ["debug", "warning"]


async def test_sampling(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=4) as run:
            rec = run.rec
            res = await run.client.call_tool("ask_llm", {"question": "What is 2+2?"})
            assert not res.is_error, res.text
            answer = json.loads(res.text)
            assert answer == {"model": "interop-model-1", "role": "assistant", "text": SAMPLED,
                              "stopReason": "endTurn"}
            assert len(rec.sampling) == 1
            params = rec.sampling[0]
            assert params["messages"] == [
                {"role": "user", "content": {"type": "text", "text": "What is 2+2?"}}
            ]
            assert params["maxTokens"] == 64
            assert params["systemPrompt"] == "Answer briefly."
            assert params["temperature"] == 0.25
            assert params["stopSequences"] == ["\n\n"]
            assert params["metadata"] == {"origin": "ask_llm"}
            assert params["modelPreferences"] == {"hints": [{"name": "claude"}],
                                                  "speedPriority": 0.5}
            assert "tools" not in params
    assert run.wire is not None
    (answer_msg,) = run.wire.answers_to("sampling/createMessage")
    assert answer_msg["result"]["model"] == "interop-model-1"
    assert answer_msg["result"]["role"] == "assistant"


async def test_sampling_with_tools(tmp_path: Path) -> None:
    """2025-11-25 sampling with tools: tool_use in the answer, tool_result in the retry."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, sampling_tools=True, min_checked=5) as run:
            rec = run.rec

            def llm(params: dict[str, Any]) -> dict[str, Any]:
                if len(rec.sampling) == 1:
                    return {"role": "assistant", "model": "m", "stopReason": "toolUse",
                            "content": [{"type": "tool_use", "id": "call-1",
                                         "name": "get_weather", "input": {"city": "Paris"}}]}
                return {"role": "assistant", "model": "m", "stopReason": "endTurn",
                        "content": {"type": "text", "text": "Sunny in Paris."}}

            rec.sampling_reply = llm
            res = await run.client.call_tool("agent", {"question": "Weather in Paris?"})
            assert not res.is_error, res.text
            assert json.loads(res.text) == [
                {"stopReason": "toolUse", "toolUses": ["get_weather"]},
                {"stopReason": "endTurn", "text": "Sunny in Paris."},
            ]
            first, second = rec.sampling
            assert [tool["name"] for tool in first["tools"]] == ["get_weather"]
            assert first["toolChoice"] == {"mode": "auto"}
            assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
            (result_block,) = second["messages"][2]["content"]
            assert result_block["type"] == "tool_result"
            assert result_block["toolUseId"] == "call-1"
    assert run.wire is not None
    assert run.wire.sent()[0]["params"]["capabilities"]["sampling"] == {"tools": {}}
    answers = run.wire.answers_to("sampling/createMessage")
    assert [a["result"]["stopReason"] for a in answers] == ["toolUse", "endTurn"]


async def test_sampling_tools_not_declared(tmp_path: Path) -> None:
    """Without ``sampling_tools`` the client does not declare ``sampling.tools``, so the
    official server refuses to send tools and the client is never asked."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=3) as run:
            with pytest.raises(RemoteError) as info:
                await run.client.call_tool("agent", {"question": "Weather?"})
            assert "sampling tools" in info.value.message
            assert run.rec.sampling == []
    assert run.wire is not None
    assert run.wire.answers_to("sampling/createMessage") == []


async def test_elicitation(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=6) as run:
            client, rec = run.client, run.rec
            res = await client.call_tool("book_table", {"date": "2030-01-01"})
            assert not res.is_error, res.text
            assert json.loads(res.text) == {"action": "accept", "name": "Ada", "guests": 4,
                                            "vegetarian": False}
            params = rec.elicitation[0]
            assert params["message"] == "Book a table on 2030-01-01?"
            assert params["mode"] == "form"
            schema = params["requestedSchema"]
            assert schema["type"] == "object"
            assert set(schema["properties"]) == {"name", "guests", "vegetarian"}
            assert schema["required"] == ["name"]
            assert params["defaults"] == {"guests": 2, "vegetarian": False}

            rec.elicitation_answer = {"action": "decline", "content": {"name": "ignored"}}
            res = await client.call_tool("book_table", {"date": "2030-01-02"})
            assert json.loads(res.text) == {"action": "decline"}

            rec.elicitation_answer = {"action": "cancel"}
            res = await client.call_tool("book_table", {"date": "2030-01-03"})
            assert json.loads(res.text) == {"action": "cancel"}
            assert len(rec.elicitation) == 3
    assert run.wire is not None
    answers = [m["result"] for m in run.wire.answers_to("elicitation/create")]
    # the client filled the schema default the handler left out, and dropped the
    # content of a declined form
    assert answers == [
        {"action": "accept", "content": {"guests": 4, "vegetarian": False, "name": "Ada"}},
        {"action": "decline"},
        {"action": "cancel"},
    ]


async def test_url_elicitation(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, elicitation_modes=("form", "url"),
                           min_checked=4) as run:
            rec = run.rec
            rec.elicitation_answer = {"action": "accept", "content": {"dropped": True}}
            res = await run.client.call_tool("connect", {"service": "github"})
            assert json.loads(res.text) == {"action": "accept"}
            (params,) = rec.elicitation
            assert params["mode"] == "url"
            assert params["url"] == "https://auth.example/github"
            assert params["elicitationId"] == "connect-github"
            assert params["message"] == "Sign in to github"
            complete = ("notifications/elicitation/complete",
                        {"elicitationId": "connect-github"})
            await rec.wait_until(lambda: complete in rec.notifications,
                                 "notifications/elicitation/complete")
    assert run.wire is not None
    caps = run.wire.sent()[0]["params"]["capabilities"]
    assert caps["elicitation"] == {"form": {}, "url": {}}
    (answer,) = run.wire.answers_to("elicitation/create")
    assert answer["result"] == {"action": "accept"}  # URL mode answers carry no content


async def test_url_elicitation_not_declared(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=3) as run:
            with pytest.raises(RemoteError):
                await run.client.call_tool("connect", {"service": "github"})
            assert run.rec.elicitation == []
    assert run.wire is not None
    (answer,) = run.wire.answers_to("elicitation/create")
    assert answer["error"]["code"] == -32602


async def test_server_pings_client(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=4) as run:
            assert (await run.client.call_tool("ping_client")).text == "pong"
    assert run.wire is not None
    (answer,) = run.wire.answers_to("ping")
    assert answer["result"] == {}


async def test_roots(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=3) as run:
            res = await run.client.call_tool("show_roots")
            assert not res.is_error, res.text
            assert json.loads(res.text) == [{"uri": ROOT_URI, "name": None}]
    assert run.wire is not None
    (answer,) = run.wire.answers_to("roots/list")
    assert answer["result"] == {"roots": [{"uri": ROOT_URI}]}


async def test_roots_callable_and_list_changed(tmp_path: Path) -> None:
    current: list[Any] = [{"uri": "file:///srv/a", "name": "a"}]
    asked = 0

    async def roots() -> list[Any]:
        nonlocal asked
        asked += 1
        return list(current)

    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, roots=roots, min_checked=5) as run:
            first = json.loads((await run.client.call_tool("show_roots")).text)
            assert first == [{"uri": "file:///srv/a", "name": "a"}]
            current.append("file:///srv/b")
            await run.client.roots_changed()
            second = json.loads((await run.client.call_tool("show_roots")).text)
            assert second == [{"uri": "file:///srv/a", "name": "a"},
                              {"uri": "file:///srv/b", "name": None}]
            assert asked == 2
    assert run.wire is not None
    notes = [m for m in run.wire.sent() if m.get("method") == "notifications/roots/list_changed"]
    assert notes == [{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]


async def test_resources_and_subscriptions(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=10) as run:
            client, rec = run.client, run.rec
            resources = await client.list_resources()
            assert [(r.uri, r.name, r.title, r.mime_type) for r in resources] == [
                ("info://server", "server-info", "Server info", "application/json")]
            assert isinstance(resources[0], t.Resource)
            templates = await client.list_resource_templates()
            assert [(x.uri_template, x.name, x.mime_type) for x in templates] == [
                ("greeting://{name}", "greeting", "text/plain")]

            read = await client.read_resource("info://server")
            assert isinstance(read, t.ReadResourceResult)
            (content,) = read.contents
            assert content.uri == "info://server" and content.mime_type == "application/json"
            assert json.loads(content.text or "") == {"sdk": "mcp", "version": "2.3.0"}

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
            assert (await client.call_tool("touch", {"uri": "info://server"})).text \
                == "not subscribed"
            status = json.loads((await client.call_tool("status")).text)
            assert status["subscriptions"] == []
    assert run.wire is not None
    assert [m["params"] for m in run.wire.requests("resources/subscribe")] == [
        {"uri": "info://server"}]
    assert [m["params"] for m in run.wire.requests("resources/unsubscribe")] == [
        {"uri": "info://server"}]


async def test_prompts(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=5) as run:
            client = run.client
            prompts = await client.list_prompts()
            assert [p.name for p in prompts] == ["review"]
            review = prompts[0]
            assert isinstance(review, t.Prompt) and review.title == "Review code"
            assert [(a.name, a.required) for a in review.arguments or []] == [
                ("code", True), ("language", False)]

            got = await client.get_prompt("review", {"code": "fn main() {}",
                                                     "language": "rust"})
            assert isinstance(got, t.GetPromptResult)
            assert [m.role for m in got.messages] == ["user", "assistant"]
            assert text_of(got.messages[0].content) == \
                "Please review this rust code:\nfn main() {}"
            assert text_of(got.messages[1].content) == "Sure, looking at it now."

            got = await client.get_prompt("review", {"code": "x = 1"})  # default language
            assert "python code" in text_of(got.messages[0].content)

            with pytest.raises(RemoteError):
                await client.get_prompt("review")  # the required argument is missing
    assert run.wire is not None
    gets = run.wire.requests("prompts/get")
    assert "arguments" not in gets[-1]["params"]


async def test_completion(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=5) as run:
            client = run.client
            prompt_ref = {"type": "ref/prompt", "name": "review"}
            done = await client.complete(prompt_ref, "language", "p")
            assert isinstance(done, t.Completion)
            assert done.values == ["python", "pascal", "perl", "php"]
            assert done.total == 4 and done.has_more is False
            done = await client.complete(prompt_ref, "language", "r")
            assert done.values == ["rust", "ruby"]
            # context.arguments (2025-06-18+) reaches the official handler
            done = await client.complete(prompt_ref, "language", "r", {"code": "fn main() {}"})
            assert done.values == ["rust"]
            template_ref = {"type": "ref/resource", "uri": "greeting://{name}"}
            done = await client.complete(template_ref, "name", "al")
            assert done.values == ["alice", "albert"]
    assert run.wire is not None
    sent = run.wire.requests("completion/complete")
    assert sent[2]["params"]["context"] == {"arguments": {"code": "fn main() {}"}}
    assert "context" not in sent[1]["params"]


async def test_timeout_cancels_and_session_survives(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, min_checked=5) as run:
            client = run.client
            with pytest.raises(RequestTimeout):
                await client.call_tool("nap", {"seconds": 30}, timeout=0.5)
            await client.ping()
            assert (await client.call_tool("echo", {"text": "still here"})).text \
                == "still here"
    assert run.wire is not None
    (nap,) = [m for m in run.wire.requests("tools/call") if m["params"]["name"] == "nap"]
    cancels = [m for m in run.wire.sent() if m.get("method") == "notifications/cancelled"]
    assert len(cancels) == 1
    assert cancels[0]["params"]["requestId"] == nap["id"]


# ---------------------------------------------------------------------- older revisions


@pytest.mark.parametrize("version", OLDER)
async def test_older_revision(tmp_path: Path, version: str) -> None:
    """A subset of the flows at an older revision the client offers explicitly."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, version=version, min_checked=14) as run:
            client, rec = run.client, run.rec
            assert client.protocol_version == version
            await client.ping()
            await client.set_logging_level("info")

            tools = {tool.name: tool for tool in await client.list_tools()}
            assert {"add", "ask_llm", "book_table", "show_roots"} <= set(tools)
            res = await client.call_tool("add", {"a": 40, "b": 2})
            assert not res.is_error and json.loads(res.text)["sum"] == 42

            res = await client.call_tool("slow_count", {"steps": 2},
                                         on_progress=rec.on_progress)
            assert res.text == "counted to 2"
            await rec.wait_until(lambda: len(rec.progress) >= 2, "2 progress notifications")
            assert [(p, total) for p, total, _ in rec.progress] == [(1, 2), (2, 2)]

            res = await client.call_tool("ask_llm", {"question": "2+2?"})
            assert json.loads(res.text)["text"] == SAMPLED
            assert rec.sampling[0]["maxTokens"] == 64

            res = await client.call_tool("show_roots")
            assert json.loads(res.text) == [{"uri": ROOT_URI, "name": None}]

            if at_least(version, "2025-06-18"):
                res = await client.call_tool("book_table", {"date": "2030-01-01"})
                assert json.loads(res.text)["name"] == "Ada"
                assert len(rec.elicitation) == 1
            else:
                # elicitation does not exist yet: the client did not declare it and
                # refuses the official server's request, which fails the tool call
                with pytest.raises(RemoteError) as info:
                    await client.call_tool("book_table", {"date": "2030-01-01"})
                assert info.value.code == -32601
                assert rec.elicitation == []

            read = await client.read_resource("greeting://Old")
            assert read.contents[0].text == "Hello, Old!"
            got = await client.get_prompt("review", {"code": "x"})
            assert [m.role for m in got.messages] == ["user", "assistant"]
            done = await client.complete({"type": "ref/prompt", "name": "review"}, "language",
                                         "r", {"code": "fn main() {}"})
            # completion context arrived in 2025-06-18: older revisions drop it
            expected = ["rust"] if at_least(version, "2025-06-18") else ["rust", "ruby"]
            assert done.values == expected
    assert run.wire is not None
    init = run.wire.sent()[0]
    assert init["params"]["protocolVersion"] == version
    caps = init["params"]["capabilities"]
    assert caps["sampling"] == {} and caps["roots"] == {"listChanged": True}
    assert ("elicitation" in caps) == at_least(version, "2025-06-18")
    (complete,) = run.wire.requests("completion/complete")
    assert ("context" in complete["params"]) == at_least(version, "2025-06-18")
    elicit_answers = run.wire.answers_to("elicitation/create")
    assert len(elicit_answers) == 1
    if not at_least(version, "2025-06-18"):
        assert elicit_answers[0]["error"]["code"] == -32601


async def test_restricted_versions_offer(tmp_path: Path) -> None:
    """``versions`` without ``protocol_version``: the client offers the newest it allows
    and declares only what that revision has (no elicitation before 2025-06-18)."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with session(tmp_path, versions=("2024-11-05", "2025-03-26"),
                           min_checked=4) as run:
            assert run.client.protocol_version == "2025-03-26"
            res = await run.client.call_tool("ask_llm", {"question": "2+2?"})
            assert json.loads(res.text)["text"] == SAMPLED
    assert run.wire is not None
    init = run.wire.sent()[0]
    assert init["params"]["protocolVersion"] == "2025-03-26"
    assert set(init["params"]["capabilities"]) == {"roots", "sampling"}
