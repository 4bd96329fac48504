"""``mcpkit dev FILE[:OBJECT]``: serve a server over HTTP and reload it on every change.

The server runs in a child process (``python -m mcpkit run --http ...`` on loopback),
so a reload is a clean start: no module state survives it. The directory of FILE (and
any ``--watch`` directory) is watched with ``watchfiles`` for Python files. On a change,
the new version is first imported in a throwaway process; only if that works is the old
child stopped and a new one started on the same port. If it does not, the old version
keeps serving and the import error is printed. Clients see their session end at a
reload and open a new one (mcpkit's client and the Inspector do so by themselves).

With Node.js (22.19 or newer) on the PATH, the official MCP Inspector is started too
(``npx -y @modelcontextprotocol/inspector --web --transport http --server-url URL``, so
its connection form is filled in) and its address, with its session token, is printed
once it is up; ``--no-inspector`` skips it. Without Node, or with an older one, mcpkit
says so and how to call the server by hand (not how to start an Inspector that cannot
run there). Ctrl-C stops everything.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from ..transports import http_defaults

CHECK_SECONDS = 60.0  # importing the new version may take this long
START_SECONDS = 30.0  # a new child must accept connections within this
STOP_SECONDS = 5.0  # SIGTERM, then SIGKILL
INSPECTOR = "@modelcontextprotocol/inspector"
# Where the Inspector says it runs: its address with its session token (MCP_INSPECTOR_
# API_TOKEN from version 2; MCP_PROXY_AUTH_TOKEN before).
TOKEN_URL = re.compile(r"https?://\S*(?:MCP_INSPECTOR_API_TOKEN|MCP_PROXY_AUTH_TOKEN)=\w+")
NODE_FOR_INSPECTOR = (22, 19)  # its package's engines field
INSPECTOR_SECONDS = 180.0  # the first npx run downloads it


def say(message: str, out: IO[str] | None = None) -> None:
    """One status line, prefixed so it stands out from the server's own output."""
    print(f"mcpkit dev: {message}", file=out or sys.stderr, flush=True)


