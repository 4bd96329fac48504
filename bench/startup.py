"""Start-up weight (issue #28): what every user pays before the first answer.

    bench/.venv-plain/bin/python bench/startup.py [--runs 15] [--json FILE]

Run with the plain install's interpreter (``bench/run.sh`` does); every figure is the
median of ``--runs`` fresh processes, the kinds taking turns in each round so a burst of
load from other processes lands on all of them alike, after one unmeasured warm-up each
(disk cache, byte-code):

* ``python -c pass`` and ``mcpkit --version``: the CLI should start like a small tool;
* cold starts of ``bench/floor_anyio.py`` (the anyio + asyncio stack answering
  ``initialize``, ``server/discover`` and an echo call, nothing else: the floor) and of
  ``examples/everything.py``: spawn -> ``initialize`` answered, and spawn ->
  ``server/discover`` answered (2026-07-28);
* idle stdio RSS of the same two, 1 s after ``initialize`` and one ``tools/call``;
* ``mcpkit call --stdio "python examples/notes.py" notes_search query=x``, end to end: two
  Pythons (the CLI and the server) and one call, against two floor cold starts; beside it
  the cold start of ``examples/notes.py`` alone (its tools return pydantic models, whose
  import it pays) and the same command against ``examples/everything.py``'s ``echo``;
* idle RSS of an HTTP server after one session and call: ``examples/everything.py``
  under ``mcpkit run --http`` against a bare uvicorn app (the floor of any ASGI server);
  and, for information, ``examples/notes.py``, whose tools return pydantic models (what
  importing pydantic adds).

``--json FILE`` merges the figures into a mcpbench result file (``bench/run.sh`` passes
its ``results.json``) under ``"startup"``, where ``bench/goals.py`` checks the goals.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import free_port, merge

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
MCPKIT = str(Path(PY).with_name("mcpkit"))
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}\n')
DISCOVER = (b'{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{'
            b'"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
            b'"io.modelcontextprotocol/clientCapabilities":{},'
            b'"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"0"}}}}\n')
ECHO = (b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo",'
        b'"arguments":{"text":"hello"}}}\n')
RAW_ASGI = '''
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"jsonrpc":"2.0","id":1,"result":{}}'})
'''


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=60)
    return (time.perf_counter() - start) * 1e3


def _cold(cmd: list[str], env: dict[str, str], opening: bytes = INIT) -> float:
    """Spawn -> the answer to ``opening`` read back, in ms; the process is then closed."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(opening)
    proc.stdin.flush()
    line = proc.stdout.readline()
    took = (time.perf_counter() - start) * 1e3
    proc.stdin.close()
    proc.wait(timeout=30)
    if b'"result"' not in line:
        raise SystemExit(f"bench/startup.py: {cmd} did not answer {opening[:60]!r}: "
                         f"{line[:200]!r}")
    return took


def _idle_stdio_rss(cmd: list[str], env: dict[str, str]) -> float:
    """RSS of a stdio server 1 s after ``initialize`` and one echo ``tools/call``."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(INIT + ECHO)
        proc.stdin.flush()
        answers = [proc.stdout.readline(), proc.stdout.readline()]
        if not all(b'"result"' in a for a in answers):
            raise SystemExit(f"bench/startup.py: {cmd} did not answer: {answers!r}")
        time.sleep(1.0)
        return _rss_mb(proc.pid)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"bench/startup.py: no VmRSS for pid {pid}")


def _idle_http_rss(cmd: list[str], port: int, env: dict[str, str], *, mcp: bool,
                   call: tuple[str, dict[str, str]] = ("echo", {"text": "hello"})) -> float:
    """RSS of an HTTP server 1 s after one request (an MCP session and ``call``, or one
    POST)."""
    import httpx

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit(f"bench/startup.py: {cmd} did not listen") from None
                time.sleep(0.05)
        accept = {"accept": "application/json, text/event-stream"}
        with httpx.Client(timeout=30) as http:
            first = http.post(url, content=INIT, headers={**accept,
                                                          "content-type": "application/json"})
            first.raise_for_status()
            if mcp:
                session = {**accept, "content-type": "application/json",
                           "mcp-session-id": first.headers["mcp-session-id"],
                           "mcp-protocol-version": "2025-11-25"}
                http.post(url, headers=session, json={
                    "jsonrpc": "2.0", "method": "notifications/initialized"})
                http.post(url, headers=session, json={
                    "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": call[0], "arguments": call[1]}},
                ).raise_for_status()
        time.sleep(1.0)
        return _rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--json", help="merge the figures into this mcpbench result file")
    opts = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mcpkit-startup-"))
    env = {**os.environ, "MCPKIT_NOTES_DB": str(work / "notes.db"),
           "MCPKIT_STATE_DIR": str(work / "state")}
    notes = f"{PY} {ROOT / 'examples' / 'notes.py'}"
    floor = [PY, str(ROOT / "bench" / "floor_anyio.py")]
    everything = [PY, str(ROOT / "examples" / "everything.py")]
    kinds: dict[str, Callable[[], float]] = {
        "python_pass_ms": lambda: _timed([PY, "-c", "pass"], env),
        "cli_version_ms": lambda: _timed([MCPKIT, "--version"], env),
        "floor_init_ms": lambda: _cold(floor, env),
        "init_ms": lambda: _cold(everything, env),
        "floor_discover_ms": lambda: _cold(floor, env, DISCOVER),
        "discover_ms": lambda: _cold(everything, env, DISCOVER),
        "cli_call_ms": lambda: _timed([MCPKIT, "call", "--stdio", notes, "notes_search",
                                       "query=x"], env),
        # what the notes goal stands on: the server's own cold start (pydantic models)
        "notes_init_ms": lambda: _cold([PY, str(ROOT / "examples" / "notes.py")], env),
        # the same command against a server that does not import pydantic
        "cli_call_everything_ms": lambda: _timed(
            [MCPKIT, "call", "--stdio", " ".join(everything), "echo", "text=x"], env),
    }
    samples: dict[str, list[float]] = {k: [] for k in kinds}
    for run in kinds.values():
        run()  # warm-up, not counted
    for _ in range(max(1, opts.runs)):
        for k, run in kinds.items():
            samples[k].append(run())
    figures: dict[str, float] = {k: statistics.median(v) for k, v in samples.items()}
    figures["floor_stdio_rss_mb"] = _idle_stdio_rss(floor, env)
    figures["stdio_rss_mb"] = _idle_stdio_rss(everything, env)
    raw_app = work / "raw_asgi.py"
    raw_app.write_text(RAW_ASGI)
    port = free_port()
    figures["http_idle_rss_raw_mb"] = _idle_http_rss(
        [PY, "-m", "uvicorn", "--app-dir", str(work), "--port", str(port), "--log-level",
         "warning", "raw_asgi:app"], port, env, mcp=False)
    port = free_port()
    figures["http_idle_rss_mb"] = _idle_http_rss(
        [MCPKIT, "run", "--http", "--port", str(port), str(ROOT / "examples" /
                                                            "everything.py")],
        port, env, mcp=True)
    port = free_port()  # (information: a server whose tools use pydantic models)
    figures["http_idle_rss_notes_mb"] = _idle_http_rss(
        [MCPKIT, "run", "--http", "--port", str(port), str(ROOT / "examples" / "notes.py")],
        port, env, mcp=True, call=("notes_search", {"query": "x"}))
    for k, v in figures.items():
        print(f"{k:24s} {v:8.1f}")
    if opts.json:
        merge(opts.json, "startup", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
