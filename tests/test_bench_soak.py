"""``bench/soak.py --short``: issue #25's soak in its CI mode, so it cannot rot and what it
proves keeps holding: the everything server on HTTP (memory stores), then three instances
on Redis behind nginx with one SIGKILLed, one stopped with SIGTERM and Redis stopped under
load, then the server on stdio; every answer checked.

It passes only when every goal of the soak does: no wrong, lost or duplicated answer; no
exchange hanging past its cancel and every cancelled id usable again; no empty SSE
answer while Redis is away; RSS and open files back within 10% of their post-warm-up
level once the load stops (unread GET streams and a storm of list changes included);
in-flight slots, ids and memory unchanged by the cancellation phase; SIGTERM (stdio: end
of input) exiting 0 within the drain bound; a stdio server whose client stops reading
growing by at most 64 MB. The figures of so short a run say little about speed; the
load is checked to have happened, so that a pass cannot come from an empty run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.nginx import nginx_binary
from tests.support.redis import redis_binary

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(360, method="thread")
def test_soak_short() -> None:
    redis_binary(), nginx_binary()  # skipped locally (failed under CI) when not installed
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), "--short", "--python",
         sys.executable], capture_output=True, text=True, timeout=330, cwd=ROOT)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no result (exit {run.returncode}):\n{run.stdout}\n{run.stderr[-3000:]}"
    result = json.loads(lines[-1])
    misses = [v for v in result["verdicts"] if v.startswith("MISS")]
    assert not misses, "\n".join(misses)
    assert run.returncode == 0, run.stderr[-3000:]
    for name in ("single", "deployment"):  # the load ran: each kind of traffic happened
        leg = result[name]
        kinds = leg["ok_by_kind"]
        assert kinds.get("echo", 0) > 50 and kinds.get("progress", 0) > 5, (name, kinds)
        assert leg["cancels"].get("sent", 0) > 0, (name, leg["cancels"])
        assert leg["cancels"].get("stateless: stream closed", 0) > 0, (name, leg["cancels"])
        assert leg["resumes"].get("dropped", 0) > 0, (name, leg["resumes"])
        assert leg["sessions"].get("deleted", 0) > 0, (name, leg["sessions"])
        assert leg["streams"].get("unread streams opened", 0) >= 4, (name, leg["streams"])
        assert leg["streams"].get("notifications read", 0) > 0, (name, leg["streams"])
        assert leg["storm_triggers"] > 0 and leg["canary_pings"] > 0, name
        assert leg["schema_checked"] > 100 and not leg["schema_violations"], name
    assert result["single"]["ok_by_kind"].get("in flight at SIGTERM") == 4
    faults = result["deployment"]["faults"]
    assert {"sigkill_instance1", "sigterm_instance2", "redis_outage"} <= set(faults), faults
    phase = result["cancel_phase"]
    assert phase["cancels_done"] == 300 == phase["cancels"].get("id reused"), phase
    stdio = result["stdio"]
    assert stdio["flood"]["requests"] > 0 and stdio["cancel"]["id reused"] == 100, stdio
