"""The layer rule of the mcpkit package, enforced on the source with ``ast``.

Floors, lowest first::

    1  mcpkit.protocol                      sans-I/O core: stdlib + orjson only
    2  mcpkit.storage
    3  mcpkit.session
    4  mcpkit.transports   mcpkit.auth
    5  mcpkit.server       mcpkit.client       mcpkit.check
    6  mcpkit.bridge       mcpkit.testing      mcpkit.openapi
    7  mcpkit.cli

A module may import from its own component (``mcpkit.server.*`` from ``mcpkit.server``)
or from a lower floor. It may not import upwards, and components that share a floor never
import each other (server must not import client; transports must not import auth).
``mcpkit/__init__.py`` is the public surface and may import anything.

For the layer rule every import counts: module level, inside functions, under
``if TYPE_CHECKING:``, relative imports (resolved against the importing module), and
``importlib.import_module("mcpkit...")`` / ``__import__`` with a literal name.
Each violation is reported as ``path:line: message``.

No runtime import circle either: :func:`test_no_runtime_import_cycle` says which imports
make the graph and how a package ``__init__`` that re-exports its submodules counts.
"""

from __future__ import annotations

import ast
import itertools
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "mcpkit"

FLOORS: dict[str, int] = {
    "protocol": 1,
    "storage": 2,
    "session": 3,
    "transports": 4,
    "auth": 4,
    "server": 5,
    "client": 5,
    "check": 5,
    "bridge": 6,  # mcpkit.bridge: a Server whose requests a Client forwards (the proxy)
    "testing": 6,  # mcpkit.testing: a Client on a Server in memory, wire checked
    "openapi": 6,  # mcpkit.openapi: the public name of server/openapi.py
    "cli": 7,
    "__main__": 8,  # python -m mcpkit: the entry point, above the CLI
}
"""Top-level component of ``mcpkit`` -> floor."""

APART: dict[str, tuple[str, ...]] = {
    "mcpkit.auth.client": ("mcpkit.auth.server",),
    "mcpkit.auth.server": ("mcpkit.auth.client",),
    "mcpkit.check.wire": ("mcpkit.check.matrix", "mcpkit.check.lint", "mcpkit.check.sec"),
    "mcpkit.check.lint": ("mcpkit.check.matrix", "mcpkit.check.sec"),
}
"""Sub-packages of one component that must not import the packages named (nor their
modules): the OAuth client and the resource server share only ``auth/urls.py`` and
``auth/addresses.py``; the checker's channels know none of its judges, and the design
lint neither the matrix nor the security lint built on it."""

PROTOCOL_THIRD_PARTY_ALLOWED = frozenset({"orjson"})
"""Besides the standard library and itself, all that ``mcpkit.protocol`` may import."""


@dataclass(frozen=True)
class Import:
    module: str  # absolute dotted name that is imported (or imported from)
    line: int


def module_name(path: Path, src: Path) -> str:
    """``src/mcpkit/server/app.py`` -> ``mcpkit.server.app`` (``__init__`` -> package)."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_relative(importer: str, is_package: bool, level: int, module: str | None) -> str:
    """The absolute module a relative ``from`` import names."""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    if level - 1 > len(package) - 1:
        raise ValueError(f"relative import beyond the top-level package in {importer}")
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _from_base(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module a ``from ... import`` names, relative ones resolved."""
    if node.level:
        return _resolve_relative(importer, is_package, node.level, node.module)
    return node.module or ""


def _literal_import(call: ast.Call) -> str | None:
    """The name in ``importlib.import_module("...")`` / ``__import__("...")``, else None."""
    if not (call.args and isinstance(call.args[0], ast.Constant)):
        return None
    name, func = call.args[0].value, call.func
    if isinstance(name, str) and (
        (isinstance(func, ast.Name) and func.id in ("__import__", "import_module"))
        or (isinstance(func, ast.Attribute) and func.attr == "import_module")
    ):
        return name
    return None


