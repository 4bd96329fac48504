"""Interop: the official ``mcp`` Python SDK client drives examples/everything.py over stdio.

The client is the real one (``mcp.stdio_client`` + ``mcp.ClientSession``, mcp 2.3.0)
with real sampling, elicitation, roots, logging and progress callbacks. The server
command is wrapped in tests/support/wiretap.py, which forwards stdin/stdout untouched
and records every line; after each run the recording is replayed through
``WireChecker``, so every message *our* server sent is validated against the official
JSON schema of the negotiated revision, and a few raw-wire facts that a schema cannot
see (fields an old revision must not carry) are asserted on the exact bytes.

Every flow runs once per handshake revision. mcp 2.3.0 always offers
``LATEST_HANDSHAKE_VERSION`` in ``initialize`` (module constant of
``mcp.client.session``); the older runs patch that constant, so the real client offers
the older revision, and accepts the answer because every revision here is in its
``HANDSHAKE_PROTOCOL_VERSIONS``.
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp.client.session as mcp_client_session
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import PROCESS_TERMINATION_TIMEOUT
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.support.recording import Recording
from tests.support.schemas import WireChecker

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = ROOT / "examples" / "everything.py"
WIRETAP = ROOT / "tests" / "support" / "wiretap.py"

ORDER = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
VERSIONS = tuple(reversed(ORDER))  # newest first
MIN_CHECKED = 50  # server messages validated per full run (51-54, by revision)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SAMPLED_ANSWER = "The answer is 4."

pytestmark = [
    pytest.mark.anyio,
    # logging/setLevel and resources/(un)subscribe are deprecated by the client for
    # 2026-07-28; they are current API at every revision exercised here.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def at_least(version: str, minimum: str) -> bool:
    return ORDER.index(version) >= ORDER.index(minimum)


# ---------------------------------------------------------------------- the client


@dataclass
class Callbacks(Recording):
    """What the official client's callbacks saw."""

    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)
    logs: list[types.LoggingMessageNotificationParams] = field(default_factory=list)
    sampling: list[types.CreateMessageRequestParams] = field(default_factory=list)
    elicitation: list[types.ElicitRequestParams] = field(default_factory=list)
    roots_asked: int = 0
    updated: list[str] = field(default_factory=list)  # notifications/resources/updated uris
    transport_errors: list[Exception] = field(default_factory=list)




    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self._record(self.progress, (progress, total, message))

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self._record(self.logs, params)

    async def on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self._record(self.sampling, params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLED_ANSWER),
            model="interop-test-model",
            stop_reason="endTurn",
        )

    async def on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self._record(self.elicitation, params)
        assert isinstance(params, types.ElicitRequestFormParams)
        props = params.requested_schema["properties"]
        if "response" in props:
            return types.ElicitResult(action="accept", content={"response": "interop says hi"})
        if "untitledMulti" in props:
            return types.ElicitResult(action="accept", content={
                "untitledSingle": "option2", "untitledMulti": ["option1", "option3"]})
        # a form pre-filled with the schema's defaults, submitted as is
        return types.ElicitResult(action="accept", content={
            name: prop["default"] for name, prop in props.items() if "default" in prop})

    async def on_message(self, message: Exception | Any) -> None:
        if isinstance(message, Exception):  # e.g. a line on stdout that is not JSON-RPC
            self._record(self.transport_errors, message)
        elif isinstance(message, types.ResourceUpdatedNotification):
            self._record(self.updated, str(message.params.uri))

    async def on_list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.roots_asked += 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/interop", name="tmp")])


def text_of(block: Any) -> str:
    assert isinstance(block, types.TextContent), block
    return block.text


async def expect_error(code: int, call: Any) -> MCPError:
    with pytest.raises(MCPError) as info:
        await call
    assert info.value.code == code, info.value
    return info.value


# ---------------------------------------------------------------------- the flow


