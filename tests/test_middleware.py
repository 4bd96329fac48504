"""Middleware (server/middleware.py, builtin_middleware.py): the chain's order, what a hook
sees, short-circuits (a result, an MCP error), notifications, the built-ins, both eras,
in memory (wire-checked against the schemas), over stdio and over Streamable HTTP."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import anyio
import pytest

from mcpkit import Server
from mcpkit.client import Client
from mcpkit.protocol.errors import InvalidParams, RemoteError
from mcpkit.server.builtin_middleware import ErrorMapping, ListCache, RequestLog
from mcpkit.server.middleware import CallNext, Middleware, NotifyNext, Request
from mcpkit.testing import ERAS, connect
from tests.support.http import LiveServer
from tests.support.raw_peer import raw_peer
from tests.support.schemas import validate

pytestmark = pytest.mark.anyio

LIMIT = 10
JSON = dict[str, Any]


class Recorder(Middleware):
    """Notes every hook it runs (with ``tag``) in ``log``; sees the request's context."""

    def __init__(self, tag: str, log: list[str]) -> None:
        self.tag = tag
        self.log = log
        self.seen: list[Request] = []

    async def on_request(self, request: Request, call_next: CallNext) -> JSON:
        self.log.append(f"{self.tag}.request {request.method}")
        self.seen.append(request)
        result = await call_next(request)
        self.log.append(f"{self.tag}.request done")
        return result

    async def on_call_tool(self, request: Request, call_next: CallNext) -> JSON:
        self.log.append(f"{self.tag}.call_tool {request.params['name']}")
        return await call_next(request)

    async def on_notification(self, request: Request, call_next: NotifyNext) -> None:
        self.log.append(f"{self.tag}.notification {request.method}")
        await call_next(request)


def make_server(*middleware: Middleware, **options: Any) -> Server:
    server = Server("mw", middleware=middleware, **options)

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool
    def fail() -> str:
        """Always fails."""
        raise RuntimeError("broken")

    @server.resource("mw://broken")
    def broken() -> str:
        raise KeyError("missing")

    @server.prompt
    def ask(topic: str) -> str:
        return f"Tell me about {topic}."

    return server


@pytest.mark.parametrize("mode", ERAS)
async def test_the_chain_runs_in_order_around_the_handler(mode: str) -> None:
    log: list[str] = []
    outer, inner = Recorder("a", log), Recorder("b", log)
    with anyio.fail_after(LIMIT):
        async with connect(make_server(outer, inner), mode=mode) as client:
            result = await client.request("tools/call", {"name": "add",
                                                         "arguments": {"a": 1, "b": 2}})
            assert result["content"][0]["text"] == "3"
            log_of_call = list(log)
            log.clear()
            await client.list_tools()
    assert log_of_call == ["a.request tools/call", "a.call_tool add", "b.request tools/call",
                           "b.call_tool add", "b.request done", "a.request done"]
    assert log == ["a.request tools/list", "b.request tools/list", "b.request done",
                   "a.request done"]
    seen = next(r for r in outer.seen if r.method == "tools/call")
    assert (seen.stateless is not None) is (mode == "stateless")
    if seen.stateless is not None:  # the request's own _meta, as Context.stateless has it
        assert seen.stateless.revision.version == seen.protocol_version == "2026-07-28"
    assert seen.protocol_version == ("2026-07-28" if mode == "stateless" else "2025-11-25")
    assert seen.id is not None and seen.principal is None and seen.session_id is None
    assert seen.server is not None and seen.session is not None


class Deny(Middleware):
    """Refuses the tool ``secret`` with an error, answers ``cached`` itself."""

    def __init__(self) -> None:
        self.reached: list[str] = []

    async def on_call_tool(self, request: Request, call_next: CallNext) -> JSON:
        name = request.params.get("name")
        if name == "add" and request.params.get("arguments", {}).get("a") == 13:
            raise InvalidParams("13 is not allowed here; pick another number")
        if name == "cached":
            return {"content": [{"type": "text", "text": "from the middleware"}]}
        self.reached.append(str(name))
        return await call_next(request)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_middleware_short_circuits_with_a_result_or_an_error(mode: str) -> None:
    log: list[str] = []
    deny, inner = Deny(), Recorder("inner", log)
    with anyio.fail_after(LIMIT):
        async with connect(make_server(deny, inner), mode=mode) as client:
            # no tool "cached" exists: the middleware answered without the handler
            answered = await client.call_tool("cached", {})
            with pytest.raises(RemoteError) as refused:
                await client.call_tool("add", {"a": 13, "b": 1})
            ok = await client.call_tool("add", {"a": 1, "b": 1})
    assert answered.text == "from the middleware" and not answered.is_error
    assert refused.value.code == -32602 and "13 is not allowed" in refused.value.message
    assert ok.text == "2" and deny.reached == ["add"]
    assert [e for e in log if "call_tool" in e] == ["inner.call_tool add"]


