"""Tests that close the rows listed under "Gaps found" in docs/compliance.md.

Each test names the matrix row(s) it proves. The subjects are mcpkit's client and server
over every transport the row is about: in memory (``TappedClient``, which validates every
message the client sends against the official schema), as a stdio subprocess
(``ServerProcess``, which validates every message the server writes), over Streamable
HTTP (a real uvicorn on 127.0.0.1), and as two sans-I/O ``Connection`` objects wired back
to back. Purpose-built servers live in ``tests/servers/gaps_server.py`` (an mcpkit server)
and ``tests/servers/gaps_silent.py`` (a raw script that answers only ``initialize``).
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import orjson
import pytest

from mcpkit import (
    STATEFUL_VERSIONS,
    ConnectionClosed,
    Context,
    RequestTimeout,
    Server,
)
from mcpkit.client import Client, Stdio
from mcpkit.protocol.connection import (
    Connection,
    NotificationReceived,
    RequestReceived,
    ResponseReceived,
    SessionReady,
    SessionStarted,
)
from mcpkit.protocol.lifecycle import Role
from mcpkit.protocol.versions import REVISIONS, V2025_03_26

from .support.asgi_tap import AsgiTap
from .support.http import LiveServer, McpHttp, everything_server
from .support.schemas import WireChecker
from .support.stdio import ServerProcess
from .support.tap import TappedClient

ROOT = Path(__file__).resolve().parents[1]
GAPS_SERVER = ROOT / "tests" / "servers" / "gaps_server.py"
GAPS_SILENT = ROOT / "tests" / "servers" / "gaps_silent.py"
HTTP_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
LIMIT = 10  # seconds any single test may wait for anything

SAMPLER_CAPS: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {}}
PNG_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\nnot-really-a-png").decode()
WAV_B64 = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=STATEFUL_VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def gaps() -> Iterator[ServerProcess]:
    with ServerProcess(GAPS_SERVER) as proc:
        yield proc


async def wait_until(predicate: Callable[[], bool], what: str, limit: float = LIMIT) -> None:
    """Poll ``predicate`` (every 10 ms) until it holds; fail after ``limit`` seconds."""
    try:
        with anyio.fail_after(limit):
            while True:
                if predicate():
                    return
                await anyio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out after {limit}s waiting for {what}") from None


def drive(proc: ServerProcess, rids: set[Any],
          answer: Callable[[dict[str, Any]], dict[str, Any] | None],
          timeout: float = LIMIT) -> tuple[dict[Any, dict[str, Any]], list[dict[str, Any]]]:
    """Read ``proc`` until every request in ``rids`` is answered, answering the server's
    own requests with ``answer(request)`` (None: leave it unanswered). Returns the
    responses by id and the server->client requests seen; notifications are collected in
    ``proc.notifications``."""
    responses: dict[Any, dict[str, Any]] = {}
    requests: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not rids <= set(responses):
        left = deadline - time.monotonic()
        assert left > 0, f"no answer to {rids - set(responses)} within {timeout}s"
        msg = proc.recv(left)
        assert isinstance(msg, dict), f"unexpected batch: {msg}"
        if "method" in msg and "id" in msg:
            requests.append(msg)
            reply = answer(msg)
            if reply is not None:
                proc.respond(msg["id"], reply)
        elif "method" in msg:
            proc.notifications.append(msg)
        else:
            assert msg.get("id") in rids, f"unexpected response {msg}"
            responses[msg["id"]] = msg
    return responses, requests


def answer_everything(req: dict[str, Any]) -> dict[str, Any] | None:
    """A client that answers every server request, except a sampling prompt "never"."""
    method = req["method"]
    if method == "sampling/createMessage":
        text = req["params"]["messages"][0]["content"]["text"]
        if text == "never":
            return None
        return {"role": "assistant", "content": {"type": "text", "text": f"re: {text}"},
                "model": "test-model"}
    if method == "elicitation/create":
        return {"action": "accept", "content": {"name": "Ada"}}
    if method == "roots/list":
        return {"roots": [{"uri": "file:///tmp/project"}]}
    if method == "ping":
        return {}
    raise AssertionError(f"unexpected server request {req}")


def call_msg(rid: Any, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments or {}}}


def methods_of(notes: list[dict[str, Any]]) -> list[str]:
    return [n["method"] for n in notes]


# ----------------------------------------------------------------------------- M004


@pytest.mark.anyio
async def test_client_request_ids_are_never_reused_in_a_session() -> None:
    """M004, client side: every request the client sends in one session has its own id,
    also across timeouts, caller cancellations and concurrent calls."""
    with anyio.fail_after(LIMIT):
        async with TappedClient(everything_server(), timeout=5) as client:
            await client.list_tools()
            await client.ping()
            assert (await client.call_tool("echo", {"text": "a"})).text == "a"
            for _ in range(3):
                with pytest.raises(RequestTimeout):  # timed out: cancelled on the wire
                    await client.call_tool("sleep", {"seconds": 5}, timeout=0.05)
                with anyio.move_on_after(0.05) as scope:  # the caller gives up
                    await client.call_tool("sleep", {"seconds": 5})
                assert scope.cancelled_caught
                assert (await client.call_tool("echo", {"text": "b"})).text == "b"

            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon(client.call_tool, "echo", {"text": str(i)})
                    tg.start_soon(client.ping)
            await client.list_prompts()
            await client.read_resource("test://static-text")
    wire = client.wire
    ids = [m["id"] for m in wire.sent if "method" in m and "id" in m]
    assert len(ids) == 1 + 1 + 1 + 1 + 3 * 3 + 40 + 1 + 1  # initialize ... read
    duplicates = sorted({i for i in ids if ids.count(i) > 1}, key=str)
    assert not duplicates, f"request ids sent more than once: {duplicates}"
    cancelled = [n["params"]["requestId"] for n in wire.sent_with("notifications/cancelled")]
    assert len(cancelled) == 6 and set(cancelled) <= set(ids)
    wire.assert_clean()


def test_server_request_ids_are_never_reused_in_a_session(gaps: ServerProcess) -> None:
    """M004, server side: the requests a server sends to the client (sampling,
    elicitation, roots, and one that times out) never repeat an id in one session,
    across sequential and concurrent tool calls."""
    gaps.initialize(capabilities=SAMPLER_CAPS)
    seen: list[dict[str, Any]] = []
    for rid in ("first", "second"):
        gaps.send(call_msg(rid, "ask_many"))
        responses, requests = drive(gaps, {rid}, answer_everything)
        assert responses[rid]["result"]["isError"] is False, responses[rid]
        seen += requests
    gaps.send(call_msg("third", "ask_many"))
    gaps.send(call_msg("fourth", "ask_many"))
    responses, requests = drive(gaps, {"third", "fourth"}, answer_everything)
    assert all(r["result"]["isError"] is False for r in responses.values()), responses
    seen += requests

    assert [r["method"] for r in seen[:5]] == [
        "sampling/createMessage", "elicitation/create", "roots/list",
        "sampling/createMessage", "sampling/createMessage"]
    ids = [r["id"] for r in seen]
    assert len(ids) == 4 * 5
    duplicates = sorted({i for i in ids if ids.count(i) > 1}, key=str)
    assert not duplicates, f"server request ids sent more than once: {duplicates}"
    timed_out = [n["params"]["requestId"] for n in gaps.notifications
                 if n["method"] == "notifications/cancelled"]
    assert len(timed_out) == 4 and set(timed_out) <= set(ids)


# ----------------------------------------------------------------------------- M011


def _lines(data: bytes) -> list[Any]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def test_client_answers_a_batch_of_server_requests_with_one_array() -> None:
    """M011, client side (2025-03-26): a batch the server sends (two requests and a
    notification) is answered by the client connection with one array, sent only when
    every request in it is answered."""
    client = Connection(Role.CLIENT, info={"name": "c", "version": "1"},
                        capabilities={"roots": {"listChanged": True}})
    server = Connection(Role.SERVER, info={"name": "s", "version": "1"},
                        capabilities={"tools": {"listChanged": True}})
    client.start_handshake(V2025_03_26)
    assert [type(e) for e in server.receive_data(client.data_to_send())] == [SessionStarted]
    assert [type(e) for e in client.receive_data(server.data_to_send())] == [SessionStarted]
    assert server.receive_data(client.data_to_send()) == [SessionReady()]

    ping_id = server.send_request("ping")
    roots_id = server.send_request("roots/list")
    assert server.send_notification("notifications/tools/list_changed")
    batch = _lines(server.data_to_send())
    assert [m.get("method") for m in batch] == [
        "ping", "roots/list", "notifications/tools/list_changed"]
    events = client.receive_data(orjson.dumps(batch) + b"\n")
    assert events == [
        RequestReceived(roots_id, "roots/list", {}),
        NotificationReceived("notifications/tools/list_changed", {}),
    ]
    assert client.data_to_send() == b"", "the ping answer must wait for the whole batch"

    roots = {"roots": [{"uri": "file:///tmp/project", "name": "project"}]}
    assert client.send_result(roots_id, roots) is True
    data = client.data_to_send()
    assert data.count(b"\n") == 1, data  # one line: one JSON value
    answer = orjson.loads(data)
    assert isinstance(answer, list)
    assert sorted(answer, key=lambda m: m["id"]) == [
        {"jsonrpc": "2.0", "id": ping_id, "result": {}},
        {"jsonrpc": "2.0", "id": roots_id, "result": roots},
    ]
    checker = WireChecker("client", revision=V2025_03_26)
    checker.saw_peer(batch)
    checker.check(answer)  # each answer is a valid result of 2025-03-26
    assert checker.checked == 2
    events = server.receive_data(data)
    assert sorted(events, key=lambda e: getattr(e, "id", 0)) == [
        ResponseReceived(ping_id, {}), ResponseReceived(roots_id, roots)]
    assert client.in_flight == 0


# ----------------------------------------------------------------------------- M067


def no_docstring(count: int) -> int:
    return count


def empty_description(count: int) -> int:
    """This docstring is overridden by description=""."""
    return count


@pytest.mark.anyio
async def test_tool_without_description_still_lists_one(version: str) -> None:
    """M067: a tool registered without a docstring (or with an empty description) is
    still listed with a non-empty description (it falls back to the tool's name)."""
    server = Server("m067")
    server.add_tool(no_docstring)
    server.add_tool(empty_description, description="")
    server.add_tool(lambda text: text, name="anonymous")
    with anyio.fail_after(LIMIT):
        async with TappedClient(server, protocol_version=version) as client:
            tools = await client.list_tools()
    wire = [m for m in client.wire.received if isinstance(m.get("result"), dict)
            and "tools" in m["result"]]
    assert len(wire) == 1
    for raw in wire[0]["result"]["tools"]:
        assert isinstance(raw.get("description"), str) and raw["description"].strip(), raw
        assert raw["inputSchema"]["type"] == "object"
    assert {t.name: t.description for t in tools} == {
        "no_docstring": "no_docstring",
        "empty_description": "empty_description",
        "anonymous": "anonymous",
    }
    client.wire.assert_clean()


# ----------------------------------------------------------------------------- M078


def _sampling_server() -> Server:
    server = Server("m078")

    @server.tool
    async def draw(kind: str, ctx: Context) -> str:
        """Asks the client's LLM for a ``kind`` and returns what came back, as JSON."""
        result = await ctx.sample(f"give me {kind}", timeout=5)
        return json.dumps(result, sort_keys=True)

    return server


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["image", "audio"])
async def test_sampling_answer_with_image_or_audio_reaches_the_tool(
    version: str, kind: str
) -> None:
    """M078: a sampling handler answering with image (or, from 2025-03-26, audio)
    content: the client sends it unchanged and schema-valid, and ``ctx.sample`` hands
    exactly that content to the tool."""
    if kind == "audio" and not REVISIONS[version].has("audio_content"):
        pytest.skip(f"{version} has no audio content")
    data, mime = (PNG_B64, "image/png") if kind == "image" else (WAV_B64, "audio/wav")
    content = {"type": kind, "data": data, "mimeType": mime}
    asked: list[dict[str, Any]] = []

    async def sampler(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"role": "assistant", "content": dict(content), "model": "pixel-1",
                "stopReason": "endTurn"}

    with anyio.fail_after(LIMIT):
        async with TappedClient(_sampling_server(), protocol_version=version,
                                sampling=sampler) as client:
            result = await client.call_tool("draw", {"kind": kind})
    assert result.is_error is False, result
    got = json.loads(result.text)
    assert got["content"] == content
    assert got["model"] == "pixel-1" and got["role"] == "assistant"
    assert asked[0]["messages"][0]["content"]["text"] == f"give me {kind}"
    answers = [m for m in client.wire.sent if "result" in m and "model" in m["result"]]
    assert [a["result"]["content"] for a in answers] == [content]
    client.wire.assert_clean()  # CreateMessageResult with image/audio content is valid


