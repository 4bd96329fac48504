"""mcpkit's ``Client`` against real servers, at every stateful revision.

The main subject is ``examples/everything.py``, reached two ways: in-process over the
memory transport and as a subprocess over stdio. Every message the client sends goes
through a ``TappedStream`` (tests/support/tap.py) and is validated against the official
schema of the negotiated revision. Smaller purpose-built servers (in-process ``Server``
objects, tests/servers/client_roots.py, and the raw misbehaving
tests/servers/client_raw.py) cover capability enforcement, version handling, output
schema checks and pagination.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit import (
    STATEFUL_VERSIONS,
    CapabilityNotSupported,
    Context,
    RemoteError,
    Server,
)
from mcpkit.client import (
    Client,
    HandshakeError,
    InvalidResult,
    OutputSchemaError,
    PaginationError,
)
from mcpkit.client import types as t
from mcpkit.protocol.versions import REVISIONS, Feature

from .support.tap import TappedClient

ROOT = Path(__file__).resolve().parents[1]
for _extra in (ROOT / "examples", ROOT / "tests" / "servers"):
    if str(_extra) not in sys.path:
        sys.path.insert(0, str(_extra))

import client_roots  # noqa: E402
from everything import PNG  # noqa: E402
from everything import server as everything  # noqa: E402

EVERYTHING_CMD = [sys.executable, str(ROOT / "examples" / "everything.py")]
ROOTS_CMD = [sys.executable, str(ROOT / "tests" / "servers" / "client_roots.py")]
RAW = str(ROOT / "tests" / "servers" / "client_raw.py")
LIMIT = 8  # seconds any single test may wait for anything

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=STATEFUL_VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["memory", "stdio"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def has(version: str, feature: Feature) -> bool:
    return REVISIONS[version].has(feature)


async def _sampler(params: dict[str, Any]) -> dict[str, Any]:
    text = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"echo of {text}"},
            "model": "test-model", "stopReason": "endTurn"}


@asynccontextmanager
async def everything_client(transport: str, version: str, *, allow: tuple[str, ...] = (),
                            **options: Any) -> AsyncIterator[TappedClient]:
    """A connected, tapped client of the everything server; the wire is checked at exit."""
    target = everything if transport == "memory" else EVERYTHING_CMD
    options.setdefault("timeout", LIMIT)
    client = TappedClient(target, protocol_version=version, **options)
    with anyio.fail_after(LIMIT):
        async with client:
            assert client.protocol_version == version
            yield client
    client.wire.assert_clean(allow)


# The official JSON schemas are generated from schema.ts with every plain TypeScript
# ``number`` typed as JSON "integer", so ``ElicitResult.content`` admits no fractions there,
# while the spec (and schema.ts: ``string | number | boolean``) allows number fields, and
# test_elicitation_sep1034_defaults declares ``score: {type: number, default: 95.5}``.
# Sending the filled-in default 95.5 is right; only that one schema complaint is tolerated.
FRACTIONAL_ELICIT_ANSWER = "content/score: 95.5 is not"


# ---------------------------------------------------------------------- handshake


async def test_handshake_declares_only_what_it_handles(transport: str, version: str) -> None:
    async with everything_client(transport, version, sampling=_sampler,
                                 elicitation=lambda p: {"action": "cancel"},
                                 roots=["file:///tmp"]) as client:
        expected: dict[str, Any] = {"roots": {"listChanged": True}, "sampling": {}}
        if has(version, "elicitation"):
            expected["elicitation"] = {}
        if has(version, "tool_execution"):  # 2025-11-25: it runs both as tasks when asked
            expected["tasks"] = {"list": {}, "cancel": {}, "requests": {
                "sampling": {"createMessage": {}}, "elicitation": {"create": {}}}}
        assert client.capabilities() == expected
        init = client.wire.sent_with("initialize")
        assert len(init) == 1
        assert init[0]["params"]["protocolVersion"] == version
        assert init[0]["params"]["capabilities"] == expected
        assert init[0]["params"]["clientInfo"]["name"] == "mcpkit-client"
        assert client.server_info["name"] == "mcpkit-everything"
        assert client.instructions and "test_" in client.instructions
        assert client.supports("tools") and client.supports("resources.subscribe")
        assert client.supports("completions") == has(version, "completions_capability")
        await client.ping()
        assert client.wire.sent_methods() == ["initialize", "notifications/initialized", "ping"]


async def test_no_handlers_no_capabilities(transport: str, version: str) -> None:
    async with everything_client(transport, version) as client:
        assert client.capabilities() == {}
        assert client.wire.sent_with("initialize")[0]["params"]["capabilities"] == {}
        # a tool that needs sampling fails as a tool result; the client is never asked
        result = await client.call_tool("test_sampling", {"prompt": "hi"})
        assert result.is_error
        assert "sampling" in result.text


def test_capabilities_follow_the_offered_revision() -> None:
    def caps(**options: Any) -> dict[str, Any]:
        return Client(everything, **options).capabilities()

    assert caps() == {}
    assert caps(roots=lambda: []) == {"roots": {"listChanged": True}}
    hosted = {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}}
    assert caps(sampling=_sampler, sampling_tools=True) == {"sampling": {"tools": {}},
                                                            "tasks": hosted}
    assert caps(sampling=_sampler, sampling_tools=True, tasks=False) == {
        "sampling": {"tools": {}}}
    assert caps(sampling=_sampler, sampling_tools=True, protocol_version="2025-06-18") == {
        "sampling": {}}
    assert caps(elicitation=lambda p: p, protocol_version="2025-03-26") == {}
    assert caps(elicitation=lambda p: p, protocol_version="2025-06-18") == {"elicitation": {}}
    assert caps(elicitation=lambda p: p, elicitation_modes=("form", "url"), tasks=False) == {
        "elicitation": {"form": {}, "url": {}}}


async def test_negotiates_the_newest_revision_by_default(transport: str) -> None:
    target = everything if transport == "memory" else EVERYTHING_CMD
    client = TappedClient(target, timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            assert client.protocol_version == STATEFUL_VERSIONS[-1]
            assert client.wire.sent_with("initialize")[0]["params"]["protocolVersion"] == (
                STATEFUL_VERSIONS[-1])
    client.wire.assert_clean()


# ---------------------------------------------------------------------- tools


async def test_list_tools(transport: str, version: str) -> None:
    async with everything_client(transport, version) as client:
        tools = await client.list_tools()
        names = [tool.name for tool in tools]
        assert len(names) == len(set(names))
        for name in ("echo", "add", "sleep", "test_error_handling", "test_sampling",
                     "json_schema_2020_12_tool"):
            assert name in names
        add = next(tool for tool in tools if tool.name == "add")
        assert isinstance(add, t.Tool)
        assert add.input_schema["type"] == "object"
        assert set(add.input_schema["properties"]) == {"a", "b"}
        if has(version, "structured_content"):
            assert add.output_schema is not None
        else:
            assert add.output_schema is None
        page, cursor = await client.list_tools_page()
        assert [tool.name for tool in page] == names and cursor is None


async def test_call_tools_and_content_types(transport: str, version: str) -> None:
    async with everything_client(transport, version) as client:
        res = await client.call_tool("add", {"a": 1, "b": 2})
        assert not res.is_error and res.text == "3"
        if has(version, "structured_content"):
            assert res.structured_content == {"result": 3}
        else:
            assert res.structured_content is None

        res = await client.call_tool("echo", {"text": "héllo\nwörld"})
        assert res.content == [t.TextContent(text="héllo\nwörld")]

        res = await client.call_tool("test_image_content")
        (image,) = res.content
        assert isinstance(image, t.ImageContent) and image.mime_type == "image/png"
        assert base64.b64decode(image.data) == PNG

        res = await client.call_tool("test_audio_content")
        (audio,) = res.content
        if has(version, "audio_content"):
            assert isinstance(audio, t.AudioContent) and audio.mime_type == "audio/wav"
            assert base64.b64decode(audio.data)[:4] == b"RIFF"
        else:  # the server stands in text for what this revision cannot carry
            assert isinstance(audio, t.TextContent) and "audio" in audio.text

        res = await client.call_tool("test_embedded_resource")
        (embedded,) = res.content
        assert isinstance(embedded, t.EmbeddedResource)
        assert embedded.resource.uri == "test://embedded-resource"
        assert embedded.resource.text == "This is an embedded resource content."
        assert embedded.resource.mime_type == "text/plain"

        res = await client.call_tool("test_multiple_content_types")
        kinds = [type(block) for block in res.content]
        assert kinds == [t.TextContent, t.ImageContent, t.EmbeddedResource]
        assert json.loads(res.content[2].resource.text or "") == {"test": "data", "value": 123}


async def test_tool_errors(transport: str, version: str) -> None:
    async with everything_client(transport, version) as client:
        res = await client.call_tool("test_error_handling")  # no exception
        assert res.is_error is True
        assert "intentionally returns an error" in res.text
        with pytest.raises(RemoteError) as info:
            await client.call_tool("no_such_tool", {})
        assert info.value.code == -32602
        await client.ping()  # still usable


async def test_progress(transport: str, version: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    three = anyio.Event()

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))
        if len(seen) == 3:
            three.set()

    async with everything_client(transport, version) as client:
        res = await client.call_tool("test_tool_with_progress", on_progress=on_progress)
        await three.wait()
        assert [p for p, _, _ in seen] == [0, 50, 100]
        assert all(total == 100 for _, total, _ in seen)
        if has(version, "progress_message"):
            assert seen[1][2] == "Completed step 50 of 100"
        (call,) = client.wire.sent_with("tools/call")
        token = call["params"]["_meta"]["progressToken"]
        assert res.text == str(token)  # the tool returns the token it reported on


async def test_logging(transport: str, version: str) -> None:
    logs: list[dict[str, Any]] = []
    three = anyio.Event()

    async def on_log(params: dict[str, Any]) -> None:
        logs.append(params)
        if len(logs) == 3:
            three.set()

    async with everything_client(transport, version, on_log=on_log) as client:
        await client.set_logging_level("info")
        res = await client.call_tool("test_tool_with_logging")
        assert res.text == "Tool with logging executed successfully"
        await three.wait()
        assert [entry["data"] for entry in logs] == [
            "Tool execution started", "Tool processing data", "Tool execution completed"]
        assert {entry["level"] for entry in logs} == {"info"}
        (set_level,) = client.wire.sent_with("logging/setLevel")
        assert set_level["params"] == {"level": "info"}

        await client.set_logging_level("error")  # info messages are filtered out now
        await client.call_tool("test_tool_with_logging")
        await client.ping()
        assert len(logs) == 3


async def test_bad_log_level_is_refused_before_sending(transport: str, version: str) -> None:
    async with everything_client(transport, version) as client:
        with pytest.raises(ValueError, match="loud"):
            await client.set_logging_level("loud")
        await client.ping()
        assert "logging/setLevel" not in client.wire.sent_methods()


async def test_concurrent_calls_get_their_own_progress(transport: str, version: str) -> None:
    # one callback object shared by three calls in flight at once: tokens must differ
    seen: list[float] = []
    nine = anyio.Event()

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)
        if len(seen) == 9:
            nine.set()

    async with everything_client(transport, version) as client:
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(lambda: client.call_tool("test_tool_with_progress",
                                                       on_progress=on_progress))
        await nine.wait()
        assert sorted(seen) == [0, 0, 0, 50, 50, 50, 100, 100, 100]
        tokens = [m["params"]["_meta"]["progressToken"]
                  for m in client.wire.sent_with("tools/call")]
        assert len(set(tokens)) == 3


async def test_malformed_results_raise_invalid_result(version: str) -> None:
    server = Server("malformed")

    async def hologram() -> dict[str, Any]:
        return {"content": [{"type": "hologram", "data": "?"}], "isError": False}

    async def no_list() -> dict[str, Any]:
        return {"content": {"type": "text", "text": "not in a list"}, "isError": False}

    server.add_tool(hologram)
    server.add_tool(no_list)
    client = TappedClient(server, protocol_version=version)
    with anyio.fail_after(LIMIT):
        async with client:
            with pytest.raises(InvalidResult, match="tools/call is malformed"):
                await client.call_tool("hologram")
            with pytest.raises(InvalidResult, match="tools/call is malformed"):
                await client.call_tool("no_list")
            await client.ping()
    client.wire.assert_clean()


# ---------------------------------------------------------------------- client features


async def test_sampling(transport: str, version: str) -> None:
    asked: list[dict[str, Any]] = []

    async def sampler(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return await _sampler(params)

    async with everything_client(transport, version, sampling=sampler) as client:
        res = await client.call_tool("test_sampling", {"prompt": "What is 2+2?"})
        assert not res.is_error, res.text
        assert res.text == "LLM response: echo of What is 2+2?"
        (params,) = asked
        assert params["maxTokens"] == 100
        assert params["messages"][0]["role"] == "user"
        # the client's answer went out as a CreateMessageResult (validated by the tap)
        answers = [m for m in client.wire.sent if "result" in m and "model" in m["result"]]
        assert answers and answers[0]["result"]["role"] == "assistant"


async def test_sampling_with_a_sync_handler(transport: str, version: str) -> None:
    def sampler(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": {"type": "text", "text": "sync"}, "model": "m"}

    async with everything_client(transport, version, sampling=sampler) as client:
        res = await client.call_tool("test_sampling", {"prompt": "x"})
        assert res.text == "LLM response: sync"


async def test_elicitation(transport: str, version: str) -> None:
    requests: list[dict[str, Any]] = []
    answers = iter([
        {"action": "accept", "content": {"response": "yes"}},
        {"action": "accept", "content": {"name": "Ann", "age": 41}},  # partial
        {"action": "decline", "content": {"ignored": True}},
    ])

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        requests.append(params)
        return next(answers)

    async with everything_client(transport, version, elicitation=elicit,
                                 allow=(FRACTIONAL_ELICIT_ANSWER,)) as client:
        res = await client.call_tool("test_elicitation", {"message": "Say yes"})
        if not has(version, "elicitation"):
            # not declared at this revision, so the server cannot ask
            assert "elicitation" not in client.capabilities()
            assert res.is_error and "elicitation" in res.text
            assert requests == []
            return
        assert not res.is_error, res.text
        assert res.text == "User response: action=accept, content={'response': 'yes'}"
        assert requests[0]["message"] == "Say yes" and requests[0]["mode"] == "form"

        res = await client.call_tool("test_elicitation_sep1034_defaults")
        assert not res.is_error, res.text
        assert res.text == (
            "Elicitation completed: action=accept, content={'name': 'Ann', 'age': 41, "
            "'score': 95.5, 'status': 'active', 'verified': True}"
        )
        assert requests[1]["defaults"] == {"name": "John Doe", "age": 30, "score": 95.5,
                                           "status": "active", "verified": True}

        res = await client.call_tool("test_elicitation", {"message": "Say no"})
        assert res.text == "User response: action=decline, content={}"
        declined = [m for m in client.wire.sent if m.get("result", {}).get("action") == "decline"]
        assert declined and "content" not in declined[0]["result"]


def _roots_target(transport: str) -> Any:
    return client_roots.server if transport == "memory" else ROOTS_CMD


async def _roots_of(client: Client) -> list[str]:
    res = await client.call_tool("roots")
    assert not res.is_error, res.text
    value = json.loads(res.text)
    assert isinstance(value, list)
    return value


@pytest.mark.parametrize("kind", ["list", "dicts", "sync", "async"])
async def test_roots(transport: str, version: str, kind: str) -> None:
    uris = ["file:///home/user/project", "file:///tmp/scratch"]

    async def async_roots() -> list[str]:
        return uris

    roots: Any = {
        "list": uris,
        "dicts": [{"uri": u, "name": u.rsplit("/", 1)[-1]} for u in uris],
        "sync": lambda: uris,
        "async": async_roots,
    }[kind]
    client = TappedClient(_roots_target(transport), protocol_version=version, roots=roots,
                          timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            assert client.capabilities() == {"roots": {"listChanged": True}}
            assert await _roots_of(client) == uris
            answers = [m for m in client.wire.sent if "roots" in m.get("result", {})]
            assert len(answers) == 1
            if kind == "dicts":
                assert answers[0]["result"]["roots"][0]["name"] == "project"
    client.wire.assert_clean()


async def test_roots_not_declared_and_invalid(transport: str, version: str) -> None:
    with anyio.fail_after(LIMIT):
        async with TappedClient(_roots_target(transport), protocol_version=version) as client:
            res = await client.call_tool("roots")
            assert res.is_error and "roots" in res.text
        client.wire.assert_clean()
        # a root that is not a file:// URI is refused by the client (an error answer)
        async with TappedClient(_roots_target(transport), protocol_version=version,
                                roots=["https://example.com/"]) as client:
            res = await client.call_tool("roots")
            assert res.is_error
            errors = [m for m in client.wire.sent if "error" in m]
            assert len(errors) == 1
            await client.ping()
        client.wire.assert_clean()


async def test_roots_changed_notification(version: str) -> None:
    server = Server("roots-watch")
    changed = anyio.Event()
    seen: list[list[dict[str, Any]]] = []

    async def on_changed(ctx: Context) -> None:
        seen.append(await ctx.list_roots(timeout=5))
        changed.set()

    server.on_roots_changed = on_changed
    current = ["file:///a"]
    client = TappedClient(server, protocol_version=version, roots=lambda: current)
    with anyio.fail_after(LIMIT):
        async with client:
            current = ["file:///b"]
            await client.roots_changed()
            await changed.wait()
    assert seen == [[{"uri": "file:///b"}]]
    assert "notifications/roots/list_changed" in client.wire.sent_methods()
    client.wire.assert_clean()


async def test_roots_changed_is_not_sent_without_roots(version: str) -> None:
    client = TappedClient(everything, protocol_version=version)
    with anyio.fail_after(LIMIT):
        async with client:
            await client.roots_changed()
            await client.ping()
    assert "notifications/roots/list_changed" not in client.wire.sent_methods()
    client.wire.assert_clean()


# ---------------------------------------------------------------------- resources


async def test_resources(transport: str, version: str) -> None:
    async with everything_client(transport, version) as client:
        resources = {r.uri: r for r in await client.list_resources()}
        assert {"test://static-text", "test://static-binary",
                "test://watched-resource"} <= set(resources)
        assert resources["test://static-text"].mime_type == "text/plain"
        templates = await client.list_resource_templates()
        assert [tpl.uri_template for tpl in templates] == ["test://template/{id}/data"]
        assert isinstance(templates[0], t.ResourceTemplate)

        text = await client.read_resource("test://static-text")
        (item,) = text.contents
        assert item.text == "This is the content of the static text resource."
        assert item.blob is None

        blob = await client.read_resource("test://static-binary")
        (item,) = blob.contents
        assert item.mime_type == "image/png" and item.text is None
        assert base64.b64decode(item.blob or "") == PNG

        data = await client.read_resource("test://template/7/data")
        assert json.loads(data.contents[0].text or "") == {
            "id": "7", "templateTest": True, "data": "Data for ID: 7"}

        with pytest.raises(RemoteError) as info:
            await client.read_resource("test://nope")
        assert info.value.code == -32002
        assert "test://nope" in info.value.message


async def test_subscribe_and_unsubscribe(transport: str, version: str) -> None:
    updates: list[str] = []
    got = anyio.Event()

    def on_notification(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            updates.append(params["uri"])
            got.set()

    async with everything_client(transport, version, on_notification=on_notification
                                 ) as client:
        uri = "test://watched-resource"
        await client.subscribe(uri)
        if transport == "memory":  # same process: make the server report a change now
            everything.notify_resource_updated(uri)
            await got.wait()
            assert updates == [uri]
        await client.unsubscribe(uri)
        if transport == "memory":
            everything.notify_resource_updated(uri)
            await client.ping()  # anything sent before the pong has arrived
            assert updates == [uri]
        sent = client.wire.sent_with("resources/subscribe")
        assert sent[0]["params"] == {"uri": uri}
        assert client.wire.sent_with("resources/unsubscribe")[0]["params"] == {"uri": uri}


# ---------------------------------------------------------------------- prompts, completion


async def test_prompts(transport: str, version: str) -> None:
    async with everything_client(transport, version) as client:
        prompts = {p.name: p for p in await client.list_prompts()}
        assert {"test_simple_prompt", "test_prompt_with_arguments",
                "test_prompt_with_embedded_resource", "test_prompt_with_image"} <= set(prompts)
        args = prompts["test_prompt_with_arguments"].arguments or []
        assert [(a.name, a.required) for a in args] == [("arg1", True), ("arg2", True)]

        simple = await client.get_prompt("test_simple_prompt")
        assert simple.messages[0].role == "user"
        assert simple.messages[0].content == t.TextContent(
            text="This is a simple prompt for testing.")

        got = await client.get_prompt("test_prompt_with_arguments",
                                      {"arg1": "x y", "arg2": "z"})
        (msg,) = got.messages
        assert isinstance(msg.content, t.TextContent)
        assert msg.content.text == "Prompt with arguments: arg1='x y', arg2='z'"

        embedded = await client.get_prompt("test_prompt_with_embedded_resource",
                                           {"resourceUri": "test://r"})
        first = embedded.messages[0].content
        assert isinstance(first, t.EmbeddedResource) and first.resource.uri == "test://r"

        image = await client.get_prompt("test_prompt_with_image")
        assert isinstance(image.messages[0].content, t.ImageContent)

        with pytest.raises(RemoteError) as info:
            await client.get_prompt("test_prompt_with_arguments", {"arg1": "only one"})
        assert info.value.code == -32602


async def test_complete(transport: str, version: str) -> None:
    async with everything_client(transport, version) as client:
        ref = {"type": "ref/prompt", "name": "test_prompt_with_arguments"}
        completion = await client.complete(ref, "arg1", "a")
        assert completion.values == ["alpha"]
        completion = await client.complete(ref, "arg2", "t", context={"arg1": "alpha"})
        assert completion.values == ["two", "three"]
        sent = client.wire.sent_with("completion/complete")[-1]["params"]
        if has(version, "completion_context"):
            assert sent["context"] == {"arguments": {"arg1": "alpha"}}
        else:
            assert "context" not in sent
        res_ref = {"type": "ref/resource", "uri": "test://template/{id}/data"}
        assert (await client.complete(res_ref, "id", "4")).values == ["42"]


# ---------------------------------------------------------------------- enforcement


async def test_complete_needs_the_completions_capability(version: str) -> None:
    server = Server("no-completions")

    @server.prompt
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello {name}"

    client = TappedClient(server, protocol_version=version)
    with anyio.fail_after(LIMIT):
        async with client:
            assert "completions" not in client.server_capabilities
            ref = {"type": "ref/prompt", "name": "greet"}
            if has(version, "completions_capability"):
                with pytest.raises(CapabilityNotSupported):
                    await client.complete(ref, "name", "A")
                assert "completion/complete" not in client.wire.sent_methods()
            else:  # 2024-11-05 has no such capability flag: asking is allowed
                with pytest.raises(RemoteError) as info:
                    await client.complete(ref, "name", "A")
                assert info.value.code == -32601
                assert "completion/complete" in client.wire.sent_methods()
            await client.ping()
    client.wire.assert_clean()


async def test_server_without_capabilities(tmp_path: Path, version: str) -> None:
    log = tmp_path / "received.log"
    client = TappedClient([sys.executable, RAW, "bare", str(log)], protocol_version=version,
                          timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            assert client.server_capabilities == {}
            for call in (client.list_tools(), client.call_tool("fast"),
                         client.list_resources(), client.list_resource_templates(),
                         client.read_resource("test://x"), client.subscribe("test://x"),
                         client.list_prompts(), client.get_prompt("p"),
                         client.set_logging_level("info")):
                with pytest.raises(CapabilityNotSupported):
                    await call
            await client.ping()
    methods = [json.loads(line).get("method") for line in log.read_text().splitlines()
               if line.startswith("{")]
    assert methods == ["initialize", "notifications/initialized", "ping"]
    client.wire.assert_clean()


async def test_unsupported_server_version_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "received.log"
    client = Client([sys.executable, RAW, "version", str(log)], timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        with pytest.raises(HandshakeError, match="1999-01-01"):
            async with client:
                pytest.fail("the session must not start")
    assert client.stream is not None
    assert client.stream.process.returncode is not None  # type: ignore[attr-defined]
    methods = [json.loads(line).get("method") for line in log.read_text().splitlines()
               if line.startswith("{")]
    assert methods == ["initialize"]  # no notifications/initialized, nothing else


async def test_client_refuses_versions_it_was_told_not_to_speak() -> None:
    client = Client(everything, protocol_version="2025-06-18", versions=("2025-11-25",))
    with anyio.fail_after(LIMIT), pytest.raises(HandshakeError):
        async with client:
            pass


# ---------------------------------------------------------------------- outputSchema


def _schema_server() -> Server:
    server = Server("schemas")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    async def wrong() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "{\"n\": \"x\"}"}],
                "structuredContent": {"n": "not a number"}, "isError": False}

    async def missing() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "nothing"}], "isError": False}

    async def right() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "{\"n\": 1}"}],
                "structuredContent": {"n": 1}, "isError": False}

    async def failing() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "broken"}], "isError": True}

    for fn in (wrong, missing, right, failing):
        server.add_tool(fn, output_schema=schema)
    return server


async def test_output_schema_is_enforced(version: str) -> None:
    client = TappedClient(_schema_server(), protocol_version=version)
    with anyio.fail_after(LIMIT):
        async with client:
            if has(version, "structured_content"):
                with pytest.raises(OutputSchemaError, match="n"):
                    await client.call_tool("wrong")
                with pytest.raises(OutputSchemaError, match="no structuredContent"):
                    await client.call_tool("missing")
                assert (await client.call_tool("right")).structured_content == {"n": 1}
            else:  # no outputSchema in this revision: nothing to check against
                await client.call_tool("wrong")
                await client.call_tool("missing")
            failed = await client.call_tool("failing")  # an error result is not checked
            assert failed.is_error and failed.text == "broken"
    client.wire.assert_clean()


async def test_output_schema_checked_without_listing_first(version: str) -> None:
    # call_tool learns the schema by itself (one tools/list), then checks
    client = TappedClient(_schema_server(), protocol_version=version)
    with anyio.fail_after(LIMIT):
        async with client:
            if has(version, "structured_content"):
                with pytest.raises(OutputSchemaError):
                    await client.call_tool("wrong")
                await client.call_tool("right")
                assert client.wire.sent_methods().count("tools/list") == 1
    client.wire.assert_clean()


# ---------------------------------------------------------------------- pagination


async def test_pagination_follows_cursors(version: str) -> None:
    server = Server("paged", page_size=2)
    for i in range(5):
        async def tool(i: int = i) -> str:
            return str(i)

        server.add_tool(tool, name=f"tool{i}", description=f"tool number {i}")
    client = TappedClient(server, protocol_version=version)
    with anyio.fail_after(LIMIT):
        async with client:
            tools = await client.list_tools()
            assert [tool.name for tool in tools] == [f"tool{i}" for i in range(5)]
            page, cursor = await client.list_tools_page()
            assert [tool.name for tool in page] == ["tool0", "tool1"]
            assert isinstance(cursor, str)
            page2, _ = await client.list_tools_page(cursor)
            assert [tool.name for tool in page2] == ["tool2", "tool3"]
    lists = client.wire.sent_with("tools/list")
    assert len(lists) == 5  # three pages, then two by hand
    assert "params" not in lists[0] or "cursor" not in lists[0]["params"]
    assert all("cursor" in m["params"] for m in lists[1:3])
    client.wire.assert_clean()


async def test_endless_cursor_raises_instead_of_hanging(tmp_path: Path, version: str) -> None:
    client = TappedClient([sys.executable, RAW, "cursor", str(tmp_path / "log")],
                          protocol_version=version, timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            with pytest.raises(PaginationError, match="same"):
                await client.list_tools()
            await client.ping()
    assert len(client.wire.sent_with("tools/list")) == 2
    client.wire.assert_clean()
