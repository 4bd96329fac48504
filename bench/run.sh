#!/usr/bin/env bash
# Benchmark mcpkit side by side with the official SDK and the raw limit, in one run of
# ../shared/bench/mcpbench.py (every peer on the same machine, rounds interleaved), then
# check the ratios against the goals of the issues (bench/goals.py).
#   bench/run.sh                 # the full run (~15 min on 2 cores)
#   bench/run.sh --quick         # a smoke run
#   bench/run.sh --era 2026-07-28 --suites B   # the stateless revision over HTTP
# Peers: raw (the limit), sdk-low / sdk-low-json (the official SDK's low-level server, SSE
# and JSON answers, uvicorn's h11 parser as the harness runs it), sdk-low-json-httptools
# (the same with httptools, the parser mcpkit's server gets from uvicorn when installed),
# and mcpkit (bench/echo_server.py).
set -euo pipefail
cd "$(dirname "$0")/.."
HARNESS="${MCPBENCH:-../shared/bench/mcpbench.py}"
PY=.venv/bin/python
[ -x "$PY" ] || { echo "run scripts/check first (it creates .venv)"; exit 2; }
OUT="${OUT:-bench/results.json}"
"$PY" "$HARNESS" --peer raw --peer sdk-low --peer sdk-low-json --peer-file bench/peers.json \
    --json "$OUT" "$@"
"$PY" bench/goals.py "$OUT"
