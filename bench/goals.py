"""Check a mcpbench JSON result against the performance goals of issue 2.

Goals are ratios against the official SDK's low-level server measured in the same run
(never absolute numbers from another machine), plus two absolute budgets.
"""

from __future__ import annotations

import json
import sys


def main(path: str) -> int:
    with open(path) as f:
        data = json.load(f)
    summary = data["summary"]
    if "2025-11-25" in summary and "mcpkit" not in summary:
        summary = summary["2025-11-25"]
    ours, sdk = summary["mcpkit"], summary["sdk-low"]

    def med(peer: dict[str, object], key: str) -> float:
        value = peer[key]
        if isinstance(value, dict):
            value = value["median"]
        assert isinstance(value, int | float), (key, value)
        return float(value)

    rows = [
        ("stdio sequential tools/call vs SDK", med(ours, "A_seq_rps") / med(sdk, "A_seq_rps"),
         ">=", 5.0, "x"),
        ("stdio pipelined (64) tools/call vs SDK",
         med(ours, "A_pipe_rps") / med(sdk, "A_pipe_rps"), ">=", 20.0, "x"),
        ("spawn -> initialize answer", med(ours, "C_init_ms"), "<=", 150.0, " ms"),
        ("idle RSS, stdio", med(ours, "D_rss_stdio_mb"), "<=", 30.0, " MB"),
    ]
    failed = 0
    for name, value, op, goal, unit in rows:
        ok = value >= goal if op == ">=" else value <= goal
        failed += not ok
        verdict = "PASS" if ok else "MISS"
        print(f"{verdict}  {name:42s} {value:8.1f}{unit}  (goal {op} {goal}{unit})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "bench/results.json"))
