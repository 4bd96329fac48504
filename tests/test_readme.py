"""Every code block in README.md runs as written.

Shell blocks run line by line (tests/support/shell.py: the interpreter's own ``bin`` folder
in place of ``.venv/bin/``, a scratch HOME) in a scratch folder that sees the repository's
``examples/``, with the README's server example saved there as ``server.py``, which they
call and register with a host. The guides that moved to the documentation site are run
by tests/test_docs_examples.py.

The first two blocks are the two commands a new user types; CI runs them itself
(``scripts/install-check`` runs the first one verbatim in a fresh copy of the repository,
``.ci/run`` the second), so here they are only pinned.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.shell import Shell

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
    uses what an earlier one set, as a reader would), with the README's server saved as
    ``server.py`` as the text says."""
    (server,) = _blocks("python")
    assert "server.run()" in server
    (tmp_path / "server.py").write_text(server)
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
    added, found, forecast, _ = shell.outputs
    assert '"title":"Groceries"' in added and '"tags":["shopping"]' in found
    assert forecast.strip() == '{"day 1":18.5,"day 2":19.0}'
    desktop = tmp_path / "home" / ".config" / "Claude" / "claude_desktop_config.json"
    assert "server.py" in desktop.read_text()  # mcpkit install, in the scratch home


def test_the_readme_links_every_guide() -> None:
    """The README sends a first visitor to the site's pages, Performance included."""
    text = (ROOT / "README.md").read_text()
    for page in ("quickstart", "server", "eras", "design", "http", "auth", "testing",
                 "client", "cli", "check", "migration", "api", "performance"):
        assert f"](docs/{page}.md)" in text, page
