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
import subprocess
import sys
from pathlib import Path

from tests.support.shell import BIN, LIMIT, Shell

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
BLOCKS = [(lang, body) for lang, body in BLOCK.findall((ROOT / "README.md").read_text())]


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
