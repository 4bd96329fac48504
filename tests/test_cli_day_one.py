"""What a new user meets in the first hour with the ``mcpkit`` command (issue #26, items 5,
6 and 10), through real processes: a pseudo-terminal, ``bash -c``, a server on loopback.

- ``mcpkit run FILE`` on a terminal says what it is doing and what to run instead; started
  by a host (stdin a pipe) it says nothing.
- The quickstart's ``mcpkit dev notes.py ... &`` then ``mcpkit call URL ...``, run as the
  page has it in a plain ``bash -c``, works every time: a URL command waits (``--wait``)
  for a server that does not listen yet, and says so; with nothing coming it gives up.
- Ctrl-C during ``call --task`` says that the task goes on and how to get its result,
  and that command works; ``mcpkit dev`` with a Node too old for the Inspector does not
  suggest starting the Inspector.
"""

from __future__ import annotations

import os
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .support.http import LiveServer, everything_server, free_port
from .test_cli import PY, ROOT, error_lines, mcpkit
from .test_cli_elicit import Terminal, _stop_terminals  # noqa: F401 (the fixture)
from .test_docs_examples import blocks

BIN = Path(sys.executable).parent
LIMIT = 60

SERVER = '''
from mcpkit import Server

server = Server("first-hour")


@server.tool
def ping() -> str:
    """Answers pong."""
    return "pong"
'''


# ---------------------------------------------------------------------- item 5: run


def test_run_on_a_terminal_says_what_it_does_and_what_to_run_instead(tmp_path: Path) -> None:
    file = tmp_path / "server.py"
    file.write_text(SERVER)
    term = Terminal("run", str(file))
    term.expect("mcpkit: serving 'first-hour' over stdio, for an MCP host that starts it")
    term.expect("typing here does nothing useful")
    quoted = shlex.quote(f"mcpkit run {file}")
    term.expect(f"mcpkit dev {file}")
    term.expect(f"mcpkit list tools --stdio {quoted}")
    term.expect(f"mcpkit call --stdio {quoted} TOOL key=value")
    term.expect("Ctrl-C stops it.")
    time.sleep(0.3)  # it is serving now: stdin is its MCP channel
    term.proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
    status, out = term.finish()
    assert out == ""  # stdout stays the MCP channel: nothing but messages on it
    assert status in (0, 130)
    assert "Traceback" not in term.screen


def test_run_started_by_a_host_says_nothing(tmp_path: Path) -> None:
    """Stdin a pipe, as a host starts it: no word on stderr, and the server answers."""
    file = tmp_path / "server.py"
    file.write_text(SERVER)
    init = ('{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {'
            '"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": '
            '{"name": "host", "version": "1"}}}\n')
    res = subprocess.run([PY, "-m", "mcpkit.cli", "run", str(file)], input=init,
                         capture_output=True, text=True, timeout=LIMIT)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    assert '"serverInfo"' in res.stdout


# ---------------------------------------------------------------------- item 6: --wait


def quickstart_dev_block() -> tuple[str, str]:
    """The quickstart's server file and its ``mcpkit dev ... &`` block, as written."""
    page = blocks(ROOT / "docs" / "quickstart.md")
    (notes,) = [b.body for b in page if b.mark == "file" and b.arg == "notes.py"]
    (dev,) = [b.body for b in page if b.mark == "run" and "mcpkit dev" in b.body]
    return notes, dev


