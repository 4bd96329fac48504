"""``mcpkit login`` / ``logout`` and the stored login, end to end, as a person would.

Two real uvicorn servers on loopback: the test authorization server (tests/auth/oauth_as.py,
whose authorization endpoint redirects straight back) and an mcpkit server protected by
``asgi_app(auth=Auth(...))``. ``mcpkit login URL --no-browser`` runs as a subprocess with
its own state directory; the test reads the authorization URL it prints on stderr and
plays the browser with httpx (GET it, follow the redirect to the CLI's loopback
listener). Then ``mcpkit call`` works without ``--token``, refreshes an expired token,
``--token`` wins over the stored login, ``logout`` removes it and the next call is
refused with the hint to log in.
"""

from __future__ import annotations

import json
import os
import queue
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpkit import Context, Server
from mcpkit.auth import Auth, ProtectedResource
from tests.support.http import LiveServer
from tests.support.oidc import OidcProvider

from .notes_server import adding_server, verified_at_own_url
from .oauth_as import AuthServer

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


@dataclass
class Setup:
    auth: AuthServer  # the test authorization server (a dummy one with oidc-provider)
    url: str
    state: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("MCPKIT_TOKEN", "DISPLAY", "WAYLAND_DISPLAY",
                            "MCPKIT_CLIENT_SECRET")}
        return {**env, "MCPKIT_STATE_DIR": str(self.state), **extra}

    def mcpkit(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PY, "-m", "mcpkit.cli", *args], capture_output=True,
                              text=True, timeout=timeout, env=self.env(), cwd=ROOT)

    @property
    def token_file(self) -> Path:
        return self.state / "tokens.json"

    def stored(self) -> dict[str, Any]:
        tokens: dict[str, Any] = json.loads(self.token_file.read_text())["tokens"]
        return tokens


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    auth = AuthServer()
    with LiveServer(auth) as idp:
        auth.base = idp.base
        with verified_at_own_url(auth.issuer, lambda url, verifier: adding_server().asgi_app(
                auth=Auth(verifier, resource=ProtectedResource(
                    url, [auth.issuer], scopes_supported=["notes:read"]),
                    required_scopes=["notes:read"])), jwks_uri=f"{auth.base}/jwks") as live:
            yield Setup(auth, live.url, tmp_path / "state")


def login(setup: Setup, *options: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """``mcpkit login`` with a browser played by httpx: (the finished process, the page
    the browser was shown at the end)."""
    proc = subprocess.Popen([PY, "-m", "mcpkit.cli", "login", setup.url, "--no-browser",
                             "--wait", "20", *options], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=setup.env(), cwd=ROOT)
    assert proc.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr or ()],
                              daemon=True)
    reader.start()
    shown: list[str] = []
    try:
        url = None
        deadline = time.monotonic() + 20
        while url is None:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no authorization URL on stderr in 20 s: {shown}"
                                     ) from None
            shown.append(line)
            if line.startswith("    http"):
                url = line.strip()
        with httpx.Client(follow_redirects=True, timeout=10) as browser:  # keeps cookies
            page = browser.get(url)
        assert page.url.host == "127.0.0.1" and page.url.path == "/callback"
        out = proc.stdout.read() if proc.stdout is not None else ""
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    reader.join(10)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    while not lines.empty():
        shown.append(lines.get())
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "".join(shown)), \
        page.text