def imports_of(path: Path, src: Path) -> list[Import]:
    """Every module ``path`` imports, resolved to absolute names, with line numbers."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    importer = module_name(path, src)
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, importer, is_package)
            if base != PACKAGE:
                found.append(Import(base, node.lineno))
            # `from pkg import name` may import a submodule `pkg.name`: count it as such
            # when `pkg` is inside mcpkit (e.g. `from .. import client`).
            if base == PACKAGE or base.startswith(PACKAGE + "."):
                for alias in node.names:
                    if alias.name != "*":
                        found.append(Import(f"{base}.{alias.name}", node.lineno))
        elif isinstance(node, ast.Call) and (name := _literal_import(node)) is not None:
            found.append(Import(name, node.lineno))
    return found


def _component(module: str) -> str | None:
    """``mcpkit.server.app`` -> ``server``; ``mcpkit`` itself -> ``""``; others -> None."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    return parts[1] if len(parts) > 1 else ""


def _known_submodule(module: str, src: Path) -> bool:
    """Whether ``module`` (inside mcpkit) is a module or package that exists on disk."""
    base = src.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _apart_package(module: str) -> str | None:
    """The sub-package of :data:`APART` that ``module`` is (or is inside), else None."""
    return next((pkg for pkg in APART if module == pkg or module.startswith(pkg + ".")), None)


def _apart(module: str) -> tuple[str, ...]:
    """The packages ``module`` must not import (:data:`APART`)."""
    pkg = _apart_package(module)
    return APART[pkg] if pkg else ()


def check_file(path: Path, src: Path) -> list[str]:
    """Layer-rule violations of one source file, as ``path:line: message`` strings."""
    importer = module_name(path, src)
    if importer == PACKAGE:
        return []  # mcpkit/__init__.py: the public surface may import anything
    rel = path.relative_to(src.parent) if src.parent in path.parents else path
    own = _component(importer)
    assert own is not None
    if own not in FLOORS:
        return [
            f"{rel}:1: module {importer} belongs to no floor; add '{own}' to FLOORS in "
            "tests/test_layers.py (and to the layer rule) or move it into a component"
        ]
    own_floor = FLOORS[own]
    problems: list[str] = []
    seen: set[tuple[int, str]] = set()

    def report(line: int, message: str) -> None:
        if (line, message) not in seen:
            seen.add((line, message))
            problems.append(f"{rel}:{line}: {message}")

    for imp in imports_of(path, src):
        target = _component(imp.module)
        if target is None:
            top = imp.module.split(".")[0]
            if own == "protocol" and not (
                top in sys.stdlib_module_names or top in PROTOCOL_THIRD_PARTY_ALLOWED
            ):
                report(
                    imp.line,
                    f"{importer} imports {imp.module}: mcpkit.protocol may import only the "
                    "standard library and orjson (no anyio, sniffio, httpx, starlette, "
                    "pydantic, ...)",
                )
            continue
        if target == "":
            # A bare `import mcpkit` (`from mcpkit import x` is judged as `mcpkit.x`).
            report(
                imp.line,
                f"{importer} imports mcpkit, the public surface; import from the component "
                "that defines what it needs",
            )
            continue
        if target not in FLOORS:
            # `from mcpkit import SomeName` of a re-exported name (not a submodule) reaches
            # into the public surface, which sits above every floor.
            if imp.module.count(".") == 1 and not _known_submodule(imp.module, src):
                report(
                    imp.line,
                    f"{importer} imports {imp.module} from the public surface mcpkit/__init__; "
                    "import it from the component that defines it",
                )
            else:
                report(imp.line, f"{importer} imports {imp.module}, which belongs to no floor")
            continue
        if target == own:
            for forbidden in _apart(importer):
                if imp.module == forbidden or imp.module.startswith(forbidden + "."):
                    report(
                        imp.line,
                        f"{importer} imports from {forbidden}: {_apart_package(importer)} "
                        f"and {forbidden} are kept apart (APART in tests/test_layers.py)",
                    )
            continue
        floor = FLOORS[target]
        if floor > own_floor:
            report(
                imp.line,
                f"{importer} (floor {own_floor}) imports mcpkit.{target} (floor {floor}): "
                "a module may import only its own component and lower floors",
            )
        elif floor == own_floor:
            report(
                imp.line,
                f"{importer} imports mcpkit.{target}: mcpkit.{own} and mcpkit.{target} share "
                f"floor {floor} and must not import each other",
            )
    return problems


