"""The proxy (``mcpkit.bridge``): a remote server served through mcpkit.

The remote is a real mcpkit ``Server`` (in process, over a memory pipe) or a real
command on stdio; the proxy's client is mcpkit's ``Client`` with its wire tapped, so
every message the proxy sends is checked against the official schema of the revision
its client negotiated. Both eras on both sides: a handshake-era client before a
stateless remote and the reverse, each side speaking its own. Hostile remotes (garbage,
huge answers, silence, death) give bounded errors that say what happened.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit import Context, InvalidParams, Server
from mcpkit.bridge import ProxyServer, proxy
from mcpkit.client import Client
from mcpkit.protocol.errors import RemoteError, RequestTimeout, ServerUnreachable
from mcpkit.protocol.versions import REVISIONS
from tests.support.schemas import WireChecker, validate
from tests.support.tap import TappedClient

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.anyio


def remote(page_size: int = 1000, cache_ttl_ms: int = 0) -> Server:
    """The remote server: tools that ask their client, log, report progress, fail."""
    server = Server("remote", "1.2.3", instructions="the remote's instructions",
                    page_size=page_size, cache_ttl_ms=cache_ttl_ms)

    @server.tool
    async def ask(question: str, ctx: Context) -> str:
        """Ask the user ``question``."""
        answer = await ctx.elicit(question, {"type": "object", "properties": {
            "answer": {"type": "string"}}, "required": ["answer"]})
        return f"{answer.action}: {answer.content}"

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Log twice and report progress."""
        await ctx.info("first")
        await ctx.report_progress(1, 2, "half")
        await ctx.debug("second")
        await ctx.report_progress(2, 2, "done")
        return "chatted"

    @server.tool
    async def sample(prompt: str, ctx: Context) -> str:
        """Ask the client's model."""
        res = await ctx.sample(prompt, max_tokens=10)
        return str(res["content"]["text"])

    @server.tool
    async def roots(ctx: Context) -> list[str]:
        """The client's roots."""
        return [str(root["uri"]) for root in await ctx.list_roots()]

    @server.tool
    async def wait(ctx: Context) -> str:
        """Wait until cancelled; say so in the server's state."""
        try:
            await anyio.sleep_forever()
        finally:
            server.cancelled = True  # type: ignore[attr-defined]
        return "never"

    @server.tool
    def touch() -> str:
        """Change the tool list and the greeting."""
        server.notify_list_changed("tools")
        server.notify_resource_updated("res://greeting")
        return "touched"

    @server.tool
    async def refuse(reason: str) -> str:
        """Fail with a protocol error."""
        raise InvalidParams(f"refused: {reason}", {"reason": reason})

    for i in range(5):
        server.add_tool(lambda i=i: i, name=f"n{i}", description=f"number {i}")
    server.add_resource("hello", "res://greeting", name="greeting")

    @server.prompt
    def greet(name: str) -> str:
        """Greet someone."""
        return f"hello {name}"

    return server


class Wire:
    """Everything the proxy sent its tapped client, checked as a server's messages."""

    @staticmethod
    def check_server_side(client: TappedClient) -> int:
        checker = WireChecker("server", revision=client.protocol_version)
        sent = list(client.wire.sent)
        for msg in sent:
            checker.saw_peer(msg)
        for msg in client.wire.received:
            result = msg.get("result")
            if isinstance(result, dict) and result.get("resultType") == "input_required":
                validate(checker.revision or "", "InputRequiredResult", result)
                checker._peer_requests.pop(msg.get("id"), None)
                continue
            checker.check(msg)
        client.wire.assert_clean()
        return checker.checked


