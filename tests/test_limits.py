"""Rate limits of tool calls (``mcpkit.server.limits``, ``Server(rate_limit=...)``).

Real parts only: the bucket math runs on ``MemoryBuckets`` with an injected clock (no
sleeps); calls go through the in-process ``Client``, a stdio subprocess
(tests/servers/limited.py) and a live uvicorn server, and every answer is validated
against the official schema of its revision. Covered: the ``isError`` answer and its
``_meta`` retry hint, refill, server-wide vs per-tool budgets, exempt tools, the
key cap and idle eviction, hostile configuration, batches, 2026-07-28 stateless
requests, anonymous HTTP callers keyed by address (``trusted_proxies`` only), an async
store, and the plain path left untouched when nothing is configured. (Callers with
access tokens: tests/auth/test_server_limits.py.)
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable
from typing import Any

import anyio
import httpx
import pytest

from mcpkit import BucketStore, MemoryBuckets, RateLimit, Server
from mcpkit.client import Client
from mcpkit.protocol.versions import STATEFUL_VERSIONS
from mcpkit.server.limits import RETRY_META
from tests.support.http import LiveServer, McpHttp
from tests.support.schemas import validate
from tests.support.stdio import ROOT, ServerProcess

pytestmark = pytest.mark.anyio
LIMIT = 10
MODERN = "2026-07-28"
LIMITED = ROOT / "tests" / "servers" / "limited.py"


class FakeClock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make_server(clock: FakeClock | None = None, **options: Any) -> Server:
    """``ping`` under the server-wide limit, ``search`` under its own, ``health`` exempt,
    ``lookup`` waits (runs in a task)."""
    store = MemoryBuckets(clock=clock) if clock is not None else None
    server = Server("limited", rate_limit_store=store, **options)

    @server.tool
    async def ping() -> str:
        """Never waits."""
        return "pong"

    @server.tool
    async def lookup(key: str) -> str:
        """Waits once."""
        await anyio.lowlevel.checkpoint()
        return key.upper()

    @server.tool(rate_limit=RateLimit("1/minute"))
    async def search(query: str) -> str:
        """Its own budget."""
        return f"found {query}"

    @server.tool(rate_limit=None)
    async def health() -> str:
        """Exempt."""
        return "ok"

    return server


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None
               ) -> dict[str, Any]:
    return await client.request("tools/call", {"name": name, "arguments": arguments or {}})


# ------------------------------------------------------------------ configuration


@pytest.mark.parametrize("spec, calls, period, burst", [
    ("60/minute", 60, 60.0, 60),
    ("1/second", 1, 1.0, 1),
    ("5 / Seconds", 5, 1.0, 5),
    ("1000/day", 1000, 86400.0, 1000),
    ("3/hours", 3, 3600.0, 3),
])
def test_a_rate_limit_is_written_calls_per_unit(spec: str, calls: int, period: float,
                                               burst: int) -> None:
    limit = RateLimit(spec)
    assert (limit.calls, limit.period, limit.burst) == (calls, period, burst)
    assert limit.rate == calls / period
    assert RateLimit(spec, burst=2).burst == 2


@pytest.mark.parametrize("spec", [
    "0/minute", "-1/minute", "1.5/minute", "60/fortnight", "", "60", "/minute",
    "99999999999/second", "60/minute; drop", "60/s", "sixty/minute", "6\uff10/minute",
    "1e3/second", "NaN/second",
])
def test_hostile_rate_limits_are_refused_with_the_way_to_write_one(spec: str) -> None:
    with pytest.raises(ValueError, match="rate limit"):
        RateLimit(spec)


@pytest.mark.parametrize("burst", [0, -1, 1.5, True, float("nan"), float("inf"), "10",
                                   10**10])
def test_hostile_bursts_are_refused(burst: Any) -> None:
    with pytest.raises(ValueError, match="invalid burst"):
        RateLimit("10/minute", burst=burst)


@pytest.mark.parametrize("options, match", [
    ({"rate_limit": 60}, "Server\\(rate_limit=...\\): rate_limit must be a RateLimit"),
    ({"rate_limit": "60 per minute"}, "Server\\(rate_limit=...\\): invalid rate limit"),
    ({"rate_limit": RateLimit}, "rate_limit must be"),
    ({"audit": "audit.log"}, "audit must be a callable"),
    ({"audit": print, "audit_arguments": "yes"}, "audit_arguments must be True or False"),
    ({"rate_limit_store": object()}, "rate_limit_store must be a BucketStore"),
])
def test_hostile_server_options_are_refused(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Server("bad", **options)


def test_a_tools_limit_is_checked_at_registration() -> None:
    server = Server("bad")

    async def tool() -> str:
        return "x"

    with pytest.raises(ValueError, match="tool 'tool': invalid rate limit '0/minute'"):
        server.add_tool(tool, rate_limit="0/minute")
    with pytest.raises(ValueError, match="tool 'tool': rate_limit must be"):
        server.add_tool(tool, rate_limit=1.0)
    assert "tool" not in server._registry.tools


@pytest.mark.parametrize("max_keys", [0, -5, 1.5, True, None])
def test_the_key_cap_must_be_a_positive_count(max_keys: Any) -> None:
    with pytest.raises(ValueError, match="max_keys"):
        MemoryBuckets(max_keys=max_keys)


def test_memory_buckets_are_a_bucket_store() -> None:
    assert isinstance(MemoryBuckets(), object)
    store: BucketStore = MemoryBuckets()  # the Protocol, checked by mypy
    assert store.take("k", 1.0, 1.0, 1.0) == 0.0


# ------------------------------------------------------------------ bucket math


def test_a_bucket_allows_its_burst_then_refills_continuously() -> None:
    clock = FakeClock()
    buckets = MemoryBuckets(clock=clock)
    take = lambda: buckets.take("k", 1.0, 2.0, 3.0)  # noqa: E731 - 2 a second, 3 at once
    assert [take(), take(), take()] == [0.0, 0.0, 0.0]
    assert take() == pytest.approx(0.5)  # one token is half a second away
    assert take() == pytest.approx(0.5)  # a refused call takes nothing
    clock.advance(0.25)
    assert take() == pytest.approx(0.25)
    clock.advance(0.25)
    assert take() == 0.0
    clock.advance(3600)  # refill stops at the burst
    assert [take() for _ in range(4)] == [0.0, 0.0, 0.0, pytest.approx(0.5)]


def test_the_clock_going_backwards_neither_refills_nor_drains() -> None:
    clock = FakeClock()
    buckets = MemoryBuckets(clock=clock)
    assert buckets.take("k", 1.0, 1.0, 1.0) == 0.0
    clock.advance(-100)
    assert buckets.take("k", 1.0, 1.0, 1.0) == pytest.approx(1.0)
    clock.advance(1)
    assert buckets.take("k", 1.0, 1.0, 1.0) == 0.0


def test_full_buckets_are_evicted_and_the_key_cap_bounds_memory() -> None:
    clock = FakeClock()
    buckets = MemoryBuckets(max_keys=3, clock=clock)
    for key in "abc":
        assert buckets.take(key, 1.0, 1.0, 1.0) == 0.0
    assert len(buckets) == 3
    # At the cap a new key shares the overflow bucket with every other new key...
    assert buckets.take("d", 1.0, 1.0, 1.0) == 0.0
    assert buckets.take("e", 1.0, 1.0, 1.0) == pytest.approx(1.0)
    assert len(buckets) == 3
    # ...while the keys already tracked keep their own (still empty) buckets.
    assert buckets.take("a", 1.0, 1.0, 1.0) == pytest.approx(1.0)
    # Once buckets are full again they are the same as none, and make room.
    clock.advance(2)
    assert buckets.take("f", 1.0, 1.0, 1.0) == 0.0
    assert buckets.take("f", 1.0, 1.0, 1.0) == pytest.approx(1.0)  # its own bucket now
    assert len(buckets) <= 3


def test_a_flood_of_distinct_keys_stays_under_the_cap_and_lifts_no_limit() -> None:
    clock = FakeClock()
    buckets = MemoryBuckets(max_keys=100, clock=clock)
    assert buckets.take("victim", 1.0, 0.1, 1.0) == 0.0
    for i in range(10_000):
        buckets.take(f"10.0.{i // 256}.{i % 256}", 1.0, 0.1, 1.0)
        clock.advance(0.001)
    assert len(buckets) <= 100
    assert buckets.take("victim", 1.0, 0.1, 1.0) > 0  # its limit was not reset


# ------------------------------------------------------------------ in-process calls


async def test_a_call_over_the_limit_is_an_error_result_saying_when_to_retry() -> None:
    clock = FakeClock()
    with anyio.fail_after(LIMIT):
        async with Client(make_server(clock, rate_limit="2/minute")) as client:
            assert text(await call(client, "ping")) == "pong"
            assert text(await call(client, "ping")) == "pong"
            refused = await call(client, "ping")
            assert refused["isError"] is True
            assert text(refused) == (
                "Rate limit exceeded for tool 'ping': at most 2 calls per minute; retry in "
                "30 s. Calling again sooner fails the same way.")
            assert refused["_meta"] == {RETRY_META: 30.0}
            clock.advance(29.5)
            assert text(await call(client, "ping")).endswith("retry in 1 s. Calling again "
                                                             "sooner fails the same way.")
            clock.advance(0.5)  # refilled: one call's worth after 30 s
            assert text(await call(client, "ping")) == "pong"
            assert (await call(client, "ping"))["isError"] is True


async def test_the_server_budget_is_shared_and_a_tools_own_is_separate() -> None:
    clock = FakeClock()
    with anyio.fail_after(LIMIT):
        async with Client(make_server(clock, rate_limit="2/minute")) as client:
            assert text(await call(client, "ping")) == "pong"
            assert text(await call(client, "lookup", {"key": "a"})) == "A"
            # ping and lookup share the server-wide budget of 2 a minute
            assert "tool 'lookup'" in text(await call(client, "lookup", {"key": "b"}))
            assert "tool 'ping'" in text(await call(client, "ping"))
            # search has its own 1 a minute, untouched by the calls above
            assert text(await call(client, "search", {"query": "q"})) == "found q"
            limited = await call(client, "search", {"query": "q"})
            assert text(limited).startswith("Rate limit exceeded for tool 'search': at most "
                                            "1 call per minute; retry in 60 s.")
            # the exempt tool is never limited
            for _ in range(20):
                assert text(await call(client, "health")) == "ok"


async def test_a_tools_own_limit_works_without_a_server_default() -> None:
    server = make_server(FakeClock())
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            for _ in range(5):
                assert text(await call(client, "ping")) == "pong"
            assert text(await call(client, "search", {"query": "x"})) == "found x"
            assert (await call(client, "search", {"query": "x"}))["isError"] is True

            @server.tool(rate_limit="1/hour")
            async def late() -> str:
                return "late"

            assert text(await call(client, "late")) == "late"
            assert "1 call per hour" in text(await call(client, "late"))


async def test_the_limit_is_drawn_before_arguments_are_checked_and_unknown_tools_are_free(
) -> None:
    clock = FakeClock()
    with anyio.fail_after(LIMIT):
        async with Client(make_server(clock, rate_limit="1/minute")) as client:
            for _ in range(3):
                with pytest.raises(Exception, match="Unknown tool"):
                    await call(client, "nope")
            bad = await call(client, "lookup", {"key": 5})
            assert bad["isError"] and "Invalid arguments" in text(bad)
            assert "Rate limit exceeded" in text(await call(client, "lookup", {"key": "a"}))


@pytest.mark.parametrize("version", [*STATEFUL_VERSIONS, MODERN])
async def test_the_refusal_is_valid_in_every_revision(version: str) -> None:
    options: dict[str, Any] = ({"mode": "stateless"} if version == MODERN
                               else {"protocol_version": version, "versions": [version]})
    with anyio.fail_after(LIMIT):
        async with Client(make_server(FakeClock(), rate_limit="1/day"), **options) as client:
            ok = await call(client, "ping")
            refused = await call(client, "ping")
    for result in (ok, refused):
        validate(version, "CallToolResult", result)
    assert refused["isError"] is True and "1 call per day" in text(refused)
    assert refused["_meta"][RETRY_META] == pytest.approx(86400.0)


def test_nothing_configured_leaves_the_plain_path() -> None:
    async def ping() -> str:
        return "pong"

    plain = Server("plain", tools=[ping])
    plain.add_tool(lambda: "x", name="exempt", rate_limit=None)
    methods = plain._methods
    assert methods._plain is None and methods._table["tools/call"] == methods._tools_call
    for options in ({"rate_limit": "1/second"}, {"audit": print}):
        watched = Server("watched", tools=[ping], **options)._methods
        assert watched._plain is not None
        assert watched._table["tools/call"] != watched._tools_call
        # only tools/call is watched: every other method keeps its plain handler
        assert watched._table["tools/list"] == watched._tools_list
    late = Server("late", tools=[ping])
    late.add_tool(lambda: "y", name="own", rate_limit="1/second")
    assert late._methods._table["tools/call"] != late._methods._tools_call


class SlowStore:
    """An async ``BucketStore`` (as a shared store's would be) over ``MemoryBuckets``."""

    def __init__(self, clock: FakeClock) -> None:
        self.inner = MemoryBuckets(clock=clock)
        self.keys: list[str] = []

    async def take(self, key: str, cost: float, rate: float, burst: float) -> float:
        await anyio.lowlevel.checkpoint()
        self.keys.append(key)
        return self.inner.take(key, cost, rate, burst)


async def test_an_async_store_is_awaited() -> None:
    clock = FakeClock()
    store = SlowStore(clock)
    server = Server("async-store", rate_limit="1/minute", rate_limit_store=store)

    @server.tool
    async def ping() -> str:
        return "pong"

    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            assert text(await call(client, "ping")) == "pong"
            assert "retry in 60 s" in text(await call(client, "ping"))
            clock.advance(60)
            assert text(await call(client, "ping")) == "pong"
    assert store.keys == ["\x00local"] * 3


class BrokenStore:
    def take(self, key: str, cost: float, rate: float, burst: float) -> Awaitable[float]:
        raise OSError("store unreachable")


async def test_a_failing_store_fails_the_call_as_a_server_fault() -> None:
    server = Server("broken", rate_limit="1/minute", rate_limit_store=BrokenStore())

    @server.tool
    async def ping() -> str:
        return "pong"

    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            with pytest.raises(Exception) as info:
                await call(client, "ping")
            assert getattr(info.value, "code", None) == -32603


async def test_one_short_real_time_refill() -> None:
    with anyio.fail_after(LIMIT):
        async with Client(make_server(rate_limit=RateLimit("10/second", burst=1))) as client:
            assert text(await call(client, "ping")) == "pong"
            refused = await call(client, "ping")
            assert refused["isError"] and 0 < refused["_meta"][RETRY_META] <= 0.1
            await anyio.sleep(0.15)
            assert text(await call(client, "ping")) == "pong"


# ------------------------------------------------------------------ stdio


def test_stdio_one_bucket_for_the_peer_batches_and_audit_lines() -> None:
    with ServerProcess(LIMITED) as proc:
        proc.initialize("2025-03-26")
        batch = [{"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                  "params": {"name": "echo", "arguments": {"text": f"t{i}"}}}
                 for i in range(3)]
        batch.append({"jsonrpc": "2.0", "id": 200, "method": "tools/call",
                      "params": {"name": "free", "arguments": {}}})
        proc.send(batch)
        answers = {m["id"]: m["result"] for m in proc.recv()}
        assert [answers[i]["isError"] for i in (100, 101, 102, 200)] == [
            False, False, True, False]
        assert text(answers[102]).startswith(
            "Rate limit exceeded for tool 'echo': at most 2 calls per minute; retry in ")
        assert math.isclose(answers[102]["_meta"][RETRY_META], 30.0, abs_tol=1.0)
        first = proc.request("tools/call", {"name": "burst_tool", "arguments": {}})
        second = proc.request("tools/call", {"name": "burst_tool", "arguments": {}})
        assert first["result"]["isError"] is False and second["result"]["isError"] is True
        proc.close()
        lines = [json.loads(line.split("mcpkit.audit: ", 1)[1])
                 for line in proc.stderr().splitlines() if "mcpkit.audit: " in line]
    assert [(r["tool"], r["outcome"], r["request_id"]) for r in lines] == [
        ("echo", "ok", 100), ("echo", "ok", 101), ("echo", "rate_limited", 102),
        ("free", "ok", 200), ("burst_tool", "ok", first["id"]),
        ("burst_tool", "rate_limited", second["id"])]
    assert all(r["protocol_version"] == "2025-03-26" and r["address"] is None
               and "arguments" not in r for r in lines)


# ------------------------------------------------------------------ HTTP


def stateless_call(name: str, rid: int, arguments: dict[str, Any] | None = None
                   ) -> tuple[dict[str, Any], dict[str, str]]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "limits-tests", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments or {}, "_meta": meta}}
    headers = {"accept": "application/json, text/event-stream",
               "content-type": "application/json", "mcp-protocol-version": MODERN,
               "mcp-method": "tools/call", "mcp-name": name}
    return body, headers