async def check_tools(session: ClientSession, cb: Callbacks, version: str) -> None:
    listing = await session.list_tools()
    tools = {t.name: t for t in listing.tools}
    assert listing.next_cursor is None
    assert set(tools) >= {
        "echo", "add", "sleep", "test_simple_text", "test_image_content", "test_audio_content",
        "test_embedded_resource", "test_multiple_content_types", "test_tool_with_logging",
        "test_tool_with_progress", "test_error_handling", "test_sampling", "test_elicitation",
        "json_schema_2020_12_tool",
    }

    echo = tools["echo"]
    assert echo.description and "Echo" in echo.description
    assert echo.input_schema["type"] == "object"
    assert echo.input_schema["properties"]["text"]["type"] == "string"
    assert echo.input_schema["required"] == ["text"]

    add = tools["add"]
    assert add.description and add.description.startswith("Add two integers")
    assert add.input_schema["properties"]["a"]["type"] == "integer"
    assert add.input_schema["properties"]["b"]["type"] == "integer"
    assert sorted(add.input_schema["required"]) == ["a", "b"]
    if at_least(version, "2025-06-18"):
        out = add.output_schema
        assert out is not None
        assert out["type"] == "object"
        assert out["properties"]["result"]["type"] == "integer"
        assert out["required"] == ["result"]
    else:
        assert add.output_schema is None  # outputSchema does not exist before 2025-06-18
    if at_least(version, "2025-03-26"):
        assert add.annotations is not None and add.annotations.read_only_hint is True
        assert add.annotations.idempotent_hint is True
    else:
        assert add.annotations is None  # tool annotations arrived in 2025-03-26

    assert tools["test_sampling"].input_schema["required"] == ["prompt"]
    assert tools["test_elicitation"].input_schema["required"] == ["message"]
    schema_2020 = tools["json_schema_2020_12_tool"].input_schema
    assert schema_2020["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "address" in schema_2020["$defs"]

    # -- a JSON Schema 2020-12 inputSchema ($defs, if/then/else, allOf) is enforced as is
    res = await session.call_tool("json_schema_2020_12_tool", {
        "name": "Ada", "contactMethod": "email", "email": "ada@example.com"})
    assert not res.is_error, res
    assert "JSON Schema 2020-12 tool called with" in text_of(res.content[0])
    phone_missing = {"name": "Ada", "contactMethod": "phone"}
    if at_least(version, "2025-11-25"):
        res = await session.call_tool("json_schema_2020_12_tool", phone_missing)
        assert res.is_error and "phone" in text_of(res.content[0])
    else:
        await expect_error(-32602, session.call_tool("json_schema_2020_12_tool", phone_missing))

    # -- simple results
    res = await session.call_tool("echo", {"text": "hello interop"})
    assert not res.is_error
    assert [text_of(b) for b in res.content] == ["hello interop"]

    res = await session.call_tool("add", {"a": 1, "b": 2})
    assert not res.is_error
    assert text_of(res.content[0]) == "3"
    if at_least(version, "2025-06-18"):
        assert res.structured_content == {"result": 3}
    else:
        assert res.structured_content is None

    res = await session.call_tool("test_simple_text", {})
    assert [text_of(b) for b in res.content] == ["This is a simple text response for testing."]

    res = await session.call_tool("test_image_content", {})
    (image,) = res.content
    assert isinstance(image, types.ImageContent)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(PNG_MAGIC)

    res = await session.call_tool("test_audio_content", {})
    assert not res.is_error
    (audio,) = res.content
    if at_least(version, "2025-03-26"):
        assert isinstance(audio, types.AudioContent)
        assert audio.mime_type == "audio/wav"
        wav = base64.b64decode(audio.data)
        assert wav[:4] == b"RIFF" and wav[8:12] == b"WAVE"
    else:  # no AudioContent in 2024-11-05: a text stand-in
        assert "audio" in text_of(audio)

    res = await session.call_tool("test_embedded_resource", {})
    (embedded,) = res.content
    assert isinstance(embedded, types.EmbeddedResource)
    assert isinstance(embedded.resource, types.TextResourceContents)
    assert str(embedded.resource.uri) == "test://embedded-resource"
    assert embedded.resource.text == "This is an embedded resource content."
    assert embedded.resource.mime_type == "text/plain"

    res = await session.call_tool("test_multiple_content_types", {})
    assert [b.type for b in res.content] == ["text", "image", "resource"]
    assert text_of(res.content[0]) == "Multiple content types test:"
    mixed = res.content[2]
    assert isinstance(mixed, types.EmbeddedResource)
    assert isinstance(mixed.resource, types.TextResourceContents)
    assert json.loads(mixed.resource.text) == {"test": "data", "value": 123}
    assert mixed.resource.mime_type == "application/json"

    res = await session.call_tool("test_error_handling", {})
    assert res.is_error
    assert "intentionally returns an error" in text_of(res.content[0])

    # -- protocol errors vs tool errors
    await expect_error(-32602, session.call_tool("no_such_tool", {}))
    if at_least(version, "2025-11-25"):  # SEP-1303: input errors are tool results
        res = await session.call_tool("add", {"a": "one", "b": 2})
        assert res.is_error and "Invalid arguments" in text_of(res.content[0])
    else:
        await expect_error(-32602, session.call_tool("add", {"a": "one", "b": 2}))

    # -- progress: the official client puts a progressToken in _meta and routes updates
    res = await session.call_tool("test_tool_with_progress", {},
                                  progress_callback=cb.on_progress)
    assert not res.is_error
    assert text_of(res.content[0]).isdigit()  # the token: mcp uses the request id
    await cb.wait_until(lambda: len(cb.progress) >= 3, "three progress notifications")
    assert [(p, t) for p, t, _ in cb.progress] == [(0, 100), (50, 100), (100, 100)]
    messages = [m for _, _, m in cb.progress]
    if at_least(version, "2025-03-26"):
        assert messages == [f"Completed step {s} of 100" for s in (0, 50, 100)]
    else:  # ProgressNotification has no message in 2024-11-05
        assert messages == [None, None, None]

    # -- logging: level info lets the three info messages through, error stops them
    await session.set_logging_level("info")
    res = await session.call_tool("test_tool_with_logging", {})
    assert text_of(res.content[0]) == "Tool with logging executed successfully"
    await cb.wait_until(lambda: len(cb.logs) >= 3, "three log messages")
    assert [(m.level, m.data) for m in cb.logs] == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("info", "Tool execution completed"),
    ]
    await session.set_logging_level("error")
    res = await session.call_tool("test_tool_with_logging", {})
    assert not res.is_error  # (that no message followed is checked on the wire)

    # -- sampling: a server->client request answered by our callback
    res = await session.call_tool("test_sampling", {"prompt": "What is 2+2?"})
    assert not res.is_error, res
    assert text_of(res.content[0]) == f"LLM response: {SAMPLED_ANSWER}"
    (asked,) = cb.sampling
    assert asked.max_tokens == 100
    (sampled_msg,) = asked.messages
    assert sampled_msg.role == "user"
    assert text_of(sampled_msg.content) == "What is 2+2?"

    # -- elicitation: exists from 2025-06-18 on; before, the server must not send it
    res = await session.call_tool("test_elicitation", {"message": "Say something"})
    if at_least(version, "2025-06-18"):
        assert not res.is_error, res
        (asked_user,) = cb.elicitation
        assert isinstance(asked_user, types.ElicitRequestFormParams)
        assert asked_user.message == "Say something"
        assert asked_user.requested_schema["required"] == ["response"]
        assert text_of(res.content[0]) == (
            "User response: action=accept, content={'response': 'interop says hi'}"
        )
    else:  # the tool fails, and says why (not "try again later")
        assert res.is_error, res
        assert cb.elicitation == []
        assert "cannot run in this session" in text_of(res.content[0])
        assert "elicitation/create" in text_of(res.content[0])

    # SEP-1034: defaults for every primitive type (`default` is only known on booleans
    # before 2025-11-25, but a schema tolerates it, and older clients ignore it)
    cb.elicitation.clear()
    res = await session.call_tool("test_elicitation_sep1034_defaults", {})
    if at_least(version, "2025-06-18"):
        assert not res.is_error, res
        (asked_user,) = cb.elicitation
        assert isinstance(asked_user, types.ElicitRequestFormParams)
        props = asked_user.requested_schema["properties"]
        assert props["age"] == {"type": "integer", "description": "User age", "default": 30}
        assert props["status"]["enum"] == ["active", "inactive", "pending"]
        assert text_of(res.content[0]) == (
            "Elicitation completed: action=accept, content={'name': 'John Doe', 'age': 30, "
            "'score': 95.5, 'status': 'active', 'verified': True}"
        )
    else:
        assert res.is_error and cb.elicitation == []

    # SEP-1330: titled/untitled single- and multi-select enums. Multi-select (type:
    # array) does not exist before 2025-11-25, so the server must not send it there.
    cb.elicitation.clear()
    res = await session.call_tool("test_elicitation_sep1330_enums", {})
    if at_least(version, "2025-11-25"):
        assert not res.is_error, res
        (asked_user,) = cb.elicitation
        assert isinstance(asked_user, types.ElicitRequestFormParams)
        props = asked_user.requested_schema["properties"]
        assert props["untitledMulti"]["type"] == "array"
        assert props["titledSingle"]["oneOf"][0] == {"const": "value1", "title": "First Option"}
        assert props["legacyEnum"]["enumNames"] == ["Option One", "Option Two", "Option Three"]
        assert text_of(res.content[0]) == (
            "Elicitation completed: action=accept, content={'untitledSingle': 'option2', "
            "'untitledMulti': ['option1', 'option3']}"
        )
    else:
        assert res.is_error, res
        assert cb.elicitation == []
        if at_least(version, "2025-06-18"):
            assert "multi-select" in text_of(res.content[0])


