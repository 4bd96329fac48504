"""What one hostile body costs every other client: a canary's ping latency while it is
handled, and the server's resident memory (issue #25, item 6).

    .venv/bin/python bench/hostile_input.py [--only NAME] [--json]

A server (this file with ``--serve PORT``: ``echo(value: Any)`` and
``total(numbers: list[int])`` over Streamable HTTP, uvicorn) runs as a subprocess. A
canary session pings it every 5 ms; meanwhile another process POSTs the hostile bodies
of a scenario (all at once when there are several) on sessions of their own. Reported
per scenario: the hostile POSTs' statuses and time, the canary's worst and median
latency, and the server's RSS before, at its peak (sampled every 10 ms) and after.

Scenarios (2025-03-26 sessions, the revision with batches):
  notify-100k     a batch of 100,000 notifications (3.1 MB)
  notify-100k-x8  eight of them at once
  ping-100        a batch of 100 pings (the default ``max_batch``: handled)
  arrays-4mib     a 4 MiB batch of empty arrays ``[[],[],...]`` (the costliest shape
                  orjson parses per byte; refused as a batch)
  args-4mib       tools/call ``echo`` whose argument is 4 MiB of ``[[],[],...]``
  ints-4mib       tools/call ``total`` with 4 MiB of integers (validated item by item)
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from typing import Any

import httpx
import orjson

MIB = 1024 * 1024
ACCEPT = "application/json, text/event-stream"
VERSION = "2025-03-26"


def serve(port: int) -> None:
    from mcpkit import Server

    server = Server("hostile-bench")

    @server.tool
    def echo(value: Any) -> str:
        """Accept any value."""
        return "ok"

    @server.tool
    def total(numbers: list[int]) -> int:
        """Add integers."""
        return sum(numbers)

    server.run("http", port=port)


def body_of(scenario: str) -> bytes:
    if scenario.startswith("notify-100k"):
        return orjson.dumps([{"jsonrpc": "2.0", "method": "n"}] * 100_000)
    if scenario == "ping-100":
        return orjson.dumps([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(100)])
    if scenario == "arrays-4mib":
        return b"[" + b",".join([b"[]"] * ((4 * MIB - 2) // 3)) + b"]"
    head = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"'
    if scenario == "args-4mib":
        head += b'echo","arguments":{"value":['
        return head + b",".join([b"[]"] * ((4 * MIB - len(head) - 10) // 3)) + b"]}}}"
    if scenario == "ints-4mib":
        head += b'total","arguments":{"numbers":['
        return head + b",".join([b"7"] * ((4 * MIB - len(head) - 10) // 2)) + b"]}}}"
    raise SystemExit(f"unknown scenario {scenario!r}")


async def session(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "hostile-bench", "version": "1"}}}
    base = {"accept": ACCEPT, "content-type": "application/json"}
    reply = await http.post(url, headers=base, content=orjson.dumps(init))
    headers = {**base, "mcp-session-id": reply.headers["mcp-session-id"],
               "mcp-protocol-version": VERSION}
    await http.post(url, headers=headers,
                    content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return headers


async def send(url: str, scenario: str, count: int) -> None:
    """The hostile side (its own process): ``count`` sessions, then every body at once;
    prints ``{"statuses": [...], "ms": ...}`` once all are answered."""
    body = body_of(scenario)
    async with httpx.AsyncClient(timeout=120) as http:
        sessions = [await session(http, url) for _ in range(count)]
        print("ready", flush=True)
        sys.stdin.readline()
        began = time.perf_counter()
        replies = await asyncio.gather(*(http.post(url, headers=h, content=body)
                                         for h in sessions))
        took = (time.perf_counter() - began) * 1000
    print(json.dumps({"statuses": [r.status_code for r in replies], "ms": round(took, 1),
                      "bytes": len(body), "answer": replies[0].text[:120]}), flush=True)


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def scenario_run(url: str, pid: int, scenario: str) -> dict[str, Any]:
    count = 8 if scenario.endswith("-x8") else 1
    sender = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--send", url, scenario, str(count),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert sender.stdin is not None and sender.stdout is not None
    assert (await sender.stdout.readline()).strip() == b"ready"
    latencies: list[float] = []
    peak = before = rss_mb(pid)
    done = False
    async with httpx.AsyncClient(timeout=60) as http:
        canary = await session(http, url)

        async def ping_loop() -> None:
            n = 0
            while not done:
                began = time.perf_counter()
                await http.post(url, headers=canary, content=orjson.dumps(
                    {"jsonrpc": "2.0", "id": f"c{n}", "method": "ping"}))
                latencies.append((time.perf_counter() - began) * 1000)
                n += 1
                await asyncio.sleep(0.005)

        async def sample() -> None:
            nonlocal peak
            while not done:
                peak = max(peak, rss_mb(pid))
                await asyncio.sleep(0.01)

        tasks = [asyncio.create_task(ping_loop()), asyncio.create_task(sample())]
        await asyncio.sleep(0.3)
        sender.stdin.write(b"go\n")
        await sender.stdin.drain()
        outcome = json.loads(await sender.stdout.readline())
        await sender.wait()
        await asyncio.sleep(0.5)
        done = True
        await asyncio.gather(*tasks)
    latencies.sort()
    return {"scenario": scenario, **outcome, "canary_max_ms": round(latencies[-1], 1),
            "canary_p50_ms": round(latencies[len(latencies) // 2], 1),
            "canary_pings": len(latencies), "rss_before_mb": round(before, 1),
            "rss_peak_mb": round(peak, 1), "rss_after_mb": round(rss_mb(pid), 1)}


SCENARIOS = ("notify-100k", "notify-100k-x8", "ping-100", "arrays-4mib", "args-4mib",
             "ints-4mib")


async def measure(port: int, pid: int, only: str | None, as_json: bool) -> None:
    url = f"http://127.0.0.1:{port}/mcp"
    async with httpx.AsyncClient(timeout=5) as http:
        for _ in range(200):
            try:
                await http.get(f"http://127.0.0.1:{port}/")
                break
            except httpx.TransportError:
                await asyncio.sleep(0.05)
    results = []
    for scenario in SCENARIOS:
        if only is None or scenario == only:
            result = await scenario_run(url, pid, scenario)
            results.append(result)
            if not as_json:
                print(f"{scenario:15} {result['bytes'] / MIB:5.2f} MiB "
                      f"statuses {sorted(set(result['statuses']))} in "
                      f"{result['ms']:7.1f} ms | canary max {result['canary_max_ms']:7.1f}"
                      f" ms p50 {result['canary_p50_ms']:5.1f} ms | RSS "
                      f"{result['rss_before_mb']:.0f} -> {result['rss_peak_mb']:.0f} -> "
                      f"{result['rss_after_mb']:.0f} MB", flush=True)
    if as_json:
        print(json.dumps(results, indent=2))


def main(only: str | None, as_json: bool) -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        asyncio.run(measure(port, server.pid, only, as_json))
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]))
    elif len(sys.argv) > 4 and sys.argv[1] == "--send":
        asyncio.run(send(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    else:
        args = sys.argv[1:]
        name = args[args.index("--only") + 1] if "--only" in args else None
        main(name, "--json" in args)
