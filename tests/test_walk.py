"""docs/architecture.md walks one ``tools/call`` module by module, from stdio bytes and
from an HTTP POST; this traces the same call in a real server process and holds the page
to it: every module the call passes through is named there, and nothing else (#27: the
walk is what the layering costs a request, so it must not grow unnoticed)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from .support.http import free_port

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "servers" / "walk_server.py"
PAGE = ROOT / "docs" / "architecture.md"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "walk", "version": "0"}}}


def _call(rid: int, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments or {}}}


def _documented(heading: str) -> list[str]:
    """The modules the numbered list under ``heading`` names (its first path each)."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split(f"### {heading}", 1)[1].split("\n\n", 2)[1]
    return [m.group(1) for line in section.splitlines()
            if (m := re.match(r"\d+\. `([a-z_/]+\.py)`", line))]


def _walked(answer: dict[str, Any]) -> list[str]:
    modules: list[str] = answer["result"]["structuredContent"]["result"]
    return modules


def test_the_stdio_walk_is_the_documented_one() -> None:
    lines = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             _call(1, "add", {"a": 1, "b": 2}),  # warm: first-call imports are not the walk
             _call(2, "start_walk"), _call(3, "add", {"a": 1, "b": 2}), _call(4, "stop_walk")]
    answers: dict[int, dict[str, Any]] = {}
    with subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        for message in lines:  # one at a time: the walk is of one call, not of a batch
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            if "id" in message:
                answer = json.loads(proc.stdout.readline())
                answers[answer["id"]] = answer
        proc.stdin.close()
        proc.wait(timeout=30)
    assert answers[3]["result"]["structuredContent"] == {"result": 3}
    walked = _walked(answers[4])
    documented = _documented("From stdio bytes")
    assert len(documented) == len(set(documented)) == 19, documented  # each named once
    assert set(walked) == set(documented), (
        f"walked, not on the page: {sorted(set(walked) - set(documented))}; on the page, "
        f"not walked: {sorted(set(documented) - set(walked))}")


def test_the_http_walk_is_the_documented_one() -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        accept = {"accept": "application/json, text/event-stream"}
        with httpx.Client(timeout=30) as http:
            deadline = time.monotonic() + 30
            while True:
                try:
                    first = http.post(url, json=INIT, headers=accept)
                    break
                except httpx.ConnectError:
                    assert time.monotonic() < deadline and proc.poll() is None
                    time.sleep(0.05)
            headers = {**accept, "mcp-session-id": first.headers["mcp-session-id"],
                       "mcp-protocol-version": "2025-11-25"}
            http.post(url, headers=headers,
                      json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            answers = [http.post(url, headers=headers, json=message).json() for message in (
                _call(1, "add", {"a": 1, "b": 2}), _call(2, "start_walk"),
                _call(3, "add", {"a": 1, "b": 2}), _call(4, "stop_walk"))]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert answers[2]["result"]["structuredContent"] == {"result": 3}
    walked = _walked(answers[3])
    documented = _documented("From an HTTP POST")
    assert len(documented) == len(set(documented)) == 22, documented
    assert set(walked) == set(documented), (
        f"walked, not on the page: {sorted(set(walked) - set(documented))}; on the page, "
        f"not walked: {sorted(set(documented) - set(walked))}")