class Rewrite(Middleware):
    """Changes the arguments going in and the result coming out."""

    async def on_call_tool(self, request: Request, call_next: CallNext) -> JSON:
        request.params = {**request.params, "arguments": {"a": 40, "b": 2}}
        result = await call_next(request)
        result["content"].append({"type": "text", "text": "rewritten"})
        return result


async def test_a_middleware_changes_the_request_and_the_result() -> None:
    with anyio.fail_after(LIMIT):
        async with connect(make_server(Rewrite())) as client:
            result = await client.call_tool("add", {"a": 1, "b": 1})
    assert result.text == "42\nrewritten"


class Forgetful(Middleware):
    async def on_list_prompts(self, request: Request, call_next: CallNext) -> JSON:
        await call_next(request)
        return None  # type: ignore[return-value]


class Crashing(Middleware):
    async def on_get_prompt(self, request: Request, call_next: CallNext) -> JSON:
        raise ZeroDivisionError("a bug in the middleware")


async def test_a_broken_middleware_is_an_internal_error_not_a_crash(
        caplog: pytest.LogCaptureFixture) -> None:
    with anyio.fail_after(LIMIT):
        async with connect(make_server(Forgetful(), Crashing())) as client:
            with pytest.raises(RemoteError) as none:
                await client.list_prompts()
            with pytest.raises(RemoteError) as crash:
                await client.get_prompt("ask", {"topic": "x"})
            assert (await client.call_tool("add", {"a": 1, "b": 1})).text == "2"
    assert none.value.code == crash.value.code == -32603
    assert "a bug in the middleware" not in crash.value.message  # no internals leak
    assert "Forgetful.on_list_prompts returned NoneType" in caplog.text


async def test_notifications_go_through_the_chain_unknown_methods_do_not() -> None:
    log: list[str] = []
    server = make_server(Recorder("r", log))
    changed: list[str] = []
    server.on_roots_changed = lambda ctx: changed.append(ctx.method)
    with anyio.fail_after(LIMIT):
        async with raw_peer(server) as peer:
            await peer.initialize(capabilities={"roots": {"listChanged": True}})
            unknown = await peer.error("nothing/here", {})
            await peer.notify("notifications/roots/list_changed")
            for _ in range(500):  # bounded: at most 5 s
                if changed:
                    break
                await anyio.sleep(0.01)
    # the protocol core refuses a method the revision lacks before any handler runs
    assert unknown["code"] == -32601 and "nothing/here" in unknown["message"]
    assert log == ["r.notification notifications/roots/list_changed"]
    assert changed == ["notifications/roots/list_changed"]


def test_without_middleware_the_handler_table_is_untouched() -> None:
    plain = make_server()
    methods = plain._methods
    assert methods._plain is None and methods._notify_chain is None
    assert methods._table["tools/call"] == methods._tools_call
    # a middleware with hooks by kind only: other methods keep their plain handler
    only_tools = make_server(Deny())._methods
    assert only_tools._table["tools/list"] == only_tools._tools_list
    assert only_tools._table["tools/call"] != only_tools._tools_call
    assert only_tools._notify_chain is None
    with pytest.raises(TypeError, match="Middleware"):
        plain.add_middleware(print)  # type: ignore[arg-type]


async def test_add_middleware_applies_to_a_running_session() -> None:
    server = make_server()
    log: list[str] = []
    with anyio.fail_after(LIMIT):
        async with connect(server) as client:
            await client.call_tool("add", {"a": 1, "b": 1})
            server.add_middleware(Recorder("late", log))
            await client.call_tool("add", {"a": 1, "b": 1})
    assert log[:2] == ["late.request tools/call", "late.call_tool add"]
    assert server.middleware[0].tag == "late"  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ built-ins


async def test_request_log_writes_one_json_line_per_message(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcpkit.requests")
    with anyio.fail_after(LIMIT):
        async with connect(make_server(RequestLog()), roots=[]) as client:
            await client.call_tool("add", {"a": 1, "b": 2})
            await client.call_tool("fail", {})
            with pytest.raises(RemoteError):
                await client.call_tool("nope", {})
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "mcpkit.requests"]
    calls = [line for line in lines if line["method"] == "tools/call"]
    assert [c["outcome"] for c in calls] == ["ok", "tool_error", "error"]
    assert calls[2]["code"] == -32602 and "params" not in calls[0]
    assert all(c["protocol_version"] == "2025-11-25" and c["duration_ms"] >= 0 for c in calls)
    assert isinstance(calls[0]["id"], int) and calls[0]["session"] is None