@pytest.mark.parametrize("run", range(20))
def test_the_quickstarts_dev_then_call_works_in_a_plain_shell(tmp_path: Path,
                                                               run: int) -> None:
    """The block runs in one ``bash -c`` as a person's shell runs it: the call starts
    while ``mcpkit dev`` is still loading the file (20 runs: before --wait, about half
    were refused)."""
    notes, block = quickstart_dev_block()
    (tmp_path / "notes.py").write_text(notes)
    script = block.replace("8765", str(free_port()))
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1",
           "HOME": str(tmp_path)}
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as stdout, err.open("w") as stderr:
        shell = subprocess.Popen(
            ["bash", "-c", "set -e; trap 's=$?; kill $(jobs -p) 2>/dev/null || true; "
             f"wait || true; exit $s' EXIT\n{script}"],
            cwd=tmp_path, env=env, stdout=stdout, stderr=stderr, start_new_session=True)
        try:
            status = shell.wait(LIMIT)
        finally:  # whatever is left of the session (nothing, when all went well)
            try:
                os.killpg(shell.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            shell.wait(10)
    said = err.read_text()
    assert status == 0, said
    assert out.read_text() == "[]\n"  # notes_search found nothing: a fresh folder
    assert "connection refused" not in said


def test_a_url_command_waits_for_a_server_that_starts_late(tmp_path: Path) -> None:
    """Started before its server, a URL command says once that it waits, then works."""
    port = free_port()
    file = tmp_path / "server.py"
    file.write_text(SERVER)
    call = subprocess.Popen([PY, "-m", "mcpkit.cli", "call", f"http://127.0.0.1:{port}/mcp",
                             "ping"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    server = None
    try:
        # The server starts once the command has said it waits (a fixed sleep was too short
        # for a loaded machine, where Python alone took longer to start).
        assert call.stderr is not None
        ready, _, _ = select.select([call.stderr], [], [], LIMIT)
        assert ready, "the command said nothing while nothing listened"
        said = call.stderr.readline()
        server = subprocess.Popen([PY, "-m", "mcpkit.cli", "run", "--http", "--port",
                                   str(port), str(file)], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out, rest = call.communicate(timeout=LIMIT)
        err = said + rest
    finally:
        call.kill()
        if server is not None:
            server.terminate()
            server.wait(15)
    assert call.returncode == 0, err
    assert out == "pong\n"
    assert err == (f"mcpkit: nothing listens on 127.0.0.1:{port} yet; waiting up to 10 s for "
                   "the server (--wait SECONDS)\n")


@pytest.mark.parametrize("command", [("list", "tools"), ("check",)])
def test_with_nothing_coming_a_url_command_gives_up_after_wait(command: tuple[str, ...]
                                                               ) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    started = time.monotonic()
    res = mcpkit(*command, url, "--wait", "1.5", timeout=LIMIT)
    took = time.monotonic() - started
    assert res.returncode == (2 if command[0] == "list" else 1)  # check: a failing report
    lines = error_lines(res)
    assert lines[0] == (f"mcpkit: nothing listens on 127.0.0.1:{port} yet; waiting up to "
                        "1.5 s for the server (--wait SECONDS)")
    if command[0] == "list":
        assert lines[1:] == [
            f"mcpkit: error: cannot reach {url}: nothing is listening on 127.0.0.1:{port} "
            "(connection refused) (waited 1.5 s); is the server running, and are the host, "
            "port and path right?"]
    assert 1.5 <= took < LIMIT


def test_a_refusal_that_is_not_a_closed_port_is_not_waited_for() -> None:
    """A host name that does not resolve is no server starting up: no wait."""
    res = mcpkit("list", "tools", "http://no-such-host.invalid:8765/mcp", timeout=LIMIT)
    assert res.returncode == 2
    assert "waiting" not in res.stderr and "cannot resolve the host name" in res.stderr


# ---------------------------------------------------------------------- item 10


def test_ctrl_c_during_call_task_says_the_task_goes_on_and_how_to_get_it() -> None:
    with LiveServer(everything_server().asgi_app()) as live:
        proc = subprocess.Popen([PY, "-m", "mcpkit.cli", "call", "--task", live.url,
                                 "slow_compute", "seconds:=3", "label=late"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT)
        try:
            assert proc.stderr is not None
            first = proc.stderr.readline()  # "task ID: created"
            assert first.startswith("task ") and first.endswith(": created\n"), first
            task_id = first.split()[1].rstrip(":")
            proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
            out, err = proc.communicate(timeout=LIMIT)
        finally:
            proc.kill()
        assert proc.returncode == 130, err
        assert out == ""
        said = f"mcpkit tasks result {live.url} {task_id}"
        assert (f"mcpkit: interrupted; task {task_id} goes on on the server. Its result: "
                f"{said} (its state: mcpkit tasks get ...; to stop it: mcpkit tasks cancel "
                "...)") in err
        again = mcpkit(*shlex.split(said)[1:], timeout=LIMIT)  # as printed
        assert again.returncode == 0, again.stderr
        assert again.stdout == "Computed late in 3s\n"


def test_ctrl_c_during_a_stdio_task_says_it_ends_with_the_command() -> None:
    everything = shlex.join([PY, str(ROOT / "examples" / "everything.py")])
    proc = subprocess.Popen([PY, "-m", "mcpkit.cli", "call", "--task", "--stdio",
                             everything, "slow_compute", "seconds:=30"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        task_id = first.split()[1].rstrip(":")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=LIMIT)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert (f"mcpkit: interrupted; task {task_id} was bound to this command's session, "
            "which ends now: no other command can reach it") in err


def fake_node(tmp_path: Path, version: str) -> str:
    """A folder with a ``node`` reporting ``version`` and an ``npx``, first on a PATH."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, body in (("node", f"echo {version}"), ("npx", "exit 1")):
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    return os.pathsep.join([str(folder), str(BIN), "/usr/bin", "/bin"])


@pytest.mark.parametrize("node", ["18.19.0", None])
def test_dev_without_a_node_for_the_inspector_does_not_suggest_it(
        tmp_path: Path, node: str | None) -> None:
    file = tmp_path / "server.py"
    file.write_text(SERVER)
    path = fake_node(tmp_path, node) if node else str(BIN)
    port = free_port()
    proc = subprocess.Popen([PY, "-m", "mcpkit", "dev", str(file), "--port", str(port)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PATH": path}, start_new_session=True)
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            lines.append(line)
            if not line or "Inspector" in line:
                break
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=15)
    said = lines[-1]
    found = f" (found {node})" if node else " (with npx), and there is none here"
    url = f"http://127.0.0.1:{port}/mcp"
    assert said == (f"mcpkit dev: the MCP Inspector is not started: it needs Node.js 22.19 "
                    f"or newer{found}; call the server with `mcpkit list tools {url}` and "
                    f"`mcpkit call {url} TOOL ...`, or connect any MCP client to it "
                    "(Streamable HTTP)\n"), lines
    assert "npx" not in said.split("(with npx)")[-1]


def test_dev_stopped_while_starting_leaves_no_server_behind(tmp_path: Path) -> None:
    """A script's ``kill %1`` may come while ``mcpkit dev`` is still starting its server
    (seen while testing item 6 on main: the child lived on, holding the port). SIGTERM
    then stops the child too."""
    import socket

    file = tmp_path / "server.py"
    file.write_text("import time\ntime.sleep(1.5)  # a slow import\n" + SERVER)
    port = free_port()
    proc = subprocess.Popen([PY, "-m", "mcpkit", "dev", str(file), "--port", str(port),
                             "--no-inspector"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(2.5)  # the check import is done; the server child is importing
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(30)
        time.sleep(3)  # an orphaned child would listen by now
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0, "the server outlived mcpkit dev"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # (what is left of its group, if anything)
        except ProcessLookupError:
            pass
        proc.wait(10)
    assert status == 0
