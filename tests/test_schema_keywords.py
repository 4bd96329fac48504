"""``Annotated[T, Schema(...)]``: JSON Schema keywords on a parameter without pydantic
(issue #28: importing pydantic alone costs a process ~16 MB).

The keywords reach the input schema the model reads, every call is validated against
them with the same model-facing errors as pydantic's ``Field`` constraints, and a server
that uses only ``Schema`` never imports pydantic. Lengths and ranges stay on the small
validator's path; ``pattern`` does not (Python's ``re`` is not ECMA-262), so a pattern is
judged by ``jsonschema_rs`` with ECMA semantics.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel

from mcpkit import Schema
from mcpkit.server.schema import type_schema
from mcpkit.server.tools import Tool
from mcpkit.server.validation import SchemaValidator, is_plain
from mcpkit.session import Ready
from tests.support.modules import modules_after


def rename(filename: Annotated[str, Schema(pattern=r"^[A-Za-z0-9_.-]+$", maxLength=12,
                                           description="A file name, no directory.")],
           copies: Annotated[int, Schema(minimum=1, maximum=3)] = 1,
           tags: Annotated[list[str], Schema(maxItems=2)] | None = None) -> str:
    """Rename a file.

    Args:
        filename: overridden by the Schema description.
        copies: How many copies.
    """
    return f"{filename} x{copies}"


def outcome(arguments: dict[str, Any]) -> dict[str, Any]:
    tool = Tool(rename)
    refused = tool.invalid_arguments(arguments)
    if refused is not None:
        return refused
    called = tool.call(arguments, None)  # type: ignore[arg-type]
    if isinstance(called, Ready):
        return called.value  # type: ignore[no-any-return]

    async def run() -> Any:
        return await called

    return anyio.run(run)  # type: ignore[no-any-return]


def test_the_keywords_reach_the_input_schema() -> None:
    schema = Tool(rename).definition["inputSchema"]
    assert schema["properties"]["filename"] == {
        "type": "string", "pattern": "^[A-Za-z0-9_.-]+$", "maxLength": 12,
        "description": "A file name, no directory."}
    assert schema["properties"]["copies"] == {
        "type": "integer", "minimum": 1, "maximum": 3, "description": "How many copies.",
        "default": 1}
    assert schema["required"] == ["filename"]


def test_calls_are_held_to_them_with_errors_that_say_what_to_send() -> None:
    assert outcome({"filename": "a.txt", "copies": 2})["content"][0]["text"] == "a.txt x2"
    cases = {
        "filename": ({"filename": "../etc/passwd"}, "does not match"),
        "copies": ({"filename": "a", "copies": 4}, "Expected at copies: an integer >= 1 and <= 3"),
        "tags": ({"filename": "a", "tags": ["x", "y", "z"]}, "tags"),
    }
    for name, (arguments, words) in cases.items():
        result = outcome(arguments)
        assert result["isError"] is True, name
        assert words in result["content"][0]["text"], (name, result)
    too_long = outcome({"filename": "a" * 13})["content"][0]["text"]
    assert "Expected at filename: a string of at most 12 characters" in too_long


def test_pattern_is_judged_with_ecma_semantics() -> None:
    """``\\d`` is ASCII in ECMA-262 but any Unicode digit in Python's ``re``: a pattern
    is never decided by the small validator, which would let an Arabic-Indic digit by."""
    def code(pin: Annotated[str, Schema(pattern=r"^\d{4}$")]) -> str:
        """Check a PIN."""
        return "ok"

    tool = Tool(code)
    assert tool.invalid_arguments({"pin": "1234"}) is None
    refused = tool.invalid_arguments({"pin": "\u0661\u0662\u0663\u0664"})
    assert refused is not None and refused["isError"] is True


def test_lengths_and_ranges_stay_on_the_small_validators_path() -> None:
    plain = {"type": "object", "properties": {
        "s": {"type": "string", "minLength": 1, "maxLength": 3},
        "n": {"type": "number", "exclusiveMinimum": 0, "maximum": 9},
        "xs": {"type": "array", "items": {"type": "integer"}, "minItems": 1}},
        "additionalProperties": False}
    assert is_plain(plain)
    assert not is_plain({"type": "string", "pattern": "^a"})
    assert not is_plain({"const": 1})
    check = SchemaValidator(plain)
    assert check.is_valid({"s": "abc", "n": 0.5, "xs": [1]})
    for bad in ({"s": ""}, {"s": "abcd"}, {"n": 0}, {"n": 10}, {"xs": []}, {"n": True}):
        assert not check.is_valid(bad), bad
    assert check.is_valid({"s": "\U0001F600" * 3})  # code points, not UTF-16 units


def test_schema_merges_over_pydantic_types_and_other_metadata() -> None:
    class Point(BaseModel):
        x: int

    schema, adapter = type_schema(Annotated[Point, Schema(description="Where.")])
    assert schema["description"] == "Where." and adapter is not None
    assert schema["properties"] == {"x": {"title": "X", "type": "integer"}}
    schema, _ = type_schema(Annotated[str, "a note", Schema(maxLength=5),
                                      Schema(maxLength=4, minLength=1)])
    assert schema["maxLength"] == 4 and schema["minLength"] == 1  # the last one wins

    class Label(BaseModel):  # inside a type pydantic builds: the same keywords
        text: Annotated[str, Schema(maxLength=3)]
        more: Annotated[list[str], "note", Schema(maxItems=1)] | None = None

    schema, _ = type_schema(Label)
    assert schema["properties"]["text"]["maxLength"] == 3
    assert schema["properties"]["more"]["anyOf"][0]["maxItems"] == 1


def test_unknown_keywords_are_refused_with_the_right_spelling() -> None:
    with pytest.raises(TypeError, match=r"max_length \(did you mean maxLength\?\)"):
        Schema(max_length=3)
    with pytest.raises(TypeError, match="properties"):
        Schema(properties={})  # the hint says the type's shape, not Schema
    assert Schema(maxLength=3) == Schema(maxLength=3)
    assert repr(Schema(maxLength=3)) == "Schema(maxLength=3)"


def test_a_server_using_schema_never_imports_pydantic() -> None:
    code = (
        "from typing import Annotated\n"
        "from mcpkit import Schema, Server\n"
        "from mcpkit.server.tools import Tool\n"
        "server = Server('s')\n"
        "@server.tool\n"
        "def pick(n: Annotated[int, Schema(minimum=1, maximum=9)],\n"
        "         name: Annotated[str, Schema(pattern='^[a-z]+$')] = 'a') -> int:\n"
        "    '''Pick.'''\n"
        "    return n\n"
        "tool = server._registry.tools['pick']\n"
        "assert tool.invalid_arguments({'n': 3}) is None\n"
        "assert tool.invalid_arguments({'n': 0}) is not None\n"
)
    assert "pydantic" not in modules_after(code)
