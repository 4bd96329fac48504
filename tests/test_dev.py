"""``mcpkit dev`` (issue #15, item 2): serve, reload on change, keep the old version on
a broken one.

The real command runs in a subprocess on a free loopback port with a server file in a
temporary directory; the test edits the file as a developer would and calls the server
with mcpkit's client after each step. Without Node on the PATH the command says how to
call the server by hand. Every wait is bounded; the process group is stopped at the
end and the port must be free again (no orphaned server).
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

from mcpkit.client import Client
from tests.support.http import free_port

LIMIT = 60

VERSION = '''
from mcpkit import Server

server = Server("dev-demo")


@server.tool
def version() -> str:
    """Which version of the server answers."""
    return "{text}"
'''


class Dev:
    """``mcpkit dev`` in a subprocess; its stderr lines in a queue."""

    def __init__(self, file: Path, port: int, path: str | None = None,
                 cwd: Path | None = None) -> None:
        # Only the interpreter's folder on the PATH unless given: no Node, no npx.
        env = {**os.environ, "PATH": path or str(Path(sys.executable).parent)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpkit", "dev", str(file), "--port", str(port)],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
            start_new_session=True, cwd=cwd)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)

    def wait_for(self, words: str, seconds: float = LIMIT) -> str:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self.seen.append(line)
            if words in line:
                return line
        raise AssertionError(f"no {words!r} within {seconds} s; saw:\n{''.join(self.seen)}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            status = self.proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            status = self.proc.wait()
        self.reader.join(5)  # it ends at the pipe's end of file
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        return status


async def answer(url: str) -> str:
    with anyio.fail_after(15):
        async with Client(url, timeout=10) as client:
            return (await client.call_tool("version")).text


def save(file: Path, text: str) -> None:
    file.write_text(text)
    os.utime(file)


def test_serves_reloads_and_keeps_the_old_version_when_the_new_one_breaks(
        tmp_path: Path) -> None:
    file = tmp_path / "server.py"
    save(file, VERSION.format(text="one"))
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    dev = Dev(file, port)
    try:
        dev.wait_for(f"serving {url}")
        said = dev.wait_for("Inspector")  # no Node here: how to call it by hand
        assert f"call the server with `mcpkit list tools {url}`" in said
        assert "npx @" not in said  # (no Inspector to start with it)
        assert anyio.run(answer, url) == "one"

        save(file, VERSION.format(text="two"))
        dev.wait_for("server.py changed: reloaded")
        assert anyio.run(answer, url) == "two"

        save(file, VERSION.format(text="three").replace("def version", "def version("))
        dev.wait_for("does not load; still serving the previous version")
        dev.wait_for("SyntaxError")
        assert anyio.run(answer, url) == "two"  # the old one still answers

        save(file, VERSION.format(text="four"))
        dev.wait_for("reloaded")
        assert anyio.run(answer, url) == "four"
    finally:
        status = dev.stop()
    assert status == 0
    with socket.socket() as s:  # the server child is gone with it: nothing listens
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (TIME_WAIT is fine)
        s.bind(("127.0.0.1", port))


def test_a_file_that_does_not_load_is_refused_at_once(tmp_path: Path) -> None:
    file = tmp_path / "server.py"
    file.write_text("from mcpkit import Server\nraise RuntimeError('no database')\n")
    proc = subprocess.run([sys.executable, "-m", "mcpkit", "dev", str(file), "--port",
                           str(free_port()), "--no-inspector"], capture_output=True,
                          text=True, timeout=LIMIT)
    assert proc.returncode == 1
    assert "does not load" in proc.stderr and "RuntimeError: no database" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "mcpkit", "dev", str(tmp_path / "none.py")],
                          capture_output=True, text=True, timeout=LIMIT)
    assert proc.returncode == 2 and "no such file" in proc.stderr


@pytest.mark.parametrize("spec", ["server.py:nothing"])
def test_an_object_that_is_not_a_server_is_refused(tmp_path: Path, spec: str) -> None:
    (tmp_path / "server.py").write_text(VERSION.format(text="x"))
    proc = subprocess.run([sys.executable, "-m", "mcpkit", "dev", spec, "--no-inspector",
                           "--port", str(free_port())], capture_output=True, text=True,
                          timeout=LIMIT, cwd=tmp_path)
    assert proc.returncode == 1 and "has no Server named 'nothing'" in proc.stderr


INSPECTOR_VERSION = "2.12.0"


def test_the_real_inspector_is_started_with_the_server_filled_in(tmp_path: Path) -> None:
    """The official Inspector (pinned, installed once into the test cache with npm; run by
    npx from there, with a Node >= 22.19) comes up with its token URL, answers on it, and
    is stopped with ``mcpkit dev``."""
    import httpx

    from tests.support.node import NodeUnavailable, cache_dir, find_node, locked, npm_install

    cache = cache_dir()
    try:
        node = find_node(cache)
        target = cache / f"inspector-{INSPECTOR_VERSION}"
        with locked(cache):
            npm_install(target, f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}")
    except NodeUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))
    npx = shutil.which("npx")
    if npx is None:
        if os.environ.get("CI"):
            raise AssertionError("npx is missing (apt-get install npm)")
        pytest.skip("no npx")
    path = os.pathsep.join([str(Path(node).parent), str(Path(npx).parent),
                            str(Path(sys.executable).parent)])
    file = tmp_path / "server.py"
    save(file, VERSION.format(text="one"))
    port = free_port()
    dev = Dev(file, port, path=path, cwd=target)  # npx finds the installed package there
    try:
        dev.wait_for(f"serving http://127.0.0.1:{port}/mcp")
        line = dev.wait_for("Inspector: ", seconds=180)
        address = line.split("Inspector: ", 1)[1].split(" ", 1)[0]
        assert "MCP_INSPECTOR_API_TOKEN=" in address
        assert httpx.get(address, timeout=10).status_code == 200
    finally:
        assert dev.stop() == 0
    with pytest.raises(httpx.ConnectError):  # stopped with it
        httpx.get(address, timeout=5)
