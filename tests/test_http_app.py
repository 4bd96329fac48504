"""Building a server's HTTP app changes nothing in the server (``server/http_app.py``).

What one app of a server keeps of its own (its stores, the key its session store's
shared secret gives to seal 2026-07-28 ``requestState``, and with ``store=`` the
rate-limit buckets, the task manager and relay on Redis) is that app's alone: the
server's limiter, ``server.tasks`` and ``server.state_key`` stay as they were, so stdio
and every other app of the same server serve as before. Before, ``asgi_app`` rewired the
server it was called on: the last app built decided for all of them (a second app's
session store re-keyed the first app's states; an app on Redis moved the buckets and
the tasks of every other app there).

Live tests: uvicorn on loopback (``LiveServer``), a raw client validating every message
against the schema (``McpHttp``), redis-server for ``store=``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from mcpkit import Context, Server
from mcpkit.storage import MemorySessionStore, MemoryTaskStore
from mcpkit.storage.redis_buckets import RedisBuckets
from mcpkit.storage.redis_events import RedisEventStore
from mcpkit.storage.redis_tasks import RedisTaskStore
from mcpkit.transports.http_server import StreamableHTTPApp
from tests.support.http import ACCEPT_BOTH, LiveServer, McpHttp
from tests.support.redis import BOUNDED, RedisServer
from tests.support.schemas import error_def, validate

pytestmark = [pytest.mark.anyio, BOUNDED]

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "http-app-tests", "version": "1"}}
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
NOWHERE = "redis://127.0.0.1:9/0"  # unreachable: its secret is read when first needed


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client() -> AsyncIterator[McpHttp]:
    async with httpx.AsyncClient() as http:
        yield McpHttp(http, "")


class KeyStore(MemorySessionStore):
    """A session store keeping a shared secret, as ``SQLiteSessionStore`` does."""

    def __init__(self, key: bytes) -> None:
        super().__init__()
        self.key = key

    def secret(self) -> bytes:
        return self.key


def make_server(**options: Any) -> Server:
    """``greet`` asks the user's name (MRTR on 2026-07-28); ``hello`` just answers."""
    server = Server("apps", **options)

    @server.tool
    async def greet(ctx: Context) -> str:
        """Ask the user's name, then greet them."""
        answer = await ctx.elicit("Your name?", SCHEMA, key="name")
        return f"Hello, {(answer.content or {}).get('name')}!"

    @server.tool
    async def hello() -> str:
        """Say hello."""
        return "hello"

    return server


def handlers(app: StreamableHTTPApp) -> Any:
    """The handler table the app serves with (``Methods``)."""
    return app.on_request.__self__  # type: ignore[attr-defined]


def server_state(server: Server) -> dict[str, Any]:
    """What an app could have rewired: every attribute of the server (by identity) and
    the state inside its limiter, tasks, seal, handler table and peers."""
    watch, seal, peers = server._watch, server._seal, server._peers
    return {
        "attributes": {name: id(value) for name, value in vars(server).items()},
        "buckets": watch.limiter.store, "watch": (watch.audit, watch.limiter.default),
        "tasks": (server.tasks.store, server.tasks.relay, server.tasks.on_change),
        "seal": (seal._key, seal._store, seal._given),
        "table": dict(server._methods._table),
        "peers": (peers.announce, peers.reaches),
    }


def test_building_apps_leaves_the_server_as_it_was() -> None:
    server = make_server(rate_limit="5/minute")
    key = server.state_key  # (made on first use: made now, before the snapshot)
    tasks = server.tasks  # (likewise)
    before = server_state(server)
    shared = server.asgi_app(store=NOWHERE, max_body=1000)
    sealed = server.asgi_app("/sealed", session_store=KeyStore(b"s" * 32))
    plain = server.asgi_app("/plain", response_mode="json")
    assert server_state(server) == before
    assert server.state_key == key
    assert server.tasks is tasks
    assert isinstance(tasks.store, MemoryTaskStore) and tasks.relay is None

    # each app keeps its own options, stores, seal, buckets and tasks
    assert (shared.config.max_body, sealed.config.max_body) == (1000, 4 * 1024 * 1024)
    assert (plain.config.path, plain.config.response_mode) == ("/plain", "json")
    assert isinstance(shared.event_store, RedisEventStore) and shared.shared is not None
    mine = handlers(shared)
    assert isinstance(mine._tasks()[0].manager.store, RedisTaskStore)
    assert mine._tasks()[0].manager.relay is not None
    assert isinstance(server._apps[mine].limiter.store, RedisBuckets)
    assert handlers(sealed)._seal.key == b"s" * 32
    assert handlers(plain) is server._methods  # nothing of its own: the server's table


