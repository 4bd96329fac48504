"""``Client.listen`` (2026-07-28 ``subscriptions/listen``) over memory, stdio and HTTP:
the acknowledgement first, then only the requested kinds of change, each tagged with the
listen's subscription id; leaving the block ends the subscription and the session goes on.
A refused subscription raises the server's error to the reader."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit import CapabilityNotSupported, RemoteError
from mcpkit.client import Client, ListenStream
from mcpkit.protocol.errors import METHOD_NOT_FOUND
from tests.support.http import LiveServer, everything_server

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = ROOT / "examples" / "everything.py"
RAW_MODERN = ROOT / "tests" / "servers" / "raw_modern.py"  # answers listen with -32601
SUB = "io.modelcontextprotocol/subscriptionId"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _exercise(target: Any) -> None:
    async with Client(target, mode="stateless") as client:
        with anyio.fail_after(15):
            async with client.listen(tools=True) as changes:
                ack = await changes.receive()
                assert ack["method"] == "notifications/subscriptions/acknowledged"
                assert ack["params"]["notifications"] == {"toolsListChanged": True}
                sub = ack["params"]["_meta"][SUB]
                await client.call_tool("test_trigger_prompt_change")  # not asked for
                await client.call_tool("test_trigger_tool_change")
                note = await changes.receive()
                assert note["method"] == "notifications/tools/list_changed"
                assert note["params"]["_meta"][SUB] == sub
            assert (await client.call_tool("echo", {"text": "after"})).text == "after"


@pytest.mark.anyio
async def test_listen_in_memory() -> None:
    await _exercise(everything_server())


@pytest.mark.anyio
async def test_listen_over_stdio() -> None:
    await _exercise([sys.executable, str(EVERYTHING)])


@pytest.mark.anyio
async def test_listen_over_http() -> None:
    server = everything_server()
    with LiveServer(server.asgi_app()) as live:
        await _exercise(live.url)
        deadline = anyio.current_time() + 10  # the listen's stream was closed: its
        while server._peers.listening:  # handler ended (polled: no event to wait on)
            assert anyio.current_time() < deadline, "the listen handler is still running"
            await anyio.sleep(0.02)


@pytest.mark.anyio
async def test_listen_needs_the_stateless_revision() -> None:
    async with Client(everything_server(), protocol_version="2025-11-25") as client:
        with pytest.raises(CapabilityNotSupported):
            async with client.listen(tools=True):
                pass


@pytest.mark.anyio
async def test_a_refused_listen_raises_the_servers_error() -> None:
    async with Client([sys.executable, str(RAW_MODERN)], mode="stateless") as client:
        with anyio.fail_after(15):
            async with client.listen(tools=True) as changes:
                with pytest.raises(RemoteError) as info:
                    await changes.receive()
                assert info.value.code == METHOD_NOT_FOUND
                with pytest.raises(RemoteError):
                    async for _ in changes:
                        pass
            assert [tool.name for tool in await client.list_tools()][:1] == ["no_result_type"]


@pytest.mark.anyio
async def test_listen_stream_ends_quietly_or_with_its_error() -> None:
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](4)
    changes = ListenStream(receive)
    send.send_nowait({"method": "a", "params": {}})
    send.close()
    assert [note["method"] async for note in changes] == ["a"]  # ended: no error
    changes.close()

    send, receive = anyio.create_memory_object_stream[dict[str, Any]](4)
    changes = ListenStream(receive)
    send.send_nowait({"method": "b", "params": {}})
    changes.error = RemoteError(-32603, "gone")
    send.close()
    assert await changes.receive() == {"method": "b", "params": {}}  # what came first
    with pytest.raises(RemoteError, match="gone"):
        await changes.receive()
    changes.close()


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["memory", "http"])
async def test_a_listen_outlives_the_clients_request_timeout(where: str) -> None:
    """A listen is answered only when the client ends it: the per-request timeout (here
    0.3 s) must not end it with a RequestTimeout."""
    server = everything_server()

    async def check(target: Any) -> None:
        async with Client(target, mode="stateless", timeout=0.3) as client:
            with anyio.fail_after(15):
                async with client.listen(tools=True) as changes:
                    await changes.receive()  # the acknowledgement
                    await anyio.sleep(0.8)  # well past the request timeout
                    await client.call_tool("test_trigger_tool_change")
                    note = await changes.receive()
                    assert note["method"] == "notifications/tools/list_changed"

    if where == "memory":
        await check(server)
    else:
        with LiveServer(server.asgi_app()) as live:
            await check(live.url)
