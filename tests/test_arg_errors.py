"""Argument errors that help at every depth (issue #15, item 9).

One path (``mcpkit.server.arg_errors``) writes the model-facing text for every refused
call: schema failures reported by ``jsonschema_rs`` and the failures only pydantic sees
after it (an ``HttpUrl``, a custom validator). Each problem names the nested field, what
was wrong and what *that* field expects. The end-to-end cases go through a real client
and server in memory with the wire schema-checked; the rest judge the text directly.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio
import pytest
from pydantic import BaseModel, Field, HttpUrl, field_validator

from mcpkit import Server
from mcpkit.server.arg_errors import at_instance_path, at_schema_path, describe
from mcpkit.server.tools import Tool
from mcpkit.session import Ready

from .support.tap import TappedClient

LIMIT = 8


class Bookmark(BaseModel):
    title: str = Field(min_length=1, max_length=80)
    url: HttpUrl
    tags: list[str] = []

    @field_validator("tags")
    @classmethod
    def lower(cls, tags: list[str]) -> list[str]:
        if any(t != t.lower() for t in tags):
            raise ValueError("tags must be lower case")
        return tags


def add(bookmark: Bookmark, count: Annotated[int, Field(ge=1, le=5)] = 1,
        order: Literal["asc", "desc"] = "asc") -> str:
    """Add a bookmark."""
    return f"added {bookmark.title}"


def text_of(result: dict[str, Any]) -> str:
    assert result["isError"] is True
    return str(result["content"][0]["text"])


def refused(arguments: Any) -> str:
    tool = Tool(add)
    result = tool.invalid_arguments(arguments)
    if result is None:
        converted = tool.call(arguments, None)  # type: ignore[arg-type]
        assert isinstance(converted, Ready), "the arguments were accepted"
        result = converted.value
    return text_of(result)


def test_nested_field_names_what_it_expects_at_its_own_level() -> None:
    text = refused({"bookmark": {"title": "", "url": "https://example.com"}})
    assert 'bookmark/title: "" is shorter than 1 character.' in text
    assert "Expected at bookmark/title: a string of 1 to 80 characters." in text
    assert "bookmark (object, required)" not in text  # not the top-level summary
    assert text.endswith("call it again.")


def test_every_problem_is_explained_at_its_depth() -> None:
    text = refused({"bookmark": {"title": "a", "url": "https://e.x", "tags": [1]},
                    "count": 9, "order": "up"})
    assert "bookmark/tags/0: 1 is not of type" in text
    assert "Expected at bookmark/tags/0: a string." in text
    assert "Expected at count: an integer >= 1 and <= 5." in text
    assert 'Expected at order: one of: "asc", "desc".' in text


def test_missing_field_describes_the_object_that_lacks_it() -> None:
    text = refused({"bookmark": {"title": "a"}})
    assert 'bookmark: "url" is a required property.' in text
    assert ("Expected at bookmark: an object with title (string, required), "
            "url (string, required), tags (array).") in text
    top = refused({})
    assert 'arguments: "bookmark" is a required property.' in top
    assert "Expected at arguments: an object with bookmark (object, required)" in top


def test_pydantic_only_failures_use_the_same_words_without_pydantic_noise() -> None:
    text = refused({"bookmark": {"title": "a", "url": "not a url"}})
    assert "bookmark/url: Input should be a valid URL" in text
    assert "Expected at bookmark/url: a string of 1 to 2083 characters (format uri)." in text
    for noise in ("errors.pydantic.dev", "[type=", "input_value", "validation error for"):
        assert noise not in text
    custom = refused({"bookmark": {"title": "a", "url": "https://e.x", "tags": ["A"]}})
    assert "bookmark/tags: Value error, tags must be lower case." in custom
    assert "Expected at bookmark/tags: an array whose items are each a string." in custom


def test_problems_are_capped() -> None:
    def many(xs: list[int]) -> int:
        """Sum."""
        return sum(xs)

    result = Tool(many).invalid_arguments({"xs": ["a"] * 50})
    assert result is not None
    assert text_of(result).count("is not of type") == 10


def test_refs_and_alternatives_are_followed() -> None:
    schema = {
        "type": "object",
        "$defs": {"B": {"type": "object", "properties": {"t": {"type": "string",
                                                               "minLength": 2}},
                        "required": ["t"]}},
        "properties": {"b": {"$ref": "#/$defs/B"},
                       "u": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                       "xs": {"type": "array", "prefixItems": [{"type": "integer"}]},
                       "m": {"type": "object", "additionalProperties": {"type": "number",
                                                                        "maximum": 1}}},
    }
    assert describe(at_instance_path(schema, ("b", "t")), schema) == (
        "a string of at least 2 characters")
    assert at_schema_path(schema, ("$defs", "B", "required")) == schema["$defs"]["B"]
    assert at_schema_path(schema, ("nowhere", "type")) is None
    assert describe(at_instance_path(schema, ("u",)), schema) == "a string or null"
    assert describe(at_instance_path(schema, ("xs", 0)), schema) == "an integer"
    assert at_instance_path(schema, ("xs", 1)) is None
    assert describe(at_instance_path(schema, ("m", "any")), schema) == "a number <= 1"
    tool = Tool(lambda **kw: "ok", name="raw", description="Raw.", input_schema=schema)
    result = tool.invalid_arguments({"b": {"t": "x"}, "u": 3, "m": {"k": 2}})
    assert result is not None
    text = text_of(result)
    assert "Expected at b/t: a string of at least 2 characters." in text
    assert "Expected at u: a string or null." in text
    assert "Expected at m/k: a number <= 1." in text


def test_hostile_schemas_do_not_break_the_message() -> None:
    loop = {"type": "object", "$defs": {"A": {"$ref": "#/$defs/A"}},
            "properties": {"a": {"$ref": "#/$defs/A"}}}
    assert at_instance_path(loop, ("a",)) == {"$ref": "#/$defs/A"}  # bounded, no recursion
    assert describe({"$ref": "https://elsewhere/schema"}) == ""
    assert describe({"enum": list(range(100))}).endswith("and 92 more")
    assert describe(False) == "no value at all (the field is not allowed)"
    assert describe(True) == "any value"


@pytest.mark.anyio
async def test_the_model_reads_it_through_a_real_client() -> None:
    server = Server("bookmarks")
    server.add_tool(add)
    client = TappedClient(server, timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            res = await client.call_tool("add", {"bookmark": {"title": "a", "url": "nope"}})
            assert res.is_error
            text = res.content[0].text
            assert "bookmark/url: Input should be a valid URL" in text
            assert "Expected at bookmark/url:" in text
            ok = await client.call_tool("add", {"bookmark": {"title": "a",
                                                             "url": "https://e.x"}})
            assert not ok.is_error
    client.wire.assert_clean()
