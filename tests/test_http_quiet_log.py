"""A normal session leaves nothing above INFO in the server's log (issue #26, item 1).

Opening the GET stream and then ending the session with DELETE logged
``ERROR: ASGI callable returned without completing response.`` after every session of
mcpkit's CLI, ``mcpkit.Client`` and the official SDK client: the server abandoned the
streams it ended instead of completing them. Here ``examples/everything.py --http`` runs
as a subprocess (its stderr is the log an operator reads) and three clients each run a
full session against it: initialize, calls (JSON and SSE answers), the GET stream,
DELETE; then the server is stopped with SIGTERM. Its log must hold no WARNING or ERROR.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from mcpkit.client import Client
from tests.support.daemon import Daemon
from tests.support.http import EVERYTHING, McpHttp, free_port

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def everything(tmp_path: Path) -> Iterator[Daemon]:
    port = free_port()
    daemon = Daemon([sys.executable, str(EVERYTHING), "--http", "--port", str(port)], port,
                    tmp_path / "server.log")
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop(signal.SIGKILL)


def url_of(daemon: Daemon) -> str:
    return f"http://127.0.0.1:{daemon.port}/mcp"


def assert_quiet(daemon: Daemon) -> None:
    """Stop the server (SIGTERM: exit 0) and read its whole log."""
    proc = daemon.proc
    assert proc is not None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 0
    log = daemon.log.read_text(errors="replace")
    bad = [line for line in log.splitlines() if "ERROR" in line or "WARNING" in line
           or "Traceback" in line]
    assert bad == [], log


async def test_mcpkit_client_session(everything: Daemon) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    for _ in range(2):
        async with Client(url_of(everything), mode="stateful") as client:
            result = await client.call_tool("echo", {"text": "hi"})
            assert result.content[0].text == "hi"  # type: ignore[union-attr]
            await client.call_tool("test_tool_with_progress", on_progress=on_progress)
            await client.list_tools()
    assert progress
    assert_quiet(everything)


async def test_official_client_session(everything: Daemon) -> None:
    for _ in range(2):
        async with streamable_http_client(url_of(everything)) as (read, write), \
                ClientSession(read, write, read_timeout_seconds=20, client_info=
                              types.Implementation(name="quiet", version="1")) as session:
            await session.initialize()
            result = await session.call_tool("echo", {"text": "hi"})
            assert result.content[0].text == "hi"  # type: ignore[union-attr]
            await session.call_tool("test_tool_with_progress", {})
            await anyio.sleep(0.2)  # the GET stream it opened is up
    assert_quiet(everything)


async def test_raw_session_with_get_stream_then_delete(everything: Daemon) -> None:
    async with httpx.AsyncClient() as http:
        c = McpHttp(http, url_of(everything))
        await c.initialize()
        async with c.open_get() as stream:
            assert stream.status == 200
            await stream.next_event()  # primed: the stream is open
            reply = await c.call_tool("test_trigger_tool_change")
            assert reply.status == 200
            _, note = await stream.next_message()
            assert note["method"] == "notifications/tools/list_changed"
            assert (await c.delete()).status == 200
            assert await stream.until_end(timeout=5) == []  # ended, complete
    assert_quiet(everything)


def test_curl_session(everything: Daemon, tmp_path: Path) -> None:
    url = url_of(everything)
    headers = tmp_path / "headers"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "curl", "version": "8"}}}
    accept = "Accept: application/json, text/event-stream"
    ctype = "Content-Type: application/json"

    def curl(*args: str, timeout: float = 10) -> str:
        done = subprocess.run(["curl", "-sS", "--max-time", str(timeout), *args],
                              capture_output=True, text=True, timeout=timeout + 5)
        return done.stdout

    curl("-D", str(headers), "-H", accept, "-H", ctype, "-d", json.dumps(init), url)
    sid = next(line.split(":", 1)[1].strip() for line in headers.read_text().splitlines()
               if line.lower().startswith("mcp-session-id:"))
    common = ["-H", accept, "-H", ctype, "-H", f"Mcp-Session-Id: {sid}",
              "-H", "MCP-Protocol-Version: 2025-11-25"]
    curl(*common, "-d", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
         url)
    answer = curl(*common, "-d", json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                             "params": {"name": "echo",
                                                        "arguments": {"text": "curl"}}}), url)
    assert '"text":"curl"' in answer
    get = subprocess.Popen(["curl", "-sN", "--max-time", "20", "-H",
                            "Accept: text/event-stream", "-H", f"Mcp-Session-Id: {sid}",
                            "-H", "MCP-Protocol-Version: 2025-11-25", url],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        asyncio.run(asyncio.sleep(0.5))  # the GET stream is open
        curl("-X", "DELETE", "-H", f"Mcp-Session-Id: {sid}", url)
        _, err = get.communicate(timeout=10)  # ended by the server, as a complete answer
        assert get.returncode == 0, err
    finally:
        if get.poll() is None:
            get.kill()
            get.communicate()
    assert_quiet(everything)
