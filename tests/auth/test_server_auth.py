"""An mcpkit ``Server`` served as an OAuth 2.1 resource server: ``asgi_app(auth=...)``.

Real parts only: the server runs under uvicorn on loopback (tests/support/http.py), its
``JWTVerifier`` fetches the keys of the loopback authorization server (tests/auth/idp.py),
tokens are JWTs signed with those keys, and requests are made with the public ``Client``
or raw httpx. Covered: the 401 and the metadata of the mounted app, ``ctx.auth`` in tools,
resources, prompts and completions of both eras, per-call scopes (403 and its challenge,
success with the scope), sessions bound to the token's subject (POST, GET, resumption,
DELETE, a restarted server's records), MRTR ``requestState`` bound to it, the verifier
closed with the lifespan, and stdio unaffected.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest

from mcpkit import Context, Server
from mcpkit.auth import AccessToken, Auth, BearerAuth, JWTVerifier, ProtectedResource
from mcpkit.client import Client, Http
from mcpkit.server import running
from mcpkit.storage import SQLiteSessionStore
from mcpkit.transports.http_server import StreamableHTTPApp
from tests.support.http import LiveServer, McpHttp

from .idp import RESOURCE, IdP

pytestmark = pytest.mark.anyio

PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
PRM_URL = "https://mcp.example.com" + PRM_PATH
MODERN = "2026-07-28"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


class ClosingVerifier:
    """The real ``JWTVerifier``, counting the ``aclose`` calls the server makes."""

    def __init__(self, inner: JWTVerifier) -> None:
        self.inner = inner
        self.closed = 0

    async def verify(self, token: str) -> AccessToken:
        return await self.inner.verify(token)

    async def aclose(self) -> None:
        self.closed += 1
        await self.inner.aclose()


def principal(ctx: Context) -> dict[str, Any]:
    access = ctx.auth
    if access is None:
        return {"auth": None}
    return {"subject": access.subject, "client_id": access.client_id,
            "scopes": sorted(access.scopes), "issuer": access.issuer,
            "tenant": access.claims.get("tenant")}


def make_server(gate: threading.Event | None = None) -> Server:
    server = Server("notes")

    @server.tool
    async def whoami(ctx: Context) -> dict[str, Any]:
        """Who is calling."""
        return principal(ctx)

    @server.tool(scopes=["notes:write"])
    async def write_note(text: str, ctx: Context) -> str:
        """Needs notes:write."""
        assert ctx.auth is not None or gate is None
        return f"saved {text}"

    @server.tool(scopes=["notes:admin", "notes:write"])
    async def purge() -> str:
        """Needs notes:admin and notes:write."""
        return "purged"

    @server.tool
    async def slow(ctx: Context) -> str:
        """Reports progress, then waits for the test to let it finish."""
        await ctx.report_progress(1, 2)
        if gate is not None:
            await anyio.to_thread.run_sync(gate.wait, 10)
        return "slow done"

    @server.tool
    async def confirm(ctx: Context) -> str:
        """Asks the user (an MRTR round trip in 2026-07-28)."""
        answer = await ctx.elicit("Sure?", SCHEMA, key="sure")
        return f"{(ctx.auth.subject if ctx.auth else None)} said {answer.content}"

    @server.resource("notes://secret", scopes=["notes:admin"])
    def secret(ctx: Context) -> str:
        return f"secret for {ctx.auth.subject if ctx.auth else None}"

    @server.resource("notes://by/{owner}", scopes=["notes:admin"])
    def by_owner(owner: str, ctx: Context) -> str:
        return f"{owner} read by {ctx.auth.subject if ctx.auth else None}"

    @server.prompt(scopes=["notes:admin"])
    def summarise(topic: str, ctx: Context) -> str:
        return f"Summarise {topic} for {ctx.auth.subject if ctx.auth else None}"

    @server.completion(prompt="summarise", argument="topic")
    def topics(value: str, context: dict[str, str], ctx: Context) -> list[str]:
        return [f"{value}-{ctx.auth.subject if ctx.auth else None}"]

    return server


def auth_for(idp: IdP, verifier: Any = None, required: tuple[str, ...] = ()) -> Auth:
    return Auth(verifier or JWTVerifier(issuer=idp.issuer, audience=RESOURCE,
                                        jwks_uri=idp.jwks_uri),
                resource=ProtectedResource(RESOURCE, ["https://auth.example.com"],
                                           scopes_supported=["notes:read", "notes:write"]),
                required_scopes=required)


def token(idp: IdP, sub: str = "alice", scope: str = "notes:read notes:write",
          **claims: Any) -> str:
    return idp.sign(idp.claims(sub=sub, scope=scope, **claims))


def bearer(value: str) -> dict[str, str]:
    return {"authorization": f"Bearer {value}"}


@contextmanager
def serving(idp: IdP, *, gate: threading.Event | None = None,
            store: SQLiteSessionStore | None = None) -> Iterator[LiveServer]:
    app = make_server(gate).asgi_app(auth=auth_for(idp), session_store=store)
    with LiveServer(app) as live:
        yield live


@asynccontextmanager
async def raw(live: LiveServer, value: str | None) -> AsyncIterator[McpHttp]:
    """A raw Streamable HTTP client sending ``value`` as its bearer token (none: None)."""
    async with httpx.AsyncClient(headers=bearer(value) if value else {}) as http:
        yield McpHttp(http, live.url)


def stateless_headers(method: str, name: str | None) -> dict[str, str]:
    h = {"accept": "application/json, text/event-stream", "content-type": "application/json",
         "mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        h["mcp-name"] = name
    return h


async def stateless(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any],
                    name: str | None = None, rid: int = 1) -> httpx.Response:
    """One 2026-07-28 request (its ``_meta`` and routing headers added)."""
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "auth-tests", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": meta}}
    return await http.post(url, json=body, headers=stateless_headers(method, name))


def insufficient(scopes: str, description: str) -> str:
    return (f'Bearer error="insufficient_scope", scope="{scopes}", '
            f'resource_metadata="{PRM_URL}", error_description="{description}"')


# ------------------------------------------------------------------ 401 and metadata


async def test_no_token_is_401_with_a_resource_metadata_challenge(idp: IdP) -> None:
    with serving(idp) as live:
        async with raw(live, None) as client:
            reply = await client.post(client.init_message())
    assert reply.status == 401
    assert reply.headers["www-authenticate"] == (
        f'Bearer scope="notes:read notes:write", resource_metadata="{PRM_URL}"')


@pytest.mark.parametrize("path", [PRM_PATH, "/.well-known/oauth-protected-resource"])
async def test_metadata_at_both_well_known_urls_of_the_mounted_app(idp: IdP,
                                                                   path: str) -> None:
    with serving(idp) as live:
        async with httpx.AsyncClient() as http:
            reply = await http.get(live.base + path)
    assert reply.status_code == 200
    assert reply.json() == {"resource": RESOURCE,
                            "authorization_servers": ["https://auth.example.com"],
                            "scopes_supported": ["notes:read", "notes:write"],
                            "bearer_methods_supported": ["header"]}


# ------------------------------------------------------------------ ctx.auth


async def test_ctx_auth_in_a_tool_with_the_public_client_both_eras(idp: IdP) -> None:
    value = token(idp, tenant="acme")
    with serving(idp) as live:
        for mode in ("stateful", "stateless"):
            async with Client(Http(live.url, headers=bearer(value)), mode=mode) as client:
                result = await client.call_tool("whoami", {})
            assert result.structured_content == {
                "subject": "alice", "client_id": "client-1", "issuer": idp.issuer,
                "scopes": ["notes:read", "notes:write"], "tenant": "acme"}, mode


async def test_each_request_of_a_session_sees_its_own_token(idp: IdP) -> None:
    """A session is bound to the subject, not to one token: a refreshed token of the same
    subject (more scopes) is served, and the handler sees that token."""
    with serving(idp) as live:
        async with raw(live, token(idp, scope="notes:read")) as first:
            await first.initialize()
            reply = await first.call_tool("write_note", {"text": "x"})
            assert reply.status == 403
        async with raw(live, token(idp, scope="notes:read notes:write")) as second:
            second.session_id, second.version = first.session_id, first.version
            reply = await second.call_tool("whoami")
            assert reply.json["result"]["structuredContent"]["scopes"] == [
                "notes:read", "notes:write"]
            reply = await second.call_tool("write_note", {"text": "x"})
            assert reply.json["result"]["content"][0]["text"] == "saved x"


# ------------------------------------------------------------------ per-call scopes


async def test_a_tool_without_its_scope_is_403_with_the_challenge_then_works(idp: IdP) -> None:
    with serving(idp) as live:
        async with raw(live, token(idp, scope="notes:read")) as client:
            await client.initialize()
            refused = await client.call_tool("write_note", {"text": "x"}, rid=7)
        async with raw(live, token(idp, scope="notes:read notes:write")) as client:
            await client.initialize()
            allowed = await client.call_tool("write_note", {"text": "x"})
    assert refused.status == 403
    assert refused.headers["www-authenticate"] == insufficient(
        "notes:write", "tool 'write_note' needs the scopes: notes:write")
    assert refused.json == {"jsonrpc": "2.0", "id": 7, "error": {
        "code": -32600,
        "message": "Forbidden: tool 'write_note' needs the scopes: notes:write (the token "
                   "lacks notes:write). Obtain a token with these scopes from the "
                   "authorization server and retry.",
        "data": {"requiredScopes": ["notes:write"]}}}
    assert allowed.status == 200
    assert allowed.json["result"]["content"][0]["text"] == "saved x"


async def test_a_scoped_tool_added_while_serving_is_guarded(idp: IdP) -> None:
    """The scope check is skipped while nothing declares scopes, and starts with the
    first registration that does (the registry's answer is recomputed on change)."""
    server = Server("late")

    @server.tool
    async def open_tool() -> str:
        """No scope."""
        return "open"

    with LiveServer(server.asgi_app(auth=auth_for(idp))) as live:
        async with raw(live, token(idp, scope="notes:read")) as client:
            await client.initialize()
            before = await client.call_tool("open_tool", {})

            async def admin() -> str:
                """Needs notes:admin."""
                return "admin"

            server.add_tool(admin, scopes=["notes:admin"])
            refused = await client.call_tool("admin", {}, rid=9)
            still = await client.call_tool("open_tool", {})
            server.remove_tool("admin")
            server.add_tool(admin)
            now_open = await client.call_tool("admin", {})
    assert before.status == still.status == now_open.status == 200
    assert refused.status == 403 and refused.json["error"]["data"] == {
        "requiredScopes": ["notes:admin"]}


async def test_the_challenge_names_every_scope_the_call_needs(idp: IdP) -> None:
    """Held scopes are named too, so one re-authorization asks for enough (2026-07-28)."""
    with serving(idp) as live:
        async with httpx.AsyncClient(headers=bearer(token(idp))) as http:
            reply = await stateless(http, live.url, "tools/call",
                                    {"name": "purge", "arguments": {}}, "purge")
    assert reply.status_code == 403
    assert reply.headers["www-authenticate"] == insufficient(
        "notes:admin notes:write", "tool 'purge' needs the scopes: notes:admin notes:write")
    assert "lacks notes:admin)" in reply.json()["error"]["message"]


@pytest.mark.parametrize(("method", "params", "name", "what", "expected"), [
    ("resources/read", {"uri": "notes://secret"}, "notes://secret",
     "resource 'notes://secret'", "secret for alice"),
    ("resources/read", {"uri": "notes://by/bob"}, "notes://by/bob",
     "resource 'notes://by/bob'", "bob read by alice"),
    ("prompts/get", {"name": "summarise", "arguments": {"topic": "q3"}}, "summarise",
     "prompt 'summarise'", "Summarise q3 for alice"),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "summarise"},
                             "argument": {"name": "topic", "value": "q"}}, None,
     "completing prompt 'summarise'", "q-alice"),
])
async def test_resources_templates_prompts_and_completions_need_their_scopes(
        idp: IdP, method: str, params: dict[str, Any], name: str | None, what: str,
        expected: str) -> None:
    with serving(idp) as live:
        async with httpx.AsyncClient(headers=bearer(token(idp))) as http:
            refused = await stateless(http, live.url, method, params, name)
        admin = token(idp, scope="notes:read notes:admin")
        async with httpx.AsyncClient(headers=bearer(admin)) as http:
            allowed = await stateless(http, live.url, method, params, name)
        async with raw(live, admin) as session:  # the 2025-11-25 era: ctx.auth too
            await session.initialize()
            in_session = await session.request(method, params)
    assert refused.status_code == 403
    assert refused.headers["www-authenticate"] == insufficient(
        "notes:admin", f"{what} needs the scopes: notes:admin")
    assert allowed.status_code == 200, allowed.text
    assert expected in allowed.text
    assert in_session.status == 200 and expected in in_session.body.decode()


