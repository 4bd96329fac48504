"""``bench/scaleout.py`` in a smoke mode (a few clients and calls), so the load test of
issue #14 cannot rot: it starts redis-server, five instances of the everything server
(1 on memory, 1 and 3 on Redis) behind three nginx, drives every configuration, measures
Redis bytes per session and kills and restarts one of the three instances under load.

The figures of so short a run mean nothing (the req/s goal is not judged here), but the
correctness ones do: every call answered exactly once with its own text, in the rounds
and across the kill (nginx passing the killed instance's requests on, as
docs/deployment.md configures it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.nginx import nginx_binary
from tests.support.redis import redis_binary

ROOT = Path(__file__).resolve().parents[1]


def test_scaleout_bench_smoke() -> None:
    redis_binary(), nginx_binary()  # skipped locally (failed under CI) when not installed
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "scaleout.py"), "--rounds", "1", "--clients", "4",
         "--calls", "25", "--seconds", "3", "--sessions", "20", "--kill-seconds", "3",
         "--python", sys.executable],
        capture_output=True, text=True, timeout=50, cwd=ROOT)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no result (exit {run.returncode}):\n{run.stdout}\n{run.stderr[-3000:]}"
    result = json.loads(lines[-1])
    for name in ("memory", "redis1", "redis3"):
        (only,) = result["runs"][name]
        assert only["ok"] == 4 * 25, (name, only)
        assert set(only["cpu_us_per_call"]) == {"instances", "nginx", "redis"}, only
    assert result["failures_in_rounds"] == {"memory": 0, "redis1": 0, "redis3": 0}
    kill = result["kill"]
    assert kill["restarted_ok"] and kill["ok"] > 0, kill
    assert (kill["errors"], kill["lost"], kill["duplicated"]) == ({}, 0, 0), kill
    memory = result["redis_per_session"]
    assert memory["used_memory_per_session"] > 100 and memory["record_bytes"] > 100, memory
    assert "PASS  errors+lost+duplicated" in run.stdout
