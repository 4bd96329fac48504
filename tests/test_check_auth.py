"""``mcpkit check`` on the authorization rows (M030-M038, S008-S012, A016).

Real servers on loopback only: an mcpkit ``Server`` served with ``asgi_app(auth=...)``
under uvicorn (tests/support/http.py), its ``JWTVerifier`` holding the keys of a small
authorization server that serves RFC 8414 metadata (also under uvicorn), tokens signed with
those keys (tests/auth/idp.py). Broken servers are that same server with one fault put in:
a misconfiguration of the real parts (metadata naming another resource, a verifier that
accepts any token or a second audience, an authorization server without S256) or a small
ASGI layer in front (a challenge rewritten, a query-string token moved into the header, a
crash on a malformed header). Each must fail the row that names its fault; the correct
server fails none. An unprotected server and a stdio one get n/a, and the CLI runs once
end to end against examples/protected_notes.py.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
import pytest

from mcpkit import Server
from mcpkit.auth import AccessToken, Auth, JWTVerifier, ProtectedResource
from mcpkit.auth.server.claims import Audience
from mcpkit.check import Target, run_check
from mcpkit.check.authprobe import (
    AuthFacts,
    Exchange,
    canonical,
    corrupt,
    parse_bearer,
    prm_urls,
    secure_or_loopback,
)
from mcpkit.check.facts import Facts
from mcpkit.check.matrix import AUTH_ROWS
from mcpkit.check.matrix.auth import M031
from mcpkit.check.model import Report
from mcpkit.check.wire import WireLog
from tests.auth.idp import IdP
from tests.support.http import LateApp, LiveServer, answer_lifespan, free_port

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
OTHER = "https://other.example/mcp"
SERVER_ROWS = ("M030", "M031", "M037", "M038", "S008", "S010", "S011", "A016")
CLIENT_ROWS = ("M032", "M033", "M034", "M035", "M036", "S012")

Asgi = Callable[..., Any]


async def _json(send: Any, status: int, doc: Any) -> None:
    body = json.dumps(doc).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class AuthServer:
    """An authorization server's metadata (RFC 8414) for ``idp``'s keys; ``s256`` and
    ``registration`` say what it advertises."""

    def __init__(self, idp: IdP) -> None:
        self.idp = idp
        self.s256 = True
        self.registration = True
        self.issuer = ""  # another issuer to claim in the metadata, if set

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        if scope["path"] != "/.well-known/oauth-authorization-server":
            await _json(send, 404, {"error": "not found"})
            return
        base = self.idp.issuer
        doc: dict[str, Any] = {
            "issuer": self.issuer or base, "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token", "jwks_uri": f"{base}/jwks",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"] if self.s256 else ["plain"]}
        if self.registration:
            doc["registration_endpoint"] = f"{base}/register"
        await _json(send, 200, doc)


@pytest.fixture(scope="module")
def issuer() -> Iterator[tuple[IdP, AuthServer]]:
    idp = IdP()
    server = AuthServer(idp)
    with LiveServer(server) as live:
        idp.base = live.base
        yield idp, server


@pytest.fixture
def idp(issuer: tuple[IdP, AuthServer]) -> Iterator[IdP]:
    yield issuer[0]
    issuer[1].s256 = issuer[1].registration = True
    issuer[1].issuer = ""


def notes() -> Server:
    server = Server("notes")

    @server.tool(annotations={"readOnlyHint": True})
    def notes_search(query: str) -> list[str]:
        """Use this to find notes containing the query. Returns matching titles."""
        return [query]

    @server.tool(annotations={"readOnlyHint": True}, scopes=["notes:admin"])
    def notes_audit(since: int) -> list[str]:
        """Use this to list changes since a time. Returns change lines."""
        return [str(since)]

    return server


class AcceptAll:
    """A verifier that accepts any string: the fault of a server that checks nothing."""

    async def verify(self, token: str) -> AccessToken:
        return AccessToken(subject="anyone", client_id=None, scopes=["notes:read"],
                           expires_at=None, issuer=None, audience=[], claims={})


@contextmanager
def protected(idp: IdP, *, resource: Callable[[str], str] | None = None,
              wrap: Callable[[Asgi], Asgi] | None = None,
              verifier: Callable[[str], Any] | None = None) -> Iterator[LiveServer]:
    """``notes()`` as a protected resource on loopback, its resource its own URL unless
    ``resource(url)`` says otherwise; ``wrap`` puts a layer in front, ``verifier(url)``
    replaces the JWT verifier."""
    late = LateApp()
    live = LiveServer(late)
    check = (verifier(live.url) if verifier is not None else
             JWTVerifier(issuer=idp.issuer, audience=live.url, jwks=idp.key_set()))
    metadata = ProtectedResource(resource(live.url) if resource else live.url, [idp.issuer],
                                 scopes_supported=["notes:read", "notes:admin"])
    auth = Auth(check, resource=metadata, required_scopes=["notes:read"])
    app = notes().asgi_app(auth=auth)
    late.app = wrap(app) if wrap is not None else app
    with live:
        yield live


def token(idp: IdP, audience: str, scope: str = "notes:read") -> str:
    return idp.sign(idp.claims(aud=audience, scope=scope))


def check(url: str, tok: str | None = None, wrong: str | None = None,
          call_tools: str = "none") -> Report:
    target = Target(url=url, token=tok, wrong_audience_token=wrong, timeout=5.0)
    return anyio.run(run_check, target, "both", call_tools)  # type: ignore[arg-type]


def verdicts(report: Report, rule: str) -> set[str]:
    return {f.verdict for f in report.findings if f.rule == rule}


def messages(report: Report, rule: str) -> str:
    return "\n".join(f.message for f in report.findings if f.rule == rule)


def failed_rules(report: Report) -> set[str]:
    return {f.rule for f in report.findings if f.verdict == "fail"}


# ------------------------------------------------------------------ a correct server


def test_correct_protected_server_passes_every_auth_row(idp: IdP) -> None:
    with protected(idp) as live:
        report = check(live.url, token(idp, live.url), token(idp, OTHER), "readonly")
    assert failed_rules(report) & {"M042", "STATELESS.discover", *AUTH_ROWS} == set()
    assert not report.failures(frozenset({"MUST", "SHOULD"}))
    for rule in SERVER_ROWS:
        assert verdicts(report, rule) == {"pass"}, (rule, messages(report, rule))
    for rule in CLIENT_ROWS:
        assert verdicts(report, rule) == {"untestable"}
    assert verdicts(report, "S009") == {"n/a"}
    m038 = next(f for f in report.findings if f.rule == "M038")
    assert "the corrupted token 401" in m038.message
    assert "the wrong-audience token 401" in m038.message
    assert "a token for another audience" in m038.evidence and "HTTP 401" in m038.evidence
    s008 = messages(report, "S008")
    assert 'scope="notes:read"' in s008
    # notes_audit needs notes:admin: the readonly call got the 403 step-up challenge
    assert "403 insufficient_scope challenges name the scope and metadata" in s008
    assert "S256" in messages(report, "M031")
    assert "/register" in messages(report, "A016")
    assert {e.served for e in report.eras} == {True}


def test_protected_server_without_a_token_judges_the_auth_rows(idp: IdP) -> None:
    with protected(idp) as live:
        report = check(live.url)
    assert {f.verdict for f in report.findings if f.rule in ("M042", "STATELESS.discover")
            } == {"untestable"}
    assert "--token" in messages(report, "M042")
    assert report.exit_status("should") == 0
    for rule in SERVER_ROWS:
        assert verdicts(report, rule) == {"pass"}, (rule, messages(report, rule))
    assert "pass --token" in messages(report, "M038")
    assert "made-up token" in messages(report, "M037")


def test_refused_token_is_said(idp: IdP) -> None:
    with protected(idp) as live:
        report = check(live.url, token(idp, OTHER))
    assert "the token given was refused (HTTP 401)" in messages(report, "M042")
    assert verdicts(report, "M038") == {"pass"}


# ------------------------------------------------------------------ not applicable


def test_unprotected_server_has_no_auth_row_to_judge() -> None:
    with LiveServer(notes().asgi_app()) as live:
        report = check(live.url)
    for rule in SERVER_ROWS:
        assert verdicts(report, rule) == {"n/a"}, rule
        assert "does not require authorization" in messages(report, rule)
    assert verdicts(report, "S009") == {"n/a"}
    assert not failed_rules(report) & AUTH_ROWS


def test_stdio_server_passes_s009_and_the_rest_is_na() -> None:
    target = Target(command=[PY, str(ROOT / "examples" / "notes.py")], timeout=10.0,
                    env={**os.environ, "MCPKIT_NOTES_DB": ":memory:"})
    report = anyio.run(run_check, target, "stateful", "none")
    assert verdicts(report, "S009") == {"pass"}
    for rule in SERVER_ROWS:
        assert verdicts(report, rule) == {"n/a"}
        assert "Not an HTTP server" in messages(report, rule)


# ------------------------------------------------------------------ broken servers


def rewrite_challenge(status: int, value: bytes | None) -> Callable[[Asgi], Asgi]:
    """A layer replacing the WWW-Authenticate of every ``status`` answer (None: drop it)."""
    def wrap(app: Asgi) -> Asgi:
        async def layer(scope: Any, receive: Any, send: Any) -> None:
            async def patched(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start" and message["status"] == status:
                    headers = [(k, v) for k, v in message["headers"]
                               if k.lower() != b"www-authenticate"]
                    if value is not None:
                        headers.append((b"www-authenticate", value))
                    message = {**message, "headers": headers}
                await send(message)
            await app(scope, receive, patched)
        return layer
    return wrap


def query_token(app: Asgi) -> Asgi:
    """The fault RFC 6750 §2.3 invites: ``access_token`` in the query becomes the token."""
    async def layer(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            pairs = parse_qsl(scope["query_string"].decode())
            found = dict(pairs).get("access_token")
            if found:
                rest = urlencode([(k, v) for k, v in pairs if k != "access_token"])
                scope = {**scope, "query_string": rest.encode(), "headers": [
                    *scope["headers"], (b"authorization", f"Bearer {found}".encode())]}
        await app(scope, receive, send)
    return layer


def crash_on_malformed(app: Asgi) -> Asgi:
    """A hand-written header parser that raises (500) on anything but ``Bearer TOKEN``."""
    async def layer(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            values = [v for k, v in scope["headers"] if k == b"authorization"]
            if values and len(values[0].split(b" ")) != 2:
                await send({"type": "http.response.start", "status": 500, "headers": [
                    (b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"Internal Server Error"})
                return
        await app(scope, receive, send)
    return layer


def two_audiences(idp: IdP) -> Callable[[str], Any]:
    return lambda url: JWTVerifier(issuer=idp.issuer, audience=Audience(url, also=[OTHER]),
                                   jwks=idp.key_set())


BROKEN: dict[str, tuple[dict[str, Any], str, str]] = {
    # case: (protected() options, the rule that must fail, words its message must hold)
    "metadata names another resource": (
        # its metadata is served (at the URLs of /other, named by the challenge)
        {"resource": lambda url: url.replace("/mcp", "/other")}, "M031",
        "is not the URL of this server"),
    "401 without resource_metadata": (
        {"wrap": rewrite_challenge(401, b'Bearer realm="notes"')}, "S008",
        "has no resource_metadata"),
    "401 without a challenge": (
        {"wrap": rewrite_challenge(401, None)}, "S008",
        "carries no WWW-Authenticate: Bearer challenge"),
    "403 challenge without scope": (
        {"wrap": rewrite_challenge(403, b'Bearer error="insufficient_scope"')}, "S008",
        "lacks scope, resource_metadata"),
    "token in the query accepted": (
        {"wrap": query_token}, "M037", "was accepted"),
    "any token accepted": (
        {"verifier": lambda url: AcceptAll()}, "M038", "A made-up token was accepted"),
    "500 on a malformed header": (
        {"wrap": crash_on_malformed}, "M038", "got HTTP 500"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_server_fails_its_row(idp: IdP, case: str) -> None:
    options, rule, words = BROKEN[case]
    with protected(idp, **options) as live:
        report = check(live.url, token(idp, live.url), call_tools="readonly")
    assert verdicts(report, rule) == {"fail"}, messages(report, rule)
    assert words in messages(report, rule)
    assert failed_rules(report) & AUTH_ROWS == {rule}  # one defect, one rule
    finding = next(f for f in report.findings if f.rule == rule)
    assert "HTTP" in finding.evidence and live.base in finding.evidence


def test_wrong_audience_accepted_fails_m038(idp: IdP) -> None:
    with protected(idp, verifier=two_audiences(idp)) as live:
        report = check(live.url, token(idp, live.url), token(idp, OTHER))
    assert verdicts(report, "M038") == {"fail"}
    text = messages(report, "M038")
    assert "A token issued for another audience was accepted (HTTP 200)" in text
    assert "confused deputy" in text
    # the same server without the wrong-audience token cannot be caught
    with protected(idp, verifier=two_audiences(idp)) as live:
        report = check(live.url, token(idp, live.url))
    assert verdicts(report, "M038") == {"pass"}


def test_authorization_server_without_s256_or_registration(
        idp: IdP, issuer: tuple[IdP, AuthServer]) -> None:
    issuer[1].s256 = False
    issuer[1].registration = False
    with protected(idp) as live:
        report = check(live.url, token(idp, live.url))
    assert verdicts(report, "M031") == {"fail"}
    assert "does not list S256 in code_challenge_methods_supported" in messages(report, "M031")
    assert verdicts(report, "S010") == {"fail"}
    assert verdicts(report, "A016") == {"n/a"}
    assert verdicts(report, "S011") == {"pass"}


def test_metadata_of_another_issuer_fails_s011(idp: IdP,
                                               issuer: tuple[IdP, AuthServer]) -> None:
    issuer[1].issuer = "https://honest.example"
    with protected(idp) as live:
        report = check(live.url, token(idp, live.url))
    assert verdicts(report, "S011") == {"fail"}
    assert "names the issuer 'https://honest.example'" in messages(report, "S011")
    assert failed_rules(report) & AUTH_ROWS == {"S011"}
    assert verdicts(report, "S010") == verdicts(report, "A016") == {"untestable"}


def test_cli_refuses_a_wrong_audience_token_for_stdio() -> None:
    done = subprocess.run([PY, "-m", "mcpkit.cli", "check", "--stdio", "true",
                           "--wrong-audience-token", "abc"],
                          capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert done.returncode == 2
    assert "--wrong-audience-token is for http(s) servers" in done.stderr


def test_unreachable_authorization_server_is_untestable_not_failed(idp: IdP) -> None:
    port = free_port()  # nothing listens there
    def elsewhere(url: str) -> Any:
        return JWTVerifier(issuer=idp.issuer, audience=url, jwks=idp.key_set())
    late = LateApp()
    live = LiveServer(late)
    late.app = notes().asgi_app(auth=Auth(elsewhere(live.url), resource=ProtectedResource(
        live.url, [f"http://127.0.0.1:{port}"]), required_scopes=["notes:read"]))
    with live:
        report = check(live.url, token(idp, live.url))
    for rule in ("S010", "S011", "A016"):
        assert verdicts(report, rule) == {"untestable"}, rule
        assert "could be read" in messages(report, rule)
    assert verdicts(report, "M031") == {"pass"}
    assert "was not checked" in messages(report, "M031")


# ------------------------------------------------------------------ units


def test_plain_http_off_loopback_fails_m031() -> None:
    url = "http://mcp.example.com/mcp"
    first = Exchange("no credentials", "POST", url, {}, 401, {
        "www-authenticate": 'Bearer resource_metadata="http://mcp.example.com/.well-known/'
                            'oauth-protected-resource/mcp"'})
    auth = AuthFacts(url, first, protected=True, prm={
        "resource": url, "authorization_servers": ["http://auth.example.com"]},
        prm_url="http://mcp.example.com/.well-known/oauth-protected-resource/mcp")
    facts = Facts("stateful", "http", WireLog(), auth=auth)
    verdict, message, _ = M031(facts)
    assert verdict == "fail"
    assert "plain http off loopback" in message
    assert "'http://auth.example.com' is not an https URL" in message
    assert "metadata is served over plain http" in message


def test_parse_bearer() -> None:
    assert parse_bearer('Bearer error="invalid_token", scope="a b", '
                        'resource_metadata="https://h/x\\"y"') == {
        "error": "invalid_token", "scope": "a b", "resource_metadata": 'https://h/x"y'}
    assert parse_bearer("Bearer") == {}
    assert parse_bearer('Basic realm="x", Bearer scope=a') == {"scope": "a"}
    assert parse_bearer('Basic realm="x"') is None
    assert parse_bearer("") is None


def test_urls_and_tokens() -> None:
    assert canonical("HTTPS://Mcp.Example.com:443/") == "https://mcp.example.com"
    assert canonical("http://127.0.0.1:8000/mcp") == "http://127.0.0.1:8000/mcp"
    assert canonical("https://h/mcp/") != canonical("https://h/mcp")
    assert prm_urls("https://h:8443/mcp") == [
        "https://h:8443/.well-known/oauth-protected-resource/mcp",
        "https://h:8443/.well-known/oauth-protected-resource"]
    assert prm_urls("https://h/") == ["https://h/.well-known/oauth-protected-resource"]
    assert secure_or_loopback("http://localhost:1/x") and secure_or_loopback("https://a/")
    assert not secure_or_loopback("http://a.example/")
    jwt_like = "aaa.bbb.cdAef"
    changed = corrupt(jwt_like)
    assert changed != jwt_like and changed.startswith("aaa.bbb.") and len(changed) == 13
    assert corrupt("opaqueAtoken") != "opaqueAtoken"


# ------------------------------------------------------------------ the CLI, end to end


@pytest.fixture(scope="module")
def protected_notes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """examples/protected_notes.py served as a subprocess: (its URL, its state dir)."""
    home = tmp_path_factory.mktemp("protected-check")
    port = free_port()
    proc = subprocess.Popen(
        [PY, str(ROOT / "examples" / "protected_notes.py"), "--http", "--port", str(port),
         "--state-dir", str(home / "state")], stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, cwd=home, start_new_session=True,
        env={**os.environ, "MCPKIT_NOTES_DB": str(home / "notes.db")})
    try:
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 20)
        assert ready, "the example printed nothing within 20 s"
        assert f"127.0.0.1:{port}/mcp" in proc.stderr.readline()
        yield f"http://127.0.0.1:{port}/mcp", home / "state"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()


def test_cli_check_with_tokens_against_the_protected_example(
        protected_notes: tuple[str, Path]) -> None:
    url, state = protected_notes
    port = url.split(":")[2].split("/")[0]

    def mint(*options: str) -> str:
        done = subprocess.run([PY, str(ROOT / "examples" / "protected_notes.py"), "--token",
                               "--port", port, "--state-dir", str(state), *options],
                              capture_output=True, text=True, timeout=30, check=True)
        return done.stdout.strip()

    env = {k: v for k, v in os.environ.items() if k != "MCPKIT_TOKEN"}
    token, wrong = mint(), mint("--audience", OTHER)
    done = subprocess.run(
        [PY, "-m", "mcpkit.cli", "check", "--token", token, "--wrong-audience-token", wrong,
         url, "--format", "json"],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    by_rule: dict[str, set[str]] = {}
    for f in report["findings"]:
        by_rule.setdefault(f["rule"], set()).add(f["verdict"])
    assert {e["served"] for e in report["eras"]} == {True}
    for rule in ("M030", "M031", "M037", "M038", "S008"):
        assert by_rule[rule] == {"pass"}, rule
    # the development issuer (https://dev-issuer.invalid) cannot be reached
    for rule in ("S010", "S011", "A016"):
        assert by_rule[rule] == {"untestable"}, rule
    m038 = next(f for f in report["findings"] if f["rule"] == "M038")
    assert "the wrong-audience token 401" in m038["message"]
    # tokens are not copied into the report
    assert "Bearer …" in m038["evidence"]
    m037 = next(f for f in report["findings"] if f["rule"] == "M037")
    assert "access_token=…" in m037["evidence"]
    assert token not in done.stdout and wrong not in done.stdout