# ----------------------------------------------------------------------------- S019/S020


LATE_ANSWERS: dict[str, dict[str, Any]] = {
    "sampling/createMessage": {"role": "assistant", "content": {"type": "text", "text": "late"},
                               "model": "m"},
    "elicitation/create": {"action": "decline"},
    "roots/list": {"roots": []},
}


@pytest.mark.parametrize("kind,method", [
    ("sample", "sampling/createMessage"),
    ("elicit", "elicitation/create"),
    ("roots", "roots/list"),
])
def test_server_request_the_client_never_answers_times_out_and_is_cancelled(
    gaps: ServerProcess, kind: str, method: str
) -> None:
    """S019/S020, server side: a server->client request the client never answers times
    out (0.5 s here), the server cancels it with reason "timed out", and the tool call
    ends with an isError result instead of hanging."""
    gaps.initialize(capabilities=SAMPLER_CAPS)
    start = time.monotonic()
    gaps.send(call_msg("t", "unanswered", {"kind": kind}))
    responses, requests = drive(gaps, {"t"}, lambda req: None)
    elapsed = time.monotonic() - start
    assert [r["method"] for r in requests] == [method]
    assert 0.4 <= elapsed < 5, elapsed
    cancels = [n for n in gaps.notifications if n["method"] == "notifications/cancelled"]
    assert len(cancels) == 1, gaps.notifications
    assert cancels[0]["params"]["requestId"] == requests[0]["id"]
    assert "timed out" in cancels[0]["params"]["reason"]
    result = responses["t"]["result"]
    assert result["isError"] is True, result
    assert "did not answer" in result["content"][0]["text"]
    # A late answer is ignored and the session goes on.
    gaps.respond(requests[0]["id"], LATE_ANSWERS[method])
    assert gaps.request("ping")["result"] == {}


