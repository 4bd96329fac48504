"""Every module of the core packages says where its tests are (issue #27, item 8).

For each module of ``src/mcpkit/{protocol,session,server,transports}`` (``__init__.py``
aside; a sub-package's modules too, named by their path inside the package) either a
test file of the same name exists, ``tests/test_<module>.py`` or
``tests/<package>/test_<module>.py``, or the section "Where each module is tested" of
docs/architecture.md has a row for it naming test files that all exist. A row may not
name a module that is gone, nor name one twice: a module split or renamed in ``src/``
fails here until its row follows, so the table cannot rot.

A same-named file in another folder does not count: ``tests/auth/test_middleware.py``
tests ``mcpkit.auth``'s middleware, not ``server/middleware.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("protocol", "session", "server", "transports")
SECTION = "## Where each module is tested"
HEADING = re.compile(r"^### `src/mcpkit/(\w+)/`\s*$")
ROW = re.compile(r"^\|\s*`([\w/]+\.py)`\s*\|(.*)\|\s*$")
TEST_FILE = re.compile(r"`(tests/[\w/]+\.py)`")


def modules(src: Path, package: str) -> list[str]:
    """The modules of ``src/mcpkit/<package>``, as paths inside it (``tools.py``,
    ``http/server.py``), without the ``__init__.py`` of any level."""
    top = src / "mcpkit" / package
    return sorted(p.relative_to(top).as_posix() for p in top.rglob("*.py")
                  if p.name != "__init__.py")


def section(page: str) -> list[str] | None:
    """The lines of the section, up to the next heading of its level; None without it."""
    lines = page.splitlines()
    if SECTION not in lines:
        return None
    rest = lines[lines.index(SECTION) + 1:]
    ends = [i for i, line in enumerate(rest) if line.startswith("## ")]
    return rest[:ends[0]] if ends else rest


def rows(lines: list[str]) -> tuple[dict[tuple[str, str], list[str]], list[str]]:
    """``(package, module) -> test files`` of the section's tables, and what is wrong
    with their shape (a row outside a package's table, a module named twice)."""
    found: dict[tuple[str, str], list[str]] = {}
    wrong: list[str] = []
    package = None
    for line in lines:
        heading = HEADING.match(line)
        if heading:
            package = heading.group(1)
            if package not in PACKAGES:
                wrong.append(f"a table for src/mcpkit/{package}/, which is not mapped here")
            continue
        row = ROW.match(line)
        if not row:
            continue
        module, cell = row.groups()
        if package is None:
            wrong.append(f"row for {module} before any package heading")
            continue
        if (package, module) in found:
            wrong.append(f"{package}/{module} has two rows")
        found[(package, module)] = TEST_FILE.findall(cell)
    return found, wrong


def problems(page: str, src: Path, tests: Path) -> list[str]:
    """Everything that keeps a module of the core packages from being findable."""
    lines = section(page)
    if lines is None:
        return [f"docs/architecture.md has no section {SECTION!r}"]
    table, out = rows(lines)
    for (package, module), files in sorted(table.items()):
        where = f"{package}/{module}"
        if package in PACKAGES and module not in modules(src, package):
            out.append(f"row for {where}, which is not a module of src/mcpkit/{package}/")
        if not files:
            out.append(f"row for {where} names no test file")
        for name in files:
            path = tests.parent / name
            if not (path.name.startswith("test_") and path.is_file()):
                out.append(f"row for {where} names {name}, which is not a test file")
    for package in PACKAGES:
        for module in modules(src, package):
            own = "test_" + Path(module).name
            if (tests / own).is_file() or (tests / package / own).is_file():
                continue
            if (package, module) not in table:
                out.append(f"{package}/{module}: no tests/{own} or tests/{package}/{own}, "
                           f"and no row under {SECTION!r}")
    return out


def test_every_module_of_the_core_says_where_its_tests_are() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    found = problems(page, ROOT / "src", ROOT / "tests")
    assert not found, "\n".join(found)


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


def _page(*table: str) -> str:
    return "\n".join(["# Architecture", "", SECTION, "", "### `src/mcpkit/server/`", "",
                      "| module | tests |", "|---|---|", *table, "", "## Later", "",
                      "| `ghost.py` | `tests/test_nothing.py` |"])


def test_the_check_finds_each_kind_of_rot(tmp_path: Path) -> None:
    """Each rule above catches what it claims, on a small tree of its own."""
    src, tests = tmp_path / "src", tmp_path / "tests"
    _tree(tmp_path, [
        "src/mcpkit/server/__init__.py", "src/mcpkit/server/tools.py",
        "src/mcpkit/server/mount.py", "src/mcpkit/server/http/__init__.py",
        "src/mcpkit/server/http/routes.py", "src/mcpkit/protocol/errors.py",
        "src/mcpkit/protocol/text.py", "src/mcpkit/session/loop.py",
        "tests/test_tools.py", "tests/protocol/test_errors.py", "tests/test_text_misc.py",
        "tests/auth/test_mount.py", "tests/test_composition.py", "tests/support/http.py",
    ])
    assert modules(src, "server") == ["http/routes.py", "mount.py", "tools.py"]

    assert problems("# Architecture\n", src, tests) == [
        f"docs/architecture.md has no section {SECTION!r}"]

    found = problems(_page(
        "| `mount.py` | `tests/test_composition.py` |",
        "| `http/routes.py` | `tests/test_routes.py`, `tests/support/http.py` |",
        "| `gone.py` | `tests/test_composition.py` |",
        "| `tools.py` | see elsewhere |",
    ), src, tests)
    assert found == [
        "row for server/gone.py, which is not a module of src/mcpkit/server/",
        "row for server/http/routes.py names tests/test_routes.py, which is not a test file",
        "row for server/http/routes.py names tests/support/http.py, which is not a test file",
        "row for server/tools.py names no test file",
        f"protocol/text.py: no tests/test_text.py or tests/protocol/test_text.py, and no "
        f"row under {SECTION!r}",
        f"session/loop.py: no tests/test_loop.py or tests/session/test_loop.py, and no "
        f"row under {SECTION!r}",
    ]  # errors.py: tests/protocol/test_errors.py; mount.py: its row, not tests/auth/

    _tree(tmp_path, ["tests/test_routes.py"])
    good = ["| `mount.py` | `tests/test_composition.py` |",
            "| `http/routes.py` | `tests/test_routes.py` |",
            "", "### `src/mcpkit/protocol/`", "", "| `text.py` | `tests/test_text_misc.py` |",
            "", "### `src/mcpkit/session/`", "", "| `loop.py` | `tests/test_composition.py` |"]
    assert problems(_page(*good), src, tests) == []
    assert problems(_page(*good[1:]), src, tests) == [
        f"server/mount.py: no tests/test_mount.py or tests/server/test_mount.py, and no "
        f"row under {SECTION!r}"]  # tests/auth/test_mount.py is not its test
    assert problems(_page(*good, "", "### `src/mcpkit/server/`", "", good[0],
                          "", "### `src/mcpkit/cli/`", "", "| `x.py` | `tests/test_x.py` |"),
                    src, tests) == [
        "server/mount.py has two rows", "a table for src/mcpkit/cli/, which is not mapped here",
        "row for cli/x.py names tests/test_x.py, which is not a test file"]