async def test_a_batch_is_refused_at_its_first_request_lacking_scopes(idp: IdP) -> None:
    with serving(idp) as live:
        async with raw(live, token(idp, scope="notes:read")) as client:
            await client.initialize(version="2025-03-26")
            batch = [{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "whoami", "arguments": {}}},
                     {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "write_note", "arguments": {"text": "x"}}}]
            reply = await client.post(batch)
    assert reply.status == 403
    assert reply.json["id"] == 2
    assert 'scope="notes:write"' in reply.headers["www-authenticate"]


# ------------------------------------------------------------------ sessions bound to the subject


async def test_another_subjects_token_cannot_use_a_session(idp: IdP) -> None:
    gate = threading.Event()
    with serving(idp, gate=gate) as live:
        async with raw(live, token(idp)) as alice, raw(live, token(idp, sub="bob")) as bob, \
                raw(live, token(idp, sub="bob")) as nobody:
            await alice.initialize()
            bob.session_id, bob.version = alice.session_id, alice.version
            nobody.session_id, nobody.version = "no-such-session", alice.version
            unknown = await nobody.call_tool("whoami")
            assert unknown.status == 404

            post = await bob.call_tool("whoami")
            get = await bob.get()
            delete = await bob.delete()
            for reply in (post, get, delete):
                assert (reply.status, reply.body) == (unknown.status, unknown.body)

            # resumption of alice's cut answer stream, by bob then by alice
            async with alice.open_post({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                                        "params": {"name": "slow", "arguments": {},
                                                   "_meta": {"progressToken": "p"}}}) as s:
                event, _progress = await s.next_message()
            assert event.id
            async with bob.open_get(last_event_id=event.id) as resumed:
                assert resumed.status == 404
                assert (await resumed.body()).body == unknown.body
            gate.set()
            async with alice.open_get(last_event_id=event.id) as resumed:
                assert resumed.status == 200
                rest = await resumed.until_end()
            assert rest[-1][1]["result"]["content"][0]["text"] == "slow done"

            mine = await alice.call_tool("whoami")  # alive: bob's DELETE ended nothing
            assert mine.json["result"]["structuredContent"]["subject"] == "alice"
            assert (await alice.delete()).status == 200