async def test_stateless_requests_draw_from_the_callers_bucket_across_requests() -> None:
    records: list[Any] = []
    server = make_server(rate_limit="2/minute", audit=records.append)
    with LiveServer(server.asgi_app(), proxy_headers=False) as live:
        async with httpx.AsyncClient() as http:
            replies = []
            for rid in range(1, 4):
                body, headers = stateless_call("ping", rid)
                reply = await http.post(live.url, json=body, headers=headers)
                assert reply.status_code == 200
                replies.append(reply.json())
    for reply in replies:
        validate(MODERN, "JSONRPCResultResponse", reply)
        validate(MODERN, "CallToolResult", reply["result"])
    assert [r["result"]["isError"] for r in replies] == [False, False, True]
    assert "Rate limit exceeded for tool 'ping'" in text(replies[2]["result"])
    assert [(r.outcome, r.address, r.protocol_version) for r in records] == [
        ("ok", "127.0.0.1", MODERN), ("ok", "127.0.0.1", MODERN),
        ("rate_limited", "127.0.0.1", MODERN)]


async def test_anonymous_http_callers_are_told_apart_by_address_through_trusted_proxies(
) -> None:
    records: list[Any] = []
    server = make_server(rate_limit="1/minute", audit=records.append)
    app = server.asgi_app(trusted_proxies=["127.0.0.1"])
    with LiveServer(app, proxy_headers=False) as live:
        async with httpx.AsyncClient() as http:
            async def as_client(address: str, forwarded: bool = False) -> bool:
                """Whether a call from ``address`` was refused (one session each)."""
                client = McpHttp(http, live.url)
                extra = ({"forwarded": f'for="{address}";proto=https'} if forwarded
                         else {"x-forwarded-for": f"{address}, 127.0.0.1"})
                await client.initialize()
                reply = await client.call_tool("ping", headers=client.headers(**extra))
                assert reply.status == 200
                return bool(reply.messages[0]["result"]["isError"])

            assert await as_client("203.0.113.7") is False
            assert await as_client("203.0.113.7") is True  # same address: same bucket
            assert await as_client("198.51.100.2") is False
            assert await as_client("[2001:db8::1]:4711", forwarded=True) is False
            assert await as_client("[2001:db8::1]:9999", forwarded=True) is True
    assert [r.address for r in records] == ["203.0.113.7", "203.0.113.7", "198.51.100.2",
                                            "2001:db8::1", "2001:db8::1"]


