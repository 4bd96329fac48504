#!/usr/bin/env python3
"""Issue #12's goal: a JWT-protected server keeps >= 85% of its unprotected HTTP throughput
at 16 clients, measured in one run.

    bench/auth_ratio.py [--rounds 3] [--clients 16] [--count 20000] [--seconds 10]

Both servers are ``examples/everything.py`` run by the plain install (``bench/.venv-plain``,
which ``bench/run.sh`` makes: ``pip install .``, no extras) with ``server.run("http")``:
once as is, once with ``auth=`` (``bench/everything_protected.py``: the development issuer
of ``examples/protected_notes.py``, ``JWTVerifier`` with a fixed key and its default
verification cache). The load is suite B of the shared harness (``mcpbench.py``: one
keep-alive connection and session per client, ``tools/call echo`` until ``--count`` or
``--seconds``), every request of both runs carrying the same bearer token (the unprotected
server ignores it, so both parse the same bytes). Rounds alternate the two servers; the
ratio is of the medians. Prints one JSON line; exit 1 when the ratio is under 0.85.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
PLAIN = ROOT / "bench" / ".venv-plain" / "bin" / "python"
GOAL = 0.85


def harness() -> object:
    path = Path(os.environ.get("MCPBENCH") or ROOT.parent / "shared" / "bench" / "mcpbench.py")
    if not path.is_file():
        sys.exit(f"bench/auth_ratio.py: no harness at {path} (set MCPBENCH)")
    spec = importlib.util.spec_from_file_location("mcpbench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    opts = parser.parse_args()
    if not PLAIN.is_file():
        sys.exit("bench/auth_ratio.py: run bench/run.sh once first (it makes bench/.venv-plain)")
    bench = harness()
    state = tempfile.mkdtemp(prefix="mcpkit-auth-bench.")
    auth_line = b""  # set per server: a token whose audience is that server's URL

    class AuthConn(bench.HttpConn):  # type: ignore[attr-defined,misc,name-defined]
        def __init__(self, url: str) -> None:
            super().__init__(url)
            self.prefix += auth_line

    bench.HttpConn = AuthConn  # type: ignore[attr-defined]
    era = bench.Era(bench.PROTOCOL_VERSION)  # type: ignore[attr-defined]
    cfg = SimpleNamespace(server_cpus=None)
    plain_cmd = f"{PLAIN} {ROOT / 'examples' / 'everything.py'} --http --port {{port}}"
    protected_cmd = (f"{PLAIN} {ROOT / 'bench' / 'everything_protected.py'} --port {{port}} "
                     f"--state-dir {state}")
    results: dict[str, list[float]] = {"plain": [], "protected": []}
    for _ in range(opts.rounds):
        for name, cmd in (("plain", plain_cmd), ("protected", protected_cmd)):
            server = bench.HttpServer({"http_cmd": cmd}, cfg)  # type: ignore[attr-defined]
            try:
                port = int(server.url.rsplit(":", 1)[1].split("/")[0])
                token = subprocess.run(
                    [str(PLAIN), str(ROOT / "examples" / "protected_notes.py"), "--token",
                     "--port", str(port), "--state-dir", state],
                    capture_output=True, text=True, check=True).stdout.strip()
                auth_line = b"Authorization: Bearer %s\r\n" % token.encode()
                load = bench.http_load(server.url, server.pid, era, opts.clients,  # type: ignore[attr-defined]
                                       opts.count, opts.seconds, 20)
                out = asyncio.run(asyncio.wait_for(load, opts.seconds + 120))
                results[name].append(out["rps"])
            finally:
                server.close()
    plain = statistics.median(results["plain"])
    protected = statistics.median(results["protected"])
    ratio = protected / plain
    print(json.dumps({"clients": opts.clients, "rounds": opts.rounds,
                      "plain_rps": round(plain), "protected_rps": round(protected),
                      "ratio": round(ratio, 3), "goal": GOAL, "all": results}))
    return 0 if ratio >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
