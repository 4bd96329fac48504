"""The client's cache of 2026-07-28 list and read results (``mcpkit.client.cache``).

Against mcpkit's own ``Server``, in memory (``mcpkit.testing.connect``) and over HTTP
(``LiveServer``), counting the requests the server receives with a middleware: a
listing asked again within its ``ttlMs`` is answered by the client, asked after it goes
to the server; ``fresh=True`` and ``cache=False`` always ask; a ``ttlMs`` of 0 and a
handshake-era session are never kept; ``list_changed`` and ``resources/updated`` (on a
listen stream) drop what they make stale; ``private`` results are not shared between
credentials, ``public`` ones are between clients of one server given one ``ClientCache``;
the cache is bounded and hands out copies. The corners that need a server misbehaving
(a refused cursor, a notification during a request) drive ``CacheView`` directly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator
from typing import Any

import anyio
import httpx
import pytest

from mcpkit import Context, RemoteError, Server
from mcpkit.client import Client, ClientCache
from mcpkit.client import types as t
from mcpkit.client.cache import CacheView, Key, hints
from mcpkit.protocol.jsonrpc import JSONObject, RequestId
from mcpkit.server.middleware import CallNext, Middleware, Request
from mcpkit.testing import connect
from tests.support.http import LiveServer

LONG = 60_000  # ms: fresh for the whole test


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Count(Middleware):
    """How many requests of each method the server received."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()

    async def on_request(self, request: Request, call_next: CallNext) -> JSONObject:
        self.seen[request.method] += 1
        return await call_next(request)


def make_server(ttl_ms: int = LONG, scope: str = "public", **options: Any
                ) -> tuple[Server, Count]:
    """A server whose results say ``ttl_ms``/``scope``, with two tools, a resource
    whose text changes with each read, and the middleware counting what it receives."""
    count = Count()
    server = Server("cached", cache_ttl_ms=ttl_ms, cache_scope=scope, middleware=[count],
                    **options)
    reads = Counter[str]()

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.resource("note://{name}")
    def note(name: str) -> str:
        """A note whose text counts its reads."""
        reads[name] += 1
        return f"{name} #{reads[name]}"

    @server.prompt
    def greet(who: str) -> str:
        """Say hello."""
        return f"hello {who}"

    return server, count


def wire(items: list[Any]) -> list[Any]:
    return [item.to_wire() for item in items]


# ---------------------------------------------------------------- served within ttl


@pytest.mark.anyio
async def test_repeated_listings_and_reads_are_served_from_the_cache() -> None:
    server, count = make_server()
    async with connect(server, mode="stateless") as client:
        assert client.cache is not None
        tools = await client.list_tools()
        for _ in range(3):
            assert wire(await client.list_tools()) == wire(tools)
        prompts = await client.list_prompts()
        assert wire(await client.list_prompts()) == wire(prompts)
        await client.list_resource_templates()
        await client.list_resource_templates()
        await client.list_resources()
        await client.list_resources()
        first = await client.read_resource("note://a")
        again = await client.read_resource("note://a")
        other = await client.read_resource("note://b")  # another uri: another entry
    assert first.contents[0].text == again.contents[0].text == "a #1"
    assert other.contents[0].text == "b #1"
    assert count.seen["tools/list"] == 1
    assert count.seen["prompts/list"] == 1
    assert count.seen["resources/templates/list"] == 1
    assert count.seen["resources/list"] == 1
    assert count.seen["resources/read"] == 2
    assert client.cache.hits == 3 + 1 + 1 + 1 + 1


@pytest.mark.anyio
async def test_every_page_is_kept() -> None:
    server, count = make_server(page_size=1)
    async with connect(server, mode="stateless") as client:
        names = [tool.name for tool in await client.list_tools()]
        assert names == ["add", "echo"]
        asked = count.seen["tools/list"]
        assert asked == 2
        assert [tool.name for tool in await client.list_tools()] == names
        page, cursor = await client.list_tools_page()
        assert [tool.name for tool in page] == ["add"] and cursor
    assert count.seen["tools/list"] == asked


@pytest.mark.anyio
async def test_a_result_changed_by_its_caller_does_not_change_the_cache() -> None:
    server, _ = make_server()
    async with connect(server, mode="stateless") as client:
        tools = await client.list_tools()
        tools[0].input_schema["properties"].clear()
        tools[0].name = "changed"
        again = await client.list_tools()
        assert again[0].name == "add" and again[0].input_schema["properties"]
        read = await client.read_resource("note://a")
        read.contents.clear()
        assert (await client.read_resource("note://a")).contents[0].text == "a #1"


