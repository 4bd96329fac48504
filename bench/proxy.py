#!/usr/bin/env python3
"""Issue #16's proxy goal: what ``mcpkit proxy`` adds to a request's latency.

    bench/proxy.py [--count 2000] [--seconds 30] [--rounds 3] [--tool echo|sleep]

What is compared, on loopback, one client, one request at a time:

- direct: ``examples/everything.py --http`` (uvicorn), the client -> that server;
- proxied: ``mcpkit proxy --stdio "python examples/everything.py" --http`` (uvicorn), the
  client -> the proxy over HTTP -> the same server over stdio (its own process, started
  by the proxy for the client's session).

Both run at once and the client alternates between them, request by request, so both
see the same load on the machine. The client is the same for both: httpx (one
keep-alive connection each), one 2025-11-25 session each (``initialize``, then
``tools/call echo`` with a short text, each answered as a
JSON body; ``--tool sleep``: ``sleep`` with 0 seconds, a handler that awaits, where
``echo`` is answered inline, without a task), latency per request measured around the
POST. Each round starts both targets afresh (warmed up first); the figures are the
medians over rounds of each round's p50 and p99. Prints one JSON line; exit 1 when the
proxied p50 is over 1.5x the direct p50. Every process is stopped by its process id;
every wait is bounded.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import httpx
from common import free_port, serving

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = ROOT / "examples" / "everything.py"
GOAL = 1.5
WHO = "bench/proxy.py"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


CALLS = {"echo": {"name": "echo", "arguments": {"text": "hello"}},
         "sleep": {"name": "sleep", "arguments": {"seconds": 0}}}


class Session:
    """One 2025-11-25 session over one keep-alive httpx connection."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=30.0)
        init = self.http.post(url, headers=HEADERS, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "bench-proxy", "version": "1"}}})
        init.raise_for_status()
        self.headers = {**HEADERS, "mcp-session-id": init.headers["mcp-session-id"],
                        "mcp-protocol-version": "2025-11-25"}
        self.http.post(url, headers=self.headers, json={
            "jsonrpc": "2.0", "method": "notifications/initialized"}).raise_for_status()

    def call(self, rid: int, tool: str) -> float:
        """Seconds one ``tools/call`` of ``tool`` took."""
        body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": CALLS[tool]}
        start = time.perf_counter()
        reply = self.http.post(self.url, headers=self.headers, json=body)
        took = time.perf_counter() - start
        if reply.status_code != 200 or "result" not in reply.json():
            sys.exit(f"bench/proxy.py: {self.url} answered {reply.status_code}: "
                     f"{reply.text[:300]}")
        return took

    def close(self) -> None:
        self.http.delete(self.url, headers=self.headers)
        self.http.close()


def latencies(urls: dict[str, str], count: int, seconds: float,
              tool: str) -> dict[str, list[float]]:
    """Seconds per call of each target, the targets' calls alternating (so both see the
    same load on the machine), after 200 unmeasured each."""
    sessions = {name: Session(url) for name, url in urls.items()}
    out: dict[str, list[float]] = {name: [] for name in urls}
    deadline = time.monotonic() + seconds
    try:
        for i in range(1, count + 201):
            for name, session in sessions.items():
                took = session.call(i, tool)
                if i > 200:
                    out[name].append(took)
            if time.monotonic() > deadline:
                break
    finally:
        for session in sessions.values():
            session.close()
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000, help="requests per run")
    parser.add_argument("--seconds", type=float, default=30.0, help="bound per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tool", choices=sorted(CALLS), default="echo")
    opts = parser.parse_args()
    python = sys.executable
    direct_argv = [python, str(EVERYTHING), "--http", "--port"]
    proxy_argv = [python, "-m", "mcpkit", "proxy", "--stdio", f"{python} {EVERYTHING}",
                  "--http", "--port"]
    runs: dict[str, list[tuple[float, float]]] = {"direct": [], "proxied": []}
    for _ in range(opts.rounds):
        direct_port, proxy_port = free_port(), free_port()
        with serving([*direct_argv, str(direct_port)], direct_port, WHO) as direct, \
                serving([*proxy_argv, str(proxy_port)], proxy_port, WHO) as proxied:
            got = latencies({"direct": direct, "proxied": proxied}, opts.count,
                            opts.seconds, opts.tool)
        for name, values in got.items():
            runs[name].append((percentile(values, 0.5), percentile(values, 0.99)))
    figures = {name: {"p50_ms": round(statistics.median(p for p, _ in r) * 1000, 3),
                      "p99_ms": round(statistics.median(q for _, q in r) * 1000, 3)}
               for name, r in runs.items()}
    ratio = figures["proxied"]["p50_ms"] / figures["direct"]["p50_ms"]
    added = {"p50_ms": round(figures["proxied"]["p50_ms"] - figures["direct"]["p50_ms"], 3),
             "p99_ms": round(figures["proxied"]["p99_ms"] - figures["direct"]["p99_ms"], 3)}
    print(json.dumps({"bench": "proxy", "compared": "client -> proxy(HTTP) -> stdio "
                      "everything.py vs client -> everything.py over HTTP",
                      **figures, "added": added, "p50_ratio": round(ratio, 3),
                      "goal": f"<= {GOAL}x", "met": ratio <= GOAL,
                      "tool": opts.tool, "rounds": opts.rounds, "count": opts.count}))
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
