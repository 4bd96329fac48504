"""What a fresh interpreter imports: the start-up guards' one way to ask
(``tests/test_startup.py`` and the features that must cost nothing unless used)."""

from __future__ import annotations

import json
import subprocess
import sys


def modules_after(code: str, *, stdin: str = "") -> set[str]:
    """The modules a fresh interpreter holds after ``code`` (printed by an atexit hook, so
    a ``SystemExit`` or a server's return counts)."""
    hook = ("import atexit, json, sys\n"
            "atexit.register(lambda: sys.stderr.write("
            "'MODULES ' + json.dumps(sorted(sys.modules)) + '\\n'))\n")
    res = subprocess.run([sys.executable, "-c", hook + code], input=stdin,
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("MODULES ")]
    return set(json.loads(line[len("MODULES "):]))