# ---------------------------------------------------------------- asked again


@pytest.mark.anyio
async def test_a_stale_entry_is_asked_again() -> None:
    now = [0.0]
    cache = ClientCache(clock=lambda: now[0])
    server, count = make_server(ttl_ms=1000)
    async with connect(server, mode="stateless", cache=cache) as client:
        await client.list_tools()
        now[0] = 0.999
        await client.list_tools()
        assert count.seen["tools/list"] == 1
        now[0] = 1.0  # fresh while now < received + ttl
        await client.list_tools()
        assert count.seen["tools/list"] == 2
        await client.list_tools()
        assert count.seen["tools/list"] == 2


@pytest.mark.anyio
async def test_over_http_a_short_ttl_expires() -> None:
    server, count = make_server(ttl_ms=50)
    with LiveServer(server.asgi_app()) as live:
        async with Client(live.url, mode="stateless") as client:
            await client.list_tools()
            await client.list_tools()  # (could be a miss on a slow machine: not asserted)
            before = count.seen["tools/list"]
            await anyio.sleep(0.1)
            await client.list_tools()
            assert count.seen["tools/list"] == before + 1


@pytest.mark.anyio
async def test_fresh_asks_the_server_and_keeps_its_answer() -> None:
    server, count = make_server()
    async with connect(server, mode="stateless") as client:
        assert (await client.read_resource("note://a")).contents[0].text == "a #1"
        fresh = await client.read_resource("note://a", fresh=True)
        assert fresh.contents[0].text == "a #2"
        assert (await client.read_resource("note://a")).contents[0].text == "a #2"
        await client.list_tools()
        await client.list_tools(fresh=True)
        await client.list_prompts(fresh=True)
        await client.list_prompts(fresh=True)
    assert count.seen["resources/read"] == 2
    assert count.seen["tools/list"] == 2
    assert count.seen["prompts/list"] == 2


@pytest.mark.anyio
async def test_cache_false_keeps_nothing() -> None:
    server, count = make_server()
    async with connect(server, mode="stateless", cache=False) as client:
        assert client.cache is None
        await client.list_tools()
        await client.list_tools()
        await client.read_resource("note://a")
        assert (await client.read_resource("note://a")).contents[0].text == "a #2"
    assert count.seen["tools/list"] == 2


@pytest.mark.anyio
async def test_a_ttl_of_zero_is_not_kept() -> None:
    server, count = make_server(ttl_ms=0)  # (the server's default)
    async with connect(server, mode="stateless") as client:
        await client.list_tools()
        await client.list_tools()
        assert len(client.cache or ()) == 0
    assert count.seen["tools/list"] == 2


@pytest.mark.anyio
async def test_a_resources_own_ttl_decides_its_reads() -> None:
    server, count = make_server()

    @server.resource("live://now", cache_ttl_ms=0)
    def now() -> str:
        """Changes all the time: never to be kept."""
        return "now"

    async with connect(server, mode="stateless") as client:
        await client.read_resource("live://now")
        await client.read_resource("live://now")
    assert count.seen["resources/read"] == 2


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
async def test_a_handshake_era_session_keeps_nothing(version: str) -> None:
    server, count = make_server()
    async with connect(server, protocol_version=version) as client:
        await client.list_tools()
        await client.list_tools()
        await client.read_resource("note://a")
        assert (await client.read_resource("note://a")).contents[0].text == "a #2"
        assert len(client.cache or ()) == 0
    assert count.seen["tools/list"] == 2


@pytest.mark.anyio
async def test_a_result_that_needed_input_is_not_kept() -> None:
    server, count = make_server()

    @server.resource("secret://vault")
    async def vault(ctx: Context) -> str:
        """Asks who reads it first (an input_required round in 2026-07-28)."""
        answer = await ctx.elicit("who are you?", str)
        return f"hello {answer.data}"

    async def elicit(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"value": "ann"}}

    async with connect(server, mode="stateless", elicitation=elicit) as client:
        for _ in range(2):
            res = await client.read_resource("secret://vault")
            assert res.contents[0].text == "hello ann"
    assert count.seen["resources/read"] == 4  # each read: asked, then answered


# ---------------------------------------------------------------- invalidation


