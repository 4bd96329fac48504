#!/usr/bin/env python3
"""Issue #29 item 9, measured: repeated ``tools/list`` over HTTP, with and without the
client cache.

    bench/client_cache.py [--count 500] [--rounds 3] [--tools 50] [--ttl-ms 600000]

A server with ``--tools`` tools whose 2026-07-28 results say ``ttlMs=--ttl-ms``,
``cacheScope=public`` runs under uvicorn in a process of its own (this script again,
``--serve PORT``), so the client's event loop has the CPU to itself. Two clients speak
2026-07-28 to it, one with ``cache=False`` and one with the default cache; in each of
``--rounds`` rounds each does ``--count`` ``Client.list_tools()`` calls in turn, one at a
time. The figures: the median over rounds of each client's mean time per call, the
ratio of the two, and how many ``tools/list`` requests the server received from each
(counted by a middleware, read back through a tool): the cached client should send one,
its first. Prints one JSON line. The server is stopped by its process id; every wait is
bounded. No goal is enforced: the ratio depends on the machine and the listing's size.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections import Counter
from typing import Any

import anyio
from common import free_port, serving


def serve(port: int, tools: int, ttl_ms: int) -> None:
    """The server process: ``tools`` tools, caching hints, a count of its requests per
    client (by the name each client gives in its requests' ``_meta``)."""
    from mcpkit import Server
    from mcpkit.server.middleware import CallNext, Middleware, Request

    seen: Counter[str] = Counter()

    class Count(Middleware):
        async def on_list_tools(self, request: Request, call_next: CallNext) -> Any:
            meta = request.params.get("_meta") or {}
            seen[meta.get("io.modelcontextprotocol/clientInfo", {}).get("name", "?")] += 1
            return await call_next(request)

    server = Server("cache-bench", cache_ttl_ms=ttl_ms, cache_scope="public",
                    middleware=[Count()])
    for i in range(tools):
        def tool(text: str, times: int = 1) -> str:
            return text * times

        server.add_tool(tool, name=f"tool_{i:03}",
                        description=f"Tool number {i}: repeats a text, as many times as asked.")

    @server.tool
    def requests_seen() -> dict[str, int]:
        """How many tools/list requests each client sent."""
        return dict(seen)

    server.run("http", port=port, log_level="WARNING")


async def measure(url: str, args: argparse.Namespace) -> dict[str, Any]:
    from mcpkit.client import Client

    per_call: dict[str, list[float]] = {"uncached": [], "cached": []}
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(Client(
                url, name=name, mode="stateless", cache=name == "cached"))
            for name in per_call}
        for _ in range(args.rounds):
            for name, client in clients.items():
                with anyio.fail_after(args.count * 10):
                    start = time.perf_counter()
                    for _ in range(args.count):
                        tools = await client.list_tools()
                    per_call[name].append((time.perf_counter() - start) / args.count)
                    assert len(tools) == args.tools + 1
        seen = (await clients["uncached"].call_tool("requests_seen")).structured_content
        cache = clients["cached"].cache
        hits = cache.hits if cache is not None else 0
    uncached = statistics.median(per_call["uncached"])
    cached = statistics.median(per_call["cached"])
    return {
        "bench": "client_cache", "tools": args.tools + 1, "count": args.count,
        "rounds": args.rounds, "uncached_us": round(uncached * 1e6, 1),
        "cached_us": round(cached * 1e6, 1), "ratio": round(uncached / cached, 1),
        "server_tools_list": seen, "cache_hits": hits,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tools", type=int, default=50)
    parser.add_argument("--ttl-ms", type=int, default=600_000)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve, args.tools, args.ttl_ms)
        return
    if not 1 <= args.count <= 100_000 or not 1 <= args.rounds <= 50:
        sys.exit("bench/client_cache.py: --count 1..100000, --rounds 1..50")
    port = free_port()
    argv = [sys.executable, __file__, "--serve", str(port), "--tools", str(args.tools),
            "--ttl-ms", str(args.ttl_ms)]
    with serving(argv, port, "bench/client_cache.py") as url:
        print(json.dumps(anyio.run(measure, url, args)))


if __name__ == "__main__":
    main()
