"""Drive an MCP server as a real subprocess over stdio, checking everything it writes.

``ServerProcess`` speaks raw JSON lines (so tests can send hostile bytes), validates every
message the server writes against the official schema of the negotiated revision
(``WireChecker``), and always ends the child: stdin closed, then SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import itertools
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .schemas import WireChecker

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / "examples" / "everything.py"
LATEST = "2025-11-25"


class ServerProcess:
    def __init__(self, *args: str | Path, env: dict[str, str] | None = None,
                 check_schema: bool = True) -> None:
        cmd = [sys.executable, *(str(a) for a in args)] if args else [
            sys.executable, str(EVERYTHING)]
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._buf = b""
        self._ids = itertools.count(1)
        self.checker = WireChecker("server") if check_schema else None
        self.notifications: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []  # server -> client requests seen
        self.received: list[Any] = []

    # ------------------------------------------------------------------ raw I/O

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg: Any) -> None:
        if self.checker is not None:
            self.checker.saw_peer(msg)
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def recv(self, timeout: float = 10.0) -> Any:
        """The next message the server wrote (schema-checked); AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no message from the server within {timeout}s; "
                                         f"stderr: {self.stderr()[-2000:]}")
                if sel.select(left):
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        raise EOFError(f"server closed stdout; stderr: {self.stderr()[-2000:]}")
                    self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        msg = json.loads(line)  # anything but JSON on stdout fails here
        if self.checker is not None:
            self.checker.check(msg)
        self.received.append(msg)
        return msg

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    # ------------------------------------------------------------------ protocol helpers

    def next_id(self) -> int:
        return next(self._ids)

    def wait_for(self, rid: Any, timeout: float = 10.0) -> dict[str, Any]:
        """Read until the response to ``rid``; notifications/requests are collected."""
        while True:
            msg = self.recv(timeout)
            if isinstance(msg, list):
                raise AssertionError(f"unexpected batch: {msg}")
            if "method" in msg:
                (self.requests if "id" in msg else self.notifications).append(msg)
                continue
            if msg.get("id") == rid:
                return msg
            raise AssertionError(f"unexpected response {msg} while waiting for id {rid}")

    def request(self, method: str, params: dict[str, Any] | None = None,
                timeout: float = 10.0) -> dict[str, Any]:
        rid = self.next_id()
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait_for(rid, timeout)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def initialize(self, version: str = LATEST, capabilities: dict[str, Any] | None = None,
                   initialized: bool = True) -> dict[str, Any]:
        res = self.request("initialize", {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "mcpkit-tests", "version": "1.0"},
        })
        assert "result" in res, res
        if initialized:
            self.notify("notifications/initialized")
        return res["result"]

    def respond(self, rid: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    # ------------------------------------------------------------------ shutdown

    def close(self, grace: float = 5.0) -> int:
        """stdin closed -> wait -> SIGTERM -> SIGKILL (the whole process group)."""
        proc = self.proc
        try:
            if proc.stdin and not proc.stdin.closed:
                proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                return proc.wait(grace)
            except subprocess.TimeoutExpired:
                continue
        return proc.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        if proc_stdout := self.proc.stdout:
            proc_stdout.close()
        self._stderr.close()