class Logs(list[Any]):
    """Log messages a client received: its callbacks run in tasks of their own, maybe
    after the call returned, so a test waits for them (bounded)."""

    def __init__(self) -> None:
        super().__init__()
        self._more = anyio.Event()

    def add(self, params: Any) -> None:
        self.append(params)
        self._more.set()
        self._more = anyio.Event()

    async def arrived(self, count: int) -> None:
        """Wait until ``count`` arrived, then a moment for any extra one."""
        with anyio.fail_after(5):
            while len(self) < count:
                await self._more.wait()
        await anyio.sleep(0.05)


async def accept(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"answer": f"yes to {params['message']}"}}


async def test_proxied_elicitation_round_trip() -> None:
    """A stateful client, a stateful remote: the remote's elicitation/create reaches the
    proxy's client as a request related to its tool call, and the answer goes back."""
    srv = proxy(remote())
    async with srv.lifespan_scope(), TappedClient(srv, elicitation=accept) as client:
        assert client.server_info["name"] == "remote"
        assert client.instructions == "the remote's instructions"
        result = await client.call_tool("ask", {"question": "ready?"})
        assert result.text == "accept: {'answer': 'yes to ready?'}"
        asked = [m for m in client.wire.received if m.get("method") == "elicitation/create"]
        assert len(asked) == 1 and asked[0]["params"]["message"] == "ready?"
        Wire.check_server_side(client)


async def test_stateless_client_before_stateful_remote(anyio_backend: str) -> None:
    """A 2026-07-28 client, a remote spoken to in 2025-11-25: the elicitation becomes an
    input_required result, answered on the client's retry; logs follow the request's
    own log level; progress comes through."""
    srv = proxy(remote(), mode="stateful")
    logs = Logs()
    progress: list[float] = []
    async with srv.lifespan_scope(), TappedClient(
            srv, mode="stateless", protocol_version="2026-07-28", elicitation=accept,
            on_log=logs.add) as client:
        assert client.stateless_version == "2026-07-28"
        assert not srv.remote_stateless
        result = await client.call_tool("ask", {"question": "bridged?"})
        assert result.text == "accept: {'answer': 'yes to bridged?'}"
        kinds = [m.get("result", {}).get("resultType") for m in client.wire.received]
        assert "input_required" in kinds
        await client.set_logging_level("info")
        done = await client.call_tool("chatty", on_progress=lambda p, t, m: progress.append(p))
        assert done.text == "chatted"
        await logs.arrived(1)
        assert [entry["data"] for entry in logs] == ["first"]  # debug is below info
        # Clients hand notifications to tasks of their own, which trio runs in no fixed
        # order (the proxy's upstream client and the client here); asyncio keeps it.
        assert progress == [1, 2] if anyio_backend == "asyncio" else (
            progress and set(progress) <= {1, 2})
        Wire.check_server_side(client)


async def test_stateful_client_before_stateless_remote() -> None:
    """A 2025-11-25 client, a remote spoken to in 2026-07-28: the remote's input request
    reaches the client as a real elicitation/create request."""
    srv = proxy(remote(), mode="stateless")
    logs = Logs()
    async with srv.lifespan_scope(), TappedClient(
            srv, elicitation=accept, on_log=logs.add) as client:
        assert client.protocol_version == "2025-11-25"
        assert srv.remote_stateless and not srv.remote_stateful
        result = await client.call_tool("ask", {"question": "reverse?"})
        assert result.text == "accept: {'answer': 'yes to reverse?'}"
        assert [m["method"] for m in client.wire.received if "method" in m and "id" in m
                ] == ["elicitation/create"]
        await client.set_logging_level("debug")
        assert (await client.call_tool("chatty")).text == "chatted"
        await logs.arrived(2)
        assert sorted(entry["data"] for entry in logs) == ["first", "second"]
        Wire.check_server_side(client)


async def test_sampling_is_refused_when_the_client_cannot_sample() -> None:
    """The proxy's client declared no sampling: the remote's request is refused, and the
    tool's failure comes back as the remote reported it."""
    srv = proxy(remote())
    async with srv.lifespan_scope(), TappedClient(srv) as client:
        result = await client.call_tool("sample", {"prompt": "hi"})
        assert result.is_error and "sampling" in result.text
        Wire.check_server_side(client)


