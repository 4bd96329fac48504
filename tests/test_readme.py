"""Every code block in README.md runs as written.

Shell blocks run line by line with the interpreter's own ``bin`` folder in place of
``.venv/bin/`` (so they run in whatever environment runs the tests), in a scratch folder
that sees the repository's ``examples/``. A line ending in ``&`` starts a server in the
background; the next line runs once it printed its start-up line, and ``kill %1`` stops it
(it must exit 0). Python blocks run as files: the server example is saved as
``server.py``, which the client example launches with ``python server.py``.

The first two blocks are the two commands a new user types; CI runs them itself
(``scripts/install-check`` runs the first one verbatim in a fresh copy of the repository,
``.ci/run`` the second), so here they are only pinned.
"""

from __future__ import annotations

import os
import re
import select
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.http import free_port

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
BLOCKS = [(lang, body) for lang, body in BLOCK.findall((ROOT / "README.md").read_text())]
LIMIT = 60  # seconds any one command may take


def _blocks(lang: str) -> list[str]:
    return [body for kind, body in BLOCKS if kind == lang]


def test_readme_starts_with_the_two_commands_ci_runs() -> None:
    (lang1, first), (lang2, second) = BLOCKS[:2]
    assert lang1 == lang2 == "sh"
    assert first.strip() == ("python3 -m venv .venv && .venv/bin/pip install -e . && "
                             ".venv/bin/mcpkit run examples/notes.py")
    assert second.strip() == "./scripts/check"
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./scripts/install-check" in ci and "./scripts/check" in ci
    assert "README's first command, verbatim" in (ROOT / "scripts" / "install-check").read_text()


class Shell:
    """Runs README shell lines: ``NAME=value`` assignments, commands, ``cmd &`` and
    ``kill %1``."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        # A home of its own: `mcpkit install` writes host configurations under it.
        home = cwd / "home"
        self.env = {**os.environ, "MCPKIT_NOTES_DB": str(cwd / "notes.db"), "NO_COLOR": "1",
                    "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                    "APPDATA": str(home / "AppData")}
        self.background: list[subprocess.Popen[str]] = []
        self.port = str(free_port())

    def line(self, raw: str) -> None:
        text = raw.split("  #", 1)[0].strip().replace(".venv/bin/", f"{BIN}/")
        text = text.replace("8765", self.port)
        if not text:
            return
        assignment = re.fullmatch(r"([A-Za-z_]\w*)=(.*)", text)
        if assignment:
            (value,) = shlex.split(assignment.group(2))
            self.env[assignment.group(1)] = value
        elif text == "kill %1":
            proc = self.background.pop(0)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=15)
            assert proc.returncode == 0, err
        elif text.endswith("&"):
            proc = subprocess.Popen(["bash", "-c", text[:-1]], cwd=self.cwd, env=self.env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.background.append(proc)
            assert proc.stderr is not None
            ready, _, _ = select.select([proc.stderr], [], [], 20)
            assert ready, f"{raw!r} printed no start-up line"
            assert "http://" in proc.stderr.readline()
        else:
            res = subprocess.run(["bash", "-c", text], cwd=self.cwd, env=self.env,
                                 capture_output=True, text=True, timeout=LIMIT)
            assert res.returncode == 0, (raw, res.stdout, res.stderr)

    def close(self) -> None:
        for proc in self.background:
            proc.kill()
            proc.wait(timeout=10)


def test_shell_blocks_in_order(tmp_path: Path) -> None:
    """The shell blocks after the first two, top to bottom in one shell (a later block
    uses what an earlier one set, as a reader would)."""
    bodies = _blocks("sh")[2:]
    assert bodies
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    shell = Shell(tmp_path)
    try:
        for body in bodies:
            for raw in body.splitlines():
                shell.line(raw)
    finally:
        shell.close()
    assert (tmp_path / "report.html").read_text().lower().startswith("<!doctype html>")
    assert (tmp_path / "report.json").read_text().startswith("{")
    desktop = tmp_path / "home" / ".config" / "Claude" / "claude_desktop_config.json"
    assert "notes" in desktop.read_text()  # mcpkit install, in the scratch home
    assert "notes" in (tmp_path / ".vscode" / "mcp.json").read_text()


def test_python_blocks(tmp_path: Path) -> None:
    server, client = _blocks("python")
    assert "server.run()" in server and 'Client(["python", "server.py"])' in client
    (tmp_path / "server.py").write_text(server)
    (tmp_path / "client.py").write_text(client)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    res = subprocess.run([sys.executable, "client.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=LIMIT)
    assert res.returncode == 0, res.stderr
    names, result = res.stdout.splitlines()
    assert names == "['forecast']"
    assert result == "{'day 1': 18.5, 'day 2': 19.0} False"