@pytest.mark.parametrize("mode", ERAS)
async def test_error_mapping_sends_your_exceptions_as_mcp_errors(mode: str) -> None:
    def not_found(exc: Exception) -> InvalidParams:
        return InvalidParams(f"no such entry: {exc}; list the resources first")

    mapping = ErrorMapping({LookupError: not_found})
    with anyio.fail_after(LIMIT):
        async with connect(make_server(mapping), mode=mode) as client:
            with pytest.raises(RemoteError) as raised:
                await client.read_resource("mw://broken")
            failed = await client.call_tool("fail", {})  # a tool's error stays a result
    assert raised.value.code == -32602 and "no such entry: 'missing'" in raised.value.message
    assert failed.is_error and "failed unexpectedly (RuntimeError)" in failed.text
    with pytest.raises(TypeError):
        ErrorMapping({"KeyError": InvalidParams})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        ErrorMapping({KeyError: "InvalidParams"})  # type: ignore[dict-item]


@pytest.mark.parametrize("mode", ERAS)
async def test_list_cache_serves_lists_until_they_change(mode: str) -> None:
    cache = ListCache()
    server = make_server(cache)
    with anyio.fail_after(LIMIT):
        async with connect(server, mode=mode) as client:
            first = [t.name for t in await client.list_tools()]
            again = [t.name for t in await client.list_tools()]
            assert (cache.hits, cache.misses) == (1, 1)
            await client.list_prompts()
            server.add_tool(lambda: "new", name="fresh")  # announces tools/list_changed
            changed = [t.name for t in await client.list_tools()]
            await client.list_prompts()  # another list's change keeps this one
    assert first == again == ["add", "fail"]
    assert changed == ["add", "fail", "fresh"]
    assert (cache.hits, cache.misses) == (2, 3)
    with pytest.raises(ValueError):
        ListCache(max_entries=0)


async def test_rate_limits_and_audit_stay_innermost_with_other_middleware() -> None:
    records: list[Any] = []
    server = make_server(Deny(), rate_limit="2/minute", audit=records.append)
    with anyio.fail_after(LIMIT):
        async with connect(server) as client:
            await client.call_tool("cached", {})  # short-circuited: no budget, no record
            await client.call_tool("add", {"a": 1, "b": 1})
            await client.call_tool("add", {"a": 1, "b": 1})
            limited = await client.call_tool("add", {"a": 1, "b": 1})
    assert limited.is_error and "Rate limit exceeded" in limited.text
    assert [r.outcome for r in records] == ["ok", "ok", "rate_limited"]


# ------------------------------------------------------------------------------ transports


async def test_over_streamable_http_the_hook_sees_the_session_and_the_peer() -> None:
    log: list[str] = []
    recorder = Recorder("http", log)
    server = make_server(Deny(), recorder)
    with LiveServer(server.asgi_app()) as live:
        with anyio.fail_after(LIMIT):
            async with Client(live.url) as client:
                result = await client.request("tools/call", {"name": "cached"})
                with pytest.raises(RemoteError) as refused:
                    await client.call_tool("add", {"a": 13, "b": 0})
                ok = await client.call_tool("add", {"a": 2, "b": 3})
                session_id = client.http_transport.session_id  # type: ignore[union-attr]
    validate("2025-11-25", "CallToolResult", result)
    assert refused.value.code == -32602 and ok.text == "5"
    seen = next(r for r in recorder.seen if r.method == "tools/call")
    assert seen.session_id == session_id and seen.peer == "127.0.0.1"


STDIO_SERVER = '''
import sys
from mcpkit import Server
from mcpkit.server.middleware import Middleware

class Deny(Middleware):
    async def on_call_tool(self, request, call_next):
        if request.params.get("name") == "add" and request.params["arguments"]["a"] == 13:
            return {"content": [{"type": "text", "text": "denied on stdio"}],
                    "isError": True}
        return await call_next(request)

server = Server("stdio-mw", middleware=[Deny()])

@server.tool
def add(a: int, b: int) -> int:
    return a + b

server.run()
'''


async def test_over_stdio(tmp_path: Any) -> None:
    script = tmp_path / "stdio_mw.py"
    script.write_text(STDIO_SERVER)
    with anyio.fail_after(LIMIT * 2):
        async with Client([sys.executable, str(script)]) as client:
            denied = await client.call_tool("add", {"a": 13, "b": 0})
            ok = await client.call_tool("add", {"a": 1, "b": 2})
    assert denied.is_error and denied.text == "denied on stdio"
    assert ok.text == "3"


class HideFail(Middleware):
    """Filters the tool list: the kind of change a list hook makes."""

    async def on_list_tools(self, request: Request, call_next: CallNext) -> JSON:
        result = await call_next(request)
        result["tools"] = [t for t in result["tools"] if t["name"] != "fail"]
        return result


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2026-07-28"])
async def test_a_list_hook_reads_and_filters_the_items_in_every_revision(version: str) -> None:
    options: dict[str, Any] = ({"mode": "stateless"} if version == "2026-07-28"
                               else {"protocol_version": version})
    with anyio.fail_after(LIMIT):
        async with connect(make_server(HideFail(), ListCache()), **options) as client:
            first = [t.name for t in await client.list_tools()]
            again = [t.name for t in await client.list_tools()]  # from the cache
    assert first == again == ["add"]
