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


def main(path: str) -> int:
    with open(path) as f:
        data = json.load(f)
    summary = data["summary"]
    era = (data.get("meta") or {}).get("era")
    if "mcpkit" not in summary:  # several eras: {era: {peer: ...}}
        stateless = summary.get("2026-07-28")
        summary = summary.get("2025-11-25", {})
    else:
        stateless = summary if era == "2026-07-28" else None
        if era == "2026-07-28":
            summary = {}
    if stateless:
        c16 = _median(stateless, "mcpkit", "B_c16_rps")
        sdk = _median(stateless, "sdk-low", "B_c16_rps")
        if c16 and sdk:
            ok = c16 / sdk >= 4
            print(f"{'PASS' if ok else 'MISS'}  {'2026-07-28 HTTP C=16 req/s vs sdk-low':44s} "
                  f"{c16 / sdk:8.2f}x  (goal >= 4x)")
            if not summary:
                return 0 if ok else 1

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
        ("spawn -> initialize answer", m("mcpkit", "C_init_ms"), "<=", 150, " ms"),
        ("idle RSS, stdio", m("mcpkit", "D_rss_stdio_mb"), "<=", 30, " MB"),
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
    info = [
        ("HTTP C=16 req/s vs sdk-low-json-httptools", ratio(
            m("mcpkit", "B_c16_rps"), m("sdk-low-json-httptools", "B_c16_rps")), "x"),
        ("HTTP C=64 req/s vs sdk-low-json-httptools", ratio(
            m("mcpkit", "B_c64_rps"), m("sdk-low-json-httptools", "B_c64_rps")), "x"),
    ]
    missed = 0
    for label, value, op, goal, unit in goals:
        if value is None:
            print(f"n/a   {label}")
            continue
        ok = value >= goal if op == ">=" else value <= goal
        missed += not ok
        verdict = "PASS" if ok else "MISS"
        print(f"{verdict}  {label:44s} {value:8.2f}{unit}  (goal {op} {goal}{unit})")
    for label, value, unit in info:
        if value is not None:
            print(f"info  {label:44s} {value:8.2f}{unit}  (same HTTP parser on both sides)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "bench/results.json"))