@pytest.mark.parametrize("mode", ["stateful", "stateless"])
async def test_errors_pages_and_lists_pass_through(mode: str) -> None:
    """The remote's errors keep their code and data; lists come page by page with the
    remote's cursors; resources, prompts and completions are forwarded."""
    srv = proxy(remote(page_size=3, cache_ttl_ms=5000))
    version = "2026-07-28" if mode == "stateless" else None
    async with srv.lifespan_scope(), TappedClient(srv, mode=mode,
                                                  protocol_version=version) as client:
        with pytest.raises(RemoteError) as refused:
            await client.request("tools/call", {"name": "refuse",
                                                "arguments": {"reason": "no"}})
        assert refused.value.code == -32602 and refused.value.data == {"reason": "no"}
        with pytest.raises(RemoteError) as missing:
            await client.read_resource("res://nowhere")
        # (as the revision says: -32002 in 2025-11-25, -32602 in 2026-07-28)
        rev = REVISIONS[client.protocol_version]
        assert missing.value.code == (-32002 if rev.has("resource_not_found_32002")
                                      else -32602)
        first, cursor = await client.list_tools_page()
        assert len(first) == 3 and cursor is not None
        listing = next(m["result"] for m in reversed(client.wire.received) if "result" in m)
        # the remote's caching hint reaches a 2026-07-28 client; nothing of it before
        assert listing.get("ttlMs") == (5000 if mode == "stateless" else None)
        names = [t.name for t in await client.list_tools()]
        assert names == ["ask", "chatty", "sample", "roots", "wait", "touch", "refuse",
                         "n0", "n1", "n2", "n3", "n4"]
        read = await client.read_resource("res://greeting")
        assert read.contents[0].text == "hello"
        prompt = await client.get_prompt("greet", {"name": "ada"})
        assert "hello ada" in str(prompt.messages[0].content)
        Wire.check_server_side(client)


def _script(tmp_path: Path, name: str, body: str) -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


RAW_REMOTE = """
    import json, sys
    def send(msg):
        sys.stdout.write(json.dumps(msg) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}})
        elif method == "server/discover":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
        elif method == "tools/list":
            sys.stdout.write("this is not json\\n{\\"half\\": \\n"); sys.stdout.flush()
        elif method == "tools/call" and msg["params"]["name"] == "huge":
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [
                {"type": "text", "text": "x" * (MAX + 10)}]}})
        elif method == "tools/call" and msg["params"]["name"] == "list":
            send({"jsonrpc": "2.0", "id": rid, "result": [1, 2, 3]})
        elif method == "tools/call":
            pass  # never answers
"""


async def test_hostile_remote_gives_bounded_errors(tmp_path: Path) -> None:
    """Garbage, a result that is not an object, an answer past the size limit and
    silence: each request gets an error naming the remote's failure within the
    proxy's timeout, and the proxy keeps serving."""
    limit = 64 * 1024
    command = _script(tmp_path, "raw.py", f"MAX = {limit}\n" + textwrap.dedent(RAW_REMOTE))
    srv = proxy(command, timeout=1.5, max_message_size=4 * limit)
    with anyio.fail_after(30):
        async with srv.lifespan_scope(), TappedClient(srv, timeout=10) as client:
            with pytest.raises(RemoteError) as garbage:
                await client.request("tools/list")
            assert garbage.value.code == -32603
            assert "did not answer tools/list within 1.5s" in garbage.value.message
            with pytest.raises(RemoteError) as silent:
                await client.request("tools/call", {"name": "silent"})
            assert "did not answer tools/call within 1.5s" in silent.value.message
            with pytest.raises(RemoteError) as shaped:
                await client.request("tools/call", {"name": "list"})
            assert shaped.value.code == -32603
            Wire.check_server_side(client)