async def check_resources(session: ClientSession, version: str) -> None:
    listing = await session.list_resources()
    resources = {str(r.uri): r for r in listing.resources}
    assert set(resources) >= {"test://static-text", "test://static-binary",
                              "test://watched-resource"}
    static = resources["test://static-text"]
    assert static.name == "static-text"
    assert static.mime_type == "text/plain"
    assert static.description == "A static text resource for testing"
    if at_least(version, "2025-06-18"):
        assert static.title == "Static Text Resource"
    else:
        assert static.title is None  # no `title` before 2025-06-18

    read = await session.read_resource("test://static-text")
    (contents,) = read.contents
    assert isinstance(contents, types.TextResourceContents)
    assert str(contents.uri) == "test://static-text"
    assert contents.text == "This is the content of the static text resource."
    assert contents.mime_type == "text/plain"

    read = await session.read_resource("test://static-binary")
    (blob,) = read.contents
    assert isinstance(blob, types.BlobResourceContents)
    assert blob.mime_type == "image/png"
    assert base64.b64decode(blob.blob).startswith(PNG_MAGIC)

    read = await session.read_resource("test://template/42/data")
    (templated,) = read.contents
    assert isinstance(templated, types.TextResourceContents)
    assert str(templated.uri) == "test://template/42/data"
    assert templated.mime_type == "application/json"
    assert json.loads(templated.text) == {
        "id": "42", "templateTest": True, "data": "Data for ID: 42"}

    err = await expect_error(-32002, session.read_resource("test://no-such-resource"))
    assert "test://no-such-resource" in err.message

    templates = await session.list_resource_templates()
    by_uri = {t.uri_template: t for t in templates.resource_templates}
    template = by_uri["test://template/{id}/data"]
    assert template.name == "template"
    assert template.mime_type == "application/json"

    assert isinstance(await session.subscribe_resource("test://watched-resource"),
                      types.EmptyResult)
    assert isinstance(await session.unsubscribe_resource("test://watched-resource"),
                      types.EmptyResult)


