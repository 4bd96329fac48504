"""Many servers from one client (issue #29, item 7): ``mcpkit.Clients`` from a host
configuration, connected in parallel with failures kept apart, tools namespaced, and the
whole configuration served as one ``Server`` (``mcpkit proxy --config``). The servers
are real: mcpkit servers started as subprocesses over stdio, and one over HTTP."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit import Clients, Server
from mcpkit.bridge.clients import entries_of
from mcpkit.check.hosts import HostConfigError
from mcpkit.protocol.errors import RemoteError
from mcpkit.testing import connect
from tests.support.http import LiveServer

pytestmark = pytest.mark.anyio
LIMIT = 30

WEATHER = '''
from mcpkit import ResourceNotFound, Server
server = Server("weather")

@server.tool
def forecast(city: str) -> dict:
    """The forecast for a city."""
    return {"city": city, "sky": "clear"}

@server.resource("weather://stations")
def stations() -> str:
    return "paris, lyon"

@server.resource("weather://city/{name}")
def city(name: str) -> str:
    if name == "atlantis":
        raise ResourceNotFound(f"no city {name}")
    return f"{name}: 21C"

@server.prompt
def brief(city: str) -> str:
    return f"Brief me on the weather in {city}."

server.run()
'''

NOTES = '''
import os
from mcpkit import Server
server = Server("notes")

@server.tool
def notes_count() -> int:
    """How many notes there are."""
    return int(os.environ.get("NOTES", "0"))

server.run()
'''


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "weather.py").write_text(WEATHER)
    (tmp_path / "notes.py").write_text(NOTES)
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps({"mcpServers": {
        "weather": {"command": sys.executable, "args": [str(tmp_path / "weather.py")]},
        "my_notes": {"command": sys.executable, "args": [str(tmp_path / "notes.py")],
                     "env": {"NOTES": "3"}},
        "missing": {"command": str(tmp_path / "no-such-program")},
        "broken": {"args": ["x"]},
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
    }}))
    return path


def add_server(config: Path, name: str, raw: dict[str, Any]) -> None:
    doc = json.loads(config.read_text())
    doc["mcpServers"][name] = raw
    config.write_text(json.dumps(doc))


async def test_a_configuration_connects_in_parallel_and_keeps_failures_apart(
        config: Path) -> None:
    with anyio.fail_after(LIMIT):
        async with Clients.from_config(config, timeout=LIMIT) as clients:
            assert set(clients.clients) == {"weather", "my_notes"}
            assert set(clients.failed) == {"missing", "broken", "legacy"}
            assert "neither a command nor a url" in str(clients.failed["broken"])
            assert "HTTP+SSE" in str(clients.failed["legacy"])
            tools = {t.name for t in await clients.list_tools()}
            assert tools == {"weather_forecast", "my_notes_notes_count"}
            result = await clients.call_tool("weather_forecast", {"city": "Paris"})
            assert result.data.sky == "clear"
            assert (await clients.call_tool("my_notes_notes_count")).data.result == 3
            assert (await clients["weather"].read_resource("weather://stations")
                    ).contents[0].text == "paris, lyon"
            with pytest.raises(ValueError, match="no connected server for 'mail_send'"):
                await clients.call_tool("mail_send")
            with pytest.raises(KeyError, match="'missing' is not connected"):
                clients["missing"]
        assert clients.clients == {}


async def test_the_longest_server_name_routes_a_tool() -> None:
    inner, outer = Server("a"), Server("a_b")
    inner.add_tool(lambda: "from a", name="b_c")
    outer.add_tool(lambda: "from a_b", name="c")
    async with Clients({"a": inner, "a_b": outer}) as clients:
        assert {t.name for t in await clients.list_tools()} == {"a_b_c"}  # both!
        assert (await clients.call_tool("a_b_c")).text == "from a_b"
        assert clients.route("a_x") == ("a", "x")
        assert (await clients["a"].call_tool("b_c")).text == "from a"


async def test_a_server_that_never_answers_is_set_aside_after_the_timeout(
        tmp_path: Path) -> None:
    silent = tmp_path / "silent.py"
    silent.write_text("import time\ntime.sleep(60)\n")
    fine = Server("fine")
    fine.add_tool(lambda: "ok", name="ping_me")
    started = time.monotonic()
    async with Clients({"silent": [sys.executable, str(silent)], "fine": fine},
                       connect_timeout=1.5) as clients:
        assert "fine" in clients.clients and "no answer within 1.5s" in str(
            clients.failed["silent"])
    assert time.monotonic() - started < LIMIT


def test_configuration_shapes() -> None:
    entry = {"command": "python", "args": ["s.py"]}
    for shape in ({"mcpServers": {"s": entry}}, {"servers": {"s": entry}}, {"s": entry}):
        (found,) = entries_of(shape)
        assert (found.name, found.command) == ("s", ["python", "s.py"])
    (odd,) = entries_of({"s": "python s.py"})
    assert "not an object" in odd.problem
    with pytest.raises(HostConfigError):
        entries_of("/no/such/config.json")
    with pytest.raises(ValueError, match="connect_timeout"):
        Clients({}, connect_timeout=0)


async def test_the_whole_configuration_served_as_one_server(config: Path) -> None:
    remote = Server("remote")
    remote.add_tool(lambda text: text.upper(), name="shout")
    with LiveServer(remote.asgi_app()) as live:
        add_server(config, "remote", {"type": "http", "url": live.url})
        served = Clients.from_config(config, timeout=LIMIT).as_server("all")
        with anyio.fail_after(LIMIT):
            async with connect(served) as client:
                tools = {t.name for t in await client.list_tools()}
                assert tools == {"weather_forecast", "my-notes_notes_count", "remote_shout"}
                assert (await client.call_tool("remote_shout", {"text": "hi"})).text == "HI"
                forecast = await client.call_tool("weather_forecast", {"city": "Lyon"})
                assert forecast.structured_content == {"city": "Lyon", "sky": "clear"}
                bad = await client.call_tool("weather_forecast", {"town": "x"})
                assert bad.is_error  # the served schema refuses it before forwarding
                assert [r.uri for r in await client.list_resources()] == [
                    "weather+weather://stations"]
                read = await client.read_resource("weather+weather://city/nice")
                assert (read.contents[0].uri, read.contents[0].text) == (
                    "weather+weather://city/nice", "nice: 21C")
                with pytest.raises(RemoteError) as caught:  # the server's error, relayed
                    await client.read_resource("weather+weather://city/atlantis")
                assert caught.value.code == -32002 and "no city atlantis" in str(
                    caught.value.message)
                prompt = await client.get_prompt("weather_brief", {"city": "Nice"})
                assert prompt.messages[0].content.text == "Brief me on the weather in Nice."  # type: ignore[union-attr]
                with pytest.raises(RemoteError, match="missing required argument"):
                    await client.get_prompt("weather_brief", {})


async def test_a_connected_set_serves_what_its_servers_list_now() -> None:
    one = Server("one")
    one.add_tool(lambda: "1", name="first")
    async with Clients({"one": one}) as clients:
        served = await clients.server()
        async with connect(served) as client:
            assert [t.name for t in await client.list_tools()] == ["one_first"]
            assert (await client.call_tool("one_first")).text == "1"


def test_the_cli_proxies_a_configuration(config: Path, tmp_path: Path) -> None:
    """``mcpkit proxy --config FILE`` serves the configuration on stdio."""
    import subprocess

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "weather_forecast", "arguments": {"city": "Rome"}}},
    ]
    with subprocess.Popen([sys.executable, "-m", "mcpkit", "proxy", "--config", str(config)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines))
            proc.stdin.flush()
            answers: dict[Any, Any] = {}
            deadline = time.monotonic() + LIMIT
            while 2 not in answers and time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                message = json.loads(line)
                answers[message.get("id")] = message
            assert answers[2]["result"]["structuredContent"] == {"city": "Rome",
                                                                 "sky": "clear"}
            proc.stdin.close()
            assert proc.wait(timeout=LIMIT) == 0
        finally:
            proc.kill()
