"""Check a mcpbench JSON result against the performance goals of the issues.

Goals are ratios against peers measured in the same run (never absolute numbers from
another machine), plus a few absolute budgets. Prints one PASS/MISS line per goal.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _median(summary: dict[str, Any], peer: str, key: str) -> float | None:
    value = summary.get(peer, {}).get(key)
    if isinstance(value, dict):
        value = value.get("median")
    return float(value) if isinstance(value, int | float) else None


def _verdict(label: str, value: float, op: str, goal: float, unit: str) -> int:
    """Print one PASS/MISS line; 1 if the goal was missed."""
    ok = value >= goal if op == ">=" else value <= goal
    print(f"{'PASS' if ok else 'MISS'}  {label:44s} {value:8.2f}{unit}  (goal {op} {goal}{unit})")
    return 0 if ok else 1


def _tasks(figures: dict[str, Any]) -> int:
    """The tasks goal (issue #13): a task round trip costs at most 3 plain calls, in both
    generations (bench/tasks.py's figures); the memory kept per finished task is shown."""
    missed = 0
    plain = figures.get("plain_rps")
    for label, key in (("task round trip 2026-07-28, in plain calls", "ext_round_trip_rps"),
                       ("task round trip 2025-11-25, in plain calls",
                        "core_round_trip_rps")):
        rate = figures.get(key)
        if not plain or not rate:
            print(f"n/a   {label}")
            continue
        missed += _verdict(label, plain / rate, "<=", 3, "x")
    kb = figures.get("kb_per_finished_task")
    if isinstance(kb, int | float):
        print(f"info  {'memory kept per finished task':44s} {kb:8.2f} KB")
    return missed


def _openapi(figures: dict[str, Any]) -> int:
    """Issue #29's OpenAPI goal: a server from 1,471 operations built in at most 1 s; the
    listing is shown beside as many hand-declared tools."""
    build = figures.get("build_s")
    if not isinstance(build, int | float):
        print("n/a   OpenAPI server build")
        return 0
    for key in ("list_p50_ms", "list_p50_hand_ms"):
        if isinstance(figures.get(key), int | float):
            what = "hand-declared tools" if key.endswith("hand_ms") else "generated tools"
            print(f"info  {'tools/list p50, ' + what:44s} {figures[key]:8.2f} ms")
    return _verdict(f"OpenAPI server of {figures.get('operations')} operations, built",
                    build, "<=", 1, " s")


def _startup(figures: dict[str, Any]) -> int:
    """Issue #28's start-up goals, each against a floor measured in the same run
    (bench/startup.py): the anyio stack's own cold start and idle memory, a bare uvicorn
    app, ``python -c pass``."""
    missed = 0

    def over(label: str, key: str, floor_key: str, plus: float, unit: str) -> None:
        nonlocal missed
        value, floor = figures.get(key), figures.get(floor_key)
        if not isinstance(value, int | float) or not isinstance(floor, int | float):
            print(f"n/a   {label}")
            return
        missed += _verdict(f"{label} (floor {floor:.1f}{unit})", value - floor, "<=", plus,
                           unit)

    over("spawn -> initialize, over the anyio floor", "init_ms", "floor_init_ms", 10, " ms")
    over("spawn -> server/discover, over the anyio floor", "discover_ms",
         "floor_discover_ms", 10, " ms")
    over("idle stdio RSS, over the anyio floor", "stdio_rss_mb", "floor_stdio_rss_mb", 4,
         " MB")
    over("idle HTTP RSS, over raw uvicorn", "http_idle_rss_mb", "http_idle_rss_raw_mb", 8,
         " MB")
    notes, raw = figures.get("http_idle_rss_notes_mb"), figures.get("http_idle_rss_raw_mb")
    if isinstance(notes, int | float) and isinstance(raw, int | float):
        print(f"info  idle HTTP RSS of examples/notes.py (pydantic models), over raw uvicorn"
              f"  {notes - raw:.2f} MB")
    version, bare = figures.get("cli_version_ms"), figures.get("python_pass_ms")
    if isinstance(version, int | float) and isinstance(bare, int | float) and bare:
        missed += _verdict("mcpkit --version vs python -c pass", version / bare, "<=", 2, "x")
    call, floor = figures.get("cli_call_ms"), figures.get("floor_init_ms")
    if isinstance(call, int | float) and isinstance(floor, int | float) and floor:
        missed += _verdict("mcpkit call --stdio notes.py vs two floor cold starts",
                           call / (2 * floor), "<=", 1.5, "x")
        notes = figures.get("notes_init_ms")
        if isinstance(notes, int | float):  # what that goal stands on
            print(f"info  {'floor of that measure: notes.py cold start + anyio floor':44s}"
                  f" {(notes + floor) / (2 * floor):8.2f}x  (notes.py alone {notes:.1f} ms)")
        plain = figures.get("cli_call_everything_ms")
        if isinstance(plain, int | float):
            missed += _verdict("mcpkit call --stdio everything.py vs two floors",
                               plain / (2 * floor), "<=", 1.5, "x")
    return missed


def main(path: str) -> int:
    with open(path) as f:
        data = json.load(f)
    tasks_missed = _tasks(data["tasks"]) if isinstance(data.get("tasks"), dict) else 0
    if isinstance(data.get("startup"), dict):
        tasks_missed += _startup(data["startup"])
    if isinstance(data.get("openapi"), dict):
        tasks_missed += _openapi(data["openapi"])
    if "summary" not in data:  # bench/tasks.py or bench/startup.py alone
        return 1 if tasks_missed else 0
    summary = data["summary"]
    era = (data.get("meta") or {}).get("era")
    if "mcpkit" not in summary:  # several eras: {era: {peer: ...}}
        stateless = summary.get("2026-07-28")
        summary = summary.get("2025-11-25", {})
    else:
        stateless = summary if era == "2026-07-28" else None
        if era == "2026-07-28":
            summary = {}
    missed = tasks_missed
    if stateless:
        def sm(peer: str, key: str) -> float | None:
            return _median(stateless, peer, key)

        c16, sdk = sm("mcpkit", "B_c16_rps"), sm("sdk-low", "B_c16_rps")
        if c16 and sdk:
            missed += _verdict("2026-07-28 HTTP C=16 req/s vs sdk-low", c16 / sdk, ">=", 4, "x")
        disc, raw = sm("mcpkit", "C_discover_ms"), sm("raw", "C_discover_ms")
        if disc and raw:
            missed += _verdict("spawn -> server/discover answer vs raw", disc / raw, "<=", 3,
                               "x")
        if not summary:
            return 1 if missed else 0

    def m(peer: str, key: str) -> float | None:
        return _median(summary, peer, key)

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    goals = [
        # (label, value, op, goal, unit)
        ("stdio sequential tools/call vs sdk-low", ratio(m("mcpkit", "A_seq_rps"),
                                                        m("sdk-low", "A_seq_rps")), ">=", 5, "x"),
        ("stdio pipelined tools/call vs sdk-low", ratio(m("mcpkit", "A_pipe_rps"),
                                                       m("sdk-low", "A_pipe_rps")), ">=", 20, "x"),
        ("stdio sequential cost vs raw (time per call)", ratio(
            m("raw", "A_seq_rps"), m("mcpkit", "A_seq_rps")), "<=", 2.5, "x"),
        ("stdio pipelined cost vs raw (time per call)", ratio(
            m("raw", "A_pipe_rps"), m("mcpkit", "A_pipe_rps")), "<=", 2.5, "x"),
        ("spawn -> initialize answer vs raw", ratio(m("mcpkit", "C_init_ms"),
                                                    m("raw", "C_init_ms")), "<=", 3, "x"),
        ("HTTP C=16 req/s vs sdk-low-json", ratio(m("mcpkit", "B_c16_rps"),
                                                 m("sdk-low-json", "B_c16_rps")), ">=", 5, "x"),
        ("HTTP C=64 req/s vs sdk-low-json", ratio(m("mcpkit", "B_c64_rps"),
                                                 m("sdk-low-json", "B_c64_rps")), ">=", 5, "x"),
        ("HTTP C=16 p99: sdk-low-json / mcpkit", ratio(m("sdk-low-json", "B_c16_p99_ms"),
                                                      m("mcpkit", "B_c16_p99_ms")), ">=", 5, "x"),
        ("RSS per open HTTP session", m("mcpkit", "D_kb_per_session"), "<=", 4, " KB"),
        ("tools/list (200 tools) p50 vs raw", ratio(m("mcpkit", "E_list_p50_ms"),
                                                   m("raw", "E_list_p50_ms")), "<=", 2, "x"),
    ]
    for label, value, op, goal, unit in goals:
        if value is None:
            print(f"n/a   {label}")
            continue
        missed += _verdict(label, value, op, goal, unit)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "bench/results.json"))
