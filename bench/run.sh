#!/usr/bin/env bash
# Benchmark what users get: mcpkit installed the way a user installs it (`pip install .`,
# no extras, into bench/.venv-plain) serving the example servers, side by side with the
# official SDK and the raw limit in one run of the shared mcpbench.py harness (every peer on
# the same machine, rounds interleaved); then check the ratios against the issues' goals
# (bench/goals.py). bench/tasks.py then measures task round trips against plain calls.
#   bench/run.sh                 # the full run (~15 min on 2 cores)
#   bench/run.sh --quick         # a smoke run
#   bench/run.sh --era 2026-07-28 --suites B,C   # the stateless revision
# Peers: raw (the limit), sdk-low / sdk-low-json (the official SDK's low-level server, SSE
# and JSON answers; the harness runs them in the dev venv, which has mcp) and mcpkit:
#   stdio (suites A, C, D): examples/everything.py
#   HTTP (suite B):         examples/everything.py --http (server.run("http"): uvicorn with
#                           the httptools parser and uvloop that the plain install brings)
#   200 tools (suite E):    bench/echo_server.py --tools 200 (schema-heavy tools)
# MCPBENCH points at the harness (default: ../shared/bench/mcpbench.py, the team's copy).
# GRANIAN=1 adds a peer "mcpkit-granian": the same app under granian (a Rust ASGI server),
# from its own venv (plain install + granian), HTTP suite only. FLOORS=1 adds two stdio
# peers that show what the event-loop stack alone costs: bench/floor_anyio.py and
# bench/floor_asyncio.py.
# Not run here (its own deployment: redis-server, nginx, five instances): bench/scaleout.py,
# issue #14's scale-out load test (memory vs 1 and 3 instances on Redis through nginx, Redis
# bytes per session, an instance killed under load); see docs/deployment.md, "Sizing".
set -euo pipefail
cd "$(dirname "$0")/.."
HARNESS="${MCPBENCH:-../shared/bench/mcpbench.py}"
[ -f "$HARNESS" ] || { echo "bench/run.sh: no harness at $HARNESS (set MCPBENCH)"; exit 2; }
PY=.venv/bin/python
[ -x "$PY" ] || { echo "bench/run.sh: run scripts/check first (it creates .venv)"; exit 2; }
PLAIN="$PWD/bench/.venv-plain"
if [ ! -x "$PLAIN/bin/python" ]; then
    python3 -m venv "$PLAIN"
fi
"$PLAIN/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall \
    --no-deps . && "$PLAIN/bin/python" -m pip install --quiet --disable-pip-version-check .
echo "bench/run.sh: mcpkit peer from a plain install:" \
    "$("$PLAIN/bin/python" -m pip freeze | grep -iE '^(mcpkit|uvicorn|httptools|uvloop)' | tr '\n' ' ')"
OUT="${OUT:-bench/results.json}"
PEERS="$(mktemp)"
trap 'rm -f "$PEERS"' EXIT
GRANIAN_PEER=""
if [ "${GRANIAN:-0}" = 1 ]; then
    GV="$PWD/bench/.venv-granian"
    [ -x "$GV/bin/python" ] || python3 -m venv "$GV"
    "$GV/bin/python" -m pip install --quiet --disable-pip-version-check . granian
    GRANIAN_PEER=",
  \"mcpkit-granian\": {
    \"http_cmd\": \"$GV/bin/granian --interface asgi --host 127.0.0.1 --port {port} --workers 1 --loop uvloop --http 1 --working-dir $PWD/bench everything_asgi:app\"
  }"
fi
FLOOR_PEERS=""
if [ "${FLOORS:-0}" = 1 ]; then
    FLOOR_PEERS=",
  \"anyio-floor\": {\"stdio\": \"$PLAIN/bin/python $PWD/bench/floor_anyio.py\"},
  \"asyncio-floor\": {\"stdio\": \"$PLAIN/bin/python $PWD/bench/floor_asyncio.py\"}"
fi
cat > "$PEERS" <<JSON
{
  "mcpkit": {
    "stdio": "$PLAIN/bin/python $PWD/examples/everything.py",
    "stdio_tools": "$PLAIN/bin/python $PWD/bench/echo_server.py --tools 200",
    "http_cmd": "$PLAIN/bin/python $PWD/examples/everything.py --http --port {port}"
  }$GRANIAN_PEER$FLOOR_PEERS
}
JSON
"$PY" "$HARNESS" --peer raw --peer sdk-low --peer sdk-low-json --peer-file "$PEERS" \
    --json "$OUT" "$@"
# Tasks beside plain calls (issue #13), in-process on the plain install; the figures go
# into the same result file, under "tasks", for goals.py.
TASK_CALLS=2000
case " $* " in *" --quick "*) TASK_CALLS=300 ;; esac
"$PLAIN/bin/python" bench/tasks.py --calls "$TASK_CALLS" --kept "$TASK_CALLS" --json "$OUT"
# Start-up weight (issue #28): cold starts, idle memory and the CLI against floors measured
# in the same run (the anyio stack, a bare uvicorn app, python -c pass), on the plain install.
STARTUP_RUNS=15
case " $* " in *" --quick "*) STARTUP_RUNS=3 ;; esac
"$PLAIN/bin/python" bench/startup.py --runs "$STARTUP_RUNS" --json "$OUT"
# A server from a large OpenAPI document (issue #29): build time and tools/list beside as
# many hand-declared tools; the document is fetched with npm into bench/.cache once.
"$PLAIN/bin/python" bench/openapi.py --json "$OUT"
"$PY" bench/goals.py "$OUT"
