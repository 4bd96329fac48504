"""The errors module: one named constant per JSON-RPC error code, and no bare code numbers
in the modules that use them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mcpkit.protocol import errors

SRC = Path(__file__).resolve().parents[2] / "src" / "mcpkit"
CODES = {
    name: value
    for name, value in vars(errors).items()
    if name.isupper() and isinstance(value, int)
}


def test_codes_are_distinct_and_in_the_json_rpc_ranges() -> None:
    assert len(set(CODES.values())) == len(CODES), CODES
    for name, code in CODES.items():
        assert -32768 <= code <= -32000, name
    assert CODES["PARSE_ERROR"] == -32700
    assert CODES["TRANSPORT_ERROR"] == -32000
    assert CODES["SESSION_NOT_FOUND"] == -32001


def test_every_protocol_error_code_is_named() -> None:
    named = set(CODES.values())
    classes = [c for c in vars(errors).values()
               if isinstance(c, type) and issubclass(c, errors.ProtocolError)]
    assert len(classes) > 5
    for cls in classes:
        assert cls.code in named, cls


def _bare_codes(path: Path) -> list[str]:
    """Integer literals in the JSON-RPC error range, outside strings and comments."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = node.operand
            if isinstance(value, ast.Constant) and type(value.value) is int and (
                32000 <= value.value <= 32768
            ):
                found.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: -{value.value}")
    return found


def test_no_bare_error_codes_in_protocol_and_client() -> None:
    """The sans-I/O core and the client spell codes by name (``errors`` defines them)."""
    owned = [*sorted((SRC / "protocol").glob("*.py")), *sorted((SRC / "client").glob("*.py"))]
    bare = [hit for path in owned if path.name != "errors.py" for hit in _bare_codes(path)]
    assert not bare, bare
    assert _bare_codes(SRC / "protocol" / "errors.py"), "the scan finds the definitions"


def test_hierarchy_docstring_names_every_exception() -> None:
    doc = errors.__doc__ or ""
    for name, obj in vars(errors).items():
        if isinstance(obj, type) and issubclass(obj, errors.MCPError):
            assert re.search(rf"\b{name}\b", doc), f"{name} is missing from the hierarchy"