def check_tree(src: Path) -> list[str]:
    problems: list[str] = []
    for path in sorted((src / PACKAGE).rglob("*.py")):
        problems += check_file(path, src)
    return problems


# ---------------------------------------------------------------------------- import circles


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``: the test of a block that never runs."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _load_time_nodes(tree: ast.Module, deferred: bool = False) -> Iterator[ast.AST]:
    """The nodes of a module that run when it is imported: everything but functions,
    lambdas and ``if TYPE_CHECKING:`` blocks (whose ``else:`` does run, and is kept).
    ``deferred``: the bodies of functions and lambdas too (what runs later)."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if not deferred and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                              ast.Lambda)):
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo += node.orelse
            continue
        yield node
        todo += ast.iter_child_nodes(node)


def runtime_imports(path: Path, src: Path, modules: set[str], deferred: bool = False
                    ) -> dict[str, int]:
    """The ``modules`` that ``path`` imports when it loads -> the line of the first import
    (:func:`test_no_runtime_import_cycle` says what counts as an edge); ``deferred``: also
    the imports inside its functions."""
    importer = module_name(path, src)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: dict[str, int] = {}

    def add(module: str, line: int) -> None:
        if module in modules and module != importer:
            found[module] = min(line, found.get(module, line))
        # The packages above ``module`` run their __init__ first, unless the importer is
        # inside them (then they are already running).
        parts = module.split(".")
        for end in range(2, len(parts)):
            package = ".".join(parts[:end])
            if package in modules and not (importer + ".").startswith(package + "."):
                found[package] = min(line, found.get(package, line))

    for node in _load_time_nodes(tree, deferred):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, importer, path.name == "__init__.py")
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                add(submodule if submodule in modules else base, node.lineno)
        elif isinstance(node, ast.Call) and (name := _literal_import(node)) is not None:
            add(name, node.lineno)
    return dict(sorted(found.items()))


def import_graph(src: Path, deferred: bool = False) -> dict[str, dict[str, str]]:
    """Every mcpkit module -> the mcpkit modules it imports at load time (``deferred``:
    or later, in a function), each with the ``path:line`` of that import."""
    paths = {module_name(p, src): p for p in sorted((src / PACKAGE).rglob("*.py"))}
    graph: dict[str, dict[str, str]] = {}
    for module, path in paths.items():
        rel = path.relative_to(src.parent)
        graph[module] = {
            target: f"{rel}:{line}"
            for target, line in runtime_imports(path, src, set(paths), deferred).items()
        }
    return graph


def _shortest_cycle(graph: Mapping[str, Iterable[str]], start: str) -> list[str]:
    """The shortest circle through ``start`` as ``[start, ..., start]``; empty if none."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in sorted(graph.get(node, ())):
            if target == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if target not in previous:
                previous[target] = node
                queue.append(target)
    return []


