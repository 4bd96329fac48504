#!/usr/bin/env bash
# Benchmark mcpkit side by side with the official SDK's low-level server and the raw limit,
# in one run of ../shared/bench/mcpbench.py (stdio suites A, C, D, E), then print the
# ratios against the issue's goals.  Usage: bench/run.sh [--quick] [--repeat N]
set -euo pipefail
cd "$(dirname "$0")/.."
HARNESS="${MCPBENCH:-../shared/bench/mcpbench.py}"
PY=.venv/bin/python
[ -x "$PY" ] || { echo "run scripts/check first (it creates .venv)"; exit 2; }
OUT="${OUT:-bench/results.json}"
"$PY" "$HARNESS" --peer raw --peer sdk-low --name mcpkit \
    --stdio "{py} $PWD/bench/echo_server.py" \
    --stdio-tools "{py} $PWD/bench/echo_server.py --tools 200" \
    --suites A,C,D,E --json "$OUT" "$@"
"$PY" bench/goals.py "$OUT"