def check_import(spec: str, python: str) -> str | None:
    """None when ``spec`` loads as a Server in a fresh interpreter, else why not."""
    code = ("import sys\nfrom mcpkit.cli.loading import LoadError, load_server\n"
            "try:\n    load_server(sys.argv[1])\n"
            "except LoadError as exc:\n    sys.exit(str(exc))\n")
    try:
        proc = subprocess.run([python, "-c", code, spec], capture_output=True, text=True,
                              timeout=CHECK_SECONDS, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"importing it took longer than {CHECK_SECONDS:.0f} s"
    if proc.returncode == 0:
        return None
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    return "\n".join(lines[-12:]) or f"the import exited with status {proc.returncode}"


def wait_listening(host: str, port: int, child: subprocess.Popen[bytes],
                   seconds: float = START_SECONDS) -> bool:
    """Whether ``child`` accepts connections on ``host:port`` within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if child.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def stop(child: subprocess.Popen[Any] | None) -> None:
    """SIGTERM (the server drains and exits), SIGKILL after ``STOP_SECONDS``."""
    if child is None or child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


class DevServer:
    """The running child and its replacement on a change."""

    def __init__(self, spec: str, host: str, port: int, path: str, python: str) -> None:
        self.spec, self.host, self.port, self.path = spec, host, port, path
        self.python = python
        self.child: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.path}"

    def start(self) -> bool:
        """Start a child; True once it listens."""
        self.child = subprocess.Popen(  # a drain well within STOP_SECONDS: reloads stay quick
            [self.python, "-m", "mcpkit", "run", "--http", "--host", self.host, "--port",
             str(self.port), "--path", self.path, "--drain", "2", self.spec],
            stdin=subprocess.DEVNULL)
        return wait_listening(self.host, self.port, self.child)

    def reload(self, changed: list[str]) -> None:
        """After ``changed`` files: the new version if it imports, else the old one."""
        names = ", ".join(sorted({Path(p).name for p in changed}))
        problem = check_import(self.spec, self.python)
        if problem is not None:
            say(f"{names} changed, but the server does not load; still serving the "
                f"previous version:\n{problem}")
            return
        stop(self.child)
        if self.start():
            say(f"{names} changed: reloaded; serving {self.url}")
        else:
            say(f"{names} changed, and the new version did not start (see above); fix it "
                "and save again")

    def close(self) -> None:
        stop(self.child)


def node_version() -> tuple[int, ...] | None:
    """The version of the ``node`` on the PATH (None when there is none that runs)."""
    node = shutil.which("node")
    if node is None:
        return None
    try:
        out = subprocess.run([node, "-p", "process.versions.node"], capture_output=True,
                             text=True, timeout=20, stdin=subprocess.DEVNULL).stdout
        return tuple(int(part) for part in out.strip().split("."))
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


class Inspector:
    """The MCP Inspector (``npx``), its output in a log file, its address once it says
    it (``address``; ``done`` is set then, or when it gave up)."""

    def __init__(self, url: str, log: IO[bytes]) -> None:
        npx = shutil.which("npx")
        assert npx is not None
        self.log = log
        self.address: str | None = None
        self.done = threading.Event()
        self.proc = subprocess.Popen(
            [npx, "-y", INSPECTOR, "--web", "--transport", "http", "--server-url", url],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)  # its own group: npx and the Node it starts stop together
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        deadline = time.monotonic() + INSPECTOR_SECONDS
        while time.monotonic() < deadline and self.proc.poll() is None:
            self.log.seek(0)
            found = TOKEN_URL.search(self.log.read().decode(errors="replace"))
            if found:
                self.address = found.group(0)
                break
            time.sleep(0.2)
        self.done.set()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def start_inspector(url: str) -> Inspector | None:
    """The Inspector for ``url``, its address said when it is up; None (with the reason
    said) when Node.js is missing or too old for it."""
    version = node_version()
    need = ".".join(map(str, NODE_FOR_INSPECTOR))
    if version is None or shutil.which("npx") is None:
        say(f"the MCP Inspector is not started: it needs Node.js {need} or newer (with npx), "
            f"and there is none here; {by_hand(url, inspector=False)}")
        return None
    if version < NODE_FOR_INSPECTOR:
        found = ".".join(map(str, version))
        say(f"the MCP Inspector is not started: it needs Node.js {need} or newer (found "
            f"{found}); {by_hand(url, inspector=False)}")
        return None
    inspector = Inspector(url, tempfile.TemporaryFile())

    def tell() -> None:
        inspector.done.wait()
        if inspector.address:
            say(f"Inspector: {inspector.address} (its connection to {url} is filled in)")
        else:
            say(f"the MCP Inspector did not start; {by_hand(url)}")

    threading.Thread(target=tell, daemon=True).start()
    return inspector


def by_hand(url: str, inspector: bool = True) -> str:
    """How to reach the server without a launched Inspector; ``inspector``: whether this
    machine can run one (no suggesting it right after saying its Node is too old)."""
    if not inspector:
        return (f"call the server with `mcpkit list tools {url}` and `mcpkit call {url} "
                "TOOL ...`, or connect any MCP client to it (Streamable HTTP)")
    return (f"connect an Inspector with `npx {INSPECTOR}` (transport Streamable HTTP, URL "
            f"{url}), or call it: `mcpkit list tools {url}`")


def run(args: argparse.Namespace) -> int:
    """``mcpkit dev`` (see the module docstring); the exit status."""
    from watchfiles import PythonFilter, watch

    python = sys.executable
    spec = args.file
    # Until it serves, SIGTERM (a script's `kill %1`) stops it as Ctrl-C does: the child
    # it may have started already is stopped with it, not left holding the port.
    signal.signal(signal.SIGTERM, _interrupt)
    path = Path(spec.partition(":")[0])
    if not path.is_file():
        say(f"no such file: {path}")
        return 2
    try:
        problem = check_import(spec, python)
    except KeyboardInterrupt:  # stopped while the file was being checked: nothing runs
        return 0
    if problem is not None:
        say(f"{spec} does not load:\n{problem}")
        return 1
    server = DevServer(spec, args.host, args.port, args.path, python)
    inspector: Inspector | None = None
    try:
        if not server.start():
            say(f"the server did not start on {args.host}:{args.port} (see above)")
            return 1
        watched = [str(path.resolve().parent), *(str(Path(w).resolve()) for w in args.watch)]
        say(f"serving {server.url}; watching {', '.join(watched)} (Ctrl-C stops)")
        if args.inspector:
            inspector = start_inspector(server.url)
        else:
            say(by_hand(server.url))
        stop_event = _stop_on_signals()
        for changes in watch(*watched, watch_filter=PythonFilter(), debounce=300,
                             stop_event=stop_event, rust_timeout=1000, yield_on_timeout=False):
            server.reload([p for _, p in changes])
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        server.close()
        if inspector is not None:
            inspector.stop()


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt


def _stop_on_signals() -> Any:
    """An event set by SIGTERM (Ctrl-C raises KeyboardInterrupt as usual)."""
    import threading

    event = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: event.set())
    return event


def add_parser(sub: Any) -> None:
    """The ``dev`` subcommand."""
    p = sub.add_parser(
        "dev", help="serve a server over HTTP, reloading it when its files change",
        description="Serve FILE[:OBJECT] on loopback over Streamable HTTP and restart it "
        "whenever a Python file in its directory changes (the old version keeps serving "
        "if the new one does not import). Starts the MCP Inspector when Node is there.",
        epilog="example:\n  mcpkit dev examples/notes.py --port 8000",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE[:OBJECT]")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--path", default=http_defaults.PATH,
                   help=f"endpoint path (default {http_defaults.PATH})")
    p.add_argument("--watch", action="append", default=[], metavar="DIR",
                   help="another directory to watch, repeatable")
    p.add_argument("--no-inspector", dest="inspector", action="store_false",
                   help="do not start the MCP Inspector")

