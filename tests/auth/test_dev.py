"""Development tokens (issue #29 item 6): ``mcpkit.auth.dev.DevIssuer`` and ``mcpkit
token``. The key pair is made once and kept private; a token verifies for its audience
only, with its scopes, until it expires; a server protected with ``issuer.auth(...)``
under uvicorn on loopback accepts the CLI's token and refuses none or another's."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from mcpkit import Server
from mcpkit.auth import InvalidToken
from mcpkit.auth.dev import KEY_FILE, DevIssuer
from tests.support.http import LiveServer, McpHttp

pytestmark = pytest.mark.anyio
URL = "http://127.0.0.1:8765/mcp"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_tokens_verify_for_their_audience_scopes_and_lifetime(tmp_path: Path) -> None:
    issuer = DevIssuer(tmp_path)
    token = issuer.issue(audience=URL, scopes=["notes:read"], subject="ada")
    key = tmp_path / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    again = DevIssuer(tmp_path)  # the same key, read back: its tokens verify alike
    access = await again.verifier(URL).verify(token)
    assert (access.subject, access.scopes) == ("ada", frozenset({"notes:read"}))
    with pytest.raises(InvalidToken):
        await issuer.verifier("http://127.0.0.1:9/mcp").verify(token)  # another audience
    with pytest.raises(InvalidToken):
        await issuer.verifier(URL).verify(issuer.issue(audience=URL, expires_in=-61))
    other = DevIssuer(tmp_path / "elsewhere")  # another key: not this issuer's token
    with pytest.raises(InvalidToken):
        await issuer.verifier(URL).verify(other.issue(audience=URL))
    with pytest.raises(ValueError, match="audience"):
        issuer.issue(audience="")


def cli(*args: str, state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpkit", "token", *args,
                           "--state-dir", str(state)], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "PYTHONPATH": os.getcwd()})


async def test_a_protected_server_takes_the_cli_token(tmp_path: Path) -> None:
    server = Server("protected")

    @server.tool
    def whoami() -> str:
        """Say hello."""
        return "hello"

    issuer = DevIssuer(tmp_path)
    with LiveServer(server.asgi_app(auth=issuer.auth(URL, scopes=["notes:read"],
                                                     required_scopes=["notes:read"]))) as live:
        # the audience is the server's public URL, which the app was told (URL), not
        # the loopback port it happens to listen on
        made = cli("--audience", URL, "--scope", "notes:read", state=tmp_path)
        assert made.returncode == 0, made.stderr
        token = made.stdout.strip()
        async with httpx.AsyncClient(timeout=10) as anonymous:
            assert (await anonymous.post(live.url, json={})).status_code == 401
        async with httpx.AsyncClient(timeout=10,
                                     headers={"authorization": f"Bearer {token}"}) as http:
            mcp = McpHttp(http, live.url)
            await mcp.initialize()
            reply = await mcp.call_tool("whoami", {})
            assert reply.json["result"]["content"][0]["text"] == "hello"
        narrow = cli("--audience", URL, state=tmp_path).stdout.strip()  # no scope
        async with httpx.AsyncClient(timeout=10,
                                     headers={"authorization": f"Bearer {narrow}"}) as http:
            plain = McpHttp(http, live.url)
            assert (await plain.post(plain.init_message())).status == 403


def test_the_cli_says_what_is_missing(tmp_path: Path) -> None:
    missing = cli(state=tmp_path)
    assert missing.returncode == 2 and "--audience" in missing.stderr
    spaced = cli("--audience", URL, "--scope", "a b", state=tmp_path)
    assert spaced.returncode == 2 and "scopes are words without spaces" in spaced.stderr
