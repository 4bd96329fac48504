"""Rate limits and the audit hook of a protected server: callers told apart by their token.

Real parts only: the server runs under uvicorn on loopback with ``asgi_app(auth=...)``,
tokens are JWTs of the loopback authorization server (tests/auth/idp.py), and every
answer is validated against the official schema (``McpHttp``). Covered: two subjects
have separate buckets (one address), the same subject shares one across sessions and
eras, audit records carry identity, subject and client id but never the token.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from mcpkit import AuditRecord, Server
from mcpkit.client import Client, Http
from tests.support.http import LiveServer, McpHttp
from tests.support.schemas import validate

from .idp import IdP
from .test_server_auth import MODERN, auth_for, bearer, stateless, token

pytestmark = pytest.mark.anyio


def make_server(records: list[AuditRecord]) -> Server:
    server = Server("limited-notes", rate_limit="2/minute", audit=records.append)

    @server.tool
    async def note(text: str) -> str:
        """Under the server-wide limit."""
        return f"noted {text}"

    @server.tool(rate_limit="1/minute")
    async def publish() -> str:
        """Its own limit."""
        return "published"

    return server


@asynccontextmanager
async def session_of(live: LiveServer, value: str) -> AsyncIterator[McpHttp]:
    async with httpx.AsyncClient(headers=bearer(value)) as http:
        client = McpHttp(http, live.url)
        await client.initialize()
        yield client


async def refused(client: McpHttp, name: str, arguments: dict[str, Any] | None = None
                  ) -> bool:
    reply = await client.call_tool(name, arguments)
    assert reply.status == 200
    return bool(reply.messages[0]["result"]["isError"])


async def test_two_principals_have_separate_buckets(idp: IdP) -> None:
    records: list[AuditRecord] = []
    alice = token(idp, "alice", client_id="notes-app")
    bob = token(idp, "bob", client_id="cli")
    app = make_server(records).asgi_app(auth=auth_for(idp))
    with LiveServer(app, proxy_headers=False) as live:
        async with session_of(live, alice) as a1, session_of(live, bob) as b1:
            assert [await refused(a1, "note", {"text": "x"}) for _ in range(3)] == [
                False, False, True]
            assert [await refused(b1, "note", {"text": "y"}) for _ in range(2)] == [
                False, False]
            assert await refused(a1, "publish") is False
            assert await refused(b1, "publish") is False
            assert await refused(b1, "publish") is True
        # A new session of the same subject draws from the same buckets.
        async with session_of(live, alice) as a2:
            assert await refused(a2, "note", {"text": "z"}) is True
            assert await refused(a2, "publish") is True
        # So does a stateless (2026-07-28) request of that subject.
        async with httpx.AsyncClient(headers=bearer(alice)) as http:
            reply = await stateless(http, live.url, "tools/call",
                                    {"name": "note", "arguments": {"text": "s"}}, "note")
            assert reply.status_code == 200
            validate(MODERN, "CallToolResult", reply.json()["result"])
            assert reply.json()["result"]["isError"] is True
    outcomes = [(r.subject, r.tool, r.outcome) for r in records]
    assert outcomes == [
        ("alice", "note", "ok"), ("alice", "note", "ok"), ("alice", "note", "rate_limited"),
        ("bob", "note", "ok"), ("bob", "note", "ok"),
        ("alice", "publish", "ok"), ("bob", "publish", "ok"),
        ("bob", "publish", "rate_limited"),
        ("alice", "note", "rate_limited"), ("alice", "publish", "rate_limited"),
        ("alice", "note", "rate_limited")]
    by_subject = {r.subject: r for r in records}
    assert by_subject["alice"].client_id == "notes-app"
    assert by_subject["bob"].client_id == "cli"
    assert by_subject["alice"].identity == f"{idp.issuer} sub:alice"
    assert {r.address for r in records} == {"127.0.0.1"}
    for record in records:
        dumped = json.dumps(record.as_dict()) + repr(record)
        assert alice not in dumped and bob not in dumped
        assert alice.split(".")[2] not in dumped  # not even the signature


async def test_the_public_client_sees_a_refusal_it_can_act_on(idp: IdP) -> None:
    records: list[AuditRecord] = []
    app = make_server(records).asgi_app(auth=auth_for(idp))
    with LiveServer(app, proxy_headers=False) as live:
        async with Client(Http(live.url, headers=bearer(token(idp, "carol")))) as client:
            assert not (await client.call_tool("publish")).is_error
            result = await client.call_tool("publish")
    assert result.is_error
    assert result.text.startswith("Rate limit exceeded for tool 'publish': at most 1 call "
                                  "per minute; retry in ")
    assert [(r.subject, r.outcome) for r in records] == [("carol", "ok"),
                                                        ("carol", "rate_limited")]
