"""Three instances of ``examples/everything.py --redis URL`` behind nginx, no stickiness.

Real processes only: redis-server, three uvicorn processes of the everything server (each
``--http --port N --redis URL``) and nginx balancing round-robin over them (the
configuration of docs/deployment.md, ``tests/support/nginx.py``), all on loopback, each
stopped by its process id. Through nginx, every request of a session may land on another
instance: mcpkit's ``Client`` and the official ``mcp`` client run full sessions
(elicitation answered on whatever instance the answer reaches, progress, logging, DELETE),
a raw client (every message checked against the official schema) resumes a stream after
the instance that held it was killed, and a DELETE is seen by every instance.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import redis

from mcpkit.client import Client
from tests.support.deployment import Deployment
from tests.support.http import McpHttp
from tests.support.redis import BOUNDED

pytestmark = [pytest.mark.anyio, BOUNDED]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with ExitStack() as stack:
        yield Deployment(stack, tmp_path_factory.mktemp("deployment"))


async def test_mcpkit_client_full_session_through_nginx(deployment: Deployment) -> None:
    asked: list[Any] = []
    progress: list[float] = []

    def elicit(params: Any) -> Any:
        asked.append(params["message"])
        return {"action": "accept", "content": {"response": "through nginx"}}

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with Client(deployment.url, elicitation=elicit, timeout=20) as client:
        tools = {t.name for t in await client.list_tools()}
        assert {"add", "echo", "test_elicitation"} <= tools
        for n in range(6):  # every instance answers some of these
            result = await client.call_tool("add", {"a": n, "b": 1})
            assert result.structured_content == {"result": n + 1}
        result = await client.call_tool("test_elicitation", {"message": "Who?"})
        assert result.text == "User response: action=accept, content={'response': 'through nginx'}"
        assert asked == ["Who?"]
        result = await client.call_tool("test_tool_with_progress", on_progress=on_progress)
        assert progress == [0, 50, 100] and not result.is_error
        await client.set_logging_level("error")
        assert (await client.read_resource("test://static-text")).contents


async def test_official_client_full_session_through_nginx(deployment: Deployment) -> None:
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamable_http_client

    async def on_elicitation(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"response": "official"})

    async with streamable_http_client(deployment.url) as (read, write), ClientSession(
            read, write, elicitation_callback=on_elicitation) as session:
        await session.initialize()
        for n in range(4):
            result = await session.call_tool("add", {"a": n, "b": 2})
            assert result.structured_content == {"result": n + 2}
        result = await session.call_tool("test_elicitation", {"message": "Who?"})
        block = result.content[0]
        assert isinstance(block, types.TextContent)
        assert block.text == "User response: action=accept, content={'response': 'official'}"
        prompts = await session.list_prompts()
        assert any(p.name == "test_simple_prompt" for p in prompts.prompts)


async def test_resume_after_the_instance_holding_the_stream_is_killed(
        tmp_path: Path) -> None:
    with ExitStack() as stack:
        deployment = Deployment(stack, tmp_path)
        async with httpx.AsyncClient() as http:
            client = McpHttp(http, deployment.url)
            await client.initialize()
            for _ in range(3):  # round-robin: each instance serves one of these
                assert (await client.request("ping")).status == 200
            with redis.Redis.from_url(deployment.redis.url) as r:
                listening = r.pubsub_numsub(f"mcpkit:bus:{client.session_id}")
            assert listening == [(f"mcpkit:bus:{client.session_id}".encode(), 3)]
            client.url = deployment.direct(0)  # the stream is held by instance 0
            call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
                "name": "sleep", "arguments": {"seconds": 1},
                "_meta": {"progressToken": "t"}}}
            async with client.open_post(call) as stream:
                primed = (await stream.next_event()).id
            assert primed is not None
            await anyio.sleep(1.5)  # the handler finishes; its events are in Redis
            deployment.instances[0].kill()
            client.url = deployment.url  # nginx passes it to a live instance
            async with client.open_get(last_event_id=primed) as resumed:
                got = await resumed.until_end(timeout=15)
            messages = [m for _, m in got]
            assert [m["params"]["progress"] for m in messages if "method" in m] == [1.0]
            assert messages[-1]["id"] == 5 and messages[-1]["result"]["content"]
            # DELETE through nginx: every instance still running answers 404 now
            assert (await client.delete()).status == 200
            for n in (1, 2):
                client.url = deployment.direct(n)
                reply = await client.request("ping")
                assert reply.status == 404 and reply.json["error"]["code"] == -32001
