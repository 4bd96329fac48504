"""The documentation names only files that exist in this repository.

Markdown links to local files must resolve from the page that holds them, and a path
written in backticks (``examples/notes.py``, ``src/mcpkit/check/data/matrix.csv``) must
exist from the repository root (or from the page's folder). Absolute paths of a
development machine and folders outside the repository are refused outright: a reader
who cloned the repository alone has neither.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted(ROOT.glob("*/README.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\s]+)`")
# what a backticked repository path starts with
TOP = ("src/", "tests/", "examples/", "bench/", "scripts/", "docs/", ".ci/")
FOREIGN = re.compile(r"(^|[\s`(])(/work/|/home/|/root/|(\.\./)?shared/|seeds/)")


def _pages() -> list[Path]:
    return [p for p in PAGES if p.is_file()]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_local_links_resolve(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or an anchor on the same page
        path = target.split("#", 1)[0]
        if path and not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page.name} links to missing files: {broken}"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_backticked_paths_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    missing = []
    for token in CODE.findall(text):
        token = token.rstrip(".,;:")
        if not token.startswith(TOP) or any(c in token for c in "*{}<>$"):
            continue  # not a repository path, or a pattern rather than a file
        path = token.split(":", 1)[0]  # examples/notes.py:server -> the file
        if not ((ROOT / path).exists() or (page.parent / path).exists()):
            missing.append(token)
    assert not missing, f"{page.name} names files that are not in the repository: {missing}"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_paths_outside_the_repository(page: Path) -> None:
    lines = [f"{n}: {line.strip()}"
             for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
             if FOREIGN.search(line)]
    assert not lines, f"{page.name} points outside the repository:\n" + "\n".join(lines)


def test_the_checks_catch_what_they_claim(tmp_path: Path) -> None:
    """The patterns above do find a broken link, a missing path and a foreign path."""
    assert LINK.findall("see [the guide](docs/nope.md#x)") == ["docs/nope.md#x"]
    assert "examples/nope.py" in CODE.findall("run `examples/nope.py` now")
    assert FOREIGN.search("read /work/shared/seeds/x.csv")
    assert FOREIGN.search("the shape in `shared/DESIGN.md`")
    assert FOREIGN.search("see ../shared/tools/conformance.sh")


NODE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_named_tests_exist(page: Path) -> None:
    """A ``tests/x.py::name`` a page cites (docs/compliance.md cites hundreds) is a test
    function or class defined in that file: a renamed or deleted test cannot leave a row
    claiming a proof that no longer runs."""
    missing = []
    for path, name in NODE.findall(page.read_text()):
        source = (ROOT / path).read_text() if (ROOT / path).is_file() else ""
        if not re.search(rf"^\s*(async def|def|class) {name}\b", source, re.M):
            missing.append(f"{path}::{name}")
    assert not missing, f"{page.name} cites tests that do not exist: {missing}"