async def _until(note: str, changes: Any) -> None:
    with anyio.fail_after(10):
        while (await changes.receive())["method"] != note:
            pass


async def _list_changed_drops_the_listing(client: Client, server: Server, count: Count,
                                          ) -> None:
    await client.list_tools()
    await client.list_prompts()
    await client.list_tools()
    assert count.seen["tools/list"] == 1
    async with client.listen(tools=True) as changes:
        await _until("notifications/subscriptions/acknowledged", changes)
        server.notify_list_changed("tools")
        await _until("notifications/tools/list_changed", changes)
    await client.list_tools()
    await client.list_prompts()  # another listing: still kept
    assert count.seen["tools/list"] == 2
    assert count.seen["prompts/list"] == 1


@pytest.mark.anyio
async def test_list_changed_drops_the_listing_in_memory() -> None:
    server, count = make_server()
    async with connect(server, mode="stateless") as client:
        await _list_changed_drops_the_listing(client, server, count)


@pytest.mark.anyio
async def test_list_changed_drops_the_listing_over_http() -> None:
    server, count = make_server()
    with LiveServer(server.asgi_app()) as live:
        async with Client(live.url, mode="stateless") as client:
            await _list_changed_drops_the_listing(client, server, count)


@pytest.mark.anyio
async def test_a_new_tool_is_seen_after_its_list_changed() -> None:
    server, _ = make_server()
    async with connect(server, mode="stateless") as client:
        assert len(await client.list_tools()) == 2
        async with client.listen(tools=True) as changes:
            await _until("notifications/subscriptions/acknowledged", changes)

            @server.tool
            def late() -> str:
                """Registered after the client listed the tools."""
                return "late"

            await _until("notifications/tools/list_changed", changes)
        assert "late" in [tool.name for tool in await client.list_tools()]


@pytest.mark.anyio
async def test_resources_list_changed_drops_resources_and_templates() -> None:
    server, count = make_server()
    async with connect(server, mode="stateless") as client:
        await client.list_resources()
        await client.list_resource_templates()
        await client.read_resource("note://a")
        async with client.listen(resources=True) as changes:
            await _until("notifications/subscriptions/acknowledged", changes)
            server.notify_list_changed("resources")
            await _until("notifications/resources/list_changed", changes)
        await client.list_resources()
        await client.list_resource_templates()
        await client.read_resource("note://a")  # a read is dropped by its own update
    assert count.seen["resources/list"] == 2
    assert count.seen["resources/templates/list"] == 2
    assert count.seen["resources/read"] == 1


@pytest.mark.anyio
@pytest.mark.parametrize("over", ["memory", "http"])
async def test_resource_updated_drops_the_reads_of_that_uri(over: str) -> None:
    server, count = make_server()

    async def run(client: Client) -> None:
        assert (await client.read_resource("note://a")).contents[0].text == "a #1"
        assert (await client.read_resource("note://b")).contents[0].text == "b #1"
        async with client.listen(resource_uris=["note://a"]) as changes:
            await _until("notifications/subscriptions/acknowledged", changes)
            server.notify_resource_updated("note://a")
            await _until("notifications/resources/updated", changes)
        assert (await client.read_resource("note://a")).contents[0].text == "a #2"
        assert (await client.read_resource("note://b")).contents[0].text == "b #1"

    if over == "memory":
        async with connect(server, mode="stateless") as client:
            await run(client)
    else:
        with LiveServer(server.asgi_app()) as live:
            async with Client(live.url, mode="stateless") as client:
                await run(client)
    assert count.seen["resources/read"] == 3


# ---------------------------------------------------------------- scope and principal


class Bearer(httpx.Auth):
    """An ``httpx.Auth`` adding its token: the header the cache must see, though the
    client's ``headers`` do not have it."""

    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, Any, None]:
        request.headers["authorization"] = f"Bearer {self.token}"
        yield request


async def _list_as(url: str, cache: ClientCache, **http: Any) -> list[str]:
    from mcpkit.client import Http

    async with Client(Http(url, **http), mode="stateless", cache=cache) as client:
        return [tool.name for tool in await client.list_tools()]


