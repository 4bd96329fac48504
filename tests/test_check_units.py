"""Unit tests of the checker's building blocks: the shipped schemas and matrix, per-kind
schema validation, the argument generator's guarantee, and stdout line splitting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpkit.check import schemas
from mcpkit.check.argsgen import invalid_arguments, valid_arguments
from mcpkit.check.schemas import check_instance, validate_message
from mcpkit.check.wire.stdio import _split_values

PKG_DATA = Path(schemas.__file__).parent / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared"
SOURCES = (SHARED / "spec" / "schema", SHARED / "seeds" / "mcp-compliance-matrix.csv")


@pytest.mark.skipif(not all(p.exists() for p in SOURCES),
                    reason=f"no {SOURCES[0]} and {SOURCES[1]} beside the repository: the "
                    "shipped copies have nothing to be compared with here")
def test_shipped_copies_match_the_project_sources() -> None:
    """The package carries copies of the official schemas and the compliance matrix; they
    must not drift from the project's sources (compared only where those are beside the
    repository; nothing else in the tests reads them)."""
    names = sorted(p.name for p in (PKG_DATA / "schema").glob("*.schema.json"))
    assert names == [f"{rev}.schema.json" for rev in schemas.REVISIONS]
    for rev in schemas.REVISIONS:
        shipped = (PKG_DATA / "schema" / f"{rev}.schema.json").read_bytes()
        assert shipped == (SHARED / "spec" / "schema" / f"{rev}.schema.json").read_bytes(), rev
    assert (PKG_DATA / "matrix.csv").read_bytes() == (
        SHARED / "seeds" / "mcp-compliance-matrix.csv").read_bytes()


TOOL = {"name": "t", "inputSchema": {"type": "object"}}


@pytest.mark.parametrize(("rev", "msg", "method", "ok"), [
    ("2025-11-25", {"jsonrpc": "2.0", "id": 1, "result": {"tools": [TOOL]}}, "tools/list", True),
    ("2025-11-25", {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "t"}]}},
     "tools/list", False),
    ("2026-07-28", {"jsonrpc": "2.0", "id": 1, "result": {"tools": [TOOL]}}, "tools/list",
     False),  # no resultType, ttlMs, cacheScope
    ("2026-07-28", {"jsonrpc": "2.0", "id": 1, "result": {
        "tools": [TOOL], "resultType": "complete", "ttlMs": 0, "cacheScope": "public"}},
     "tools/list", True),
    ("2026-07-28", {"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "input_required", "requestState": "x"}}, "tools/call", True),
    ("2024-11-05", {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}},
     None, True),
    ("2025-11-25", {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}},
     None, True),
    ("2025-11-25", {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "x"}},
     None, False),
    ("2025-11-25", {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": 1, "progress": 1}}, None, True),
    ("2025-11-25", {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progress": 1}}, None, False),
    ("2025-11-25", {"jsonrpc": "2.0", "id": 3, "method": "roots/list"}, None, True),
    ("2025-06-18", {"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage",
                    "params": {}}, None, False),
])
def test_messages_are_validated_by_kind(rev: str, msg: Any, method: str | None,
                                        ok: bool) -> None:
    errors = validate_message(rev, msg, method)
    assert (errors == []) is ok, errors


SCHEMAS: list[Any] = [
    {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 5}},
     "additionalProperties": False},
    {"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"]},
                                      "when": {"type": "string", "format": "date"}},
     "required": ["mode", "when"], "additionalProperties": False},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
                                               "minItems": 2}}, "required": ["tags"]},
    {"type": "object", "properties": {"x": {"anyOf": [{"type": "number"}, {"type": "null"}]}}},
    {"type": "object"},
    {"type": "object", "properties": {"s": {"type": "string", "minLength": 12}},
     "required": ["s"]},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_invalid_arguments_always_fail_and_valid_ones_pass(schema: dict[str, Any]) -> None:
    """The safety guarantee: what the checker sends as invalid is rejected by the schema."""
    made = invalid_arguments(schema)
    if made is not None:
        args, _ = made
        assert check_instance(schema, args), args
    valid = valid_arguments(schema)
    if valid is not None:
        assert check_instance(schema, valid) == [], valid


def test_an_unconstrained_schema_has_no_invalid_arguments() -> None:
    assert invalid_arguments({"type": "object"}) is None
    assert invalid_arguments("not a schema") is None


def test_external_refs_are_never_fetched() -> None:
    assert check_instance({"$ref": "http://127.0.0.1:9/schema.json"}, {}) is None


@pytest.mark.parametrize(("line", "values"), [
    (b'{"a":1}{"b":2}', [{"a": 1}, {"b": 2}]),
    (b'{"a":1} {"b":2}', [{"a": 1}, {"b": 2}]),
    (b'{"a":1}', None),
    (b'{"a":1', None),
    (b"plain text", None),
])
def test_split_values(line: bytes, values: Any) -> None:
    assert _split_values(line) == values