async def test_a_restarted_server_keeps_the_subject_of_each_session(idp: IdP,
                                                                    tmp_path: Path) -> None:
    db = str(tmp_path / "sessions.db")
    with serving(idp, store=SQLiteSessionStore(db)) as live:
        async with raw(live, token(idp)) as alice:
            await alice.initialize()
    sid = alice.session_id
    assert sid is not None
    record = SQLiteSessionStore(db)._load(sid)
    assert record is not None and record["owner"] == f"{idp.issuer} sub:alice"
    with serving(idp, store=SQLiteSessionStore(db)) as live:
        async with raw(live, token(idp, sub="bob")) as bob, raw(live, token(idp)) as alice:
            bob.session_id, bob.version = sid, "2025-11-25"
            alice.session_id, alice.version = sid, "2025-11-25"
            assert (await bob.call_tool("whoami")).status == 404
            reply = await alice.call_tool("whoami")
    assert reply.status == 200
    assert reply.json["result"]["structuredContent"]["subject"] == "alice"


async def test_a_request_state_cannot_be_replayed_by_another_subject(idp: IdP) -> None:
    answer = {"sure": {"action": "accept", "content": {"ok": True}}}
    with serving(idp) as live:
        async with httpx.AsyncClient(headers=bearer(token(idp))) as alice, \
                httpx.AsyncClient(headers=bearer(token(idp, sub="bob"))) as bob:
            first = await stateless(alice, live.url, "tools/call",
                                    {"name": "confirm", "arguments": {}}, "confirm")
            state = first.json()["result"]["requestState"]
            retry = {"name": "confirm", "arguments": {}, "requestState": state,
                     "inputResponses": answer}
            replayed = await stateless(bob, live.url, "tools/call", retry, "confirm", rid=2)
            tampered = await stateless(alice, live.url, "tools/call",
                                       {**retry, "requestState": state[:-2] + "AA"},
                                       "confirm", rid=3)
            finished = await stateless(alice, live.url, "tools/call", retry, "confirm", rid=4)
    assert first.json()["result"]["resultType"] == "input_required"
    assert replayed.json()["error"] == tampered.json()["error"]
    assert replayed.json()["error"]["code"] == -32602
    assert finished.json()["result"]["content"][0]["text"] == "alice said {'ok': True}"