@pytest.mark.anyio
async def test_private_results_are_not_shared_between_credentials() -> None:
    server, count = make_server(scope="private")
    cache = ClientCache()
    with LiveServer(server.asgi_app()) as live:
        ann = {"headers": {"authorization": "Bearer ann"}}
        bob = {"auth": Bearer("bob")}
        key = {"headers": {"x-api-key": "k1"}}  # a credential of any header name
        for who in (ann, bob, key, {}):
            assert await _list_as(live.url, cache, **who) == ["add", "echo"]
        assert count.seen["tools/list"] == 4  # four principals: four requests
        for who in (ann, bob, key, {}):  # the same credentials again: kept for them
            await _list_as(live.url, cache, **who)
        assert count.seen["tools/list"] == 4
        await _list_as(live.url, cache, auth=Bearer("ann"))  # one token, either way
        assert count.seen["tools/list"] == 4


@pytest.mark.anyio
async def test_public_results_are_shared_by_clients_of_one_server() -> None:
    server, count = make_server(scope="public")
    cache = ClientCache()
    with LiveServer(server.asgi_app()) as live:
        await _list_as(live.url, cache, headers={"authorization": "Bearer ann"})
        await _list_as(live.url, cache, auth=Bearer("bob"))
        await _list_as(live.url, cache)
    assert count.seen["tools/list"] == 1


@pytest.mark.anyio
async def test_a_callers_own_http_client_keeps_private_results_to_itself() -> None:
    server, count = make_server(scope="private")
    cache = ClientCache()
    with LiveServer(server.asgi_app()) as live:
        for _ in range(2):  # perhaps another TLS client certificate each time: not shared
            async with httpx.AsyncClient() as own:
                await _list_as(live.url, cache, http_client=own)
    assert count.seen["tools/list"] == 2


@pytest.mark.anyio
async def test_in_memory_clients_share_nothing_even_public() -> None:
    server, count = make_server(scope="public")
    cache = ClientCache()
    for _ in range(2):
        async with connect(server, mode="stateless", cache=cache) as client:
            await client.list_tools()
    assert count.seen["tools/list"] == 2
    assert len(cache) == 0  # each client's own entries go when it leaves


@pytest.mark.anyio
async def test_leaving_clears_a_clients_own_cache_not_a_shared_one() -> None:
    server, _ = make_server(scope="public")
    own: list[ClientCache] = []
    shared = ClientCache()
    with LiveServer(server.asgi_app()) as live:
        async with Client(live.url, mode="stateless") as client:
            await client.list_tools()
            assert client.cache is not None and len(client.cache) == 1
            own.append(client.cache)
        async with Client(live.url, mode="stateless", cache=shared) as client:
            await client.list_tools()
    assert len(own[0]) == 0
    assert len(shared) == 1  # public, of that URL: for the next client of it


# ---------------------------------------------------------------- bounds


@pytest.mark.anyio
async def test_the_cache_is_bounded_least_recently_used_first() -> None:
    server, count = make_server()
    cache = ClientCache(max_entries=2)
    async with connect(server, mode="stateless", cache=cache) as client:
        for name in ("a", "b", "a", "c"):  # "a" used again: "b" is the oldest
            await client.read_resource(f"note://{name}")
        assert len(cache) == 2
        assert count.seen["resources/read"] == 3
        await client.read_resource("note://a")
        assert count.seen["resources/read"] == 3
        assert (await client.read_resource("note://b")).contents[0].text == "b #2"


@pytest.mark.anyio
async def test_bytes_are_bounded_too() -> None:
    server, count = make_server()

    @server.resource("big://blob")
    def blob() -> str:
        """Larger than the cache."""
        return "x" * 5000

    @server.resource("pad://{name}")
    def pad(name: str) -> str:
        """A thousand bytes and more."""
        return name + "x" * 1000

    cache = ClientCache(max_bytes=4000)
    async with connect(server, mode="stateless", cache=cache) as client:
        await client.read_resource("big://blob")
        await client.read_resource("big://blob")
        assert count.seen["resources/read"] == 2
        for name in "abcdefghij":
            await client.read_resource(f"pad://{name}")
        assert 0 < cache.size <= 4000
        assert len(cache) == 3
        await client.read_resource("pad://j")
        assert count.seen["resources/read"] == 12


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError):
        ClientCache(max_entries=0)