def test_middleware_added_later_reaches_every_app() -> None:
    """An app's own handler table follows the server's middleware (``_compose``)."""
    from mcpkit.server.middleware import Middleware

    server = make_server()
    sealed = server.asgi_app(session_store=KeyStore(b"s" * 32))
    table = handlers(sealed)
    plain_call = table._table["tools/call"]

    class Note(Middleware):
        async def on_call_tool(self, request: Any, call_next: Any) -> Any:
            return await call_next(request)

    server.add_middleware(Note())
    assert table._table["tools/call"] is not plain_call
    assert server._methods._table["tools/call"] is not plain_call


async def stateless_call(http: httpx.AsyncClient, live: LiveServer, extra: dict[str, Any]
                         ) -> dict[str, Any]:
    """One 2026-07-28 ``tools/call`` of ``greet``: the reply, validated against the
    revision's schema."""
    headers = {"content-type": "application/json", "accept": ACCEPT_BOTH,
               "mcp-protocol-version": MODERN, "mcp-method": "tools/call",
               "mcp-name": "greet"}
    reply = await http.post(live.url, headers=headers, timeout=10, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "greet", "arguments": {}, **extra, "_meta": META}})
    assert reply.status_code == 200, reply.text
    message: dict[str, Any] = reply.json()
    if "error" in message:
        validate(MODERN, error_def(MODERN), message)
    else:
        result = message["result"]
        validate(MODERN, "InputRequiredResult" if result.get("resultType") == (
            "input_required") else "CallToolResult", result)
    return message


async def test_two_apps_of_one_server_seal_with_their_own_keys(client: McpHttp) -> None:
    """Each app seals with its session store's secret; a third instance sharing the
    first store opens the first app's state. Before, the second app's store re-keyed
    the first app too: a state of either opened on both."""
    server = make_server()
    first_store, second_store = KeyStore(b"1" * 32), KeyStore(b"2" * 32)
    first = server.asgi_app(session_store=first_store)
    second = server.asgi_app(session_store=second_store)
    other = make_server().asgi_app(session_store=first_store)  # another instance
    with LiveServer(first) as a, LiveServer(second) as b, LiveServer(other) as c:
        for asked, stranger, sibling in ((a, b, c), (b, a, None)):
            asking = await stateless_call(client.http, asked, {})
            assert asking["result"]["resultType"] == "input_required"
            retry = {"requestState": asking["result"]["requestState"], "inputResponses": {
                "name": {"action": "accept", "content": {"name": "Ada"}}}}
            refused = await stateless_call(client.http, stranger, retry)
            assert refused["error"]["code"] == -32602
            assert "requestState" in refused["error"]["message"]
            for live in (asked, sibling):
                if live is not None:
                    done = await stateless_call(client.http, live, retry)
                    assert done["result"]["content"][0]["text"] == "Hello, Ada!"


async def test_an_app_on_redis_leaves_the_other_apps_buckets_alone(
        redis: RedisServer, client: McpHttp) -> None:
    """One server, one app sharing its state on Redis and one plain app: the plain app
    counts its callers in memory, the shared one on Redis (the same caller, 127.0.0.1,
    has a budget in each). Before, building the shared app moved the plain app's
    buckets to Redis too, and its calls spent the shared app's budget."""
    server = make_server(rate_limit="1/minute")
    shared = server.asgi_app(store=redis.url)
    plain = server.asgi_app()
    with LiveServer(plain) as p, LiveServer(shared) as s:
        results = []
        for live in (p, p, s, s):
            client.url, client.session_id, client.version = live.url, None, None
            await client.initialize()
            results.append((await client.call_tool("hello")).json["result"])
    assert [r.get("isError", False) for r in results] == [False, True, False, True]
    assert "Rate limit exceeded" in results[3]["content"][0]["text"]
