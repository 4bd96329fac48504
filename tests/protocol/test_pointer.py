"""JSON Pointer (RFC 6901) inside one document (``mcpkit.protocol.pointer``).

The server's argument errors and the checker's parameter lint follow a tool's local
``$ref`` with it. Covered here: the escapes (``~1`` is ``/``, ``~0`` is ``~``, decoded in
that order so ``~01`` names the key ``~1``), array indices, and every way a pointer can
lead nowhere (the default, never an exception); then the same rules met through a tool
whose ``inputSchema`` names its definitions with escaped ``$ref``.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit.protocol import pointer
from mcpkit.server.tools import Tool

DOC: dict[str, Any] = {
    "a": [10, {"b": "deep"}, [None]],
    "a/b": "slash", "m~n": "tilde", "~1": "tilde-one", "/": "just-slash",
    "": "empty-key", " ": "space", "0": "digit-key",
}


@pytest.mark.parametrize("path,expected", [
    ("", DOC),  # the whole document
    ("/a/0", 10),
    ("/a/1/b", "deep"),
    ("/a/2/0", None),  # a null member is found, not taken for a miss
    ("/a~1b", "slash"),
    ("/m~0n", "tilde"),
    ("/~01", "tilde-one"),  # ~1 first, then ~0: "~01" is the key "~1", never "/"
    ("/~1", "just-slash"),
    ("/", "empty-key"),
    ("/ ", "space"),
    ("/0", "digit-key"),  # in an object a number is just a key
])
def test_a_pointer_names_one_member(path: str, expected: Any) -> None:
    assert pointer.resolve(DOC, path) == expected


@pytest.mark.parametrize("path", [
    "a",  # not a pointer: it must start with "/"
    "#/a",  # a URI fragment, not yet stripped of its "#"
    "/nowhere",
    "/a/3",  # past the end of the array
    "/a/-",  # "-" is the element after the last one: nothing to read
    "/a/-1",
    "/a/x",
    "/a/0/b",  # into a number
    "/a/1/b/c",  # into a string
    "/a~2b",  # not an escape RFC 6901 knows: no such key
    "/a~1b/0",
])
def test_a_pointer_that_leads_nowhere_gives_the_default(path: str) -> None:
    assert pointer.resolve(DOC, path) is None
    assert pointer.resolve(DOC, path, pointer.MISSING) is pointer.MISSING


def test_escaped_refs_of_a_tool_schema_are_followed_to_their_definition() -> None:
    """A tool's schema names its definitions ``a/b`` and ``c~d``; a refused array of them
    is described down to its items, which only a pointer decoded right can reach."""
    schema = {
        "type": "object",
        "$defs": {"a/b": {"type": "string", "minLength": 2},
                  "c~d": {"type": "integer", "maximum": 5}},
        "properties": {
            "words": {"type": "array", "maxItems": 1, "items": {"$ref": "#/$defs/a~1b"}},
            "counts": {"type": "array", "maxItems": 1, "items": {"$ref": "#/$defs/c~0d"}},
        },
    }
    tool = Tool(lambda **kw: "ok", name="raw", description="Raw.", input_schema=schema)
    assert tool.invalid_arguments({"words": ["ab"], "counts": [5]}) is None
    refused = tool.invalid_arguments({"words": ["ab", "cd"], "counts": [1, 2]})
    assert refused is not None
    text = refused["content"][0]["text"]
    assert ("Expected at words: an array of at most 1 item whose items are each a string "
            "of at least 2 characters.") in text
    assert ("Expected at counts: an array of at most 1 item whose items are each an "
            "integer <= 5.") in text
