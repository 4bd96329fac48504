"""The revision table: every feature is a declared ``Feature`` name, every declared feature
is queried by some code, and every queried name is declared.

The queries are found with ``ast`` in ``src/mcpkit``: a call ``<anything>.has("<name>")``
with one string literal. A feature that no code asks about is dead weight in the table (or
a gate some code forgot to use), so it fails here.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path
from typing import get_args

import pytest

from mcpkit.protocol.versions import (
    FEATURES,
    REVISIONS,
    STATEFUL_VERSIONS,
    STATELESS_VERSIONS,
    Feature,
    Revision,
    check_table,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "mcpkit"
DECLARED = frozenset(get_args(Feature))


def queried_features() -> dict[str, list[str]]:
    """``{feature: ["path:line", ...]}`` for every ``.has("...")`` call in the package."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "has"
                and len(node.args) == 1
                and not node.keywords
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                where = f"{path.relative_to(SRC.parent)}:{node.lineno}"
                found.setdefault(node.args[0].value, []).append(where)
    return found


def test_every_declared_feature_is_queried_somewhere() -> None:
    unused = DECLARED - set(queried_features())
    assert not unused, f"features no code queries (remove them or gate on them): {unused}"


def test_every_queried_feature_is_declared() -> None:
    unknown = {f: at for f, at in queried_features().items() if f not in DECLARED}
    assert not unknown, f"rev.has() of undeclared features: {unknown}"


def test_the_scan_sees_the_known_call_sites() -> None:
    found = queried_features()
    assert any(at.startswith("mcpkit/protocol/compat.py:") for at in found["title"])
    assert any(at.startswith("mcpkit/client/") for at in found["structured_content"])


def test_features_are_described_and_every_revision_uses_declared_names() -> None:
    assert set(FEATURES) == DECLARED
    for rev in REVISIONS.values():
        assert rev.features <= DECLARED, rev.version
    assert set(REVISIONS) == set(STATEFUL_VERSIONS) | set(STATELESS_VERSIONS)


def test_a_typo_in_the_table_is_refused() -> None:
    row = REVISIONS["2025-11-25"]
    bad = Revision(
        "1999-01-01",
        stateful=True,
        batches=False,
        client_requests=row.client_requests,
        server_requests=row.server_requests,
        client_notifications=row.client_notifications,
        server_notifications=row.server_notifications,
        features=frozenset({"titel"}),  # type: ignore[arg-type]
    )
    with pytest.raises(TypeError, match="titel"):
        check_table({**REVISIONS, "1999-01-01": bad})
    check_table(REVISIONS)  # the real table passes


def test_features_only_grow_across_the_stateful_revisions() -> None:
    rows = [REVISIONS[v] for v in STATEFUL_VERSIONS]
    for older, newer in itertools.pairwise(rows):
        assert older.features <= newer.features, (older.version, newer.version)


def test_the_stateless_revision_drops_what_it_removed() -> None:
    (modern,) = (REVISIONS[v] for v in STATELESS_VERSIONS)
    assert not modern.stateful
    gone: tuple[Feature, ...] = ("resource_not_found_32002", "tool_execution", "elicitation_url")
    new: tuple[Feature, ...] = ("result_type", "caching", "mrtr")
    assert not any(modern.has(f) for f in gone)
    assert all(modern.has(f) for f in new)
    assert not any(REVISIONS[v].has("mrtr") for v in STATEFUL_VERSIONS)