# ----------------------------------------------------------------------------- S022


@pytest.mark.anyio
async def test_resource_without_mime_type_gets_the_inferred_one() -> None:
    """S022: resources registered without a mime type carry the inferred one in
    resources/read: text/plain (str), application/octet-stream (bytes),
    application/json (other values), for fixed resources and templates alike."""
    server = Server("s022")
    server.add_resource("plain words", "test://text")
    server.add_resource(b"\x00\x01\xff", "test://bytes")

    def settings() -> dict[str, Any]:
        return {"debug": True, "level": 3}

    def item(id: str) -> dict[str, Any]:
        return {"id": id}

    def raw(id: str) -> bytes:
        return id.encode()

    server.add_resource(settings, "test://json")
    server.add_resource(item, "test://items/{id}")
    server.add_resource(raw, "test://raw/{id}")
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            listed = {r.uri: r for r in await client.list_resources()}
            got = {uri: (await client.read_resource(uri)).contents for uri in (
                "test://text", "test://bytes", "test://json", "test://items/7",
                "test://raw/ab")}
    assert all(r.mime_type is None for r in listed.values())  # nothing was declared
    assert [(c.mime_type, c.text) for c in got["test://text"]] == [("text/plain", "plain words")]
    assert [(c.mime_type, c.blob) for c in got["test://bytes"]] == [
        ("application/octet-stream", base64.b64encode(b"\x00\x01\xff").decode())]
    assert [c.mime_type for c in got["test://json"]] == ["application/json"]
    assert json.loads(got["test://json"][0].text or "") == {"debug": True, "level": 3}
    assert [(c.mime_type, json.loads(c.text or "")) for c in got["test://items/7"]] == [
        ("application/json", {"id": "7"})]
    assert [(c.mime_type, c.blob) for c in got["test://raw/ab"]] == [
        ("application/octet-stream", base64.b64encode(b"ab").decode())]


