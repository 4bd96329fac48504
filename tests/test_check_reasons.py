"""Verdict reasons and fix suggestions come from what the server showed (#17 item 4).

Two wrong findings were seen on a real server: M056 said "the server does not offer
subscriptions" although ``initialize`` declared ``resources.subscribe`` (the probe needs a
listed resource, and the server had only templates), and ``LINT.nested-object`` suggested a
fix naming a field (``filters.status``) the server does not have.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit.check import Target, run_check
from mcpkit.check.lint import LintInput, lint

SERVERS = Path(__file__).resolve().parent / "servers"


def test_m056_with_only_templates_says_declared_and_nothing_to_subscribe() -> None:
    target = Target(command=[sys.executable, str(SERVERS / "check_templates_only.py")])
    report = anyio.run(run_check, target, "stateful", "none")
    [m056] = [f for f in report.findings if f.rule == "M056"]
    assert m056.verdict == "untestable"
    assert "resources.subscribe is declared" in m056.message
    assert "only 1 resource template" in m056.message
    assert "does not offer" not in m056.message
    assert '"subscribe":true' in m056.evidence


def _nested(props: dict[str, Any]) -> str:
    tool = {"name": "shop_find", "description": "Use this to find items. Returns the items.",
            "inputSchema": {"type": "object", "properties": props}}
    [f] = [f for f in lint(LintInput([tool], None, [], [], None), "stateful")
           if f.rule == "LINT.nested-object"]
    assert f.verdict == "fail"
    return f.message


def test_nested_object_fix_names_the_servers_own_field() -> None:
    message = _nested({"query": {"type": "object", "properties": {
        "colour": {"type": "string"}}}})
    assert "query.colour → a top-level colour parameter" in message
    assert "filters" not in message and "status" not in message


def test_nested_object_fix_inside_array_items_names_the_inner_field() -> None:
    message = _nested({"rows": {"type": "array", "items": {"type": "object", "properties": {
        "box": {"type": "object", "properties": {"width": {"type": "number"}}}}}}})
    assert "rows.width" in message or "rows.box" in message
    assert "filters" not in message


@pytest.mark.parametrize("schema", [{"type": "object"}, {"type": ["object", "null"]}])
def test_nested_object_without_properties_suggests_no_invented_field(
        schema: dict[str, Any]) -> None:
    message = _nested({"opts": schema})
    assert "give each key opts takes its own top-level parameter" in message
    assert "filters" not in message


@pytest.mark.parametrize(("versions", "echoed"), [
    ("2025-11-25", "2025-11-25"),
    ("2024-11-05 2025-03-26 2025-06-18 2025-11-25",
     "2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25"),
    ("2025-03-26 2025-06-18", "2025-03-26, 2025-06-18"),
])
def test_m045_is_judged_on_every_revision_asked(
        versions: str, echoed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that supports only some revisions counter-offers for the rest: that is
    compliant (the old judge failed a server speaking only 2025-11-25 for answering
    2025-11-25 to 2025-03-26). The contradicting case is the family's M045 variant."""
    monkeypatch.setenv("MCPKIT_LEGACY_VERSIONS", versions)
    target = Target(command=[sys.executable, str(SERVERS / "legacy_only.py")])
    report = anyio.run(run_check, target, "stateful", "none")
    [m045] = [f for f in report.findings if f.rule == "M045"]
    assert m045.verdict == "pass", m045.message
    assert f"echoed {echoed}" in m045.message
