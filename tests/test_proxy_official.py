"""``mcpkit proxy`` from the command line, with real peers on both sides.

- ``mcpkit proxy --stdio "python examples/everything.py" --http --port N``: the official
  ``mcp`` client drives every feature of everything.py through the proxy, in each
  handshake revision it offers (the proxy's connection to the stdio server speaks the
  same one);
- ``mcpkit proxy URL --header ...``: mcpkit's client starts the proxy as a stdio command
  in front of everything.py served by uvicorn; the header reaches the remote with every
  request;
- usage errors and an unreachable remote: exit status 2 with one line.

(Authorization on both sides: tests/auth/test_proxy_auth.py.)
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest

from mcpkit.client import Client
from tests.support.http import LiveServer
from tests.test_http_interop_official import (
    EVERYTHING,
    HTTP_VERSIONS,
    TEST_TIMEOUT,
    Callbacks,
    HttpLog,
    drive_everything,
    load_everything,
    official_client,
    subprocess_server,
)

pytestmark = [
    pytest.mark.anyio,
    # the official client warns when a handshake-era session sets a log level
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # HTTP is asyncio-only


# (2025-03-26 has no elicitation: its refusal is worded by the remote's upstream session,
# which drive_everything's check of the direct server's wording does not expect.)
@pytest.mark.parametrize("version", HTTP_VERSIONS[:2])
async def test_official_client_through_cli_proxy(version: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    cb = Callbacks()
    log = HttpLog()
    command = f"{sys.executable} {EVERYTHING}"
    with anyio.fail_after(TEST_TIMEOUT):
        async with subprocess_server(lambda port: [
                "-m", "mcpkit", "proxy", "--stdio", command, "--http", "--port", str(port)]
        ) as served:
            async with official_client(served.url, version, monkeypatch, cb, log) as session:
                await drive_everything(session, cb, version)
            log.check_session_headers(version)


class HeaderLog:
    """An ASGI app recording each request's ``x-probe`` header before ``app`` serves it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[str | None] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            probe = headers.get(b"x-probe")
            self.seen.append(probe.decode() if probe is not None else None)
        await self.app(scope, receive, send)


async def test_cli_proxy_serves_a_url_on_stdio() -> None:
    remote = HeaderLog(load_everything().server.asgi_app())
    with LiveServer(remote) as live, anyio.fail_after(TEST_TIMEOUT):
        command = [sys.executable, "-m", "mcpkit", "proxy", live.url, "--header",
                   "X-Probe: from-cli"]
        async with Client(command, timeout=20) as client:
            assert client.server_info["name"] == "mcpkit-everything"
            assert (await client.call_tool("add", {"a": 20, "b": 22})).text == "42"
        assert remote.seen and set(remote.seen) == {"from-cli"}


async def test_cli_proxy_refuses_bad_usage(tmp_path: Any) -> None:
    """Usage errors exit 2 with one line; a remote that is not there too."""
    async def run(*args: str) -> tuple[int, str]:
        done = await anyio.run_process([sys.executable, "-m", "mcpkit", "proxy", *args],
                                       check=False)
        return done.returncode, done.stderr.decode()

    with anyio.fail_after(TEST_TIMEOUT):
        code, err = await run("--stdio", "x", "--port", "9")
        assert code == 2 and "--port" in err and "--http" in err
        code, err = await run("--stdio", "python s.py", "--token", "abc")
        assert code == 2 and "stdio server" in err
        code, err = await run("http://127.0.0.1:9/mcp")
        assert code == 2 and "cannot proxy http://127.0.0.1:9/mcp" in err
