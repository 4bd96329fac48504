"""A ``Client`` entered in one asyncio task and left in another (``client/hosting.py``):
what pytest-asyncio does with an ``async with Client(...) as client: yield client``
fixture. Plain asyncio here (``asyncio.run``), no anyio runner around the client, as in
such a fixture; real servers (in memory, and a subprocess over stdio)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import anyio
import pytest

from mcpkit import Server
from mcpkit.client import Client
from mcpkit.client.hosting import needed
from mcpkit.protocol.errors import ConnectionClosed

LIMIT = 20
SERVER = '''
from mcpkit import Server
server = Server("echo")

@server.tool
def echo(text: str) -> str:
    return text

server.run()
'''


def echo_server() -> Server:
    server = Server("echo")
    server.add_tool(lambda text: text, name="echo")
    return server


def test_entered_in_one_task_and_left_in_another(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text(SERVER)

    async def main() -> None:
        for target in (echo_server(), [sys.executable, str(script)]):
            client = Client(target, timeout=LIMIT)
            await asyncio.create_task(client.__aenter__())  # a fixture's set-up
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
            await asyncio.create_task(client.__aexit__(None, None, None))  # its tear-down
            with pytest.raises(ConnectionClosed, match="not connected"):
                await client.call_tool("echo", {"text": "again"})

    asyncio.run(asyncio.wait_for(main(), LIMIT))


def test_a_server_that_cannot_start_fails_the_entry() -> None:
    async def main() -> None:
        client = Client(["/nonexistent/mcp-server"], timeout=LIMIT)
        with pytest.raises(FileNotFoundError):  # what the structured path raises too
            await client.__aenter__()
        assert client._host is None

    asyncio.run(asyncio.wait_for(main(), LIMIT))


def test_cancelled_while_entering_or_inside_cuts_the_connection(tmp_path: Path) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(60)\n")  # never answers initialize
    script = tmp_path / "echo.py"
    script.write_text(SERVER)

    async def main() -> None:
        entering = asyncio.create_task(Client([sys.executable, str(slow)],
                                              timeout=LIMIT).__aenter__())
        await asyncio.sleep(0.5)
        entering.cancel()
        with pytest.raises(asyncio.CancelledError):
            await entering

        async def inside() -> None:
            async with Client([sys.executable, str(script)], timeout=LIMIT) as client:
                await client.call_tool("echo", {"text": "x"})
                await asyncio.sleep(60)

        task = asyncio.create_task(inside())
        await asyncio.sleep(2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    # the suite turns ResourceWarning into an error: a subprocess left running fails it
    asyncio.run(asyncio.wait_for(main(), LIMIT))


def test_a_client_is_entered_once_at_a_time() -> None:
    async def main() -> None:
        async with Client(echo_server(), timeout=LIMIT) as client:
            with pytest.raises(RuntimeError, match="already open"):
                await client.__aenter__()

    asyncio.run(asyncio.wait_for(main(), LIMIT))


@pytest.mark.anyio
async def test_inside_an_anyio_scope_the_connection_stays_the_callers() -> None:
    """Structured callers keep the old shape: a failing connection cancels their scope."""
    with anyio.CancelScope():
        assert not needed()
        async with Client(echo_server(), timeout=LIMIT) as client:
            assert client._host is None and client._stack is not None
    async with anyio.create_task_group():
        assert not needed()
    assert needed()  # the anyio test runner's own task is in no scope


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