def test_login_call_logout(setup: Setup) -> None:
    done, page = login(setup)
    assert done.returncode == 0, done.stderr
    assert "close this window" in page
    assert f"Logged in to {setup.url} (notes)." in done.stdout
    assert setup.auth.issuer in done.stdout and "notes:read" in done.stdout
    assert "refreshed when needed" in done.stdout
    assert [setup.auth.hits[p] for p in ("/register", "/authorize", "/token")] == [1, 1, 1]
    (query,) = setup.auth.authorizations
    assert query["resource"] == setup.url and query["scope"] == "notes:read"
    assert query["redirect_uri"].startswith("http://127.0.0.1:")
    assert stat.S_IMODE(setup.token_file.stat().st_mode) == 0o600
    (entry,) = setup.stored().values()
    assert entry["access_token"] not in done.stdout + done.stderr
    assert entry["refresh_token"] not in done.stdout + done.stderr

    called = setup.mcpkit("call", setup.url, "add", "a=2", "b=3")
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == "5"
    assert setup.auth.hits["/token"] == 1  # the stored token, no new one

    checked = setup.mcpkit("check", setup.url, "--era", "stateful", "--call-tools", "none",
                           "--format", "json", "--fail-on", "never", timeout=120)
    assert checked.returncode == 0, checked.stderr
    assert "the token given was accepted (HTTP 200)" in checked.stdout

    given = setup.mcpkit("list", "tools", "--token", "not-the-stored-one", setup.url)
    assert given.returncode == 1
    assert "refused the access token (HTTP 401)" in given.stderr

    out = setup.mcpkit("logout", setup.url)
    assert out.returncode == 0, out.stderr
    assert f"removed the tokens from {setup.auth.issuer} for {setup.url}" in out.stdout
    assert "has no revocation_endpoint" in out.stderr  # reported, not fatal
    assert setup.stored() == {}
    assert stat.S_IMODE(setup.token_file.stat().st_mode) == 0o600

    refused = setup.mcpkit("call", setup.url, "add", "a=1", "b=1")
    assert refused.returncode == 1
    assert "HTTP 401" in refused.stderr and f"mcpkit login {setup.url}" in refused.stderr
    again = setup.mcpkit("logout", setup.url)
    assert again.returncode == 0 and "No stored login" in again.stdout


def test_an_expired_token_is_refreshed_then_a_dead_login_says_log_in(setup: Setup) -> None:
    setup.auth.expires_in = 5  # within the client's 30 s leeway: expired at once
    done, _ = login(setup, "--scope", "notes:read", "--scope", "notes:extra")
    assert done.returncode == 0, done.stderr
    assert setup.auth.authorizations[-1]["scope"] == "notes:read notes:extra"
    before = next(iter(setup.stored().values()))["access_token"]

    checked = setup.mcpkit("check", setup.url, "--era", "stateful", "--call-tools", "none",
                           "--format", "json", "--fail-on", "never", timeout=120)
    assert checked.returncode == 0, checked.stderr
    assert "the token given was accepted (HTTP 200)" in checked.stdout
    assert setup.auth.token_requests[-1]["grant_type"] == "refresh_token"
    assert next(iter(setup.stored().values()))["access_token"] != before
    before = next(iter(setup.stored().values()))["access_token"]

    called = setup.mcpkit("call", setup.url, "add", "a=1", "b=2")
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == "3"
    assert setup.auth.token_requests[-1]["grant_type"] == "refresh_token"
    assert next(iter(setup.stored().values()))["access_token"] != before
    assert setup.auth.hits["/register"] == 1  # the stored registration, not a new one

    setup.auth.refresh_tokens.clear()  # the authorization server forgot them
    dead = setup.mcpkit("call", setup.url, "add", "a=1", "b=2")
    assert dead.returncode == 1
    assert "no longer works" in dead.stderr and f"mcpkit login {setup.url}" in dead.stderr
    dead_check = setup.mcpkit("check", setup.url, "--era", "stateful", timeout=120)
    assert dead_check.returncode == 1
    assert "stored login" in dead_check.stderr and "mcpkit login" in dead_check.stderr
    assert len(setup.auth.authorizations) == 1  # no login was started


def test_a_preregistered_client_and_a_fixed_port(setup: Setup) -> None:
    from tests.support.http import free_port

    setup.auth.clients["cli-app"] = (None, "none")
    port = free_port()
    done, _ = login(setup, "--client-id", "cli-app", "--port", str(port))
    assert done.returncode == 0, done.stderr
    assert setup.auth.hits["/register"] == 0
    (query,) = setup.auth.authorizations
    assert query["client_id"] == "cli-app"
    assert query["redirect_uri"] == f"http://127.0.0.1:{port}/callback"
    called = setup.mcpkit("list", "tools", setup.url)
    assert called.returncode == 0, called.stderr and "add" in called.stdout