async def test_huge_answer_from_remote_is_refused(tmp_path: Path) -> None:
    """An answer past the upstream client's message size limit never reaches the proxy's
    client: the request fails at once with an error saying why (the upstream client read
    the answer's id from its first bytes)."""
    command = _script(tmp_path, "raw.py", "MAX = 20 * 1024 * 1024\n" + textwrap.dedent(
        RAW_REMOTE))
    srv = proxy(command, timeout=5)
    with anyio.fail_after(60):
        async with srv.lifespan_scope(), TappedClient(srv, timeout=30) as client:
            with pytest.raises(RemoteError) as huge:
                await client.request("tools/call", {"name": "huge"})
            assert huge.value.code == -32603
            assert "larger than this connection takes" in huge.value.message


DYING_REMOTE = """
    import os
    from mcpkit import Server
    server = Server("dying")

    @server.tool
    def die() -> str:
        os._exit(3)

    @server.tool
    def pid() -> int:
        return os.getpid()

    server.run()
"""


async def test_remote_that_dies_is_reconnected_at_the_next_request(tmp_path: Path) -> None:
    """The remote exits mid-call: that call fails with an error saying the connection
    ended; the next request starts the remote again."""
    command = _script(tmp_path, "dying.py", DYING_REMOTE)
    srv = proxy(command, timeout=20)
    with anyio.fail_after(60):
        async with srv.lifespan_scope(), TappedClient(srv, timeout=30) as client:
            before = (await client.call_tool("pid")).structured_content
            with pytest.raises(RemoteError) as died:
                await client.call_tool("die")
            assert died.value.code == -32603
            assert "the connection to the remote server ended" in died.value.message
            after = (await client.call_tool("pid")).structured_content
            assert before != after
            Wire.check_server_side(client)


async def test_unreachable_remote_fails_the_start() -> None:
    srv = proxy("http://127.0.0.1:9/mcp", timeout=5)
    with anyio.fail_after(30), pytest.raises(ServerUnreachable):
        async with srv.lifespan_scope():
            pass


def test_invalid_options_are_value_errors() -> None:
    with pytest.raises(ValueError, match="empty"):
        proxy("  ")
    with pytest.raises(ValueError, match="timeout"):
        proxy(["x"], timeout=0)
    with pytest.raises(ValueError, match="mode"):
        proxy(["x"], mode="sideways")
    with pytest.raises(ValueError, match="max_connections"):
        proxy(["x"], max_connections=0)
    assert isinstance(proxy(["x"]), ProxyServer)


@pytest.mark.parametrize("mode", ["stateful", "stateless"])
async def test_middleware_runs_around_forwarded_requests(mode: str) -> None:
    """Middleware given to proxy(...) sees every forwarded request and notification
    (hooks by kind included) and can short-circuit one before it reaches the remote."""
    from mcpkit.server import CallNext, Middleware, NotifyNext, Request

    seen: list[str] = []
    roots_heard = anyio.Event()

    class Gate(Middleware):
        async def on_request(self, request: Request, call_next: CallNext) -> Any:
            seen.append(f"request {request.method}")
            return await call_next(request)

        async def on_call_tool(self, request: Request, call_next: CallNext) -> Any:
            if request.params.get("name") == "refuse":
                return {"content": [{"type": "text", "text": "refused at the proxy"}],
                        "isError": True}
            seen.append(f"call {request.params.get('name')}")
            return await call_next(request)

        async def on_notification(self, request: Request, call_next: NotifyNext) -> None:
            seen.append(f"notification {request.method}")
            if request.method == "notifications/roots/list_changed":
                roots_heard.set()
            await call_next(request)

    srv = proxy(remote(), middleware=[Gate()])
    version = "2026-07-28" if mode == "stateless" else None
    async with srv.lifespan_scope(), TappedClient(srv, mode=mode, protocol_version=version,
                                                  roots=lambda: []) as client:
        refused = await client.call_tool("refuse", {"reason": "no"})
        assert refused.is_error and refused.text == "refused at the proxy"
        names = [t.name for t in await client.list_tools()]
        assert "ask" in names
        if mode == "stateful":
            await client.roots_changed()
            with anyio.fail_after(5):
                await roots_heard.wait()
        Wire.check_server_side(client)
    assert "call refuse" not in seen  # short-circuited: never forwarded
    assert "request tools/call" in seen and "request tools/list" in seen