async def check_prompts(session: ClientSession, version: str) -> None:
    listing = await session.list_prompts()
    prompts = {p.name: p for p in listing.prompts}
    assert set(prompts) >= {"test_simple_prompt", "test_prompt_with_arguments",
                            "test_prompt_with_embedded_resource", "test_prompt_with_image"}
    with_args = prompts["test_prompt_with_arguments"]
    assert with_args.arguments is not None
    assert [(a.name, a.required) for a in with_args.arguments] == [("arg1", True),
                                                                   ("arg2", True)]
    assert with_args.arguments[0].description == "First test argument."
    if at_least(version, "2025-06-18"):
        assert with_args.title == "Prompt With Arguments"
    else:
        assert with_args.title is None
    assert prompts["test_simple_prompt"].arguments in (None, [])

    got = await session.get_prompt("test_simple_prompt")
    (msg,) = got.messages
    assert msg.role == "user"
    assert text_of(msg.content) == "This is a simple prompt for testing."

    got = await session.get_prompt("test_prompt_with_arguments",
                                   {"arg1": "hello", "arg2": "world"})
    assert [text_of(m.content) for m in got.messages] == [
        "Prompt with arguments: arg1='hello', arg2='world'"]

    await expect_error(-32602, session.get_prompt("test_prompt_with_arguments", {"arg1": "x"}))
    await expect_error(-32602, session.get_prompt("no_such_prompt"))

    got = await session.get_prompt("test_prompt_with_embedded_resource",
                                   {"resourceUri": "test://example-resource"})
    first, second = got.messages
    assert isinstance(first.content, types.EmbeddedResource)
    assert isinstance(first.content.resource, types.TextResourceContents)
    assert str(first.content.resource.uri) == "test://example-resource"
    assert first.content.resource.text == "Embedded resource content for testing."
    assert text_of(second.content) == "Please process the embedded resource above."

    got = await session.get_prompt("test_prompt_with_image")
    first, second = got.messages
    assert isinstance(first.content, types.ImageContent)
    assert first.content.mime_type == "image/png"
    assert base64.b64decode(first.content.data).startswith(PNG_MAGIC)
    assert text_of(second.content) == "Please analyze the image above."