async def test_forwarded_addresses_are_ignored_from_untrusted_clients() -> None:
    server = make_server(rate_limit="1/minute")
    with LiveServer(server.asgi_app(), proxy_headers=False) as live:
        async with httpx.AsyncClient() as http:
            results = []
            for address in ("203.0.113.7", "198.51.100.2"):
                client = McpHttp(http, live.url)
                await client.initialize()
                reply = await client.call_tool(
                    "ping", headers=client.headers(x_forwarded_for=address))
                results.append(reply.messages[0]["result"]["isError"])
    assert results == [False, True]  # both are 127.0.0.1: a spoofed header changes nothing


async def test_a_batch_over_http_answers_each_call_on_its_own() -> None:
    server = make_server(FakeClock(), rate_limit="2/minute")
    with LiveServer(server.asgi_app(), proxy_headers=False) as live:
        async with httpx.AsyncClient() as http:
            client = McpHttp(http, live.url)
            await client.initialize("2025-03-26")
            batch = [{"jsonrpc": "2.0", "id": i, "method": "tools/call",
                      "params": {"name": "ping", "arguments": {}}} for i in (1, 2, 3)]
            batch.append({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                          "params": {"name": "health", "arguments": {}}})
            reply = await client.post(batch)
    assert reply.status == 200
    (answers,) = reply.messages
    by_id = {m["id"]: m["result"] for m in answers}
    assert [by_id[i]["isError"] for i in (1, 2, 3, 4)] == [False, False, True, False]
    assert by_id[3]["_meta"] == {RETRY_META: 30.0}