# ----------------------------------------------------------------------------- S023/S024


@pytest.mark.parametrize("kind,method,listing,key,item", [
    ("resource", "notifications/resources/list_changed", "resources/list", "resources",
     ("uri", "test://dynamic")),
    ("template", "notifications/resources/list_changed", "resources/templates/list",
     "resourceTemplates", ("uriTemplate", "test://dynamic/{id}")),
    ("prompt", "notifications/prompts/list_changed", "prompts/list", "prompts",
     ("name", "dynamic_prompt")),
])
def test_registry_changes_on_a_live_session_send_list_changed_over_stdio(
    gaps: ServerProcess, kind: str, method: str, listing: str, key: str,
    item: tuple[str, str],
) -> None:
    """S023/S024 over stdio: a tool that adds, then removes, a resource, a resource
    template or a prompt makes the server send the matching list_changed notification
    each time, and the list follows."""
    gaps.initialize()
    field, value = item

    def listed() -> list[str]:
        return [x[field] for x in gaps.request(listing)["result"][key]]

    assert value not in listed()
    for action, present in (("add", True), ("remove", False)):
        gaps.notifications.clear()
        res = gaps.request("tools/call", {"name": "change",
                                          "arguments": {"kind": kind, "action": action}})
        assert res["result"]["isError"] is False, res
        assert methods_of(gaps.notifications) == [method], (action, gaps.notifications)
        assert (value in listed()) is present


