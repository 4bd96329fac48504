"""A server from a large real OpenAPI document (issue #29, item 5).

    bench/.venv-plain/bin/python bench/openapi.py [--doc FILE] [--runs 30] [--json FILE]

The document is GitHub's REST API description for GitHub Enterprise Cloud (1,471
operations) from the npm package ``@octokit/openapi`` 23.0.2 (``generated/ghec.json``,
13 MB), fetched with ``npm pack`` into ``bench/.cache/`` when ``--doc`` is not given.
Measured, on the plain install:

* building the server from the parsed document (``Server.from_openapi(doc, client)``),
  median of 3; the goal: at most 1 s (reading the 13 MB of JSON is shown apart);
* ``tools/list`` of all its tools (every page, in process, ``mcpkit.testing.connect``),
  p50 of ``--runs``, beside a server with the same number of hand-declared tools (three
  typed parameters and a docstring each), the two taking turns.

``--json FILE`` merges the figures into a mcpbench result file under ``"openapi"``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from common import merge

from mcpkit import Server
from mcpkit.client import Client

PACKAGE = "@octokit/openapi@23.0.2"
CACHE = Path(__file__).resolve().parent / ".cache"


def fetch_doc() -> Path:
    """``ghec.json`` of ``@octokit/openapi``, fetched once with ``npm pack``."""
    target = CACHE / "ghec.json"
    if target.exists():
        return target
    CACHE.mkdir(exist_ok=True)
    out = subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=CACHE, check=True,
                         capture_output=True, text=True, timeout=600).stdout.split()[-1]
    with tarfile.open(CACHE / out) as tar:
        member = tar.getmember("package/generated/ghec.json")
        source = tar.extractfile(member)
        assert source is not None
        target.write_bytes(source.read())
    (CACHE / out).unlink()
    return target


def hand_declared(count: int) -> Server:
    server = Server("hand")
    for i in range(count):
        def tool(owner: str, repo: str, per_page: int = 30) -> dict[str, Any]:
            """List something of a repository. Use it to page through the items;
            returns one page."""
            return {"owner": owner, "repo": repo, "per_page": per_page}
        server.add_tool(tool, name=f"tool_{i}")
    return server


async def list_p50(servers: dict[str, Server], runs: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {k: [] for k in servers}
    async with Client(servers["openapi"], timeout=300) as one, \
            Client(servers["hand"], timeout=300) as two:
        clients = {"openapi": one, "hand": two}
        for client in clients.values():
            await client.list_tools()  # warm-up
        for _ in range(runs):
            for name, client in clients.items():
                start = time.perf_counter()
                await client.list_tools()
                samples[name].append((time.perf_counter() - start) * 1e3)
    return {k: statistics.median(v) for k, v in samples.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--doc", type=Path, help="the OpenAPI document (default: fetched)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--json", help="merge the figures into this mcpbench result file")
    opts = ap.parse_args()
    path = opts.doc or fetch_doc()
    start = time.perf_counter()
    doc = json.loads(path.read_bytes())
    parse_s = time.perf_counter() - start
    client = httpx.AsyncClient(base_url="https://api.github.com")
    builds = []
    for _ in range(3):
        start = time.perf_counter()
        server = Server.from_openapi(doc, client)
        builds.append(time.perf_counter() - start)
    count = len(server._registry.tools)
    hand = hand_declared(count)
    p50 = anyio.run(list_p50, {"openapi": server, "hand": hand}, max(1, opts.runs))
    figures = {"operations": count, "parse_s": parse_s, "build_s": statistics.median(builds),
               "list_p50_ms": p50["openapi"], "list_p50_hand_ms": p50["hand"]}
    for k, v in figures.items():
        print(f"{k:20s} {v:10.3f}")
    if opts.json:
        merge(opts.json, "openapi", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
