"""Every code block of the documentation site that is a complete program runs, as written.

Each ``python``/``sh`` block in ``docs/*.md`` carries a marker, an HTML comment on the line
before its fence (invisible on the site):

- ``<!-- run -->`` (or ``<!-- run: NAME.py -->``): a python block is saved (as NAME.py) and
  run with this interpreter; a sh block runs line by line (tests/support/shell.py). Both
  must exit 0.
- ``<!-- file: NAME -->``: the block is a complete file saved as NAME for later blocks of
  the page (a server that a client block or a shell line then starts).
- ``<!-- output -->`` before a ``text`` block: it must equal what the previous run block
  printed on stdout.
- ``<!-- tested: tests/PATH.py -->``: another test runs this block (the file must exist).
- ``<!-- fragment -->``: part of a program (a decorator, a call, a config line), not run.

A page's blocks run top to bottom in one scratch folder (with the repository's
``examples/`` beside them) and one scratch HOME, as a reader following the page would.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.shell import Shell

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```",
                   re.M | re.S)
MARK = re.compile(r"<!--\s*(run|file|fragment|tested|output)(?::\s*(\S+?))?\s*-->\s*\Z")
PROGRAMS = {"python", "py", "sh", "bash", "shell", "console"}


@dataclass
class Block:
    page: str
    line: int
    lang: str
    mark: str | None
    arg: str | None
    body: str


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n ").rsplit("\n", 1)[-1].strip()
        mark = MARK.search(before)
        body = "\n".join(line[len(m["indent"]):] for line in m["body"].splitlines())
        found.append(Block(page.name, text.count("\n", 0, m.start()) + 1, m["lang"],
                           mark[1] if mark else None, mark[2] if mark else None, body + "\n"))
    return found


def _ids(page: Path) -> str:
    return page.name


@pytest.mark.parametrize("page", PAGES, ids=_ids)
def test_every_program_block_is_run_or_marked_a_fragment(page: Path) -> None:
    unmarked = [f"{b.page}:{b.line} ({b.lang})" for b in blocks(page)
                if b.lang in PROGRAMS and b.mark is None]
    assert not unmarked, ("mark each block <!-- run -->, <!-- file: NAME -->, "
                          f"<!-- tested: tests/... --> or <!-- fragment -->: {unmarked}")
    for b in blocks(page):
        if b.mark == "tested":
            assert b.arg and (ROOT / b.arg).is_file(), f"{b.page}:{b.line} names {b.arg}"
        if b.mark in {"run", "file", "output"} and b.lang not in PROGRAMS | {"text", ""}:
            pytest.fail(f"{b.page}:{b.line}: a {b.lang} block cannot be {b.mark}")


def run_page(page: Path, tmp_path: Path) -> Shell:
    """Run the page's marked blocks in order; the shell, for assertions on what they left."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    shell = Shell(tmp_path)
    last = ""
    try:
        for n, b in enumerate(blocks(page)):
            where = f"{b.page}:{b.line}"
            if b.mark == "file":
                assert b.arg, f"{where}: <!-- file: NAME -->"
                (tmp_path / b.arg).write_text(b.body)
            elif b.mark == "run" and b.lang in {"python", "py"}:
                name = b.arg or f"block{n}.py"
                (tmp_path / name).write_text(b.body)
                last = shell.run_python(name)
            elif b.mark == "run":
                start = len(shell.outputs)
                for raw in b.body.splitlines():
                    shell.line(raw)
                last = "".join(shell.outputs[start:])
            elif b.mark == "output":
                assert last.rstrip() == b.body.rstrip(), f"{where}: the program printed\n{last}"
    except BaseException:
        shell.close()
        raise
    return shell


RUNNABLE = [p for p in PAGES if any(b.mark == "run" for b in blocks(p))]


@pytest.mark.parametrize("page", RUNNABLE, ids=_ids)
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    shell = run_page(page, tmp_path)
    shell.close()
    if page.name == "quickstart.md":
        # the quickstart ends with the server registered in a host, in the scratch HOME
        config = shell.home / ".config" / "Claude" / "claude_desktop_config.json"
        entry = json.loads(config.read_text())["mcpServers"]["notes"]
        assert entry["args"][-1].endswith("notes.py")


def test_the_block_reader_sees_markers_and_bodies(tmp_path: Path) -> None:
    """The parser finds a marked block, an unmarked one and an indented one."""
    page = tmp_path / "x.md"
    page.write_text("<!-- run: a.py -->\n```python\nprint(1)\n```\n\n```sh\nls\n```\n\n"
                    "- item\n\n    <!-- fragment -->\n    ```python\n    x = 1\n    ```\n")
    got = [(b.lang, b.mark, b.arg, b.body) for b in blocks(page)]
    assert got == [("python", "run", "a.py", "print(1)\n"), ("sh", None, None, "ls\n"),
                   ("python", "fragment", None, "x = 1\n")]


def test_a_wrong_output_or_a_failing_program_fails_the_page(tmp_path: Path) -> None:
    """The runner compares printed output and exit statuses: it can fail."""
    page = tmp_path / "docs" / "p.md"
    page.parent.mkdir()
    page.write_text('<!-- run -->\n```python\nprint("yes")\n```\n\n'
                    "<!-- output -->\n```text\nno\n```\n")
    with pytest.raises(AssertionError, match="the program printed"):
        run_page(page, tmp_path / "a")
    page.write_text("<!-- run -->\n```python\nraise SystemExit(3)\n```\n")
    with pytest.raises(AssertionError):
        run_page(page, tmp_path / "b")
    page.write_text("<!-- run -->\n```sh\nfalse\n```\n")
    with pytest.raises(AssertionError):
        run_page(page, tmp_path / "c")
