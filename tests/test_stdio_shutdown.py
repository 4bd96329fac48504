"""How a stdio server ends: end of input, SIGTERM, SIGINT.

In-flight handlers get a short drain (``drain_timeout``, default 1 s; MCP clients wait
about 2 s after closing stdin before they SIGTERM), then are cancelled; answers finished
within the drain are written before exit; the process exits 0 without a traceback. Real
subprocesses; every wait is bounded.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = ROOT / "examples" / "everything.py"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def sleep_call(rid: int, seconds: float) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"seconds": seconds}}}


def start(script: Path = EVERYTHING) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def send(proc: subprocess.Popen[bytes], *messages: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    proc.stdin.flush()


def wait_for_answer(proc: subprocess.Popen[bytes], rid: int, limit: float = 10) -> None:
    """Read stdout until the answer to ``rid`` (the handshake) arrives."""
    assert proc.stdout is not None
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, "the server closed stdout early"
        if json.loads(line).get("id") == rid:
            return
    raise AssertionError(f"no answer to {rid} within {limit}s")


def close_stdin(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.stdin = None  # communicate() must not flush it again


def finish(proc: subprocess.Popen[bytes], limit: float) -> tuple[float, list[dict[str, Any]], str]:
    """Wait for exit (at most ``limit`` s): (seconds taken, messages written, stderr)."""
    began = time.monotonic()
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"the server did not exit within {limit}s") from None
    messages = [json.loads(line) for line in out.splitlines() if line.strip()]
    return time.monotonic() - began, messages, err.decode(errors="replace")


def started() -> subprocess.Popen[bytes]:
    proc = start()
    send(proc, INIT)
    wait_for_answer(proc, 0)
    send(proc, INITIALIZED)
    return proc


def test_eof_after_a_fast_call_exits_at_once() -> None:
    proc = started()
    send(proc, sleep_call(1, 0))
    close_stdin(proc)
    took, messages, err = finish(proc, 10)
    assert proc.returncode == 0, err
    assert [m["id"] for m in messages] == [1]
    assert took < 1.0, took  # nothing in flight: no drain to wait out
    assert "Traceback" not in err


def test_eof_with_a_call_that_finishes_in_the_drain() -> None:
    proc = started()
    send(proc, sleep_call(1, 0.3))
    close_stdin(proc)  # right after sending: the answer comes during the drain
    _, messages, err = finish(proc, 10)
    assert proc.returncode == 0, err
    (answer,) = messages
    assert answer["id"] == 1 and answer["result"]["isError"] is False


def test_eof_with_a_long_call_cancels_it_after_the_drain() -> None:
    proc = started()
    send(proc, sleep_call(1, 30), sleep_call(2, 0.2))
    close_stdin(proc)
    took, messages, err = finish(proc, 10)
    assert proc.returncode == 0, err
    assert [m["id"] for m in messages] == [2]  # the short one finished in the drain
    assert 0.9 < took < 5, took  # the 1 s drain, then cancelled; not the old 5 s
    assert "Traceback" not in err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_drains_then_exits_0(signum: int) -> None:
    proc = started()
    send(proc, sleep_call(1, 30), sleep_call(2, 0.3))
    time.sleep(0.1)  # both calls are running
    proc.send_signal(signum)
    took, messages, err = finish(proc, 10)
    assert proc.returncode == 0, err
    assert [m["id"] for m in messages] == [2]  # finished within the drain: written
    assert took < 5, took
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_a_second_signal_stops_at_once() -> None:
    proc = started()
    send(proc, sleep_call(1, 30))
    time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    took, _, err = finish(proc, 10)
    assert proc.returncode == 0, err
    assert took < 0.9, took  # did not wait out the 1 s drain
    assert "Traceback" not in err


def test_drain_timeout_is_configurable(tmp_path: Path) -> None:
    script = tmp_path / "slow.py"
    script.write_text(
        "import anyio\n"
        "from mcpkit import Server\n"
        "server = Server('slow', drain_timeout=4)\n"
        "@server.tool\n"
        "async def sleep(seconds: float) -> str:\n"
        "    '''Sleep.'''\n"
        "    await anyio.sleep(seconds)\n"
        "    return 'done'\n"
        "server.run()\n")
    proc = start(script)
    send(proc, INIT)
    wait_for_answer(proc, 0)
    send(proc, INITIALIZED, sleep_call(1, 2))  # longer than the default drain
    close_stdin(proc)
    took, messages, err = finish(proc, 10)
    assert proc.returncode == 0, err
    assert [m["id"] for m in messages] == [1]
    assert took >= 1.5, took


def test_sigterm_ends_a_listen_stream_with_its_completion() -> None:
    """2026-07-28 on stdio: SIGTERM answers an open ``subscriptions/listen`` with its
    completion result (R26-07.SUB.5: a graceful end, as over HTTP) before the exit; a
    call in flight still gets the drain. (Closing stdin instead cuts the listen off
    without a word: the client is the one leaving, test_stateless.py.)"""
    from tests.support.schemas import WireChecker

    checker = WireChecker("server", "2026-07-28")
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}
    listen = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
              "params": {"notifications": {"toolsListChanged": True}, "_meta": meta}}
    call = {**sleep_call(1, 0.3)}
    call["params"] = {**call["params"], "_meta": meta}
    proc = start()
    checker.saw_peer(listen)
    checker.saw_peer(call)
    send(proc, listen)
    assert proc.stdout is not None
    ack = json.loads(proc.stdout.readline())
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack
    send(proc, call)
    time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    began = time.monotonic()
    try:  # stdin left open: the signal, not the end of input, stops the server
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("the server did not exit within 10 s of SIGTERM") from None
    took = time.monotonic() - began
    _, messages, err = finish(proc, 10)
    assert proc.returncode == 0, err
    for message in messages:
        checker.check(message)
    by_id = {m["id"]: m for m in messages}
    assert by_id["L"]["result"]["resultType"] == "complete"
    assert by_id["L"]["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L"
    assert by_id[1]["result"]["isError"] is False  # the call finished within the drain
    assert took < 5, took
    assert "Traceback" not in err
