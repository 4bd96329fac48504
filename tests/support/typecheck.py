"""Run mypy --strict over a user's code, as a user's CI would, to test what it accepts.

Lines of the code that mypy must refuse end with ``# refused``; ``mypy_verdict`` returns
the lines it refused, the lines marked, and its output (for the assertion message).
"""

from __future__ import annotations

from pathlib import Path


def mypy_verdict(code: str, tmp_path: Path) -> tuple[list[int], list[int], str]:
    """(lines mypy reported an error on, lines marked ``# refused``, mypy's output)."""
    from mypy import api

    (tmp_path / "user.py").write_text(code)
    out, err, _ = api.run(["--strict", "--python-version", "3.11", "--config-file", "",
                           "--cache-dir", str(tmp_path / "cache"), str(tmp_path / "user.py")])
    refused = [n for n, line in enumerate(code.splitlines(), 1) if "# refused" in line]
    errors = sorted({int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line})
    return errors, refused, out + err