def test_login_usage_errors(setup: Setup) -> None:
    no_url = setup.mcpkit("login", "notes.example")
    assert no_url.returncode == 2 and "http(s):// URL" in no_url.stderr
    secret = setup.mcpkit("login", setup.url, "--client-secret", "s")
    assert secret.returncode == 2 and "--client-id" in secret.stderr
    with __import__("socket").socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        taken = setup.mcpkit("login", setup.url, "--no-browser", "--port", str(port))
    assert taken.returncode == 2 and f"port {port}" in taken.stderr
    assert setup.auth.authorizations == []


def test_the_browser_never_coming_back_ends_the_login(setup: Setup) -> None:
    done = subprocess.run([PY, "-m", "mcpkit.cli", "login", setup.url, "--no-browser",
                           "--wait", "1"], capture_output=True, text=True, timeout=30,
                          env=setup.env(), cwd=ROOT)
    assert done.returncode == 1
    assert "did not come back" in done.stderr
    assert not setup.token_file.exists() or setup.stored() == {}


def test_which_stored_login_covers_a_url_and_where_the_file_lives(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from mcpkit.cli.login import covers, token_path

    assert covers("http://127.0.0.1:1/mcp", "http://127.0.0.1:1/mcp")
    assert covers("http://127.0.0.1:1", "http://127.0.0.1:1/mcp")  # a parent resource
    assert covers("http://127.0.0.1:1/api", "http://127.0.0.1:1/api/mcp?x=1")
    assert not covers("http://127.0.0.1:1/api", "http://127.0.0.1:1/apix")
    assert not covers("http://127.0.0.1:1/mcp", "http://127.0.0.1:2/mcp")
    assert not covers("http://127.0.0.1:1/mcp", "https://127.0.0.1:1/mcp")
    monkeypatch.setenv("MCPKIT_STATE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "b"))
    assert token_path() == tmp_path / "a" / "tokens.json"
    monkeypatch.delenv("MCPKIT_STATE_DIR")
    assert token_path() == tmp_path / "b" / "mcpkit" / "tokens.json"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert token_path() == tmp_path / "home" / ".local" / "state" / "mcpkit" / "tokens.json"


def test_login_at_oidc_provider_then_call_as_the_user(oidc: OidcProvider,
                                                     tmp_path: Path) -> None:
    """A real authorization server: oidc-provider, its login and consent interactions
    (through redirects and cookies), a public native client with a loopback redirect
    on any port, RFC 9207 ``iss``, resource indicators and JWT access tokens."""
    server = Server("whoami")

    @server.tool
    async def whoami(ctx: Context) -> str:
        """The verified caller."""
        assert ctx.auth is not None
        return f"{ctx.auth.subject} {' '.join(sorted(ctx.auth.scopes))}"

    with verified_at_own_url(oidc.issuer, lambda url, verifier: server.asgi_app(
            auth=Auth(verifier, resource=ProtectedResource(
                url, [oidc.issuer], scopes_supported=["notes:read", "notes:write"])))) as live:
        setup = Setup(AuthServer(), live.url, tmp_path / "state")
        done, page = login(setup, "--client-id", "cli", "--scope", "notes:read")
        assert done.returncode == 0, (done.stderr, oidc.log())
        assert "close this window" in page
        assert oidc.issuer in done.stdout and "notes:read" in done.stdout
        called = setup.mcpkit("call", live.url, "whoami")
        assert called.returncode == 0, called.stderr
        assert called.stdout.strip() == "alice notes:read"
        (stored,) = setup.stored().values()
        assert stored["refresh_token"]
        out = setup.mcpkit("logout", live.url)
        assert out.returncode == 0, out.stderr
        # RFC 7009 at oidc-provider: the refresh token is revoked; a JWT access token
        # cannot be (unsupported_token_type, §2.2.1): reported, and deleted anyway
        assert f"Revoked at {oidc.issuer}: refresh_token." in out.stdout
        assert "revoking the access_token" in out.stderr
        assert "unsupported_token_type" in out.stderr
        assert stored["access_token"] not in out.stdout + out.stderr
        assert setup.stored() == {}
        dead = oidc.http.post(oidc.token_endpoint, data={
            "grant_type": "refresh_token", "refresh_token": stored["refresh_token"],
            "client_id": "cli"})
        assert (dead.status_code, dead.json()["error"]) == (400, "invalid_grant")
        refused = setup.mcpkit("call", live.url, "whoami")
        assert refused.returncode == 1 and f"mcpkit login {live.url}" in refused.stderr
