"""Protected instances sharing sessions on Redis: a session belongs to its token's subject
on every instance, and so does an MRTR ``requestState``.

Two instances of the auth tests' server (``asgi_app(auth=..., store="redis://...")``) on
one redis-server: alice initializes on A; bob presenting her session id on B is answered
exactly like an unknown session (404), on a POST, a GET, a resumption and a DELETE, and
her session goes on on both instances; a ``requestState`` sealed for alice on A opens for
alice on B and is refused for bob there (the shared secret makes it portable, the subject
binding keeps it hers).
"""

from __future__ import annotations

import httpx
import pytest

from tests.auth.idp import IdP
from tests.auth.test_server_auth import auth_for, bearer, make_server, raw, stateless, token
from tests.support.http import LiveServer
from tests.support.redis import RedisServer

pytestmark = pytest.mark.anyio


def instance(idp: IdP, redis: RedisServer) -> LiveServer:
    return LiveServer(make_server().asgi_app(auth=auth_for(idp), store=redis.url))


async def test_a_session_is_its_subjects_on_every_instance(idp: IdP,
                                                           redis: RedisServer) -> None:
    with instance(idp, redis) as a, instance(idp, redis) as b:
        async with raw(a, token(idp)) as alice, raw(b, token(idp, sub="bob")) as bob, \
                raw(b, token(idp, sub="bob")) as nobody:
            await alice.initialize()
            bob.session_id, bob.version = alice.session_id, alice.version
            nobody.session_id, nobody.version = "no-such-session", alice.version
            unknown = await nobody.call_tool("whoami")
            assert unknown.status == 404
            for reply in (await bob.call_tool("whoami"), await bob.get(),
                          await bob.delete()):
                assert (reply.status, reply.body) == (unknown.status, unknown.body)
            async with bob.open_get(last_event_id="s1_1") as resumed:
                assert resumed.status == 404
            for server in (b, a):  # bob's attempts ended nothing, anywhere
                alice.url = server.url
                mine = await alice.call_tool("whoami")
                assert mine.json["result"]["structuredContent"]["subject"] == "alice"
            assert (await alice.delete()).status == 200
            alice.url = b.url
            assert (await alice.call_tool("whoami")).status == 404


async def test_a_request_state_opens_on_another_instance_for_its_subject_only(
        idp: IdP, redis: RedisServer) -> None:
    answer = {"sure": {"action": "accept", "content": {"ok": True}}}
    with instance(idp, redis) as a, instance(idp, redis) as b:
        async with httpx.AsyncClient(headers=bearer(token(idp))) as alice, \
                httpx.AsyncClient(headers=bearer(token(idp, sub="bob"))) as bob:
            first = await stateless(alice, a.url, "tools/call",
                                    {"name": "confirm", "arguments": {}}, "confirm")
            state = first.json()["result"]["requestState"]
            retry = {"name": "confirm", "arguments": {}, "requestState": state,
                     "inputResponses": answer}
            replayed = await stateless(bob, b.url, "tools/call", retry, "confirm", rid=2)
            finished = await stateless(alice, b.url, "tools/call", retry, "confirm", rid=3)
    assert first.json()["result"]["resultType"] == "input_required"
    assert replayed.json()["error"]["code"] == -32602
    assert finished.json()["result"]["content"][0]["text"] == "alice said {'ok': True}"
