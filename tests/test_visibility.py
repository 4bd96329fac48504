"""Tags and visibility (issue #29, item 1): ``tags=`` on every kind of component,
``Server.enable``/``disable``/``reset_visibility`` server-wide, ``Context.enable_components``
/ ``disable_components`` / ``reset_visibility`` per session, ``list_changed`` when what a
client sees changes, mounted servers keeping their tags and their own rules. A hidden
component is unknown everywhere a client can name it, with the error a name that was
never registered gets. Every message is checked against the negotiated revision's schema
(``mcpkit.testing.connect``)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpkit import Context, Server
from mcpkit.protocol.errors import RemoteError
from mcpkit.server.visibility import MAX_RULES
from mcpkit.testing import ERAS, connect

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def shop() -> Server:
    server = Server("shop")

    @server.tool(tags={"read", "catalog"})
    def shop_find(query: str) -> str:
        """Find products."""
        return f"found {query}"

    @server.tool(tags={"admin"})
    def shop_reset() -> str:
        """Reset the catalog."""
        return "reset"

    @server.tool
    def shop_status() -> str:
        """Say whether the shop is open."""
        return "open"

    @server.resource("shop://price-list", tags={"catalog"})
    def prices() -> str:
        return "prices"

    @server.resource("shop://audit-log", tags={"admin"})
    def audit() -> str:
        return "log"

    @server.resource("shop://orders/{order_id}", tags={"admin"})
    def order(order_id: str) -> str:
        return f"order {order_id}"

    @server.prompt(tags={"admin"})
    def triage(incident: str) -> str:
        return f"Triage {incident}."

    @server.prompt
    def recommend(taste: str) -> str:
        return f"Recommend something {taste}."

    server.add_completion(argument="incident", prompt="triage",
                          fn=lambda value, context: ["outage", "slow"])
    return server


async def names(client: Any) -> tuple[set[str], set[str], set[str], set[str]]:
    return ({t.name for t in await client.list_tools()},
            {r.uri for r in await client.list_resources()},
            {t.uri_template for t in await client.list_resource_templates()},
            {p.name for p in await client.list_prompts()})


@pytest.mark.parametrize("mode", ERAS)
async def test_disabling_a_tag_hides_every_kind_everywhere_a_client_names_it(
        mode: str) -> None:
    server = shop()
    server.disable(tags={"admin"})
    async with connect(server, mode=mode) as client:  # type: ignore[arg-type]
        tools, resources, templates, prompts = await names(client)
        assert tools == {"shop_find", "shop_status"}
        assert resources == {"shop://price-list"}
        assert templates == set() and prompts == {"recommend"}
        with pytest.raises(RemoteError) as caught:
            await client.call_tool("shop_reset", {})
        assert caught.value.code == -32602
        assert "Unknown tool: 'shop_reset'" in caught.value.message
        assert "shop_find" in caught.value.message
        assert "shop_reset'." not in caught.value.message.split("Available tools:")[1]
        for uri in ("shop://audit-log", "shop://orders/7"):
            with pytest.raises(RemoteError) as caught:
                await client.read_resource(uri)
            assert caught.value.code in (-32002, -32602)  # the revision's not-found code
        with pytest.raises(RemoteError, match="Unknown prompt: 'triage'"):
            await client.get_prompt("triage", {"incident": "x"})
        with pytest.raises(RemoteError, match="unknown prompt 'triage'"):
            await client.complete({"type": "ref/prompt", "name": "triage"}, "incident", "o")
        server.enable(tags={"admin"})
        tools, resources, templates, prompts = await names(client)
        assert "shop_reset" in tools and "shop://audit-log" in resources
        assert templates == {"shop://orders/{order_id}"} and "triage" in prompts
        assert (await client.call_tool("shop_reset", {})).text == "reset"
        assert (await client.read_resource("shop://orders/7")).contents[0].text == "order 7"
        done = await client.complete({"type": "ref/prompt", "name": "triage"}, "incident", "o")
        assert done.values == ["outage", "slow"]


async def test_the_last_rule_that_speaks_about_a_component_decides() -> None:
    server = shop()
    server.disable(tags={"catalog"})
    server.enable(names={"shop_find"})  # a later, narrower rule shows one of them again
    async with connect(server) as client:
        tools, resources, _, _ = await names(client)
        assert tools == {"shop_find", "shop_reset", "shop_status"}
        assert "shop://price-list" not in resources
        server.disable(kinds={"prompt"})  # kinds alone: every prompt
        assert (await names(client))[3] == set()
        server.reset_visibility()
        assert await names(client) == (
            {"shop_find", "shop_reset", "shop_status"},
            {"shop://price-list", "shop://audit-log"}, {"shop://orders/{order_id}"},
            {"triage", "recommend"})
        assert server._registry.visibility is None  # back on the fast path


async def test_only_shows_what_matches_among_its_kinds() -> None:
    server = shop()
    server.enable(tags={"catalog"}, only=True, kinds={"tool"})
    async with connect(server) as client:
        tools, resources, templates, prompts = await names(client)
        assert tools == {"shop_find"}  # tools without the tag are hidden
        assert len(resources) == 2 and templates and len(prompts) == 2  # other kinds: as they were
        server.enable(names={"shop_status"})  # a later rule can add one back
        assert (await names(client))[0] == {"shop_find", "shop_status"}
        server.enable(tags={"admin"}, only=True)  # replaces the narrower only rule and all before
        assert len(server._registry.visibility.rules) == 1  # type: ignore[union-attr]
        tools, resources, templates, prompts = await names(client)
        assert tools == {"shop_reset"} and resources == {"shop://audit-log"}
        assert templates == {"shop://orders/{order_id}"} and prompts == {"triage"}


async def test_a_rule_with_the_criteria_of_an_earlier_one_replaces_it() -> None:
    server = shop()
    for _ in range(3 * MAX_RULES):  # a feature flag switched back and forth
        server.disable(tags={"admin"})
        server.enable(tags={"admin"})
    assert len(server._registry.visibility.rules) == 1  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="visibility rules: give the components tags"):
        for i in range(MAX_RULES + 1):
            server.disable(names={f"tool_{i}"})


async def test_list_changed_is_announced_when_what_clients_see_changes() -> None:
    server = shop()
    heard: list[str] = []

    async def on_notification(method: str, params: dict[str, Any]) -> None:
        heard.append(method)

    async def settle() -> list[str]:
        await client.ping()  # the server handled everything before this
        await anyio.sleep(0.05)
        seen = sorted(heard)
        heard.clear()
        return seen

    async with connect(server, on_notification=on_notification) as client:
        await settle()
        server.disable(tags={"admin"})
        assert await settle() == ["notifications/prompts/list_changed",
                                  "notifications/resources/list_changed",
                                  "notifications/tools/list_changed"]
        server.disable(tags={"admin"})  # nothing more is hidden: nothing announced
        server.disable(names={"no_such_tool"})
        assert await settle() == []
        server.enable(names={"shop_reset"})
        assert await settle() == ["notifications/tools/list_changed"]


async def test_a_session_hides_and_shows_for_itself_only() -> None:
    server = shop()
    server.disable(tags={"admin"})

    @server.tool
    async def unlock(ctx: Context) -> str:
        """Show this session the admin tools."""
        await ctx.enable_components(tags={"admin"})
        return "unlocked"

    @server.tool
    async def lock(ctx: Context) -> str:
        """Hide the catalog from this session, then reset."""
        await ctx.disable_components(tags={"catalog"}, kinds={"tool"})
        return "locked"

    @server.tool
    async def relax(ctx: Context) -> str:
        await ctx.reset_visibility()
        return "relaxed"

    heard: list[str] = []

    async def on_notification(method: str, params: dict[str, Any]) -> None:
        heard.append(method)

    async with connect(server, on_notification=on_notification) as one, \
            connect(server) as two:
        assert "shop_reset" not in (await names(one))[0]
        await one.call_tool("unlock", {})
        await one.ping()
        assert "notifications/tools/list_changed" in heard
        tools, resources, templates, prompts = await names(one)
        assert "shop_reset" in tools and "shop://audit-log" in resources and templates
        assert "triage" in prompts
        assert (await one.call_tool("shop_reset", {})).text == "reset"
        assert "shop_reset" not in (await names(two))[0]  # the other session: unchanged
        with pytest.raises(RemoteError, match="Unknown tool"):
            await two.call_tool("shop_reset", {})
        await one.call_tool("lock", {})
        assert "shop_find" not in (await names(one))[0]
        assert "shop://price-list" in (await names(one))[1]  # kinds={"tool"} only
        assert "shop_find" in (await names(two))[0]
        await one.call_tool("relax", {})
        assert (await names(one)) == (await names(two))


async def test_a_stateless_request_has_no_session_to_change() -> None:
    server = Server("s")

    @server.tool
    async def unlock(ctx: Context) -> str:
        await ctx.enable_components(tags={"admin"})
        return "unlocked"

    async with connect(server, mode="stateless") as client:
        result = await client.call_tool("unlock", {}, raise_on_error=False)
        assert result.is_error  # the handler's RuntimeError, reported as a failed call


async def test_mounted_servers_keep_their_tags_and_their_own_rules() -> None:
    parent, child = Server("parent"), shop()
    child.disable(names={"shop_status"})
    parent.mount("s", child)
    heard: list[str] = []

    async def on_notification(method: str, params: dict[str, Any]) -> None:
        heard.append(method)

    async with connect(parent, on_notification=on_notification) as client:
        tools = (await names(client))[0]
        assert tools == {"s_shop_find", "s_shop_reset"}  # the child's hidden tool is not served
        parent.disable(tags={"admin"})  # the copies keep their tags
        tools, resources, templates, prompts = await names(client)
        assert tools == {"s_shop_find"} and resources == {"s+shop://price-list"}
        assert templates == set() and prompts == {"s_recommend"}
        child.enable(names={"shop_status"})  # the child's change reaches the parent
        await client.ping()
        assert "notifications/tools/list_changed" in heard
        assert (await names(client))[0] == {"s_shop_find", "s_shop_status"}
        parent.disable(names={"s_shop_find"})  # the parent names them as it serves them
        assert (await names(client))[0] == {"s_shop_status"}


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda s: s.disable(), ValueError, "say what to match"),
    (lambda s: s.disable(kinds={"widget"}), ValueError, "unknown kinds"),
    (lambda s: s.disable(tags="admin"), TypeError, "takes a set of strings, such as"),
    (lambda s: s.disable(tags={""}), TypeError, "non-empty strings"),
    (lambda s: s.disable(tags=3), TypeError, "takes a set of strings; got int"),
    (lambda s: s.enable(names={1}), TypeError, "non-empty strings"),
    (lambda s: s.add_tool(lambda: "", name="t", tags="read"), TypeError, "such as {'read'}"),
    (lambda s: s.add_prompt(lambda: "", name="p", tags=[None]), TypeError, "non-empty"),
    (lambda s: s.add_resource("x", "a://b", tags={"": 1}), TypeError, "non-empty"),
])
def test_arguments_that_cannot_mean_anything_are_refused(call: Any, error: type[Exception],
                                                         message: str) -> None:
    server = Server("s")
    with pytest.raises(error, match=message):
        call(server)
    assert server._registry.visibility is None


def test_tags_are_kept_on_each_component() -> None:
    server = shop()
    registry = server._registry
    assert registry.tools["shop_find"].tags == {"read", "catalog"}
    assert registry.tools["shop_status"].tags == frozenset()
    assert registry.templates["shop://orders/{order_id}"].tags == {"admin"}
    assert registry.prompts["triage"].tags == {"admin"}
    assert registry.resources["shop://price-list"].tags == {"catalog"}
