"""Graceful shutdown of an HTTP server (issue #25): SIGTERM drains, then the process exits 0.

Real processes only: ``examples/everything.py --http --drain 3`` (and a server of the
user's own, uvicorn's command line serving ``asgi_app``) on loopback, each stopped by its
process id; every message the server sends is checked against the official schema.

What a drain promises (docs/deployment.md, "Restarts and the drain"): on SIGTERM the
server stops accepting; requests in flight shorter than the drain get their answers (JSON
and SSE); GET streams end at once as complete responses whose events a client resumes
from; a 2026-07-28 listen stream gets its completion result; a legacy HTTP+SSE stream
carries its last answer, then ends; a request still arriving (a client gone silent
mid-body) gets 503 with ``Retry-After`` and a JSON-RPC error; at the deadline what is
still running is cut (a JSON answer not begun: 503 with a JSON-RPC error naming the
request; an SSE stream: that error as its last event, stored, so a resumption ends with
it too) and a request whose cancellation left its exchange open is ended as well; then
the process exits 0, with nothing logged at WARNING or ERROR.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

from mcpkit.protocol.sse import SSEParser
from tests.support.daemon import Daemon
from tests.support.http import ACCEPT_BOTH, EVERYTHING, McpHttp, free_port
from tests.support.schemas import WireChecker
from tests.support.shutdown import (
    everything,
    exchange,
    exit_status,
    problems,
    raw_response,
    terminate,
)

pytestmark = pytest.mark.anyio

DRAIN = 3.0
MARGIN = 3.0  # exit within DRAIN + MARGIN of the signal
MODERN = "2026-07-28"
SUB = "io.modelcontextprotocol/subscriptionId"
CUT_CODE = -32603


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sleep_call(rid: Any, seconds: float, token: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "sleep", "arguments": {"seconds": seconds}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def listen_request(rid: str) -> tuple[dict[str, Any], dict[str, str]]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "drain-tests", "version": "1"}}
    msg = {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen",
           "params": {"notifications": {"toolsListChanged": True}, "_meta": meta}}
    headers = {"accept": ACCEPT_BOTH, "content-type": "application/json",
               "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"}
    return msg, headers


async def post(mcp: McpHttp, msg: Any, started: asyncio.Event | None = None) -> Any:
    mcp.checker.saw_peer(msg)
    return await exchange(mcp, "POST", orjson.dumps(msg), mcp.headers(), started)


class Legacy:
    """A 2024-11-05 HTTP+SSE client: the event stream read in the background."""

    def __init__(self, http: httpx.AsyncClient, base: str) -> None:
        self.http, self.base = http, base
        self.checker = WireChecker("server", "2024-11-05")
        self.messages: list[Any] = []
        self.endpoint = asyncio.get_running_loop().create_future()
        self.clean: bool | None = None
        self.arrived = asyncio.Event()

    async def read(self) -> None:
        parser = SSEParser()
        async with self.http.stream("GET", self.base + "/sse",
                                    headers={"accept": "text/event-stream"}) as resp:
            assert resp.status_code == 200
            try:
                async for chunk in resp.aiter_raw():
                    for event in parser.feed(chunk):
                        if event.event == "endpoint":
                            self.endpoint.set_result(self.base + event.data)
                        elif event.data:
                            msg = orjson.loads(event.data)
                            self.checker.check(msg)
                            self.messages.append(msg)
                            self.arrived.set()
                self.clean = True
            except httpx.RemoteProtocolError:
                self.clean = False

    async def send(self, msg: dict[str, Any]) -> int:
        self.checker.saw_peer(msg)
        resp = await self.http.post(await self.endpoint, content=orjson.dumps(msg),
                                    headers={"content-type": "application/json"})
        return resp.status_code

    async def answer(self, rid: Any) -> Any:
        with anyio.fail_after(10):
            while True:
                for msg in self.messages:
                    if msg.get("id") == rid:
                        return msg
                self.arrived.clear()
                await self.arrived.wait()


async def test_sigterm_drains_answers_cuts_and_exits_0(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    server = everything(tmp_path / "server.log", "--drain", str(DRAIN), "--sqlite", str(state))
    base = f"http://127.0.0.1:{server.port}"
    try:
        limits = httpx.Limits(max_connections=50, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=httpx.Timeout(20, read=None),
                                     limits=limits) as http, AsyncExitStack() as stack:
            mcp = McpHttp(http, base + "/mcp")
            await mcp.initialize()
            # An open GET stream (its priming event has an id to resume from).
            get = await stack.enter_async_context(mcp.open_get())
            assert get.status == 200
            priming = await get.next_event()
            assert priming.id and not priming.data
            # A 2026-07-28 listen stream.
            modern = McpHttp(http, base + "/mcp")
            modern.checker = WireChecker("server", MODERN)
            msg, headers = listen_request("L1")
            modern.checker.saw_peer(msg)
            listen = await stack.enter_async_context(
                modern.stream("POST", orjson.dumps(msg), headers))
            _, ack = await listen.next_message()
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            # A legacy HTTP+SSE session with a call in flight.
            legacy = Legacy(http, base)
            legacy_task = asyncio.create_task(legacy.read())
            assert await legacy.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                      "params": {"protocolVersion": "2024-11-05",
                                                 "capabilities": {}, "clientInfo": {
                                                     "name": "legacy", "version": "1"}}}) == 202
            await legacy.answer(0)
            assert await legacy.send({"jsonrpc": "2.0",
                                      "method": "notifications/initialized"}) == 202
            # A client that sends half a body, then goes silent.
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                         f"Content-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n"
                         "Content-Length: 200\r\n\r\n".encode() + b'{"jsonrpc": "2.0", ')
            await writer.drain()
            # Calls in flight: shorter and longer than the drain, JSON and SSE answers,
            # and one the client cancels (its exchange stays open without an answer).
            sse_started, long_sse_started = asyncio.Event(), asyncio.Event()
            calls = {
                "short_json": asyncio.create_task(post(mcp, sleep_call(1, 2.5))),
                "short_sse": asyncio.create_task(post(mcp, sleep_call(2, 2.5, "p2"),
                                                      sse_started)),
                "long_json": asyncio.create_task(post(mcp, sleep_call(3, 30))),
                "long_sse": asyncio.create_task(post(mcp, sleep_call(4, 30, "p4"),
                                                     long_sse_started)),
                "cancelled": asyncio.create_task(post(mcp, sleep_call(5, 30))),
            }
            assert await legacy.send(sleep_call(9, 2.5)) == 202
            await asyncio.sleep(0.3)
            cancel = await mcp.notify("notifications/cancelled", {"requestId": 5})
            assert cancel.status == 202
            with anyio.fail_after(5):  # both SSE answers began (first progress, ~1 s)
                await sse_started.wait()
                await long_sse_started.wait()

            signalled = terminate(server)

            # At once: the GET stream ends, complete; the listen stream gets its completion
            # result; the silent client gets 503; nobody new is accepted.
            with anyio.fail_after(2):
                with pytest.raises(EOFError):
                    while True:
                        assert not (await get.next_event()).data
                _, done = await listen.next_message()
                assert done == {"jsonrpc": "2.0", "id": "L1", "result": {
                    "resultType": "complete", "_meta": {
                        SUB: "L1", "io.modelcontextprotocol/serverInfo":
                        done["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]}}}
                with pytest.raises(EOFError):
                    await listen.next_event()
                status, head, body = await raw_response(reader)
            assert time.monotonic() - signalled < 1.5
            assert status == 503 and head["retry-after"] == "1", (status, head)
            assert head["connection"] == "close"
            refusal = orjson.loads(body)
            mcp.check(refusal, 503)
            assert "restarting" in refusal["error"]["message"]
            writer.close()
            with pytest.raises(httpx.ConnectError):
                await http.post(base + "/mcp", content=b"{}", headers=mcp.headers())

            # Calls shorter than the drain: answered, JSON and SSE alike; the legacy one too.
            short_json = await calls["short_json"]
            assert short_json.status == 200, short_json.messages
            assert short_json.last["result"]["content"][0]["text"] == "Slept 2.5 seconds."
            short_sse = await calls["short_sse"]
            assert short_sse.clean and short_sse.last["id"] == 2
            assert short_sse.last["result"]["isError"] is False
            assert (await legacy.answer(9))["result"]["isError"] is False
            with anyio.fail_after(2):
                await legacy_task
            assert legacy.clean, "the legacy stream did not end with a complete response"

            # At the deadline: the longer ones are cut, and the cancelled one ended.
            long_json = await calls["long_json"]
            assert long_json.status == 503 and long_json.headers["retry-after"] == "1"
            assert long_json.last["id"] == 3 and long_json.last["error"]["code"] == CUT_CODE
            long_sse = await calls["long_sse"]
            assert long_sse.clean, "the cut SSE stream did not end with a complete response"
            assert long_sse.last["id"] == 4 and long_sse.last["error"]["code"] == CUT_CODE
            assert all(e.id for e in long_sse.events), "an event without an id"
            assert time.monotonic() - signalled >= DRAIN - 0.5  # cut at the deadline
            cancelled = await calls["cancelled"]
            assert cancelled.clean and cancelled.status in (200, 503), cancelled

            code, exited = await exit_status(server, DRAIN + MARGIN)
            assert code == 0
            assert exited - signalled < DRAIN + MARGIN
            assert problems(server.log) == []
            log = server.log.read_text()
            assert "SIGTERM: draining" in log and "drain deadline" in log

            # The streams are resumable: the next run of the server replays them.
            again = everything(tmp_path / "again.log", "--sqlite", str(state),
                               port=server.port)
            stack.callback(again.stop)
            before_cut = [e.id for e in long_sse.events][-2]
            resumed = await exchange(mcp, "GET", None, mcp.headers(
                accept="text/event-stream", content_type=None, last_event_id=before_cut))
            assert resumed.status == 200 and resumed.clean
            assert resumed.messages == [long_sse.last]
            standalone = await exchange(mcp, "GET", None, mcp.headers(
                accept="text/event-stream", content_type=None, last_event_id=priming.id))
            assert standalone.status == 200 and standalone.clean
    finally:
        server.stop()


async def test_nothing_in_flight_exits_at_once(tmp_path: Path) -> None:
    """The default drain (10 s) is a bound, not a wait: with a GET stream open and a short
    call in flight, the process exits as soon as the call is answered."""
    server = everything(tmp_path / "server.log")
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(20, read=None)) as http:
            mcp = McpHttp(http, f"http://127.0.0.1:{server.port}/mcp")
            await mcp.initialize()
            async with mcp.open_get() as get:
                await get.next_event()
                call = asyncio.create_task(post(mcp, sleep_call(1, 0.5)))
                await asyncio.sleep(0.1)
                signalled = terminate(server)
                with anyio.fail_after(2), pytest.raises(EOFError):
                    await get.next_event()
                answer = await call
                assert answer.status == 200 and "result" in answer.last
            code, exited = await exit_status(server, 10)
        assert code == 0 and exited - signalled < 3, exited - signalled
        assert problems(server.log) == []
        assert "drained in" in server.log.read_text()
    finally:
        server.stop()


async def test_a_second_sigterm_cuts_at_once(tmp_path: Path) -> None:
    server = everything(tmp_path / "server.log")
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(20, read=None)) as http:
            mcp = McpHttp(http, f"http://127.0.0.1:{server.port}/mcp")
            await mcp.initialize()
            call = asyncio.create_task(post(mcp, sleep_call(1, 60)))
            await asyncio.sleep(0.3)
            signalled = terminate(server)
            await asyncio.sleep(0.3)
            terminate(server)
            answer = await call
            assert answer.status == 503 and answer.last["error"]["code"] == CUT_CODE
            code, exited = await exit_status(server, 10)
        assert code == 0 and exited - signalled < 3, exited - signalled
        assert problems(server.log) == []
    finally:
        server.stop()


HOSTED = """\
import importlib.util
spec = importlib.util.spec_from_file_location("everything", {everything!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
endpoint = module.server.asgi_app(drain={drain})
if {mounted}:
    from starlette.applications import Starlette
    from starlette.routing import Mount
    app = Starlette(routes=[Mount("/tools", app=endpoint)])
else:
    app = endpoint
"""


@pytest.mark.parametrize("mounted", [False, True], ids=["asgi_app", "mounted"])
async def test_the_users_own_uvicorn_drains_too(tmp_path: Path, mounted: bool) -> None:
    """``uvicorn module:app`` serving ``asgi_app`` (on its own, or mounted in Starlette,
    which does not pass the lifespan on): the same drain on SIGTERM, with uvicorn's own
    shutdown bound set as docs/deployment.md says."""
    (tmp_path / "hosted.py").write_text(HOSTED.format(
        everything=str(EVERYTHING), drain=DRAIN, mounted=mounted))
    port = free_port()
    server = Daemon([sys.executable, "-m", "uvicorn", "hosted:app", "--app-dir",
                     str(tmp_path), "--port", str(port), "--timeout-graceful-shutdown",
                     str(int(DRAIN + MARGIN + 5))], port, tmp_path / "uvicorn.log")
    server.start()
    prefix = "/tools" if mounted else ""
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(20, read=None)) as http:
            mcp = McpHttp(http, f"http://127.0.0.1:{port}{prefix}/mcp")
            await mcp.initialize()
            async with mcp.open_get() as get:
                await get.next_event()
                short = asyncio.create_task(post(mcp, sleep_call(1, 1.5)))
                long = asyncio.create_task(post(mcp, sleep_call(2, 60)))
                await asyncio.sleep(0.3)
                signalled = terminate(server)
                with anyio.fail_after(2), pytest.raises(EOFError):
                    await get.next_event()
                assert (await short).last["result"]["isError"] is False
                cut = await long
                assert cut.status == 503 and cut.last["error"]["code"] == CUT_CODE
            code, exited = await exit_status(server, DRAIN + MARGIN)
        # uvicorn ends by the signal it caught, raised again once its shutdown is done
        # (its own convention, not mcpkit's): a clean shutdown, however it is reported.
        assert code in (0, -signal.SIGTERM) and exited - signalled < DRAIN + MARGIN
        assert problems(server.log) == [], server.output()
    finally:
        server.stop()


async def test_a_client_that_stops_reading_does_not_hold_the_exit(tmp_path: Path) -> None:
    """A client that asked for large answers (pipelined on one connection) and reads none
    of them: they fill the socket buffers, the app waits to write the next one and the
    connection cannot close. It is aborted once the drain is over, and the process exits
    0 all the same."""
    server = everything(tmp_path / "server.log", "--drain", "1")
    try:
        async with httpx.AsyncClient(timeout=20) as http:
            mcp = McpHttp(http, f"http://127.0.0.1:{server.port}/mcp")
            await mcp.initialize()
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window
            sock.connect(("127.0.0.1", server.port))
            sock.setblocking(False)
            _, writer = await asyncio.open_connection(sock=sock)
            head = "".join(f"{k}: {v}\r\n" for k, v in mcp.headers().items())
            for rid in range(1, 5):  # ~6 MB of answers: more than the buffers take
                body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                     "params": {"name": "echo",
                                                "arguments": {"text": "x" * 1_500_000}}})
                writer.write(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                             f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            await asyncio.sleep(1.5)  # answered; the answers wait in the buffers
            signalled = terminate(server)
            code, exited = await exit_status(server, 1 + MARGIN + 3)
            writer.close()
        assert code == 0 and exited - signalled < 1 + MARGIN + 3
        assert problems(server.log) == []
    finally:
        server.stop()


def test_a_hook_outliving_its_event_loop_leaves_the_signal_alone() -> None:
    """An app driven in the main thread without a server (httpx's ASGITransport, as a
    user's tests do) chains its drain to SIGINT on its first request; once that event
    loop is closed, Ctrl-C must still raise KeyboardInterrupt, not an error of the
    closed loop."""
    from tests.support.http import everything_server

    app = everything_server().asgi_app()

    async def one_request() -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            mcp = McpHttp(c, "http://localhost/mcp")
            reply = await mcp.post(mcp.init_message())
            return reply.status

    before = signal.getsignal(signal.SIGINT)
    try:
        assert asyncio.run(one_request()) == 200
        assert signal.getsignal(signal.SIGINT) is not before  # chained on first use
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