async def check_completion(session: ClientSession) -> None:
    ref = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
    done = await session.complete(ref, {"name": "arg1", "value": "a"})
    assert done.completion.values == ["alpha"]
    done = await session.complete(ref, {"name": "arg2", "value": "t"})
    assert done.completion.values == ["two", "three"]
    assert done.completion.total == 2 and done.completion.has_more is False
    done = await session.complete(ref, {"name": "arg1", "value": ""})
    assert done.completion.values == ["alpha", "beta", "gamma", "paramValue1"]
    template = types.ResourceTemplateReference(type="ref/resource",
                                               uri="test://template/{id}/data")
    done = await session.complete(template, {"name": "id", "value": "4"})
    assert done.completion.values == ["42"]


# ---------------------------------------------------------------------- the wire


def read_wire(log: Path) -> list[dict[str, Any]]:
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    for e in entries:
        assert "msg" in e, f"a line on the wire is not JSON: {e}"
    return entries


def replay(entries: list[dict[str, Any]]) -> WireChecker:
    """Every server message through WireChecker (client messages only teach it)."""
    checker = WireChecker("server")
    for e in entries:
        if e["dir"] == "c2s":
            checker.saw_peer(e["msg"])
        else:
            checker.check(e["msg"])
    return checker


def server_results(entries: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(method, result) for every success response the server sent to a client request."""
    methods: dict[Any, str] = {}
    out = []
    for e in entries:
        m = e["msg"]
        if e["dir"] == "c2s" and "method" in m and "id" in m:
            methods[m["id"]] = m["method"]
        elif e["dir"] == "s2c" and "result" in m and m.get("id") in methods:
            out.append((methods[m["id"]], m["result"]))
    return out


def check_wire(entries: list[dict[str, Any]], version: str) -> None:
    checker = replay(entries)
    assert checker.revision == version
    assert checker.checked >= MIN_CHECKED, f"only {checker.checked} server messages checked"

    c2s = [e["msg"] for e in entries if e["dir"] == "c2s"]
    s2c = [e["msg"] for e in entries if e["dir"] == "s2c"]
    init = c2s[0]
    assert init["method"] == "initialize"
    assert init["params"]["protocolVersion"] == version  # the official client offered it
    assert s2c[0]["id"] == init["id"]
    assert s2c[0]["result"]["protocolVersion"] == version

    server_methods = [m["method"] for m in s2c if "method" in m]
    # the second test_tool_with_logging ran at level "error": its info messages are filtered
    assert server_methods.count("notifications/message") == 3
    assert server_methods.count("notifications/progress") == 3
    assert server_methods.count("sampling/createMessage") == 1
    assert server_methods.count("elicitation/create") == {
        "2025-11-25": 3, "2025-06-18": 2}.get(version, 0)

    results = server_results(entries)
    tool_results = [r for method, r in results if method == "tools/call"]
    listed_tools = [t for method, r in results if method == "tools/list" for t in r["tools"]]
    blocks = [b for r in tool_results for b in r["content"]]
    if not at_least(version, "2025-06-18"):
        # fields an older schema may tolerate but its peers do not know
        assert not any("structuredContent" in r for r in tool_results)
        assert not any("outputSchema" in t or "title" in t for t in listed_tools)
        init_result = s2c[0]["result"]
        assert "title" not in init_result["serverInfo"]
    if not at_least(version, "2025-03-26"):
        assert not any(b["type"] == "audio" for b in blocks)
        assert not any("annotations" in t for t in listed_tools)
        assert "completions" not in s2c[0]["result"]["capabilities"]
        progress = [m for m in s2c if m.get("method") == "notifications/progress"]
        assert not any("message" in m["params"] for m in progress)


# ---------------------------------------------------------------------- the session


@dataclass
class Run:
    session: ClientSession
    wire_log: Path
    shutdown_seconds: float = -1.0  # from closing the client to the server being gone


@asynccontextmanager
async def official_client(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cb: Callbacks,
    timeout: float = 60,
) -> AsyncIterator[Run]:
    """The official stdio client + ClientSession, offering ``version``, against
    everything.py behind the wiretap; the server's stderr is printed (shown on failure)."""
    assert version in HANDSHAKE_PROTOCOL_VERSIONS
    # What ClientSession.initialize() offers; see the module docstring.
    monkeypatch.setattr(mcp_client_session, "LATEST_HANDSHAKE_VERSION", version)
    wire_log = tmp_path / f"wire-{version}.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(WIRETAP), str(wire_log), "--", sys.executable, str(EVERYTHING)],
        cwd=ROOT,
    )
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            with anyio.fail_after(timeout):
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(
                        read,
                        write,
                        read_timeout_seconds=20,
                        sampling_callback=cb.on_sampling,
                        elicitation_callback=cb.on_elicitation,
                        list_roots_callback=cb.on_list_roots,
                        logging_callback=cb.on_log,
                        message_handler=cb.on_message,
                        client_info=types.Implementation(name="official-interop",
                                                         version="2.3.0"),
                    ) as session:
                        run = Run(session, wire_log)
                        init = await session.initialize()
                        assert init.protocol_version == version
                        assert session.protocol_version == version
                        yield run
                        assert cb.transport_errors == []
                    started = time.monotonic()
                run.shutdown_seconds = time.monotonic() - started
        finally:
            errlog.seek(0)
            stderr = errlog.read()
            if stderr:
                print(f"--- server stderr ({version}) ---\n{stderr}")