@pytest.mark.anyio
async def test_registry_changes_on_a_live_session_reach_the_client_in_memory() -> None:
    """S023/S024 in memory: ``add_resource``/``remove_resource`` (fixed and templates)
    and ``add_prompt``/``remove_prompt`` called by the application on a live server reach
    a connected ``Client`` as list_changed notifications, one per change."""
    server = Server("s023")
    notes: list[str] = []

    def on_notification(method: str, params: dict[str, Any]) -> None:
        notes.append(method)

    def topic_prompt(topic: str) -> str:
        return f"Talk about {topic}."

    def by_id(id: str) -> str:
        return id

    res_changed = "notifications/resources/list_changed"
    prompts_changed = "notifications/prompts/list_changed"
    steps: list[tuple[Callable[[], Any], str]] = [
        (lambda: server.add_resource("v", "test://live"), res_changed),
        (lambda: server.remove_resource("test://live"), res_changed),
        (lambda: server.add_resource(by_id, "test://live/{id}"), res_changed),
        (lambda: server.remove_resource("test://live/{id}"), res_changed),
        (lambda: server.add_prompt(topic_prompt), prompts_changed),
        (lambda: server.remove_prompt("topic_prompt"), prompts_changed),
    ]
    async with Client(server, on_notification=on_notification) as client:
        assert client.supports("resources.listChanged") and client.supports(
            "prompts.listChanged")
        for i, (step, expected) in enumerate(steps, 1):
            step()
            await wait_until(lambda i=i: len(notes) >= i, f"notification {i} ({expected})")
            assert notes[i - 1] == expected, notes
        await client.ping()
        assert await client.list_resources() == []
        assert await client.list_resource_templates() == []
        assert await client.list_prompts() == []
    assert len(notes) == len(steps), notes


# ----------------------------------------------------------------------------- A017-A019


@pytest.mark.anyio
async def test_optional_listing_fields_are_listed(version: str) -> None:
    """A017: Resource size, description, mimeType; A018: ResourceTemplate description and
    mimeType; A019: Prompt description and arguments (with their descriptions)."""
    server = Server("a017")
    server.add_resource("# Title\n", "test://readme", name="readme",
                        description="The project's readme.", mime_type="text/markdown",
                        size=8)

    def row(id: str) -> dict[str, Any]:
        """One row of the table, by id."""
        return {"id": id}

    server.add_resource(row, "test://rows/{id}", mime_type="application/json")

    @server.prompt
    def review(code: str, style: str = "terse") -> str:
        """Review a piece of code.

        Args:
            code: The code to review.
            style: How to phrase the review.
        """
        return f"Review ({style}): {code}"

    with anyio.fail_after(LIMIT):
        async with TappedClient(server, protocol_version=version) as client:
            resources = await client.list_resources()
            templates = await client.list_resource_templates()
            prompts = await client.list_prompts()
    [readme] = resources
    assert (readme.uri, readme.size, readme.description, readme.mime_type) == (
        "test://readme", 8, "The project's readme.", "text/markdown")
    [template] = templates
    assert (template.uri_template, template.name, template.description,
            template.mime_type) == (
        "test://rows/{id}", "row", "One row of the table, by id.", "application/json")
    [prompt] = prompts
    assert prompt.description == "Review a piece of code."
    assert [(a.name, a.description, a.required) for a in prompt.arguments or []] == [
        ("code", "The code to review.", True),
        ("style", "How to phrase the review.", False),
    ]
    client.wire.assert_clean()


