"""The stateless revision across instances, and per-item caching hints.

An MRTR round trip started on one server instance finishes on another when both use the
same SQLite store (the store keeps the key that seals ``requestState``); an instance with
another key refuses the state."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from mcpkit import Context, Server
from mcpkit.storage import SQLiteSessionStore

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def make_instance(store: SQLiteSessionStore | None) -> Any:
    server = Server("instance")

    @server.tool
    async def greet(ctx: Context) -> str:
        """Ask the user's name, then greet them."""
        answer = await ctx.elicit("Your name?", SCHEMA, key="name")
        return f"Hello, {(answer.content or {}).get('name')}!"

    return server.asgi_app(session_store=store) if store else server.asgi_app()


async def post(app: Any, rid: int, params: dict[str, Any], method: str = "tools/call",
               name: str | None = "greet") -> tuple[int, dict[str, Any]]:
    """One 2026-07-28 POST straight into the ASGI app: (status, JSON body)."""
    body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                         "params": {**params, "_meta": META}})
    headers = [(b"host", b"localhost"), (b"content-type", b"application/json"),
               (b"accept", b"application/json, text/event-stream"),
               (b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", method.encode())]
    if name:
        headers.append((b"mcp-name", name.encode()))
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers,
             "client": ("127.0.0.1", 1)}
    await asyncio.wait_for(app(scope, receive, send), 10)
    return sent[0]["status"], orjson.loads(sent[1]["body"])


def test_round_trip_crosses_instances_sharing_the_store(tmp_path: Path) -> None:
    db = str(tmp_path / "shared.db")

    async def run() -> None:
        first = make_instance(SQLiteSessionStore(db))
        second = make_instance(SQLiteSessionStore(db))
        stranger = make_instance(None)  # its own random key
        status, round1 = await post(first, 1, {"name": "greet"})
        assert status == 200 and round1["result"]["resultType"] == "input_required"
        state = round1["result"]["requestState"]
        retry = {"name": "greet", "requestState": state,
                 "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}}}
        status, round2 = await post(second, 2, retry)
        assert status == 200
        assert round2["result"]["content"][0]["text"] == "Hello, Ada!"
        status, refused = await post(stranger, 3, retry)
        assert refused["error"]["code"] == -32602
        assert "requestState" in refused["error"]["message"]

    asyncio.run(run())


def test_caching_hints_per_resource_and_server_defaults() -> None:
    """ttlMs/cacheScope: a resource's own hints on its reads, the server's on the rest."""
    server = Server("hints", cache_ttl_ms=5000, cache_scope="public")
    server.add_resource("fresh for a minute", "test://minute", cache_ttl_ms=60_000,
                        cache_scope="private")
    server.add_resource("server defaults", "test://plain")
    app = server.asgi_app()

    async def call(method: str, params: dict[str, Any], name: str | None) -> dict[str, Any]:
        _, reply = await post(app, 1, params, method, name)
        result: dict[str, Any] = reply["result"]
        return result

    async def run() -> None:
        minute = await call("resources/read", {"uri": "test://minute"}, "test://minute")
        assert (minute["ttlMs"], minute["cacheScope"]) == (60_000, "private")
        plain = await call("resources/read", {"uri": "test://plain"}, "test://plain")
        assert (plain["ttlMs"], plain["cacheScope"]) == (5000, "public")
        listed = await call("resources/list", {}, None)
        assert (listed["ttlMs"], listed["cacheScope"]) == (5000, "public")

    asyncio.run(run())