async def test_stdio_remote_with_official_examples() -> None:
    """examples/everything.py on stdio behind the proxy: one remote process per stateful
    session, each ended with its session."""
    srv = proxy([sys.executable, str(ROOT / "examples" / "everything.py")])
    with anyio.fail_after(60):
        async with srv.lifespan_scope():
            for _ in range(2):
                async with Client(srv) as client:
                    assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"
            assert srv._links == {}


async def test_sampling_and_roots_are_relayed() -> None:
    async def model(params: dict[str, Any]) -> dict[str, Any]:
        said = params["messages"][0]["content"]["text"]
        return {"role": "assistant", "model": "test-model",
                "content": {"type": "text", "text": f"echo {said}"}}

    srv = proxy(remote())
    for mode in ("stateful", "stateless"):
        version = "2026-07-28" if mode == "stateless" else None
        async with srv.lifespan_scope(), TappedClient(
                srv, mode=mode, protocol_version=version, sampling=model,
                roots=["file:///work/a", "file:///work/b"]) as client:
            sampled = await client.call_tool("sample", {"prompt": "hi"})
            assert sampled.text == "echo hi"
            listed = await client.call_tool("roots")
            assert listed.structured_content == {"result": ["file:///work/a",
                                                            "file:///work/b"]}
            Wire.check_server_side(client)


async def test_changes_and_subscriptions_are_forwarded() -> None:
    """The remote's list change and resource update reach the stateful session that
    subscribed, and a 2026-07-28 client's listen stream."""
    srv = proxy(remote())
    heard = Logs()
    async with srv.lifespan_scope(), TappedClient(
            srv, on_notification=lambda method, params: heard.add(method)) as client:
        await client.subscribe("res://greeting")
        assert (await client.call_tool("touch")).text == "touched"
        await heard.arrived(2)
        assert {"notifications/resources/updated", "notifications/tools/list_changed"
                } <= set(heard)
        Wire.check_server_side(client)
    async with srv.lifespan_scope(), Client(srv, mode="stateless") as modern:
        async with modern.listen(tools=True) as changes:
            notes = changes.__aiter__()
            with anyio.fail_after(5):
                ack = await notes.__anext__()
                assert ack["method"] == "notifications/subscriptions/acknowledged"
                await modern.call_tool("touch")
                note = await notes.__anext__()
            assert note["method"] == "notifications/tools/list_changed"


async def test_cancellation_reaches_the_remote() -> None:
    inner = remote()
    srv = proxy(inner)
    async with srv.lifespan_scope(), Client(srv, timeout=0.5) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("wait")  # times out: notifications/cancelled sent
        # the remote's handler ran its finally (a ping round trip through the proxy
        # and the remote orders it after the cancellation)
        await client.ping()
        await client.call_tool("n0")
        assert getattr(inner, "cancelled", False)


async def test_connections_to_the_remote_are_bounded() -> None:
    """A session beyond ``max_connections`` is refused with an error saying why; once a
    session ends, its connection is closed and a new session is served."""
    srv = proxy(remote(), max_connections=1)
    async with srv.lifespan_scope():
        async with Client(srv) as first:
            await first.call_tool("n0")
            async with Client(srv) as second:
                with pytest.raises(RemoteError) as refused:
                    await second.call_tool("n0")
                assert "already holds 1 sessions' connections" in refused.value.message
        async with Client(srv) as third:
            assert (await third.call_tool("n1")).text == "1"