@pytest.mark.parametrize(("result", "kept"), [
    ({"ttlMs": 1000, "cacheScope": "public"}, (1000, False)),
    ({"ttlMs": 5, "cacheScope": "private", "resultType": "complete"}, (5, True)),
    ({"ttlMs": 0, "cacheScope": "public"}, None),
    ({"ttlMs": -1, "cacheScope": "public"}, None),
    ({"ttlMs": 1.5, "cacheScope": "public"}, None),
    ({"ttlMs": True, "cacheScope": "public"}, None),
    ({"ttlMs": 1000}, None),
    ({"ttlMs": 1000, "cacheScope": "shared"}, None),
    ({"cacheScope": "public"}, None),
    ({"ttlMs": 1000, "cacheScope": "public", "resultType": "input_required"}, None),
])
def test_only_valid_hints_allow_keeping(result: JSONObject, kept: Any) -> None:
    assert hints(result) == kept


# ---------------------------------------------------------------- CacheView corners


def _view(cache: ClientCache, send: Fake) -> CacheView:
    return CacheView(cache, "http://h/mcp", lambda: "2026-07-28", lambda: "token-digest", send)


class Fake:
    """A server's answers per cursor, each page's ttl its own; ``refuse`` cursors it no
    longer knows; ``during`` runs while a request is under way."""

    def __init__(self, pages: dict[str | None, tuple[list[str], str | None, int]]) -> None:
        self.pages = pages
        self.asked: list[str | None] = []
        self.refuse: set[str] = set()
        self.during: Callable[[], None] | None = None
        self.scope = "public"

    async def __call__(self, method: str, params: JSONObject | None = None, *,
                       on_sent: Callable[[RequestId], None] | None = None) -> JSONObject:
        cursor = (params or {}).get("cursor")
        self.asked.append(cursor)
        if on_sent is not None:
            on_sent(len(self.asked))
        if self.during is not None:
            self.during()
        if cursor in self.refuse:
            raise RemoteError(-32602, "Invalid params: unknown cursor")
        names, nxt, ttl = self.pages[cursor]
        res: JSONObject = {"tools": [{"name": n, "inputSchema": {"type": "object"}}
                                     for n in names],
                           "ttlMs": ttl, "cacheScope": self.scope, "resultType": "complete"}
        if nxt:
            res["nextCursor"] = nxt
        return res


@pytest.mark.anyio
async def test_a_refused_cursor_of_a_kept_page_reads_the_listing_again() -> None:
    now = [0.0]
    cache = ClientCache(clock=lambda: now[0])
    send = Fake({None: (["a"], "c1", 10_000), "c1": (["b"], None, 1000)})
    view = _view(cache, send)
    names = [x.name for x in await view.pages("tools/list", "tools", t.ToolInfo)]
    assert names == ["a", "b"]
    now[0] = 2.0  # page 2 is stale, page 1 is not; the server forgot cursor c1
    send.refuse = {"c1"}
    send.pages = {None: (["a2"], "c2", 10_000), "c2": (["b2"], None, 10_000)}
    names = [x.name for x in await view.pages("tools/list", "tools", t.ToolInfo)]
    assert names == ["a2", "b2"]
    assert send.asked == [None, "c1", "c1", None, "c2"]


@pytest.mark.anyio
async def test_a_refused_cursor_without_kept_pages_raises() -> None:
    send = Fake({None: (["a"], "c1", 0), "c1": (["b"], None, 0)})
    view = _view(ClientCache(), send)
    send.refuse = {"c1"}
    with pytest.raises(RemoteError):
        await view.pages("tools/list", "tools", t.ToolInfo)


@pytest.mark.anyio
async def test_an_answer_asked_for_before_a_change_is_not_kept() -> None:
    cache = ClientCache()
    send = Fake({None: (["a"], None, 10_000)})
    view = _view(cache, send)
    send.during = lambda: view.notified("notifications/tools/list_changed", {})
    await view.get("tools/list", None)
    assert len(cache) == 0
    send.during = None
    await view.get("tools/list", None)
    assert len(cache) == 1


@pytest.mark.anyio
async def test_private_and_public_keys() -> None:
    cache = ClientCache()
    send = Fake({None: (["a"], None, 10_000)})
    view = _view(cache, send)
    await view.get("tools/list", {"_meta": {"x": 1}})
    (key,) = cache._entries
    assert key == Key("http://h/mcp", "2026-07-28", "tools/list", b"{}", "")
    await view.get("tools/list", None)  # _meta is not a param: the same key
    assert send.asked == [None] and cache.hits == 1
    send.scope = "private"
    await view.get("resources/read", {"uri": "a://b"})
    assert Key("http://h/mcp", "2026-07-28", "resources/read", b'{"uri":"a://b"}',
               "token-digest") in cache._entries
