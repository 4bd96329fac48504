"""Runs the shell lines of a documentation page as a reader would type them.

Used by tests/test_readme.py (README.md) and tests/test_docs_examples.py (docs/*.md).
``.venv/bin/`` becomes the folder of the interpreter running the tests, which is also put
first on ``PATH`` (so a page may write ``mcpkit ...`` as an activated venv would), and port
8765 becomes a free one. ``NAME=value`` sets a variable for the following lines, a line
ending in ``&`` starts a server in the background and the next line runs at once, as in a
person's shell (a command that connects to it waits for it: ``--wait``), ``kill %1``
stops the oldest one (it must exit 0, and its first line on stderr must have named its
``http://`` URL), and any other line must exit 0 within ``LIMIT`` seconds. HOME is a scratch folder
of its own: ``mcpkit install`` writes host configurations under it.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.http import free_port

BIN = Path(sys.executable).parent
LIMIT = 60  # seconds any one command may take


class Shell:
    """Runs shell lines: ``NAME=value`` assignments, commands, ``cmd &`` and ``kill %1``."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        home = cwd / "home"
        self.home = home
        self.env = {**os.environ, "MCPKIT_NOTES_DB": str(cwd / "notes.db"), "NO_COLOR": "1",
                    "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                    "APPDATA": str(home / "AppData"),
                    "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        self.background: list[subprocess.Popen[str]] = []
        self.port = str(free_port())
        self.outputs: list[str] = []  # stdout of each foreground command, in order

    def line(self, raw: str) -> None:
        text = raw.split("  #", 1)[0].strip().replace(".venv/bin/", f"{BIN}/")
        text = text.replace("8765", self.port)
        if not text or text.startswith("#"):
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
            assert "http://" in err.split("\n", 1)[0], f"no start-up line naming the URL: {err}"
        elif text.endswith("&"):
            proc = subprocess.Popen(["bash", "-c", text[:-1]], cwd=self.cwd, env=self.env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.background.append(proc)
        else:
            res = subprocess.run(["bash", "-c", text], cwd=self.cwd, env=self.env,
                                 capture_output=True, text=True, timeout=LIMIT)
            assert res.returncode == 0, (raw, res.stdout, res.stderr)
            self.outputs.append(res.stdout)

    def run_python(self, name: str) -> str:
        """Run the program saved as ``name`` with the tests' interpreter; its stdout."""
        res = subprocess.run([sys.executable, name], cwd=self.cwd, env=self.env,
                             capture_output=True, text=True, timeout=LIMIT)
        assert res.returncode == 0, (name, res.stdout, res.stderr[-3000:])
        self.outputs.append(res.stdout)
        return res.stdout

    def close(self) -> None:
        for proc in self.background:
            proc.kill()
            proc.wait(timeout=10)
