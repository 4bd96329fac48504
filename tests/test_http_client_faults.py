"""mcpkit's HTTP client when one POST goes wrong: only that request fails, with a typed
error, and the session goes on.

The servers are real: ``examples/everything.py``'s ``Server`` on uvicorn (loopback),
behind ``Faulty``, an ASGI middleware that answers the POSTs a test picks in its own way
(an HTTP error page, garbage, a JSON-RPC error) and passes everything else through. The
client is the public ``Client``; nothing of the protocol is mocked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import orjson
import pytest

from mcpkit import ConnectionClosed, RemoteError, TransportError
from mcpkit.client import Client
from mcpkit.protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, TRANSPORT_ERROR
from tests.support.http import LATEST, LiveServer, everything_server, read_body, replaying

LIMIT = 20
Answer = tuple[int, str, bytes]  # status, content type, body
Pick = Callable[[dict[str, Any]], Answer | None]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Faulty:
    """ASGI middleware: a POSTed message that ``pick`` answers gets that answer instead of
    reaching the app; ``garble`` names POSTs whose SSE answer gets a garbage event first.
    Keeps every POSTed message (``posted``) and its session id."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.pick: Pick = lambda msg: None
        self.garble: Callable[[dict[str, Any]], bool] = lambda msg: False
        self.posted: list[tuple[dict[str, Any], str | None]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        msg = orjson.loads(body)
        headers = dict(scope["headers"])
        self.posted.append((msg, (headers.get(b"mcp-session-id") or b"").decode() or None))
        answer = self.pick(msg)
        if answer is not None:
            status, ctype, data = answer
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", ctype.encode())]})
            await send({"type": "http.response.body", "body": data})
            return
        garble = self.garble(msg)
        sse = False

        async def send_garbled(message: Any) -> None:
            nonlocal garble, sse
            if message["type"] == "http.response.start":
                sse = any(k == b"content-type" and v.startswith(b"text/event-stream")
                          for k, v in message["headers"])
            elif garble and sse and message.get("body"):
                garble = False
                message = {**message, "body": b"event: message\ndata: {not json\n\n"
                           + message["body"]}
            await send(message)

        await self.app(scope, replaying(body, receive), send_garbled)

    def sent(self, method: str) -> list[tuple[dict[str, Any], str | None]]:
        return [(m, sid) for m, sid in self.posted if m.get("method") == method]


def echo_of(text: str) -> Callable[[dict[str, Any]], bool]:
    """Picks the ``echo`` call with ``text``."""
    def picked(msg: dict[str, Any]) -> bool:
        params = msg.get("params") or {}
        return (msg.get("method") == "tools/call" and params.get("name") == "echo"
                and params.get("arguments") == {"text": text})
    return picked


@pytest.fixture
def served() -> Any:
    server = everything_server()
    app = server.asgi_app()
    faulty = Faulty(app)
    with LiveServer(faulty) as live:
        yield server, app, faulty, live
    # (LiveServer's shutdown ends the sessions left)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["stateful", "stateless"])
@pytest.mark.parametrize("status", [500, 502])
async def test_http_error_fails_only_that_request(served: Any, status: int, mode: str) -> None:
    _server, _app, faulty, live = served
    boom = echo_of("boom")
    faulty.pick = lambda msg: (status, "text/html", b"<h1>Bad Gateway</h1>") if boom(msg) \
        else None
    with anyio.fail_after(LIMIT):
        async with Client(live.url, mode=mode, timeout=LIMIT) as client:
            slow: list[str] = []
            sleeping = anyio.Event()  # its first progress: the server is running it

            async def sleep() -> None:
                result = await client.call_tool("sleep", {"seconds": 2},
                                                on_progress=lambda p, t, m: sleeping.set())
                slow.append(result.text)

            async with anyio.create_task_group() as tg:
                tg.start_soon(sleep)
                await sleeping.wait()
                started = anyio.current_time()
                with pytest.raises(TransportError) as err:
                    await client.call_tool("echo", {"text": "boom"})
                assert anyio.current_time() - started < 1  # at once, not at a timeout
                assert not slow  # the other request is still in flight
            assert slow and slow[0]  # and it completed
            assert err.value.status == status and err.value.code == TRANSPORT_ERROR
            assert f"HTTP {status}" in str(err.value) and "Bad Gateway" in str(err.value)
            assert (await client.call_tool("echo", {"text": "after"})).text == "after"


@pytest.mark.anyio
async def test_jsonrpc_error_in_an_error_body_is_the_servers_answer(served: Any) -> None:
    _server, _app, faulty, live = served
    refused = echo_of("refused")

    def pick(msg: dict[str, Any]) -> Answer | None:
        if not refused(msg):
            return None
        return 400, "application/json", orjson.dumps({"jsonrpc": "2.0", "id": msg["id"],
            "error": {"code": INVALID_PARAMS, "message": "not today"}})

    faulty.pick = pick
    with anyio.fail_after(LIMIT):
        async with Client(live.url, timeout=LIMIT) as client:
            with pytest.raises(RemoteError) as err:
                await client.call_tool("echo", {"text": "refused"})
            assert (err.value.code, err.value.message) == (INVALID_PARAMS, "not today")
            assert (await client.call_tool("echo", {"text": "after"})).text == "after"


@pytest.mark.anyio
async def test_garbage_answer_fails_that_request_and_the_session_goes_on(served: Any) -> None:
    _server, _app, faulty, live = served
    garbage = echo_of("garbage")
    faulty.pick = lambda msg: (200, "application/json", b"this is not JSON") if garbage(msg) \
        else None
    faulty.garble = lambda msg: msg.get("method") == "tools/call" and (
        msg["params"]["name"] == "sleep")
    progress: list[float] = []
    with anyio.fail_after(LIMIT):
        async with Client(live.url, timeout=LIMIT) as client:
            with pytest.raises(TransportError, match="without an answer") as err:
                await client.call_tool("echo", {"text": "garbage"})
            assert err.value.status == 200
            # a garbage event on an SSE answer is dropped; the answer after it arrives
            result = await client.call_tool("sleep", {"seconds": 0.1},
                                            on_progress=lambda p, t, m: progress.append(p))
            assert result.text and progress
            assert (await client.call_tool("echo", {"text": "after"})).text == "after"


async def end_session(url: str, sid: str) -> None:
    """End session ``sid`` on the server behind the client's back."""
    async with httpx.AsyncClient(timeout=5) as http:
        gone = await http.delete(url, headers={"mcp-session-id": sid,
                                               "mcp-protocol-version": LATEST})
    assert gone.status_code == 200


@pytest.mark.anyio
async def test_expired_session_is_renewed_once_for_concurrent_requests(served: Any) -> None:
    server, _app, faulty, live = served
    with anyio.fail_after(LIMIT):
        async with Client(live.url, timeout=LIMIT) as client:
            transport = client.http_transport
            assert transport is not None and transport.session_id is not None
            first = transport.session_id
            assert client.instructions == server.instructions
            await end_session(live.url, first)
            server.instructions = "the second session's instructions"
            texts: list[str] = []

            async def echo(i: int) -> None:
                texts.append((await client.call_tool("echo", {"text": f"m{i}"})).text)

            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(echo, i)
            assert sorted(texts) == sorted(f"m{i}" for i in range(8))
            second = transport.session_id
            assert second is not None and second != first
            # the new session's answer reached the client: what it knows is the new one's
            assert client.instructions == "the second session's instructions"
            assert client.protocol_version == LATEST
    inits = faulty.sent("initialize")
    assert len(inits) == 2, "one new session for all the requests that got 404"
    assert inits[1][0]["params"]["protocolVersion"] == LATEST
    echoes = [sid for msg, sid in faulty.sent("tools/call") if msg["params"]["name"] == "echo"]
    assert echoes.count(first) == 8 and echoes.count(second) == 8  # each sent again once
    (note,) = [sid for _, sid in faulty.sent("notifications/initialized")][1:]
    assert note == second


@pytest.mark.anyio
async def test_refused_renewal_ends_the_session(served: Any) -> None:
    _server, _app, faulty, live = served
    with anyio.fail_after(LIMIT):
        async with Client(live.url, timeout=LIMIT) as client:
            assert client.http_transport is not None
            sid = client.http_transport.session_id
            assert sid is not None
            faulty.pick = lambda msg: (503, "application/json", orjson.dumps({
                "jsonrpc": "2.0", "id": msg["id"],
                "error": {"code": INTERNAL_ERROR, "message": "no more sessions"}})) if (
                msg.get("method") == "initialize") else None
            await end_session(live.url, sid)
            with pytest.raises(ConnectionClosed):
                await client.call_tool("echo", {"text": "lost"})
            with pytest.raises(ConnectionClosed):
                await client.ping()


@pytest.mark.anyio
async def test_server_gone_fails_requests_with_transport_error() -> None:
    server = everything_server()
    with anyio.fail_after(LIMIT):
        with LiveServer(server.asgi_app()) as live:
            client = Client(live.url, timeout=LIMIT)
            await client.__aenter__()
        try:  # the server stopped: nothing listens on its port any more
            with pytest.raises(TransportError, match="nothing is listening"):
                await client.call_tool("echo", {"text": "anyone?"})
            assert client.http_transport is not None
            assert client.http_transport.unreachable is not None
        finally:
            await client.__aexit__(None, None, None)


class CutWithLongRetry:
    """ASGI middleware: the SSE answer to a ``tools/call`` is cut after its first event
    (the priming one), whose ``retry`` is raised to about 28 hours first."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.cuts = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        if orjson.loads(body).get("method") != "tools/call":
            await self.app(scope, replaying(body, receive), send)
            return
        cut = False

        async def cutting_send(message: Any) -> None:
            nonlocal cut
            if cut:
                return  # the client is gone: the app's further events only reach its store
            if message["type"] == "http.response.body" and message.get("body"):
                data = re.sub(rb"retry: *[0-9]+", b"retry: 100000000", message["body"])
                assert data != message["body"], "expected an SSE priming event with retry"
                await send({"type": "http.response.body", "body": data, "more_body": False})
                cut = True
                self.cuts += 1
                return
            await send(message)

        replay = replaying(body, receive)

        async def cut_receive() -> Any:
            if cut:
                return {"type": "http.disconnect"}
            return await replay()

        await self.app(scope, cut_receive, cutting_send)


@pytest.mark.anyio
async def test_a_servers_huge_retry_is_capped() -> None:
    """A server may ask for any ``retry`` delay; the client waits at most
    ``max_retry_delay`` (30 s by default, 0.2 s here) before resuming the cut stream."""
    app = CutWithLongRetry(everything_server().asgi_app())
    progress: list[float] = []
    with LiveServer(app) as live:
        async with Client(live.url, protocol_version=LATEST) as client:
            assert client.http_transport is not None
            client.http_transport.reader.max_retry_delay = 0.2
            with anyio.fail_after(LIMIT):  # (progress: the answer comes as SSE)
                result = await client.call_tool("sleep", {"seconds": 1},
                                                on_progress=lambda p, t, m: progress.append(p))
            assert result.text == "Slept 1 seconds."
    assert app.cuts == 1
    assert progress == [1.0]  # sent while the stream was cut: replayed on resumption