# ----------------------------------------------------------------------------- COMPL.2


@pytest.mark.anyio
async def test_completion_is_cut_to_100_values_with_total_and_has_more() -> None:
    """REVISIONS COMPL.2: a completer returning 150 candidates gives 100 values (in the
    completer's order), total 150 and hasMore true."""
    server = Server("compl")

    @server.prompt
    def pick(colour: str) -> str:
        return colour

    server.add_completion(prompt="pick", argument="colour",
                          fn=lambda value, context: [f"{value}{i}" for i in range(150)])
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            many = await client.complete({"type": "ref/prompt", "name": "pick"}, "colour", "c")
    assert many.values == [f"c{i}" for i in range(100)]
    assert (many.total, many.has_more) == (150, True)

    exactly = Server("compl-100")
    exactly.add_prompt(pick)
    exactly.add_completion(prompt="pick", argument="colour",
                           fn=lambda value, context: [str(i) for i in range(100)])
    with anyio.fail_after(LIMIT):
        async with Client(exactly) as client:
            hundred = await client.complete({"type": "ref/prompt", "name": "pick"}, "colour", "")
    assert (len(hundred.values), hundred.total, hundred.has_more) == (100, 100, False)


# ----------------------------------------------------------------------------- S026/A022


@pytest.mark.anyio
async def test_keepalive_ping_unanswered_closes_the_connection(tmp_path: Path) -> None:
    """S026/A022: with ``ping_interval``, a server that stops answering (even pings) is
    detected: the unanswered ping closes the connection and a pending call fails with
    ConnectionClosed long before its own 30 s timeout."""
    log = tmp_path / "received.jsonl"
    start = time.monotonic()
    with anyio.fail_after(LIMIT):
        async with Client(Stdio([sys.executable, str(GAPS_SILENT)],
                                env={"MCPKIT_GAPS_LOG": str(log)}),
                          ping_interval=0.2, timeout=0.5) as client:
            call_started = time.monotonic()
            with pytest.raises(ConnectionClosed):
                await client.call_tool("anything", {}, timeout=30)
            failed_after = time.monotonic() - call_started
            with pytest.raises(ConnectionClosed):
                await client.ping()  # the connection stays closed
    assert failed_after < 5, failed_after  # ping at 0.2 s + 0.5 s timeout, not 30 s
    assert time.monotonic() - start < LIMIT
    received = [json.loads(line) for line in log.read_text().splitlines()]
    methods = [m.get("method") for m in received]
    assert methods[:3] == ["initialize", "notifications/initialized", "tools/call"]
    assert "ping" in methods, methods


@pytest.mark.anyio
async def test_keepalive_pings_are_sent_periodically_and_answered() -> None:
    """S026: against a live server, ``ping_interval`` makes the client ping on its own,
    every interval, and the session stays usable."""
    with anyio.fail_after(LIMIT):
        async with TappedClient(everything_server(), ping_interval=0.1) as client:
            start = time.monotonic()
            pings = await client.wire.wait_sent("ping", 4)
            elapsed = time.monotonic() - start
            await wait_until(lambda: all(
                any(m.get("id") == p["id"] and m.get("result") == {}
                    for m in client.wire.received) for p in pings[:4]), "the ping answers")
            assert (await client.call_tool("echo", {"text": "alive"})).text == "alive"
    assert elapsed >= 0.3, elapsed  # four pings, one every 0.1 s (not all at once)
    assert len({p["id"] for p in pings}) == len(pings)
    client.wire.assert_clean()


