"""Deeply nested input is refused as bad input, never a crash (issue #25, item 5).

Arguments nested 200-1000 levels (~0.5 KB) used to reach jsonschema-rs's error
conversion, which stops at ~255 levels: -32603 and a logged traceback per request. Now
every value a peer sends may nest ``MAX_DEPTH`` (128) levels and is refused past it, in
the shape each path already uses for bad input: tool arguments as the ``isError`` result
(2025-11-25 and the stateless 2026-07-28) or -32602 (older revisions), with a message
naming the limit; elicitation answers as the tool's ``isError``; MRTR and
``tasks/update`` input responses as -32602; a document past orjson's own 1024 levels as
-32700 saying so. Request and audit logs write what they can. The client refuses a
``structuredContent`` that deep (``OutputSchemaError``) and the checker reports it.

Item 9b: a POST body declared in another charset than UTF-8 is refused (415) on every
HTTP path (Streamable HTTP, stateless, legacy ``/messages``); ``charset=utf-8`` is
served, in any case, quoted or not. Item 9a: an argument error quotes at most ~240
characters of the refused value (its start and its end: a 100,000-item array made a
589 KB message), and a prompt error names at most 8 of the keys a peer sent, each cut at
60 characters.

Real processes: ``tests/servers/hostile_input.py`` on stdio (every request and audit
record logged) and in uvicorn on 127.0.0.1; ``tests/servers/client_raw.py deep`` for the
client and the checker. Every message mcpkit sends is validated against the schema.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from mcpkit.client import Client, OutputSchemaError
from tests.servers.hostile_input import build
from tests.support.http import ACCEPT_BOTH, LiveServer, McpHttp
from tests.support.schemas import WireChecker, validate
from tests.support.stdio import ServerProcess

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "servers" / "hostile_input.py"
RAW = ROOT / "tests" / "servers" / "client_raw.py"
MODERN = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
META = {PV: MODERN, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "hostile-tests", "version": "1"}}
LIMIT_WORDS = "may nest at most 128 levels"
DEPTHS = [200, 300, 1000]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def nested(levels: int) -> bytes:
    """``levels`` arrays inside each other around 1: ~2 bytes a level."""
    return b"[" * levels + b"1" + b"]" * levels


def with_deep(msg: dict[str, Any], levels: int) -> bytes:
    """``msg`` as JSON with its ``"DEEP"`` string replaced by a value ``levels`` deep."""
    data = orjson.dumps(msg)
    assert data.count(b'"DEEP"') == 1
    return data.replace(b'"DEEP"', nested(levels))


def call_deep(rid: int, tool: str, levels: int, stateless: bool = False) -> tuple[
        dict[str, Any], bytes]:
    """A tools/call whose one argument is nested ``levels`` deep: (what the schema
    checker learns of it, the bytes sent)."""
    params: dict[str, Any] = {"name": tool, "arguments": {
        "value" if tool == "echo" else "numbers": "DEEP"}}
    if stateless:
        params["_meta"] = META
    msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    return msg, with_deep(msg, levels)


def assert_refused_as_too_deep(text: str, field: str) -> None:
    assert f"{field}: nested too deeply" in text, text
    assert LIMIT_WORDS in text, text
    assert len(text) < 1000, text  # the value itself is not repeated


def no_traceback(p: ServerProcess) -> str:
    err = p.stderr()
    assert "Traceback" not in err and "ERROR" not in err, err[-3000:]
    return err


# ------------------------------------------------------------------------------ stdio


@pytest.fixture
def stdio() -> Iterator[ServerProcess]:
    with ServerProcess(SERVER) as p:
        yield p


def stdio_call(p: ServerProcess, tool: str, levels: int, stateless: bool = False
               ) -> dict[str, Any]:
    rid = p.next_id()
    msg, data = call_deep(rid, tool, levels, stateless)
    assert p.checker is not None
    p.checker.saw_peer(msg)
    p.send_raw(data + b"\n")
    return p.wait_for(rid)


@pytest.mark.parametrize("levels", DEPTHS)
@pytest.mark.parametrize("tool", ["echo", "total"])
def test_deep_arguments_are_a_tool_error_on_stdio(stdio: ServerProcess, tool: str,
                                                  levels: int) -> None:
    stdio.initialize("2025-11-25")
    answer = stdio_call(stdio, tool, levels)
    result = answer["result"]
    assert result["isError"] is True
    field = "value" if tool == "echo" else "numbers"
    assert_refused_as_too_deep(result["content"][0]["text"], field)
    assert stdio.request("ping")["result"] == {}  # the server goes on
    err = no_traceback(stdio)
    # The request log and the audit record were written, the too-deep value left out
    # when orjson cannot write it (past ~250 levels).
    assert '"method":"tools/call"' in err
    if levels > 250:
        assert "(not written: nested too deeply)" in err


def test_deep_arguments_are_invalid_params_before_2025_11_25(stdio: ServerProcess) -> None:
    stdio.initialize("2025-06-18")
    for tool in ("echo", "total"):
        answer = stdio_call(stdio, tool, 300)
        assert answer["error"]["code"] == -32602, answer
        assert_refused_as_too_deep(answer["error"]["message"],
                                   "value" if tool == "echo" else "numbers")
    no_traceback(stdio)


@pytest.mark.parametrize("levels", DEPTHS)
def test_deep_arguments_are_a_tool_error_stateless_on_stdio(levels: int) -> None:
    with ServerProcess(SERVER) as p:
        p.checker = WireChecker("server", revision=MODERN)
        result = stdio_call(p, "echo", levels, stateless=True)["result"]
        assert result["isError"] is True
        assert result["resultType"] == "complete"
        assert_refused_as_too_deep(result["content"][0]["text"], "value")
        no_traceback(p)


def test_nesting_past_what_orjson_reads_is_a_parse_error(stdio: ServerProcess) -> None:
    stdio.initialize("2025-11-25")
    stdio.send_raw(call_deep(5, "echo", 1100)[1] + b"\n")
    answer = stdio.recv()
    assert answer["error"]["code"] == -32700
    assert "more than 1024 levels deep" in answer["error"]["message"]
    assert "128" in answer["error"]["message"]
    no_traceback(stdio)


def test_a_deep_elicitation_answer_is_the_tools_error(stdio: ServerProcess) -> None:
    stdio.initialize("2025-11-25", capabilities={"elicitation": {}})
    stdio.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "ask", "arguments": {}}})
    asked = stdio.recv()
    assert asked["method"] == "elicitation/create"
    stdio.checker.saw_peer({"jsonrpc": "2.0", "id": asked["id"], "result": {}})  # type: ignore[union-attr]
    stdio.send_raw(with_deep({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "action": "accept", "content": {"value": "DEEP"}}}, 300) + b"\n")
    result = stdio.wait_for(7)["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "did not fit the requested form (value: nested too deeply" in text, text
    no_traceback(stdio)


def test_deep_input_responses_are_invalid_params(stdio: ServerProcess) -> None:
    stdio.checker = WireChecker("server", revision=MODERN)
    # MRTR: a retried tools/call whose answer is too deep (it would be sealed into the
    # next requestState), and the tasks extension's tasks/update (relayed to the
    # instance running the task in a shared deployment).
    retry = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "ask", "arguments": {}, "_meta": META,
        "inputResponses": {"k": {"action": "accept", "content": {"value": "DEEP"}}}}}
    tasks = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    update = {"jsonrpc": "2.0", "id": 2, "method": "tasks/update", "params": {
        "taskId": "no-such-task",
        "_meta": {**META, "io.modelcontextprotocol/clientCapabilities": tasks},
        "inputResponses": {"k": {"action": "accept", "content": {"value": "DEEP"}}}}}
    for msg in (retry, update):
        stdio.checker.saw_peer(msg)
        stdio.send_raw(with_deep(msg, 300) + b"\n")
        answer = stdio.wait_for(msg["id"])
        assert answer["error"]["code"] == -32602, answer
        message = answer["error"]["message"]
        assert "inputResponses['k'] is nested too deeply" in message, message
        assert LIMIT_WORDS in message
    no_traceback(stdio)


def test_completion_context_arguments_are_strings() -> None:
    with ServerProcess() as p:  # examples/everything.py: a completer that reads them
        p.initialize("2025-11-25")
        rid = p.next_id()
        msg = {"jsonrpc": "2.0", "id": rid, "method": "completion/complete", "params": {
            "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
            "argument": {"name": "arg2", "value": "t"},
            "context": {"arguments": {"arg1": "DEEP"}}}}
        assert p.checker is not None
        p.checker.saw_peer(msg)
        p.send_raw(with_deep(msg, 300) + b"\n")
        answer = p.wait_for(rid)
        assert answer["error"]["code"] == -32602, answer
        assert "'context.arguments' maps argument names to" in answer["error"]["message"]
        good = p.request("completion/complete", {**msg["params"],  # type: ignore[dict-item]
                                                 "context": {"arguments": {"arg1": "x"}}})
        assert good["result"]["completion"]["values"] == ["two", "three"]


# ------------------------------------------------------------------------------ item 9a


def test_an_argument_error_quotes_a_bounded_part_of_the_value(stdio: ServerProcess) -> None:
    stdio.initialize("2025-11-25")
    huge = list(range(100_000))  # 589 KB when the validator's message quotes it whole
    result = stdio.request("tools/call", {"name": "shout", "arguments": {"text": huge}})
    text = result["result"]["content"][0]["text"]
    assert len(text) < 1000, len(text)
    assert text.startswith("Invalid arguments for tool 'shout': text: [0,1,2,3,"), text
    assert "characters left out)…" in text and '99999] is not of type "string"' in text
    assert "Expected at text: a string." in text
    long_key = "k" * 100_000
    result = stdio.request("tools/call", {"name": "shout",
                                          "arguments": {"text": "a", long_key: 1}})
    text = result["result"]["content"][0]["text"]
    assert len(text) < 1000 and "Additional properties are not allowed" in text, len(text)
    no_traceback(stdio)


def test_a_prompt_error_names_bounded_keys() -> None:
    with ServerProcess() as p:  # examples/everything.py
        p.initialize("2025-11-25")
        args = {"arg1": "a", "arg2": "b", **{f"{i}" + "x" * 10_000: "c" for i in range(20)}}
        answer = p.request("prompts/get", {"name": "test_prompt_with_arguments",
                                           "arguments": args})
        message = answer["error"]["message"]
        assert answer["error"]["code"] == -32602
        assert len(message) < 1200 and "and 12 more" in message, len(message)


# ------------------------------------------------------------------------------ HTTP


@pytest.fixture
def live() -> Iterator[LiveServer]:
    with LiveServer(build().asgi_app()) as server:
        yield server


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["2025-11-25", "2025-03-26", MODERN])
async def test_deep_arguments_over_http(live: LiveServer, http: httpx.AsyncClient,
                                        version: str, caplog: pytest.LogCaptureFixture
                                        ) -> None:
    mh = McpHttp(http, live.url)
    stateless = version == MODERN
    headers = None
    if stateless:
        mh.checker = WireChecker("server", revision=MODERN)
        headers = {"accept": ACCEPT_BOTH, "content-type": "application/json",
                   "mcp-protocol-version": MODERN, "mcp-method": "tools/call",
                   "mcp-name": "echo"}
    else:
        await mh.initialize(version)
    caplog.set_level(logging.INFO)
    for levels in DEPTHS:
        msg, data = call_deep(mh.next_id(), "echo", levels, stateless)
        mh.checker.saw_peer(msg)
        reply = await mh.post_raw(data, headers)
        assert reply.status == 200, reply.body
        answer = reply.json
        if version == "2025-03-26":
            assert answer["error"]["code"] == -32602
            text = answer["error"]["message"]
        else:
            assert answer["result"]["isError"] is True
            text = answer["result"]["content"][0]["text"]
        assert_refused_as_too_deep(text, "value")
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]


# ------------------------------------------------------------------------------ item 9b


@pytest.mark.anyio
@pytest.mark.parametrize("charset", ["latin-1", "ISO-8859-1", '"utf-16"', "us-ascii"])
async def test_a_body_in_another_charset_is_415(live: LiveServer, http: httpx.AsyncClient,
                                               charset: str) -> None:
    mh = McpHttp(http, live.url)
    await mh.initialize("2025-11-25")
    ctype = f"application/json; charset={charset}"
    ping = b'{"jsonrpc":"2.0","id":"p","method":"ping"}'  # ASCII: read as UTF-8 before
    stateless = orjson.dumps({"jsonrpc": "2.0", "id": "s", "method": "tools/list",
                              "params": {"_meta": META}})
    modern = {"accept": ACCEPT_BOTH, "content-type": ctype, "mcp-protocol-version": MODERN,
              "mcp-method": "tools/list"}
    for body, headers in ((ping, mh.headers(content_type=ctype)), (stateless, modern)):
        reply = await mh.post_raw(body, headers)
        assert reply.status == 415, (reply.status, reply.body)
        message = reply.json["error"]["message"]
        assert "JSON is UTF-8 (RFC 8259)" in message and charset.strip('"') in message
    async with http.stream("GET", f"{live.base}/sse",
                           headers={"accept": "text/event-stream"}) as stream:
        lines = stream.aiter_lines()
        while not (line := await anext(lines)).startswith("data: "):
            pass
        reply = await http.post(live.base + line[len("data: "):], content=ping,
                                headers={"content-type": ctype})
        assert reply.status_code == 415, reply.text
        assert "JSON is UTF-8 (RFC 8259)" in reply.json()["error"]["message"]


@pytest.mark.anyio
@pytest.mark.parametrize("ctype", ["application/json; charset=utf-8",
                                   "application/json;charset=UTF-8",
                                   'application/json; charset="utf-8"',
                                   'Application/JSON ; Charset="Utf-8"'])
async def test_a_utf8_charset_is_served(live: LiveServer, http: httpx.AsyncClient,
                                        ctype: str) -> None:
    mh = McpHttp(http, live.url)
    await mh.initialize("2025-11-25")
    reply = await mh.request("tools/call", {"name": "shout", "arguments": {"text": "é"}},
                             headers=mh.headers(content_type=ctype))
    assert reply.status == 200 and reply.json["result"]["content"][0]["text"] == "É"


# ------------------------------------------------------------------------------ item 9c

TASKS_META = {**META, "io.modelcontextprotocol/clientCapabilities": {
    "extensions": {"io.modelcontextprotocol/tasks": {}}}}


async def stateless(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any],
                    checker: WireChecker) -> dict[str, Any]:
    """One unauthenticated 2026-07-28 request; its schema-checked answer."""
    msg = {"jsonrpc": "2.0", "id": 1, "method": method,
           "params": {**params, "_meta": TASKS_META}}
    headers = {"accept": ACCEPT_BOTH, "content-type": "application/json",
               "mcp-protocol-version": MODERN, "mcp-method": method}
    headers["mcp-name"] = params.get("name") or params["taskId"]
    checker.saw_peer(msg)
    reply = await http.post(url, content=orjson.dumps(msg), headers=headers)
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    result = answer.get("result")
    if method.startswith("tasks/") or (isinstance(result, dict)
                                       and result.get("resultType") == "task"):
        # The tasks extension's shapes are not in the core schema: its envelope and
        # the generic Result bind them (their fields are asserted by the test).
        checker._peer_requests.pop(1, None)
        validate(MODERN, "JSONRPCResultResponse", answer)
        validate(MODERN, "Result", result)
    else:
        checker.check(answer)
    return answer


@pytest.mark.anyio
async def test_unauthenticated_stateless_callers_each_get_their_own_task_slots() -> None:
    with LiveServer(build(max_tasks=2).asgi_app()) as live:
        checker = WireChecker("server", revision=MODERN)
        clients = [httpx.AsyncClient(timeout=10, transport=httpx.AsyncHTTPTransport(
            local_address=address)) for address in ("127.0.0.1", "127.0.0.2")]
        first, second = clients
        created: list[str] = []
        try:
            start = {"name": "slow_task", "arguments": {"seconds": 30}}
            for _ in range(2):  # the first caller takes its two slots
                result = (await stateless(first, live.url, "tools/call", start,
                                          checker))["result"]
                assert result["resultType"] == "task", result
                created.append(result["taskId"])
            full = (await stateless(first, live.url, "tools/call", start, checker))["result"]
            assert full["isError"] is True
            assert "Too many tasks are running for this caller" in full["content"][0]["text"]
            # Another address still gets its own; each reads the other's task by its id,
            # as any unauthenticated stateless caller holding it could before.
            other = (await stateless(second, live.url, "tools/call", start, checker))["result"]
            assert other["resultType"] == "task", other
            created.append(other["taskId"])
            seen = (await stateless(second, live.url, "tasks/get",
                                    {"taskId": created[0]}, checker))["result"]
            assert seen["status"] == "working"
        finally:
            for task_id in created:
                await stateless(first, live.url, "tasks/cancel", {"taskId": task_id}, checker)
            for client in clients:
                await client.aclose()


# ------------------------------------------------------------------------------ client, checker


@pytest.mark.anyio
async def test_the_client_refuses_deep_structured_content() -> None:
    async with Client([sys.executable, str(RAW), "deep"]) as client:
        with pytest.raises(OutputSchemaError, match="nested more than 128 levels deep"):
            await client.call_tool("deep", {})
        assert (await client.call_tool("fast", {})).text == "FAST"  # the session goes on


def test_the_checker_reports_deep_structured_content() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mcpkit", "check", "--call-tools", "all", "--format", "json",
         "--stdio", f"{sys.executable} {RAW} deep"],
        capture_output=True, timeout=120, cwd=ROOT)
    assert b"Traceback" not in run.stderr, run.stderr[-3000:]
    report = orjson.loads(run.stdout)
    said = orjson.dumps(report).decode()
    assert "not valid, and nested more than 128 levels deep" in said