# ------------------------------------------------------------------ configuration


async def test_the_verifier_is_closed_when_the_lifespan_ends(idp: IdP) -> None:
    verifier = ClosingVerifier(JWTVerifier(issuer=idp.issuer, audience=RESOURCE,
                                           jwks_uri=idp.jwks_uri))
    app = make_server().asgi_app(auth=auth_for(idp, verifier))
    assert isinstance(app, BearerAuth) and isinstance(app.app, StreamableHTTPApp)
    with LiveServer(app) as live:
        async with Client(Http(live.url, headers=bearer(token(idp)))) as client:
            assert (await client.call_tool("whoami", {})).structured_content
        assert verifier.closed == 0
    assert verifier.closed == 1


def test_run_http_passes_auth_and_stdio_refuses_it(idp: IdP,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    served: dict[str, Any] = {}
    monkeypatch.setattr(running, "run_http", lambda app, **kw: served.update(app=app))
    server = make_server()
    auth = auth_for(idp)
    server.run("http", port=0, auth=auth)
    assert isinstance(served["app"], BearerAuth) and served["app"].verifier is auth.verifier
    with pytest.raises(ValueError, match="stdio"):
        server.run("stdio", auth=auth)


def test_scope_names_are_checked_at_registration() -> None:
    server = Server("bad")
    with pytest.raises(ValueError, match="scope-token"):
        server.add_tool(lambda: 1, name="t", scopes=["notes write"])
    with pytest.raises(ValueError, match="list of names"):
        server.add_prompt(lambda: "p", name="p", scopes="notes:read")
    with pytest.raises(ValueError, match="scope-token"):
        server.add_resource("x", "notes://x", scopes=['a"b'])


async def test_declared_scopes_have_no_effect_without_auth_over_http() -> None:
    with LiveServer(make_server().asgi_app()) as live:
        async with Client(live.url) as client:
            note = await client.call_tool("write_note", {"text": "x"})
            who = await client.call_tool("whoami", {})
    assert note.text == "saved x"
    assert who.structured_content == {"auth": None}


ROOT = Path(__file__).resolve().parents[2]
STDIO_SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.auth.test_server_auth import make_server
make_server().run()
"""


async def test_stdio_is_unaffected(tmp_path: Path) -> None:
    script = tmp_path / "stdio_server.py"
    script.write_text(STDIO_SERVER.format(root=str(ROOT)))
    async with Client([sys.executable, str(script)]) as client:
        who = await client.call_tool("whoami", {})
        note = await client.call_tool("write_note", {"text": "x"})
        prompt = await client.get_prompt("summarise", {"topic": "q3"})
    assert who.structured_content == {"auth": None}
    assert note.text == "saved x"
    assert "Summarise q3 for None" in str(prompt)


def test_the_docs_example_builds_a_protected_app(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/auth.md's "Protecting a server" block runs as written (``run_http`` caught)."""
    text = (ROOT / "docs" / "auth.md").read_text()
    section = text[text.index("## Protecting a server"):]
    start = section.index("```python\n") + len("```python\n")
    block = section[start:section.index("\n```", start)]
    served: dict[str, Any] = {}
    monkeypatch.setattr(running, "run_http", lambda app, **kw: served.update(app=app, **kw))
    namespace: dict[str, Any] = {}
    exec(compile(block, "docs/auth.md", "exec"), namespace)
    app = served["app"]
    assert isinstance(app, BearerAuth) and isinstance(app.app, StreamableHTTPApp)
    assert app.required_scopes == ("notes:read",)
    assert namespace["server"]._registry.tools["save_note"].scopes == ("notes:write",)