def test_the_monotonic_clock_is_the_default() -> None:
    buckets = MemoryBuckets()
    assert buckets.take("k", 1.0, 1.0, 1.0) == 0.0
    started = time.monotonic()
    wait = buckets.take("k", 1.0, 1.0, 1.0)
    assert 0 < wait <= 1.0 + (time.monotonic() - started)


@pytest.mark.parametrize("client, headers, expected", [
    (None, {}, None),
    (("192.0.2.1", 5000), {"x-forwarded-for": "203.0.113.9"}, "192.0.2.1"),  # untrusted
    (("10.0.0.1", 5000), {}, "10.0.0.1"),  # trusted, but no header
    (("10.0.0.1", 5000), {"x-forwarded-for": "198.51.100.1, 203.0.113.9, 10.0.0.2"},
     "203.0.113.9"),  # the nearest hop that is not a trusted proxy
    (("10.0.0.1", 5000), {"x-forwarded-for": "10.0.0.2"}, "10.0.0.2"),  # all trusted
    (("10.0.0.1", 5000), {"forwarded": 'for=192.0.2.60;proto=http, for="[2001:db8::7]"'},
     "2001:db8::7"),
    (("10.0.0.1", 5000), {"forwarded": "proto=https", "x-forwarded-for": "192.0.2.5"},
     "10.0.0.1"),  # Forwarded wins, and names no client
    (("10.0.0.1", 5000), {"x-forwarded-for": " , ,"}, "10.0.0.1"),
    (("10.0.0.1", 5000), {"x-forwarded-for": "a" * 5000}, "a" * 100),
])
def test_the_client_address_believes_forwarded_headers_only_from_trusted_proxies(
        client: Any, headers: dict[str, str], expected: str | None) -> None:
    from mcpkit.transports.asgi import OriginHostGuard

    guard = OriginHostGuard(None, None, ["10.0.0.1", "10.0.0.2"])
    assert guard.client_address({"client": client}, headers) == expected
