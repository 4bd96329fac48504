"""``Server.mount(prefix, child)``: another server's catalogue served namespaced (issue #16,
item 3).

Everything runs through real peers: mcpkit's ``Client`` in memory (``mcpkit.testing.connect``,
every message validated against the negotiated revision's schema) in both eras, over HTTP
on loopback (uvicorn), and the official ``mcp`` client over Streamable HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcpkit import Context, Server
from mcpkit.client import Client
from mcpkit.protocol.errors import RemoteError
from mcpkit.testing import ERAS, connect
from tests.support.http import LiveServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def weather(events: list[str] | None = None) -> Server:
    """A child server with one of everything (``events`` records its lifespan)."""

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, str]]:
        if events is not None:
            events.append("weather up")
        yield {"unit": "celsius"}
        if events is not None:
            events.append("weather down")

    child = Server("weather", instructions="Ask for a city's forecast.", lifespan=lifespan)

    @child.tool
    async def forecast(city: str, ctx: Context) -> str:
        """The forecast for a city."""
        await ctx.report_progress(1, 2, "looking")
        await ctx.info(f"forecast for {city}")
        return f"{city}: 21 {ctx.lifespan['unit']}"

    @child.tool
    async def confirm(ctx: Context) -> str:
        """Ask the user for a city."""
        answer = await ctx.elicit("Which city?", {"type": "object", "properties": {
            "city": {"type": "string"}}, "required": ["city"]})
        return f"confirmed {answer.content['city']}" if answer.accepted else "declined"

    @child.tool
    async def survey(ctx: Context) -> str:
        """Ask the client's model and read the client's roots."""
        sampled = await ctx.sample("Rain tomorrow?", max_tokens=10)
        roots = await ctx.list_roots()
        return f"{sampled['content']['text']} / {roots[0]['uri']}"

    @child.prompt
    def outlook(city: str) -> str:
        """An outlook prompt."""
        return f"Describe the weather in {city}."

    @child.completion(prompt="outlook", argument="city")
    def cities(value: str, context: dict[str, str]) -> list[str]:
        return [c for c in ("Paris", "Lima", "Pune") if c.startswith(value)]

    child.add_resource("sunny", "weather://today")

    @child.resource("file:///stations/{station}", mime_type="text/plain")
    def station(station: str) -> str:
        return f"station {station}"

    @child.completion(resource_template="file:///stations/{station}", argument="station")
    def stations(value: str, context: dict[str, str]) -> list[str]:
        return ["north", "south"]

    return child


def parent_of(child: Server, prefix: str = "w", events: list[str] | None = None) -> Server:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        if events is not None:
            events.append("parent up")
        yield None
        if events is not None:
            events.append("parent down")

    parent = Server("hub", instructions="The hub.", lifespan=lifespan)

    @parent.tool
    def ping() -> str:
        return "pong"

    parent.mount(prefix, child)
    return parent


async def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
    assert params["message"] == "Which city?"
    return {"action": "accept", "content": {"city": "Oslo"}}


async def on_sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "Likely"},
            "model": "test-model"}


PEER = {"elicitation": on_elicit, "sampling": on_sample, "roots": ["file:///home/u"]}


@pytest.mark.parametrize("mode", ERAS)
async def test_mounted_catalogue_is_served_namespaced(mode: Any) -> None:
    events: list[str] = []
    parent = parent_of(weather(events), events=events)
    async with connect(parent, mode=mode, elicitation=on_elicit) as client:
        assert events == ["parent up", "weather up"]  # the child's inside the parent's
        assert {t.name for t in await client.list_tools()} == {
            "ping", "w_forecast", "w_confirm", "w_survey"}
        result = await client.call_tool("w_forecast", {"city": "Rome"})
        assert result.content[0].text == "Rome: 21 celsius"  # type: ignore[union-attr]
        assert [p.name for p in await client.list_prompts()] == ["w_outlook"]
        prompt = await client.get_prompt("w_outlook", {"city": "Lima"})
        assert prompt.messages[0].content.text == "Describe the weather in Lima."  # type: ignore[union-attr]
        done = await client.complete({"type": "ref/prompt", "name": "w_outlook"}, "city", "P")
        assert done.values == ["Paris", "Pune"]
        assert [r.uri for r in await client.list_resources()] == ["w+weather://today"]
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates] == ["w+file:///stations/{station}"]
        read = await client.read_resource("w+weather://today")
        assert (read.contents[0].uri, read.contents[0].text) == (  # type: ignore[union-attr]
            "w+weather://today", "sunny")
        read = await client.read_resource("w+file:///stations/north")
        assert read.contents[0].uri == "w+file:///stations/north"
        assert read.contents[0].text == "station north"  # type: ignore[union-attr]
        done = await client.complete(
            {"type": "ref/resource", "uri": "w+file:///stations/{station}"}, "station", "")
        assert done.values == ["north", "south"]
        # The child's own names are not served; a traversal is still refused.
        for bad in ("forecast", "w_", "w_nope"):
            with pytest.raises(RemoteError) as info:
                await client.call_tool(bad, {"city": "x"})
            assert info.value.code == -32602
        for uri in ("weather://today", "file:///stations/north", "w+file:///stations/%2e%2e"):
            with pytest.raises(RemoteError):
                await client.read_resource(uri)
        assert "w_*" in (client.instructions or "")
        assert "Ask for a city's forecast." in (client.instructions or "")
    assert events == ["parent up", "weather up", "weather down", "parent down"]


@pytest.mark.parametrize("mode", ERAS)
async def test_mounted_elicitation_round_trip(mode: Any) -> None:
    parent = parent_of(weather())
    async with connect(parent, mode=mode, **PEER) as client:
        result = await client.call_tool("w_confirm")
        assert result.content[0].text == "confirmed Oslo"  # type: ignore[union-attr]
        result = await client.call_tool("w_survey")
        assert result.content[0].text == "Likely / file:///home/u"  # type: ignore[union-attr]
        wire = client.wire
    if mode == "stateless":  # MRTR rounds: input_required, then the retry with answers
        answers = [m for m in wire.sent("server") if isinstance(m, dict)
                   and m.get("result", {}).get("resultType") == "input_required"]
        assert len(answers) == 3  # the elicitation; then sampling, then roots
    else:  # requests on the parent's session
        for method in ("elicitation/create", "sampling/createMessage", "roots/list"):
            assert len(wire.sent("server", method)) == 1


@pytest.mark.parametrize("mode", ERAS)
async def test_progress_logging_and_cancellation_go_through_the_parent(mode: Any) -> None:
    child = weather()
    started, stopped = anyio.Event(), anyio.Event()

    @child.tool
    async def wait(ctx: Context) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        return "never"  # pragma: no cover

    parent = parent_of(child)
    logs: list[dict[str, Any]] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with connect(parent, mode=mode, on_log=logs.append) as client:
        await client.set_logging_level("info")
        await client.call_tool("w_forecast", {"city": "Oslo"}, on_progress=on_progress)
        assert progress == [(1, 2, "looking")]
        assert [entry["data"] for entry in logs] == ["forecast for Oslo"]
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "w_wait")
                await started.wait()
                tg.cancel_scope.cancel()
            await stopped.wait()  # the child's handler was cancelled by the client's cancel
        assert (await client.call_tool("ping")).content[0].text == "pong"  # type: ignore[union-attr]
        assert len(client.wire.sent("client", "notifications/cancelled")) == 1


async def test_list_changes_and_resource_updates_pass_through() -> None:
    child = weather()
    parent = parent_of(child)
    heard: list[tuple[str, dict[str, Any]]] = []

    async def on_notification(method: str, params: dict[str, Any]) -> None:
        heard.append((method, params))

    async def until(method: str) -> dict[str, Any]:
        with anyio.fail_after(5):
            while True:
                for m, params in heard:
                    if m == method:
                        heard.clear()
                        return params
                await anyio.sleep(0.01)

    async with connect(parent, on_notification=on_notification) as client:
        served = parent._registry.tools["w_forecast"]
        child.add_tool(lambda: "hi", name="hello")
        await until("notifications/tools/list_changed")
        assert parent._registry.tools["w_forecast"] is served  # only the new one is copied
        assert "w_hello" in {t.name for t in await client.list_tools()}
        assert (await client.call_tool("w_hello")).content[0].text == "hi"  # type: ignore[union-attr]
        child.remove_tool("hello")
        await until("notifications/tools/list_changed")
        assert "w_hello" not in {t.name for t in await client.list_tools()}
        child.add_prompt(lambda: "x", name="extra")
        await until("notifications/prompts/list_changed")
        assert "w_extra" in {p.name for p in await client.list_prompts()}
        child.add_resource("cloudy", "weather://tomorrow")
        await until("notifications/resources/list_changed")
        assert "w+weather://tomorrow" in {r.uri for r in await client.list_resources()}
        child.notify_list_changed("tools")  # a data-dependent list: told as it is
        await until("notifications/tools/list_changed")
        await client.subscribe("w+weather://today")
        child.notify_resource_updated("weather://today")
        assert (await until("notifications/resources/updated"))["uri"] == "w+weather://today"


async def test_listen_stream_hears_the_childs_changes() -> None:
    child = weather()
    parent = parent_of(child)
    async with connect(parent, mode="stateless") as client:
        heard: list[str] = []
        async with client.listen(tools=True, resource_uris=["w+weather://today"]) as stream:
            with anyio.fail_after(5):
                async for note in stream:
                    heard.append(note["method"])
                    if len(heard) == 1:  # the acknowledgement: now change things
                        child.add_tool(lambda: "hi", name="hello")
                        child.notify_resource_updated("weather://today")
                    if len(heard) == 3:
                        break
        assert heard[0] == "notifications/subscriptions/acknowledged"
        heard = heard[1:]
        assert heard == ["notifications/tools/list_changed", "notifications/resources/updated"]


async def test_collisions_and_bad_mounts_are_refused() -> None:
    parent = Server("hub")
    parent.add_tool(lambda: "mine", name="w_forecast")
    with pytest.raises(ValueError, match="'w_forecast' is already registered in the parent"):
        parent.mount("w", weather())
    assert set(parent._registry.tools) == {"w_forecast"}  # nothing half-mounted
    assert parent.mounts == {}
    for prefix in ("", "a_b", "1w", "w/x", "x" * 65):
        with pytest.raises(ValueError, match="invalid mount prefix"):
            parent.mount(prefix, weather())
    child = weather()
    parent.mount("v", child)
    with pytest.raises(ValueError, match="prefix 'V' is taken"):
        parent.mount("V", weather())
    with pytest.raises(ValueError, match="cannot contain itself"):
        child.mount("loop", parent)
    with pytest.raises(ValueError, match="cannot contain itself"):
        parent.mount("self", parent)
    # A later addition to the child that would collide is refused at its add_*.
    parent.add_tool(lambda: "mine", name="v_later")
    with pytest.raises(ValueError, match=r"mounted in another server at 'v'.*'v_later'"):
        child.add_tool(lambda: "theirs", name="later")
    assert "later" not in child._registry.tools
    with pytest.raises(ValueError, match="at most 128"):
        child.add_tool(lambda: "long", name="x" * 127)
    # A mount inside a mounted server is checked against the outer server too.
    top = Server("top")
    top.add_tool(lambda: "mine", name="m_w_forecast")
    middle = Server("middle")
    top.mount("m", middle)
    with pytest.raises(ValueError, match="'m_w_forecast' is already registered"):
        middle.mount("w", weather())
    assert middle._registry.tools == {} and middle.mounts == {}
    # ... and the parent's own later registration of a served name too.
    with pytest.raises(ValueError, match="already registered"):
        parent.add_tool(lambda: "mine", name="v_forecast")


@pytest.mark.parametrize("mode", ERAS)
async def test_nested_mounts_compose(mode: Any) -> None:
    events: list[str] = []
    inner = weather(events)
    middle = Server("middle")
    middle.mount("b", inner)
    top = Server("top")
    top.mount("a", middle)
    async with connect(top, mode=mode, elicitation=on_elicit) as client:
        assert events == ["weather up"]
        assert {t.name for t in await client.list_tools()} == {
            "a_b_forecast", "a_b_confirm", "a_b_survey"}
        result = await client.call_tool("a_b_forecast", {"city": "Rome"})
        assert result.content[0].text == "Rome: 21 celsius"  # type: ignore[union-attr]
        result = await client.call_tool("a_b_confirm")
        assert result.content[0].text == "confirmed Oslo"  # type: ignore[union-attr]
        read = await client.read_resource("a+b+file:///stations/south")
        assert read.contents[0].uri == "a+b+file:///stations/south"
        done = await client.complete({"type": "ref/prompt", "name": "a_b_outlook"}, "city", "L")
        assert done.values == ["Lima"]
        inner.add_tool(lambda: "deep", name="deep")
        assert (await client.call_tool("a_b_deep")).content[0].text == "deep"  # type: ignore[union-attr]
    assert events == ["weather up", "weather down"]


@pytest.mark.parametrize("mode", ERAS)
async def test_explicit_contents_and_task_tools_of_a_child(mode: Any) -> None:
    child = Server("docs")

    @child.resource("docs://index")
    def index() -> list[dict[str, Any]]:
        return [{"uri": "docs://index", "text": "a", "mimeType": "text/plain"},
                {"uri": "docs://index/more", "text": "b", "mimeType": "text/plain"}]

    @child.tool(task="optional")
    async def slow(ctx: Context) -> str:
        return f"done in {ctx.server.name}"

    parent = Server("hub")
    parent.mount("d", child)
    # The 2026-07-28 tasks extension's messages are not in the core schema: that era's
    # wire is checked below with exactly those left out.
    async with connect(parent, mode=mode, tasks=True,
                       check_wire=mode == "stateful") as client:
        read = await client.read_resource("d+docs://index")
        assert [c.uri for c in read.contents] == ["d+docs://index", "d+docs://index/more"]
        if mode == "stateful":  # 2025-11-25 Tool.execution (2026-07-28 has no such field)
            assert await client.task_support("d_slow") == "optional"
        handle = await client.call_tool("d_slow", task=True)
        result = await handle.result(5)
        assert result.content[0].text == "done in docs"  # type: ignore[union-attr]
        revision = client.protocol_version
    problems = client.wire.violations(revision)
    extension = [p for p in problems if '"resultType":"task"' in p or "'tasks/" in p]
    assert problems == extension


@pytest.mark.parametrize("mode", ERAS)
async def test_mounted_server_over_http(mode: Any) -> None:
    parent = parent_of(weather())
    with LiveServer(parent.asgi_app()) as live:
        async with Client(live.url, mode=mode, timeout=15, **PEER) as client:
            assert "w_forecast" in {t.name for t in await client.list_tools()}
            result = await client.call_tool("w_forecast", {"city": "Lima"})
            assert result.content[0].text == "Lima: 21 celsius"  # type: ignore[union-attr]
            result = await client.call_tool("w_confirm")
            assert result.content[0].text == "confirmed Oslo"  # type: ignore[union-attr]
            result = await client.call_tool("w_survey")
            assert result.content[0].text == "Likely / file:///home/u"  # type: ignore[union-attr]
            read = await client.read_resource("w+file:///stations/north")
            assert read.contents[0].text == "station north"  # type: ignore[union-attr]


async def test_official_client_lists_and_calls_a_mounted_tool() -> None:
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def elicitation(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"city": "Quito"})

    parent = parent_of(weather())
    with LiveServer(parent.asgi_app()) as live:
        async with streamable_http_client(live.url) as (read, write), ClientSession(
                read, write, read_timeout_seconds=15,
                elicitation_callback=elicitation) as session:
            await session.initialize()
            listed = await session.list_tools()
            assert {t.name for t in listed.tools} == {
                "ping", "w_forecast", "w_confirm", "w_survey"}
            result = await session.call_tool("w_forecast", {"city": "Lima"})
            assert result.content[0].text == "Lima: 21 celsius"  # type: ignore[union-attr]
            result = await session.call_tool("w_confirm", {})
            assert result.content[0].text == "confirmed Quito"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_mounted_tools_own_rate_limit_holds_on_the_parent(mode: Any) -> None:
    from mcpkit.server.limits import RateLimit

    parent = Server("hub")
    child = Server("search")
    parent.mount("s", child)  # mounted before the limited tool exists: added later, it counts

    @child.tool(rate_limit=RateLimit("1/minute"))
    async def find(query: str) -> str:
        """Find something."""
        return f"found {query}"

    async with connect(parent, mode=mode) as client:
        first = await client.call_tool("s_find", {"query": "a"})
        assert first.content[0].text == "found a"  # type: ignore[union-attr]
        second = await client.call_tool("s_find", {"query": "b"})
        assert second.is_error and "1 call per minute" in second.content[0].text  # type: ignore[union-attr]
