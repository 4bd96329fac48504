#!/usr/bin/env python3
"""Issue #25's soak: the traffic shapes real hosts produce, for a bounded time, with every
answer checked and the servers' memory and open files watched.

    .venv/bin/python bench/soak.py [--short] [--targets single,deployment,stdio]
        [--seconds 600] [--stateful 40] [--stateless 8] [--cancels 10000]
        [--drain 10] [--python PATH] [--json OUT]

Like bench/scaleout.py it runs in the dev venv (the fixtures of ``tests/support``) and
serves from ``bench/.venv-redis`` (``pip install '.[redis]'``, the way a user installs,
made or refreshed on each run; ``--python`` runs the servers with another interpreter);
redis-server and nginx are the Debian packages. Everything is on loopback; every process
is stopped by its id.

Targets (``--targets``):

* ``single``: ``examples/everything.py --http`` (memory stores), then the cancellation
  phase (bench/soak_cancels.py) on a server of its own;
* ``deployment``: three instances on Redis behind nginx (``tests/support``), with faults
  under load: one instance SIGKILLed and restarted, another stopped with SIGTERM and
  restarted (rolling), Redis stopped for ``--redis-outage`` seconds;
* ``stdio``: ``examples/everything.py`` on stdio: cancels with ``notifications/cancelled``
  and a flood its client does not read (bench/soak_stdio.py).

Load on an HTTP target for ``--seconds`` after ``--warmup``: ``--stateful`` sessions
(a fifth on 2025-03-26, the rest 2025-11-25) and ``--stateless`` 2026-07-28 callers, each
looping over a weighted mix (plain calls, SSE answers, ~5% cancelled, ~2% SSE streams
dropped and resumed, 2025-03-26 batches: bench/soak_sessions.py, bench/soak_clients.py);
sessions opened and deleted; GET streams read, and GET and ``subscriptions/listen``
streams never read, while list-changed triggers fire (``--triggers`` a second, and a
storm of ``--storm`` at 30% of the run); a canary pinging (bench/soak_workers.py). On
memory stores the sessions' event logs are filled first (1,000 events each), and the
warm-up has its burst of triggers and a storm of ``--warmup-storm`` (the unread streams'
buffers full: none in ``--short``, whose 4 unread streams hold at most 4 MiB, within the
10% margin), so what a server holds after the warm-up is its steady state.

Checked: every answer (its id answered exactly once, with its own content; a sample of
messages validated against the schema of their revision); hangs past a cancel (the
exchange must end within ``--cancel-bound`` seconds) and ids usable again; empty SSE
answers; RSS and open fds after the warm-up against ``--settle`` seconds after the load
stops (within 10%); SIGTERM (the stdio end of input): exit 0 within ``--drain`` seconds
(also the servers' ``--drain``), with calls in flight on the single server answered.
Prints PASS/MISS lines and one JSON document (also to ``--json``; ``--logs DIR`` keeps
the servers' logs); exit 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.scaleout import instance_python  # noqa: E402
from bench.soak_cancels import cancels, probe  # noqa: E402
from bench.soak_clients import Faults, Knobs, Tally  # noqa: E402
from bench.soak_procs import (  # noqa: E402
    SOAK_SERVER,
    Sampler,
    Target,
    exited_well,
    kill_restart,
    terminate,
)
from bench.soak_sessions import StatefulClient  # noqa: E402
from bench.soak_stdio import run_stdio  # noqa: E402
from bench.soak_workers import Load, Shape  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402
from tests.support.http import free_port  # noqa: E402

RSS_BACK = 1.10  # after the load, RSS (and fds) within 10% of the post-warm-up level
STDIO_GROWTH_MB = 64.0  # the stdio server's RSS growth while its reader is stalled
PREFILL_CALLS = 260  # SSE answers (4-5 events each) per session: its event log is full

SHORT = {"seconds": 8.0, "deployment_seconds": 12.0, "warmup": 3.0, "settle": 3.0,
         "stateful": 8, "stateless": 2, "churners": 1, "readers": 1, "unread": 4,
         "triggers": 100.0, "storm": 40_000, "warmup_storm": 0, "cancels": 300,
         "cancel_seconds": 25.0, "cancel_workers": 32, "stdio_cancels": 100,
         "stdio_flood": 3.0, "redis_outage": 3.0, "prefill": PREFILL_CALLS}
LONG = {"seconds": 600.0, "deployment_seconds": 600.0, "warmup": 60.0, "settle": 10.0,
        "stateful": 40, "stateless": 8, "churners": 2, "readers": 8, "unread": 12,
        "triggers": 200.0, "storm": 50_000, "warmup_storm": 50_000, "cancels": 10_000,
        "cancel_seconds": 300.0, "cancel_workers": 64, "stdio_cancels": 2000,
        "stdio_flood": 20.0, "redis_outage": 5.0, "prefill": PREFILL_CALLS}


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="the CI mode (~60-90 s)")
    parser.add_argument("--targets", default="single,deployment,stdio")
    for name, kind in (("seconds", float), ("deployment_seconds", float), ("warmup", float),
                       ("settle", float), ("stateful", int), ("stateless", int),
                       ("churners", int), ("readers", int), ("unread", int),
                       ("triggers", float), ("storm", int), ("warmup_storm", int),
                       ("cancels", int),
                       ("cancel_seconds", float), ("cancel_workers", int),
                       ("stdio_cancels", int), ("stdio_flood", float),
                       ("redis_outage", float), ("prefill", int)):
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind,
                            help=f"default {LONG[name]:g} (--short: {SHORT[name]:g})")
    parser.add_argument("--drain", type=float, default=10.0,
                        help="the SIGTERM drain bound, seconds")
    parser.add_argument("--cancel-bound", type=float, default=2.0,
                        help="seconds within which a cancelled exchange must end")
    parser.add_argument("--answer-seconds", type=float, default=20.0)
    parser.add_argument("--slots", type=int, default=128,
                        help="max_in_flight_total of the cancellation phase's server")
    parser.add_argument("--rss-cap", type=float, default=1500.0,
                        help="MB: past it a server's growth is a miss and its load stops")
    parser.add_argument("--sample-every", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--python", help="run the servers with this interpreter")
    parser.add_argument("--json", help="also write the result here")
    parser.add_argument("--logs", help="keep the servers' logs in this directory")
    opts = parser.parse_args()
    for name, value in (SHORT if opts.short else LONG).items():
        if getattr(opts, name) is None:
            setattr(opts, name, value)
    return opts


# ------------------------------------------------------------------------------ HTTP


async def soak_http(target: Target, opts: argparse.Namespace, seconds: float,
                    faults_on: bool) -> dict[str, Any]:
    tally, faults = Tally(), Faults()
    knobs = Knobs(target.port, tally, faults, opts.answer_seconds, opts.cancel_bound)
    shape = Shape(stateful=opts.stateful, stateless=opts.stateless, churners=opts.churners,
                  readers=opts.readers, unread=opts.unread, triggers=opts.triggers,
                  storm=opts.storm)
    sampler = Sampler(target, opts.sample_every, opts.rss_cap)
    tally.t0 = sampler.t0  # the examples' times, the marks and the faults share it
    idle = target.snapshot()
    stop_sampling = asyncio.Event()
    sampling = asyncio.ensure_future(sampler.run(stop_sampling))
    load = Load(knobs, shape, opts.seed)
    if target.redis is None:  # memory stores: the event logs are in the server's memory
        await load.prefill(opts.prefill)
        sampler.mark("event logs filled")
    warm_end = time.monotonic() + opts.warmup
    load.start()
    await load.burst(1100)
    if opts.warmup_storm:  # what the unread streams may hold (their buffers full) is
        sampler.mark("warm-up storm starts")  # part of the steady state compared with
        await load.storm(opts.warmup_storm)
        sampler.mark("warm-up storm ends")
    await asyncio.sleep(max(0.0, warm_end - time.monotonic()))
    warm = sampler.sample()
    sampler.mark("warm-up ends")
    events: dict[str, Any] = {}
    jobs = [asyncio.ensure_future(run_faults(target, faults, seconds, opts, events,
                                             sampler.t0))
            ] if faults_on else []
    jobs.append(asyncio.ensure_future(storm(load, 0.3 * seconds, opts.storm, sampler)))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        await asyncio.sleep(min(0.5, max(0.0, end - time.monotonic())))
        if sampler.tripped:
            load.halt_triggers = True
    sampler.mark("load stops")
    await load.stop()
    await asyncio.gather(*jobs)
    await asyncio.sleep(opts.settle)
    after = sampler.sample()
    sampler.mark("settled")
    stops = await final_stop(target, knobs, opts.drain)  # cancelled exchanges still open
    for conn in knobs.parked:
        conn.close()
    stop_sampling.set()
    await sampling
    return {"target": target.name, "seconds": seconds, "idle": idle, "warm": warm,
            "after": after, "peak_rss_mb": sampler.peak, "rss_cap_tripped": sampler.tripped,
            "faults": events, "stops": stops, **load.report(), **tally.report(),
            "marks": sampler.marks, "series": sampler.series}


async def storm(load: Load, after: float, count: int, sampler: Sampler) -> None:
    await asyncio.sleep(after)
    sampler.mark("storm starts")
    await load.storm(count)
    sampler.mark("storm ends")


async def run_faults(target: Target, faults: Faults, seconds: float,
                     opts: argparse.Namespace, events: dict[str, Any], t0: float) -> None:
    """Under load: SIGKILL instance 1 at 20% of the run, SIGTERM instance 2 at 40% (each
    started again a second later), Redis stopped at 60% for ``--redis-outage`` s. Times
    in ``events`` are seconds since ``t0`` (the sampler's)."""
    start = time.monotonic()

    async def at(fraction: float) -> None:
        await asyncio.sleep(max(0.0, start + fraction * seconds - time.monotonic()))

    async def kill() -> None:
        await at(0.2)
        faults.kills.append(time.monotonic())
        events["sigkill_instance1"] = {"at_s": round(time.monotonic() - t0, 1),
                                       **await kill_restart(target.instances[1],
                                                            signal.SIGKILL, opts.drain, 1.0)}

    async def term() -> None:
        await at(0.4)
        events["sigterm_instance2"] = {"at_s": round(time.monotonic() - t0, 1),
                                       **await kill_restart(target.instances[2],
                                                            signal.SIGTERM, opts.drain, 1.0)}

    async def redis() -> None:
        await at(0.6)
        assert target.redis is not None
        down = time.monotonic()
        await asyncio.to_thread(target.redis.stop)
        await asyncio.sleep(opts.redis_outage)
        await asyncio.to_thread(target.redis.start)
        events["redis_outage"] = {"at_s": round(down - t0, 1),
                                  "seconds": round(time.monotonic() - down, 1)}

    await asyncio.gather(kill(), term(), redis())


async def final_stop(target: Target, knobs: Knobs, drain: float) -> dict[str, Any]:
    """SIGTERM to every instance. On the single server four ``sleep`` calls (2 s, answered
    as SSE) are in flight when it comes: they must be answered before it exits."""
    calls = []
    if target.name == "single":
        for n in range(4):
            client = StatefulClient(6000 + n, knobs, random.Random(n))
            calls.append(client)
    for client in calls:
        await client.open(time.monotonic() + 10)
    running = [asyncio.ensure_future(client.call(
        "in flight at SIGTERM", "tools/call", {"name": "sleep", "arguments": {"seconds": 2}},
        lambda r: isinstance(r, dict) and "Slept 2 seconds." in str(r), progress=True))
        for client in calls]
    await asyncio.sleep(0.5)
    stops = await asyncio.gather(*(terminate(d, drain) for d in target.instances))
    await asyncio.gather(*running)
    for client in calls:
        client.close()
    return {f"instance{n}": stop for n, stop in enumerate(stops)}


async def cancellation_phase(opts: argparse.Namespace, python: str, logs: Path,
                             stack: ExitStack) -> dict[str, Any]:
    port = free_port()
    daemon = Daemon([python, str(SOAK_SERVER), "--port", str(port), "--max-in-flight-total",
                     str(opts.slots), "--drain", f"{opts.drain:g}"], port,
                    logs / "cancels.log")
    stack.callback(daemon.stop, signal.SIGKILL)
    daemon.start()
    assert daemon.proc is not None
    tally = Tally()
    before = await probe(port, opts.slots, 4, tally)
    knobs = Knobs(port, tally, Faults(), answer_seconds=10, cancel_bound=opts.cancel_bound,
                  cancel_delay=0.02, park_max=2 * opts.slots)
    done = await cancels(knobs, daemon.proc.pid, opts.cancels, opts.cancel_seconds,
                         opts.cancel_workers, 4, opts.prefill)
    after = await probe(port, opts.slots, 4, tally)
    stop = await terminate(daemon, opts.drain)  # with the exchanges left open, if any
    for conn in knobs.parked:
        conn.close()
    return {"probe_before": before, "probe_after": after, **done, "stop": stop,
            **tally.report()}


# ------------------------------------------------------------------------------ goals


class Verdicts:
    """PASS/MISS lines; ``missed`` counts the misses."""

    def __init__(self) -> None:
        self.missed = 0
        self.lines: list[str] = []

    def goal(self, what: str, ok: bool, detail: str) -> None:
        line = f"{'PASS' if ok else 'MISS'}  {what}: {detail}"
        self.lines.append(line)
        print(line, flush=True)
        self.missed += not ok

    def info(self, what: str) -> None:
        line = f"info  {what}"
        self.lines.append(line)
        print(line, flush=True)


def judge_http(v: Verdicts, run: dict[str, Any], drain: float) -> None:
    name = run["target"]
    v.goal(f"{name}: wrong answers", not run["wrong"], f"{sum(run['wrong'].values())} "
           f"{run['wrong'] or ''} of {run['ok']} right")
    v.goal(f"{name}: lost answers", not run["lost"], f"{sum(run['lost'].values())} "
           f"{run['lost'] or ''} (excused, in flight at a SIGKILL: "
           f"{sum(run['excused'].values())})")
    v.goal(f"{name}: duplicated answers", run["duplicated"] == 0, str(run["duplicated"]))
    v.goal(f"{name}: unexpected errors", not run["errors"],
           f"{sum(run['errors'].values())} {run['errors'] or ''} (503 retried: "
           f"{run['retried'].get('HTTP 503', 0)})")
    c = run["cancels"]
    v.goal(f"{name}: hangs past cancel", not c.get("hang past cancel"),
           f"{c.get('hang past cancel', 0)} of {c.get('sent', 0)} cancels "
           f"(bound {run.get('cancel_bound', 2.0):g} s)")
    v.goal(f"{name}: ids reusable after cancel", not c.get("id reuse failed"),
           f"{c.get('id reuse failed', 0)} failed, {c.get('id reused', 0)} reused")
    v.goal(f"{name}: empty SSE answers", run["empty_sse"] == 0, str(run["empty_sse"]))
    resumed, excused = run["resumes"], run["excused"].get("drop", 0)
    v.goal(f"{name}: dropped streams answered once through resumption",
           resumed.get("answered through a resumption", 0) + excused
           >= resumed.get("dropped", 0),
           f"{resumed.get('answered through a resumption', 0)} of "
           f"{resumed.get('dropped', 0)} dropped ({excused} excused: a SIGKILL)")
    v.info(f"{name}: {run['ok']} answers right; canary ping p50/p99/max "
           f"{run['canary_p50_ms']}/{run['canary_p99_ms']}/{run['canary_max_ms']} ms; "
           f"{run['triggers']} list-changed triggers ({run['storm_triggers']} in storms); "
           f"SSE streams left open after their answer: "
           f"{run['streams'].get('SSE stream left open after its answer', 0)}")
    if run["cancel_hangs_at_s"]:
        v.info(f"{name}: cancels hung at (s): {run['cancel_hangs_at_s'][:40]}; marks "
               f"{run['marks']}; faults {run['faults']}")
    judged = ["instance0"]  # the deployment's instances 1 and 2 were restarted
    for proc in judged:
        warm, after = run["warm"].get(proc), run["after"].get(proc)
        if not warm or not after:
            v.goal(f"{name}: {proc} sampled", False, "no sample")
            continue
        v.goal(f"{name}: {proc} RSS after load within 10% of post-warm-up",
               after["rss_mb"] <= warm["rss_mb"] * RSS_BACK,
               f"{warm['rss_mb']} -> {after['rss_mb']} MB (peak "
               f"{run['peak_rss_mb'].get(proc)} MB"
               + (f"; cap tripped: {run['rss_cap_tripped']}" if run["rss_cap_tripped"]
                  else "") + ")")
        v.goal(f"{name}: {proc} open fds after load within 10% of post-warm-up",
               after["fds"] <= max(warm["fds"] * RSS_BACK, warm["fds"] + 8),
               f"{warm['fds']} -> {after['fds']} (idle {run['idle'].get(proc, {}).get('fds')})")
    stops = dict(run["stops"])
    if "sigterm_instance2" in run["faults"]:
        stops["instance2 (rolling, under load)"] = run["faults"]["sigterm_instance2"]
    for proc, stop in stops.items():
        v.goal(f"{name}: {proc} SIGTERM exits 0 within {drain:g} s", exited_well(stop, drain),
               f"exit {stop.get('exit')} after {stop.get('seconds')} s {stop.get('why', '')}")


def judge_cancels(v: Verdicts, run: dict[str, Any], opts: argparse.Namespace) -> None:
    c = run["cancels"]
    v.goal("cancel phase: cancels done", run["cancels_done"] >= opts.cancels,
           f"{run['cancels_done']} of {opts.cancels} in {run['seconds']} s")
    v.goal("cancel phase: hangs past cancel", not c.get("hang past cancel"),
           f"{c.get('hang past cancel', 0)} of {c.get('sent', 0)}")
    v.goal("cancel phase: ids reusable", not c.get("id reuse failed"),
           f"{c.get('id reuse failed', 0)} failed, {c.get('id reused', 0)} reused")
    before, after = run["probe_before"]["refused_503"], run["probe_after"]["refused_503"]
    v.goal("cancel phase: in-flight slots back (probe of max_in_flight_total)",
           before == 0 and after == 0 and run["http_503_during"] == 0,
           f"503 from the probe before {before}, after {after} of {opts.slots}; "
           f"503 during the cancels {run['http_503_during']}")
    v.goal("cancel phase: RSS within 10%", run["rss_after_mb"] <= run["rss_warm_mb"] * RSS_BACK,
           f"{run['rss_warm_mb']} -> {run['rss_after_mb']} MB "
           f"({run['kb_per_cancel']} KB per cancel)")
    v.goal("cancel phase: answers right", not run["wrong"] and not run["lost"]
           and not run["duplicated"], f"wrong {run['wrong']}, lost {run['lost']}, "
           f"duplicated {run['duplicated']}")
    stop = run["stop"]
    v.goal(f"cancel phase: SIGTERM exits 0 within {opts.drain:g} s",
           exited_well(stop, opts.drain),
           f"exit {stop.get('exit')} after {stop.get('seconds')} s {stop.get('why', '')}")


def judge_stdio(v: Verdicts, run: dict[str, Any], drain: float) -> None:
    if "failed" in run:
        v.goal("stdio: started", False, run["failed"])
        return
    c, f = run["cancel"], run["flood"]
    v.goal("stdio: answers right, once", not (run["wrong"] or run["lost"] or run["duplicated"]),
           f"wrong {run['wrong']}, lost {run['lost']}, duplicated {run['duplicated']} of "
           f"{f['requests']} flooded + {c.get('sent', 0)} cancelled")
    v.goal("stdio: hangs past cancel", not c.get("hang past cancel"),
           f"{c.get('hang past cancel', 0)} of {c.get('sent', 0)} still running")
    v.goal("stdio: ids reusable after cancel", not c.get("id reuse failed"),
           f"{c.get('id reuse failed', 0)} failed, {c.get('id reused', 0)} reused")
    v.goal(f"stdio: RSS growth with a stalled reader <= {STDIO_GROWTH_MB:g} MB",
           f["rss_growth_mb"] <= STDIO_GROWTH_MB,
           f"{f['rss_before_mb']} -> {f['rss_peak_mb']} MB, {f['accepted_mb']} MB of "
           f"requests taken" + (" (stopped at the cap)" if f["capped"] else ""))
    stop = run["exit"]
    v.goal(f"stdio: end of input exits 0 within {drain:g} s", exited_well(stop, drain),
           f"exit {stop.get('exit')} after {stop.get('seconds')} s {stop.get('why', '')}")


# ------------------------------------------------------------------------------ main


def main() -> int:
    opts = options()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    targets = [t.strip() for t in opts.targets.split(",") if t.strip()]
    python = instance_python(opts.python)
    result: dict[str, Any] = {"short": opts.short, "cpus": os.cpu_count(),
                              "load_avg_start": [round(x, 2) for x in os.getloadavg()],
                              "settings": {k: v for k, v in vars(opts).items()
                                           if k not in ("json", "logs")}}
    verdicts = Verdicts()
    started = time.monotonic()
    with ExitStack() as stack:
        if opts.logs:
            logs = Path(opts.logs)
            logs.mkdir(parents=True, exist_ok=True)
        else:
            logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcpkit-soak.")))
        for name in targets:
            print(f"soak: {name} ...", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            if name == "stdio":
                run = run_stdio(python, logs / "stdio.log", opts.stdio_cancels,
                                opts.stdio_flood, 4 * STDIO_GROWTH_MB, opts.cancel_bound,
                                opts.drain, opts.answer_seconds)
                judge_stdio(verdicts, run, opts.drain)
            elif name in ("single", "deployment"):
                with ExitStack() as inner:
                    target = Target(name, inner, python, logs, opts.drain)
                    seconds = opts.seconds if name == "single" else opts.deployment_seconds
                    run = asyncio.run(soak_http(target, opts, seconds, name == "deployment"))
                run["cancel_bound"] = opts.cancel_bound
                judge_http(verdicts, run, opts.drain)
                if name == "single":
                    with ExitStack() as inner:
                        phase = asyncio.run(cancellation_phase(opts, python, logs, inner))
                    result["cancel_phase"] = phase
                    judge_cancels(verdicts, phase, opts)
            else:
                raise SystemExit(f"unknown target {name!r}")
            run["wall_seconds"] = round(time.monotonic() - t0, 1)
            result[name] = run
    result["wall_seconds"] = round(time.monotonic() - started, 1)
    result["verdicts"] = verdicts.lines
    result["missed"] = verdicts.missed
    line = json.dumps(result)
    print(line)
    if opts.json:
        Path(opts.json).write_text(line + "\n")
    return 1 if verdicts.missed else 0


if __name__ == "__main__":
    sys.exit(main())