def import_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The circles of ``graph`` (module -> the modules it imports): for each module, in
    sorted order, that lies on a circle no earlier one named, the shortest through it."""
    cycles: list[list[str]] = []
    named: set[str] = set()
    for module in sorted(graph):
        if module not in named and (cycle := _shortest_cycle(graph, module)):
            cycles.append(cycle)
            named.update(cycle)
    return cycles


def describe_cycle(cycle: list[str], graph: Mapping[str, Mapping[str, str]]) -> str:
    """``a -> b -> a`` and, for each step, the ``path:line`` of the import that makes it."""
    steps = "".join(f"\n    {graph[a][b]}: {a} imports {b}" for a, b in itertools.pairwise(cycle))
    return " -> ".join(cycle) + steps


# ---------------------------------------------------------------------------- the rule


def test_package_source_found() -> None:
    assert (SRC / PACKAGE / "__init__.py").is_file()
    assert (SRC / PACKAGE / "protocol" / "connection.py").is_file()


def test_layer_rule() -> None:
    problems = check_tree(SRC)
    assert not problems, "layer rule violations:\n" + "\n".join(problems)


def test_no_runtime_import_cycle() -> None:
    """No circle among mcpkit's modules through the imports that run when they load.

    Modules on a circle work or fail by import order (a name imported from a module that
    is still half-initialised raises ``ImportError``), so none is allowed. Only runtime
    imports make the graph: module-level imports, including those in class bodies and
    under ``if``/``try`` at module level, but not under ``if TYPE_CHECKING:`` (never run)
    nor inside functions (run later, once every module has loaded). An import is an edge
    to the module whose code must have run:

    * ``import a.b`` and ``from a.b import name`` lead to ``a.b``, or to ``a.b.name``
      instead when that is a submodule;
    * ``from . import x`` (``x`` a submodule) leads to that submodule only.

    A package above the imported module (below ``mcpkit``) is an edge too, since Python
    runs its ``__init__`` first (``mcpkit.check.taskjudge`` importing
    ``mcpkit.check.matrix.common`` runs ``mcpkit/check/matrix/__init__.py``, and whatever
    that imports), unless the importer is inside that package. A package whose
    ``__init__`` re-exports its submodules (``from .app import Server``, ``from . import
    types``) is still running when those submodules load and import their siblings; that
    is the normal order of a package, not a circle. So ``from . import x`` inside a
    package ``__init__`` is an edge from the package to ``x``, and a submodule importing a
    sibling does not thereby import its package. Importing a re-exported *name* from a
    package (``from mcpkit.check import Target`` inside ``mcpkit.check.stateful``) does
    need the ``__init__`` to have run, and counts.
    """
    graph = import_graph(SRC)
    assert "mcpkit.check.runner" in graph["mcpkit.check.fleet"]  # the graph is not empty
    cycles = import_cycles(graph)
    assert not cycles, "runtime import circles:\n" + "\n".join(
        describe_cycle(c, graph) for c in cycles
    )


def test_no_import_circle_through_functions_either() -> None:
    """Nor a circle closed by an import inside a function: it loads at the first call
    instead of at start-up, but the two modules still need each other, which says one of
    them holds what belongs below both (issue #27). Only ``if TYPE_CHECKING:`` imports,
    which never run, are left out."""
    graph = import_graph(SRC, deferred=True)
    assert "mcpkit.cli.commands" in graph["mcpkit.cli"]  # imported only inside main()
    cycles = import_cycles(graph)
    assert not cycles, "import circles (through in-function imports):\n" + "\n".join(
        describe_cycle(c, graph) for c in cycles
    )


# ---------------------------------------------------------------------------- the checker


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def fake_src(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    for pkg in (
        "",
        "protocol/",
        "storage/",
        "session/",
        "transports/",
        "auth/",
        "server/",
        "client/",
        "check/",
        "cli/",
    ):
        _write(src, f"mcpkit/{pkg}__init__.py", "")
    return src


def test_clean_tree_passes(fake_src: Path) -> None:
    _write(fake_src, "mcpkit/protocol/core.py", "import json\nimport orjson\nfrom . import x\n")
    _write(fake_src, "mcpkit/session/s.py", "from ..protocol import core\nfrom .x import y\n")
    _write(
        fake_src,
        "mcpkit/server/app.py",
        "import anyio\nfrom mcpkit.protocol.core import C\nfrom ..session.s import S\n"
        "from ..transports import stdio\nfrom . import tools\n",
    )
    _write(fake_src, "mcpkit/cli/main.py", "from ..server import app\nfrom ..client import c\n")
    _write(fake_src, "mcpkit/__init__.py", "from .cli.main import main\nfrom .client import c\n")
    assert check_tree(fake_src) == []


def test_upward_import_reported_with_file_and_line(fake_src: Path) -> None:
    _write(fake_src, "mcpkit/protocol/core.py", "import json\n\nfrom ..server import app\n")
    assert check_tree(fake_src) == [
        "src/mcpkit/protocol/core.py:3: mcpkit.protocol.core (floor 1) imports mcpkit.server "
        "(floor 5): a module may import only its own component and lower floors"
    ]


@pytest.mark.parametrize(
    ("rel", "code", "target"),
    [
        ("mcpkit/server/app.py", "from mcpkit.client import Client\n", "client"),
        ("mcpkit/server/app.py", "from .. import client\n", "client"),
        ("mcpkit/client/c.py", "import mcpkit.check.run\n", "check"),
        ("mcpkit/transports/http.py", "from ..auth.oauth import verify\n", "auth"),
        ("mcpkit/auth/oauth.py", "from mcpkit.transports import http\n", "transports"),
    ],
)
def test_sibling_imports_reported(fake_src: Path, rel: str, code: str, target: str) -> None:
    _write(fake_src, rel, code)
    (problem,) = check_tree(fake_src)
    assert problem.startswith(f"src/{rel}:1: ")
    assert f"imports mcpkit.{target}: " in problem
    assert "must not import each other" in problem


@pytest.mark.parametrize(
    ("rel", "code", "bad"),
    [
        ("mcpkit/auth/client/oauth.py", "from ..server.jwt import JWTVerifier\n", True),
        ("mcpkit/auth/client/oauth.py", "def f():\n    import mcpkit.auth.server\n", True),
        ("mcpkit/auth/server/jwks.py", "from ..client import steps\n", True),
        ("mcpkit/auth/server/jwks.py", "from ..addresses import classify_host\n", False),
        ("mcpkit/auth/client/oauth.py", "from ..urls import origin_of\nfrom . import steps\n",
         False),
        ("mcpkit/auth/__init__.py", "from .client.oauth import OAuth\n"
         "from .server.jwt import JWTVerifier\n", False),
    ],
)
def test_apart_sub_packages(fake_src: Path, rel: str, code: str, bad: bool) -> None:
    _write(fake_src, rel, code)
    problems = check_tree(fake_src)
    if not bad:
        assert problems == []
        return
    (problem,) = problems
    assert problem.startswith(f"src/{rel}:")
    assert "are kept apart" in problem


def test_imports_inside_functions_and_type_checking_count(fake_src: Path) -> None:
    _write(
        fake_src,
        "mcpkit/storage/store.py",
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from mcpkit.session import Session\n"
        "def load():\n"
        "    from ..transports.stdio import run\n"
        "    import importlib\n"
        "    return importlib.import_module('mcpkit.cli')\n",
    )
    problems = check_tree(fake_src)
    assert [p.split(": ")[0] for p in problems] == [
        "src/mcpkit/storage/store.py:3",
        "src/mcpkit/storage/store.py:5",
        "src/mcpkit/storage/store.py:7",
    ]


def test_protocol_may_not_import_io_or_model_libraries(fake_src: Path) -> None:
    _write(
        fake_src,
        "mcpkit/protocol/core.py",
        "from __future__ import annotations\nimport typing\nimport orjson\nimport anyio\n"
        "def f():\n    import httpx\n    from pydantic import BaseModel\n"
        "import sniffio\nfrom starlette.requests import Request\n",
    )
    problems = check_tree(fake_src)
    assert [(p.split(": ")[0], p.split(" imports ")[1].split(":")[0]) for p in problems] == [
        ("src/mcpkit/protocol/core.py:4", "anyio"),
        ("src/mcpkit/protocol/core.py:8", "sniffio"),
        ("src/mcpkit/protocol/core.py:9", "starlette.requests"),
        ("src/mcpkit/protocol/core.py:6", "httpx"),
        ("src/mcpkit/protocol/core.py:7", "pydantic"),
    ]


def test_other_floors_may_use_third_party_libraries(fake_src: Path) -> None:
    _write(fake_src, "mcpkit/transports/http.py", "import anyio\nimport httpx\nimport starlette\n")
    assert check_tree(fake_src) == []


def test_public_surface_is_exempt_but_not_importable_from_inside(fake_src: Path) -> None:
    _write(fake_src, "mcpkit/__init__.py", "from .server import Server\nServer = Server\n")
    _write(fake_src, "mcpkit/session/s.py", "from mcpkit import Server\n")
    (problem,) = check_tree(fake_src)
    assert problem.startswith("src/mcpkit/session/s.py:1: ")
    assert "public surface" in problem


def test_bare_package_import_is_reported(fake_src: Path) -> None:
    _write(fake_src, "mcpkit/cli/main.py", "import mcpkit.server\nimport mcpkit\n")
    (problem,) = check_tree(fake_src)
    assert problem.startswith("src/mcpkit/cli/main.py:2: ")
    assert "public surface" in problem


def test_module_outside_every_floor_is_reported(fake_src: Path) -> None:
    _write(fake_src, "mcpkit/extras/x.py", "")
    _write(fake_src, "mcpkit/helpers.py", "")
    assert [p.split(": ")[0] for p in check_tree(fake_src)] == [
        "src/mcpkit/extras/x.py:1",
        "src/mcpkit/helpers.py:1",
    ]


def test_single_module_component(fake_src: Path) -> None:
    # A component may be one module (mcpkit/session.py) rather than a package.
    (fake_src / "mcpkit/session/__init__.py").unlink()
    (fake_src / "mcpkit/session").rmdir()
    _write(fake_src, "mcpkit/session.py", "from .protocol import core\nfrom .server import app\n")
    (problem,) = check_tree(fake_src)
    assert problem.startswith(
        "src/mcpkit/session.py:2: mcpkit.session (floor 3) imports mcpkit.server (floor 5)"
    )


@pytest.mark.parametrize(
    ("importer", "is_package", "level", "module", "expected"),
    [
        ("mcpkit.server.app", False, 1, "tools", "mcpkit.server.tools"),
        ("mcpkit.server.app", False, 1, None, "mcpkit.server"),
        ("mcpkit.server.app", False, 2, "protocol.errors", "mcpkit.protocol.errors"),
        ("mcpkit.server.app", False, 2, None, "mcpkit"),
        ("mcpkit.server", True, 1, "app", "mcpkit.server.app"),
        ("mcpkit.server", True, 2, "client", "mcpkit.client"),
        ("mcpkit.session", False, 1, "protocol", "mcpkit.protocol"),
    ],
)
def test_relative_import_resolution(
    importer: str, is_package: bool, level: int, module: str | None, expected: str
) -> None:
    assert _resolve_relative(importer, is_package, level, module) == expected


# ---------------------------------------------------------------------------- the circle finder


def test_cycles_of_a_synthetic_graph() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c", "a"], ["e", "e"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_planted_circle_is_found_and_named(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src, "mcpkit/__init__.py", "")
    _write(src, "mcpkit/pkg/__init__.py", "")
    _write(src, "mcpkit/pkg/a.py", '"""A."""\nfrom . import b\n')
    _write(src, "mcpkit/pkg/b.py", "import json\n\nfrom mcpkit.pkg.a import f\n")
    graph = import_graph(src)
    cycles = import_cycles(graph)
    assert cycles == [["mcpkit.pkg.a", "mcpkit.pkg.b", "mcpkit.pkg.a"]]
    assert describe_cycle(cycles[0], graph) == (
        "mcpkit.pkg.a -> mcpkit.pkg.b -> mcpkit.pkg.a"
        "\n    src/mcpkit/pkg/a.py:2: mcpkit.pkg.a imports mcpkit.pkg.b"
        "\n    src/mcpkit/pkg/b.py:3: mcpkit.pkg.b imports mcpkit.pkg.a"
    )


@pytest.mark.parametrize(
    ("b_code", "circle"),
    [
        ("def f():\n    from . import a\n", False),  # lazy: runs after both have loaded
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n", False),
        ("import typing\nif typing.TYPE_CHECKING:\n    pass\nelse:\n    from . import a\n", True),
        ("try:\n    from .a import f\nexcept ImportError:\n    pass\n", True),
        ("class B:\n    from . import a\n", True),  # a class body runs at load time
        ("import importlib\nA = importlib.import_module('mcpkit.pkg.a')\n", True),
    ],
)
def test_only_load_time_imports_close_a_circle(tmp_path: Path, b_code: str, circle: bool) -> None:
    src = tmp_path / "src"
    _write(src, "mcpkit/__init__.py", "")
    _write(src, "mcpkit/pkg/__init__.py", "")
    _write(src, "mcpkit/pkg/a.py", "from .b import B\n")
    _write(src, "mcpkit/pkg/b.py", b_code)
    assert bool(import_cycles(import_graph(src))) is circle


@pytest.mark.parametrize(
    ("x_code", "circle"),
    [
        ("from . import y\n", False),  # a sibling submodule: no edge to the package
        ("from .y import Y\n", False),
        ("from mcpkit.pkg import y\n", False),
        ("from mcpkit.pkg import Y\n", True),  # a name re-exported by the __init__: needs it
        ("from . import Y\n", True),
    ],
)
def test_package_reexporting_its_submodules(tmp_path: Path, x_code: str, circle: bool) -> None:
    src = tmp_path / "src"
    _write(src, "mcpkit/__init__.py", "")
    _write(src, "mcpkit/pkg/__init__.py", "from . import x\nfrom .y import Y\n")
    _write(src, "mcpkit/pkg/x.py", x_code)
    _write(src, "mcpkit/pkg/y.py", "Y = 1\n")
    graph = import_graph(src)
    assert graph["mcpkit.pkg"] == {
        "mcpkit.pkg.x": "src/mcpkit/pkg/__init__.py:1",
        "mcpkit.pkg.y": "src/mcpkit/pkg/__init__.py:2",
    }
    expected = [["mcpkit.pkg", "mcpkit.pkg.x", "mcpkit.pkg"]] if circle else []
    assert import_cycles(graph) == expected


@pytest.mark.parametrize(
    ("importer", "code", "circle"),
    [
        # outside the package: importing a submodule runs the package's __init__ first
        ("mcpkit/other.py", "from mcpkit.pkg.y import Y\n", True),
        ("mcpkit/other.py", "from .pkg import y\n", True),
        ("mcpkit/other.py", "import mcpkit.pkg.y\n", True),
        ("mcpkit/other.py", "def f():\n    from .pkg.y import Y\n", False),
        # inside it: the __init__ is already running
        ("mcpkit/pkg/z.py", "from .y import Y\n", False),
    ],
)
def test_a_submodule_import_runs_its_package_first(
    tmp_path: Path, importer: str, code: str, circle: bool
) -> None:
    src = tmp_path / "src"
    _write(src, "mcpkit/__init__.py", "")
    _write(src, "mcpkit/pkg/__init__.py", "from .x import X\n")
    _write(src, "mcpkit/pkg/x.py", "from mcpkit.other import O\nX = 1\n")
    _write(src, "mcpkit/pkg/y.py", "Y = 1\n")
    _write(src, "mcpkit/pkg/z.py", "")
    _write(src, importer, code + ("O = 1\n" if importer == "mcpkit/other.py" else ""))
    if importer != "mcpkit/other.py":
        _write(src, "mcpkit/other.py", "O = 1\n")
    assert bool(import_cycles(import_graph(src))) is circle
    assert bool(import_cycles(import_graph(src, deferred=True))) is (
        circle or "def f" in code)


MAX_MODULE_LINES = 600


def test_no_module_over_600_lines() -> None:
    """Small modules with one job (issue #11): a module that grows past the limit is split
    before it lands, not after."""
    long = {str(path.relative_to(SRC)): n for path in SRC.rglob("*.py")
            if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them): {long}"


def _continued_lines(source: str) -> list[int]:
    """The lines of ``source`` that end in a backslash continuation (a backslash at the end
    of a line inside a string literal is the string's own business)."""
    import io
    import tokenize

    in_string: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            in_string.update(range(tok.start[0], tok.end[0]))
    return [n for n, line in enumerate(source.splitlines(), 1)
            if line.rstrip().endswith("\\") and n not in in_string]


def test_no_line_continued_by_a_backslash() -> None:
    """Signatures and expressions wrap in parentheses (#27): a backslash continuation is
    how a module gets parked just under the line limit."""
    assert _continued_lines("x = 1 + \\\n    2\ns = '''a\\\nb'''\n") == [1]  # the check sees one
    found = {str(path.relative_to(SRC)): lines for path in SRC.rglob("*.py")
             if (lines := _continued_lines(path.read_text()))}
    assert not found, f"backslash continuations (wrap in parentheses): {found}"