@pytest.mark.anyio
async def test_no_keepalive_pings_without_ping_interval() -> None:
    """S026: pinging is opt-in; without ``ping_interval`` the client sends none."""
    with anyio.fail_after(LIMIT):
        async with TappedClient(everything_server()) as client:
            await anyio.sleep(0.3)
            await client.call_tool("echo", {"text": "x"})
    assert "ping" not in client.wire.sent_methods()


# ----------------------------------------------------------------------------- A007


@pytest.mark.anyio
@pytest.mark.parametrize("http_version", HTTP_VERSIONS)
async def test_server_request_outside_any_client_request_travels_on_the_get_stream(
    http_version: str,
) -> None:
    """A007: over Streamable HTTP, a server->client request that belongs to no client
    request (``ctx.list_roots`` from ``on_roots_changed``) is sent on the GET stream,
    and mcpkit's client answers it with a POST."""
    server = Server("a007")
    got: list[Any] = []
    done = threading.Event()

    async def on_roots_changed(ctx: Context) -> None:
        try:
            got.append(await ctx.list_roots(timeout=5))
        except Exception as exc:  # recorded for the assertion below
            got.append(exc)
        finally:
            done.set()

    server.on_roots_changed = on_roots_changed
    tap = AsgiTap(server.asgi_app())
    roots = [{"uri": "file:///tmp/a007", "name": "a007"}]
    with LiveServer(tap) as live:
        with anyio.fail_after(LIMIT):
            async with Client(live.url, roots=roots, protocol_version=http_version) as client:
                await client.roots_changed()
                await wait_until(done.is_set, "the server's roots/list answer")
                await client.ping()
    assert got == [roots]
    exchanges = {e["n"]: e for e in tap.entries if e["ev"] == "request"}
    [ask] = [e for e in tap.entries if e["ev"] == "s2c" and isinstance(e.get("msg"), dict)
             and e["msg"].get("method") == "roots/list"]
    assert exchanges[ask["n"]]["method"] == "GET", exchanges[ask["n"]]
    assert ask["via"] == "sse"
    [reply] = [e for e in tap.entries if e["ev"] == "c2s" and isinstance(e.get("msg"), dict)
               and e["msg"].get("id") == ask["msg"]["id"] and "result" in e["msg"]]
    assert exchanges[reply["n"]]["method"] == "POST"
    assert reply["msg"]["result"] == {"roots": roots}
    tap.close()


@pytest.mark.anyio
async def test_roots_changed_request_is_not_tied_to_a_client_request_with_id_0() -> None:
    """A007/S004: the server request sent from ``on_roots_changed`` belongs to no client
    request, even when the client has a request with id 0 in flight: it goes on the GET
    stream, not on that request's POST stream."""
    server = Server("a007-id0")
    done = threading.Event()
    got: list[Any] = []

    @server.tool
    async def hold(seconds: float) -> str:
        """Waits ``seconds``, then returns."""
        await anyio.sleep(seconds)
        return "held"

    async def on_roots_changed(ctx: Context) -> None:
        try:
            got.append(await ctx.list_roots(timeout=5))
        finally:
            done.set()

    server.on_roots_changed = on_roots_changed
    roots = [{"uri": "file:///tmp/zero"}]
    with LiveServer(server.asgi_app()) as live:
        async with httpx.AsyncClient() as http:
            c = McpHttp(http, live.url)
            init = c.init_message(rid="init", capabilities={"roots": {"listChanged": True}})
            reply = await c.post(init, headers=c.headers(mcp_protocol_version=None))
            assert reply.status == 200, reply.body
            c.session_id = reply.headers["mcp-session-id"]
            c.version = reply.json["result"]["protocolVersion"]
            assert (await c.notify("notifications/initialized")).status == 202
            on_post: list[Any] = []

            async def call_zero() -> None:
                async with c.open_post(call_msg(0, "hold", {"seconds": 1.5})) as post:
                    if post.content_type == "text/event-stream":
                        on_post.extend(m for _, m in await post.until_end())
                    else:
                        on_post.append((await post.body()).json)

            with anyio.fail_after(LIMIT):
                async with c.open_get() as get, anyio.create_task_group() as tg:
                    await get.next_event()  # the priming event: the stream is open
                    tg.start_soon(call_zero)
                    await anyio.sleep(0.2)  # tools/call 0 is in flight
                    assert (await c.notify("notifications/roots/list_changed")).status == 202
                    _, ask = await get.next_message(timeout=3)
                    assert ask["method"] == "roots/list", ask
                    answer = {"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": roots}}
                    assert (await c.post(answer)).status == 202
                    await anyio.to_thread.run_sync(done.wait, 5)
            await c.delete()
    assert got == [roots]
    assert [m.get("id") for m in on_post] == [0], on_post  # only the tool's own answer
    assert on_post[0]["result"]["content"][0]["text"] == "held"