# ---------------------------------------------------------------------- the tests


@pytest.mark.parametrize("version", VERSIONS)
async def test_official_client_drives_everything_server(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cb = Callbacks()
    async with official_client(version, tmp_path, monkeypatch, cb) as run:
        session = run.session
        init = session.initialize_result
        assert init is not None
        assert init.server_info.name == "mcpkit-everything"
        assert init.instructions and "test_" in init.instructions
        caps = init.capabilities
        assert caps.tools is not None and caps.resources is not None
        assert caps.prompts is not None and caps.logging is not None
        assert caps.resources.subscribe is True
        assert (caps.completions is not None) == at_least(version, "2025-03-26")
        if at_least(version, "2025-06-18"):
            assert init.server_info.title == "mcpkit everything server"

        assert isinstance(await session.send_ping(), types.EmptyResult)
        await check_tools(session, cb, version)
        await check_resources(session, version)
        await check_prompts(session, version)
        await check_completion(session)
        assert isinstance(await session.send_ping(), types.EmptyResult)
        assert cb.roots_asked == 0  # everything.py never asks for roots

    # stdio shutdown: the client closes stdin and the server exits by itself, well
    # before the client would escalate to SIGTERM
    assert run.shutdown_seconds < PROCESS_TERMINATION_TIMEOUT, run.shutdown_seconds
    check_wire(read_wire(run.wire_log), version)


@pytest.mark.parametrize("version", VERSIONS)
async def test_official_client_cancels_a_timed_out_call(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mcp 2.3.0 sends notifications/cancelled for a request it stops waiting for; the
    server must stop the work and never answer that request, and keep serving."""
    cb = Callbacks()
    async with official_client(version, tmp_path, monkeypatch, cb) as run:
        session = run.session
        await expect_error(REQUEST_TIMEOUT, session.call_tool("sleep", {"seconds": 30},
                                                              read_timeout_seconds=0.5))
        res = await session.call_tool("echo", {"text": "still here"})
        assert [text_of(b) for b in res.content] == ["still here"]
        # a response to the cancelled call would have arrived by now (it never should)
        await anyio.sleep(0.3)
        assert isinstance(await session.send_ping(), types.EmptyResult)

    entries = read_wire(run.wire_log)
    checker = replay(entries)
    assert checker.revision == version
    sleep_ids = [e["msg"]["id"] for e in entries if e["dir"] == "c2s"
                 and e["msg"].get("method") == "tools/call"
                 and e["msg"]["params"]["name"] == "sleep"]
    assert len(sleep_ids) == 1
    cancels = [e["msg"]["params"] for e in entries if e["dir"] == "c2s"
               and e["msg"].get("method") == "notifications/cancelled"]
    assert [c["requestId"] for c in cancels] == sleep_ids
    answered = [e["msg"] for e in entries if e["dir"] == "s2c" and "method" not in e["msg"]
                and e["msg"].get("id") == sleep_ids[0]]
    assert answered == [], "the server answered a cancelled request"
    assert run.shutdown_seconds < PROCESS_TERMINATION_TIMEOUT, run.shutdown_seconds


async def test_official_client_receives_resource_updates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """resources/subscribe from the official client; everything.py updates
    test://watched-resource every 3 s and must notify the subscriber."""
    version = VERSIONS[0]
    cb = Callbacks()
    async with official_client(version, tmp_path, monkeypatch, cb) as run:
        session = run.session
        before = await session.read_resource("test://watched-resource")
        await session.subscribe_resource("test://watched-resource")
        await cb.wait_until(lambda: bool(cb.updated), "notifications/resources/updated",
                            timeout=10)
        assert cb.updated[0] == "test://watched-resource"
        after = await session.read_resource("test://watched-resource")
        (old,), (new,) = before.contents, after.contents
        assert isinstance(old, types.TextResourceContents)
        assert isinstance(new, types.TextResourceContents)
        assert old.text != new.text and new.text.startswith("Watched resource content, version")
        await session.unsubscribe_resource("test://watched-resource")

    checker = replay(read_wire(run.wire_log))
    assert checker.revision == version
    assert run.shutdown_seconds < PROCESS_TERMINATION_TIMEOUT, run.shutdown_seconds
