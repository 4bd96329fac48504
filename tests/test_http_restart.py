"""Resumability across a server restart: SQLite keeps the session and its SSE events.

A client's POST stream is cut right after the priming event; the tool goes on and its
progress and result are stored. The server process is then stopped and started again on
the same database; the client resumes with GET + Last-Event-ID on its old session id and
receives exactly the missed events of that stream, in order, once, ending with the
response, every message valid against the official schema.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from mcpkit.protocol.sse import SSEParser
from tests.support.schemas import WireChecker

ROOT = Path(__file__).resolve().parents[1]
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server:
    def __init__(self, port: int, db: Path) -> None:
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "examples" / "everything.py"), "--http", "--port",
             str(port), "--sqlite", str(db)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url.replace("/mcp", "/"), timeout=0.5)
                return
            except httpx.HTTPError:
                time.sleep(0.05)
        self.stop()
        raise AssertionError("the server did not start")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        assert self.proc.stderr is not None
        self.proc.stderr.close()


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "mcp.db"


def _events(resp: httpx.Response) -> list[tuple[str | None, bytes]]:
    parser = SSEParser()
    out: list[tuple[str | None, bytes]] = []
    for chunk in resp.iter_bytes():
        for event in parser.feed(chunk):
            out.append((event.id, event.data.encode()))
    return out


def test_resume_after_restart_replays_missed_events_once(db: Path) -> None:
    port = _free_port()
    checker = WireChecker("server")
    server = _Server(port, db)
    try:
        with httpx.Client(timeout=10) as http:
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "restart-test", "version": "1"}}}
            checker.saw_peer(init)
            r = http.post(server.url, content=orjson.dumps(init), headers=HEADERS)
            assert r.status_code == 200
            checker.check(r.json())
            sid = r.headers["mcp-session-id"]
            hdrs = {**HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert http.post(server.url, content=orjson.dumps(note), headers=hdrs
                             ).status_code == 202
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "test_tool_with_progress", "_meta": {"progressToken": "tok"}}}
            checker.saw_peer(call)
            # Read only the priming event, then cut the connection.
            with http.stream("POST", server.url, content=orjson.dumps(call), headers=hdrs
                             ) as resp:
                assert resp.headers["content-type"].startswith("text/event-stream")
                parser = SSEParser()
                primed = None
                for chunk in resp.iter_raw():
                    events = parser.feed(chunk)
                    if events:
                        primed = events[0]
                        break
            assert primed is not None and primed.id and primed.data == ""
            assert primed.retry is not None
            time.sleep(0.6)  # the tool finishes meanwhile; its events are stored
    finally:
        server.stop()

    server = _Server(port, db)  # same database: the session and its events survive
    try:
        with httpx.Client(timeout=10) as http:
            hdrs = {"accept": "text/event-stream", "mcp-session-id": sid,
                    "mcp-protocol-version": "2025-11-25", "last-event-id": primed.id}
            with http.stream("GET", server.url, headers=hdrs) as resp:
                assert resp.status_code == 200
                replayed = _events(resp)
            msgs = [orjson.loads(d) for _, d in replayed if d]
            for m in msgs:
                checker.check(m)
            progress = [m["params"]["progress"] for m in msgs if m.get("method")]
            assert progress == [0, 50, 100]
            assert msgs[-1]["id"] == 2 and msgs[-1]["result"]["content"][0]["text"] == "tok"
            ids = [i for i, d in replayed if d]
            assert len(ids) == len(set(ids)) == 4  # each event once
            # Resuming again from the last event gives nothing more.
            hdrs["last-event-id"] = ids[-1]
            with http.stream("GET", server.url, headers=hdrs) as resp:
                assert resp.status_code == 200
                assert [d for _, d in _events(resp) if d] == []
            # A made-up event id of this session is refused, never served.
            hdrs["last-event-id"] = "s999_12345"
            assert http.get(server.url, headers=hdrs).status_code == 400
    finally:
        server.stop()
    assert checker.checked == 5  # initialize + 3 progress + the response