# ----------------------------------------------------------------------------- A008


RESUMED_RESULT: dict[str, Any] = {"content": [{"type": "text", "text": "resumed result"}],
                                  "isError": False}


class ResumingApp:
    """A raw ASGI Streamable HTTP endpoint (no mcpkit inside) whose ``tools/call`` answer
    stream is closed right after a priming event; the result is only available by
    resuming with GET + ``Last-Event-ID``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str], Any]] = []  # method, headers, body
        self.call_id: Any = None
        self.stream_closed_at: float | None = None
        self.resumed_at: float | None = None
        self.resume_headers: dict[str, str] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        msg = json.loads(body) if body else None
        self.calls.append((scope["method"], headers, msg))
        if scope["method"] == "POST":
            await self._post(msg, send)
        elif scope["method"] == "GET" and "last-event-id" not in headers:
            await self._respond(send, 405, b"", "text/plain")
        elif scope["method"] == "GET":
            self.resumed_at = time.monotonic()
            self.resume_headers = headers
            answer = {"jsonrpc": "2.0", "id": self.call_id, "result": RESUMED_RESULT}
            event = b"id: e2\nevent: message\ndata: " + json.dumps(answer).encode() + b"\n\n"
            await self._respond(send, 200, event, "text/event-stream")
        else:  # DELETE
            await self._respond(send, 200, b"", "text/plain")

    async def _post(self, msg: Any, send: Any) -> None:
        if "id" not in msg or "method" not in msg:
            await self._respond(send, 202, b"", "text/plain")
            return
        method = msg["method"]
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "resuming", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "slow", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            self.call_id = msg["id"]
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
            await send({"type": "http.response.body", "body": b"id: e1\nretry: 200\ndata: \n\n",
                        "more_body": False})
            self.stream_closed_at = time.monotonic()
            return
        else:
            result = {}
        answer = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
        extra = [(b"mcp-session-id", b"resume-session-1")] if method == "initialize" else []
        await self._respond(send, 200, answer, "application/json", extra)

    @staticmethod
    async def _respond(send: Any, status: int, body: bytes, ctype: str,
                       extra: list[tuple[bytes, bytes]] | None = None) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", ctype.encode()), *(extra or [])]})
        await send({"type": "http.response.body", "body": body, "more_body": False})


@pytest.mark.anyio
async def test_client_resumes_a_response_stream_the_server_closed_early() -> None:
    """A008: the server may close a request's SSE stream at any time; mcpkit's HTTP client
    then waits the ``retry`` delay, resumes with GET + ``Last-Event-ID`` and gets the
    response from the resumed stream."""
    app = ResumingApp()
    with LiveServer(app) as live:
        with anyio.fail_after(LIMIT):
            async with Client(live.url, timeout=5) as client:
                result = await client.call_tool("slow", {})
    assert result.text == "resumed result" and result.is_error is False
    assert app.resume_headers.get("last-event-id") == "e1"
    assert app.resume_headers.get("mcp-session-id") == "resume-session-1"
    assert "text/event-stream" in app.resume_headers.get("accept", "")
    assert app.stream_closed_at is not None and app.resumed_at is not None
    waited = app.resumed_at - app.stream_closed_at
    assert 0.18 <= waited < 0.9, waited  # the server's retry (200 ms), not the 1 s default
    resumes = [c for c in app.calls if c[0] == "GET" and "last-event-id" in c[1]]
    assert len(resumes) == 1
