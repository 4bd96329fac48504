"""Typed elicitation (issue #15, item 8): ``ctx.elicit(message, Model | primitive)``.

The form (``requestedSchema``) is built from the type, the user's answer comes back as
that type (``result.data``), in every era that has elicitation: on a 2025-06-18 and a
2025-11-25 session it is a server->client request, on a 2026-07-28 request an MRTR
input round trip. The client is mcpkit's, tapped: every message it sends and receives is
validated against the official schema of the negotiated revision. Unit cases judge the
forms built from types, including the ones refused.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import pytest
from pydantic import BaseModel, Field, HttpUrl
from typing_extensions import TypedDict

from mcpkit import Context, Server, ToolError
from mcpkit.server.elicit_forms import form_for

from .support.tap import TappedClient

LIMIT = 8


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Signup(BaseModel):
    name: str = Field(min_length=1, description="Your name")
    homepage: HttpUrl
    age: int | None = Field(default=None, ge=0, le=150)
    newsletter: bool = True
    color: Color = Color.RED
    topics: list[Literal["ai", "web"]] = []


@dataclass
class Point:
    x: float
    y: float = 0.0


class Pair(TypedDict):
    left: str
    right: str


def test_model_form_is_flat_and_typed() -> None:
    form = form_for(Signup)
    props = form.schema["properties"]
    assert form.schema["required"] == ["name", "homepage"]
    assert props["name"] == {"type": "string", "title": "Name", "description": "Your name",
                             "minLength": 1}
    assert props["homepage"] == {"type": "string", "title": "Homepage", "minLength": 1,
                                 "maxLength": 2083, "format": "uri"}
    assert props["age"] == {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150}
    assert props["newsletter"] == {"type": "boolean", "title": "Newsletter", "default": True}
    assert props["color"] == {"type": "string", "enum": ["red", "blue"], "title": "Color",
                              "default": "red"}
    assert props["topics"]["items"] == {"type": "string", "enum": ["ai", "web"]}
    value = form.parse({"name": "Ada", "homepage": "https://ada.example", "topics": ["ai"]})
    assert isinstance(value, Signup) and value.color is Color.RED and value.topics == ["ai"]


@pytest.mark.parametrize(("tp", "field", "answer", "expected"), [
    (bool, {"type": "boolean"}, True, True),
    (str, {"type": "string"}, "yes", "yes"),
    (int, {"type": "integer"}, 3, 3),
    (float, {"type": "number"}, 2, 2.0),
    (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}, "b", "b"),
    (Color, {"type": "string", "enum": ["red", "blue"]}, "blue", Color.BLUE),
    (list[Color], {"type": "array", "items": {"type": "string", "enum": ["red", "blue"]}},
     ["red"], [Color.RED]),
])
def test_primitive_is_one_value_field(tp: Any, field: dict[str, Any], answer: Any,
                                      expected: Any) -> None:
    form = form_for(tp)
    assert form.schema == {"type": "object", "properties": {"value": field},
                           "required": ["value"]}
    parsed = form.parse({"value": answer})
    assert parsed == expected and type(parsed) is type(expected)


def test_dataclass_and_typeddict_forms() -> None:
    assert form_for(Point).schema["required"] == ["x"]
    assert form_for(Point).parse({"x": 1.5}) == Point(1.5, 0.0)
    assert form_for(Pair).parse({"left": "l", "right": "r"}) == {"left": "l", "right": "r"}


class Nested(BaseModel):
    point: Point


@pytest.mark.parametrize(("tp", "words"), [
    (Nested, "'point' is object"),
    (list[int], "a list must be of string choices"),
    (int | str, "is a union"),
    (Literal[1, 2], "choices must be strings"),
    (dict[str, int], "'value' is object"),
])
def test_types_that_cannot_be_a_form_are_refused_by_name(tp: Any, words: str) -> None:
    with pytest.raises(TypeError, match=words):
        form_for(tp)


def test_an_answer_that_does_not_fit_is_a_tool_error() -> None:
    form = form_for(Signup)
    with pytest.raises(ToolError, match="did not fit the requested form") as err:
        form.parse({"name": "", "homepage": "https://ada.example"})
    assert "name" in str(err.value)
    with pytest.raises(ToolError, match="homepage"):
        form.parse({"name": "Ada", "homepage": "not a url"})  # only pydantic sees it
    with pytest.raises(ToolError):
        form_for(bool).parse({"value": "yes"})


class Contact(BaseModel):
    name: str = Field(min_length=1)
    homepage: HttpUrl
    color: Color = Color.RED


def make_server() -> Server:
    server = Server("typed-elicitation")

    @server.tool
    async def delete_file(path: str, ctx: Context) -> str:
        """Delete a file after the user confirms."""
        answer = await ctx.elicit(f"Delete {path}?", bool)
        if not answer.accepted:
            return f"not deleted ({answer.action})"
        return "deleted" if answer.data else "kept"

    @server.tool
    async def sign_up(ctx: Context) -> str:
        """Sign the user up."""
        answer = await ctx.elicit("Your details", Contact)
        assert answer.data is None or isinstance(answer.data, Contact)
        return f"{answer.data.name} <{answer.data.homepage}>" if answer.data else answer.action

    return server


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
async def test_typed_elicitation_in_every_era(version: str) -> None:
    asked: list[dict[str, Any]] = []

    def user(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        if params["message"].startswith("Delete /keep"):
            return {"action": "decline"}
        if params["message"].startswith("Delete"):
            return {"action": "accept", "content": {"value": True}}
        return {"action": "accept", "content": {"name": "Ada",
                                                "homepage": "https://ada.example"}}

    mode = "stateless" if version == "2026-07-28" else "stateful"
    client = TappedClient(make_server(), protocol_version=version, mode=mode,
                          elicitation=user, timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            assert (await client.call_tool("delete_file", {"path": "/tmp/x"})).text == (
                "deleted")
            assert (await client.call_tool("delete_file", {"path": "/keep"})).text == (
                "not deleted (decline)")
            assert (await client.call_tool("sign_up")).text == "Ada <https://ada.example/>"
    client.wire.assert_clean()
    assert asked[0]["requestedSchema"] == {
        "type": "object", "properties": {"value": {"type": "boolean"}}, "required": ["value"]}
    assert asked[-1]["requestedSchema"]["properties"]["homepage"]["format"] == "uri"


@pytest.mark.anyio
async def test_a_client_answer_that_does_not_fit_reaches_the_model_as_is_error() -> None:
    client = TappedClient(make_server(), protocol_version="2025-11-25", timeout=LIMIT,
                          elicitation=lambda p: {"action": "accept",
                                                 "content": {"value": "sure"}})
    with anyio.fail_after(LIMIT):
        async with client:
            res = await client.call_tool("delete_file", {"path": "/tmp/x"})
    assert res.is_error and "did not fit the requested form" in res.text


# --------------------------------------------------------------------------- FastMCP's spelling
# Issue #29 item 3: a FastMCP handler ports as it is: ctx.elicit(msg, response_type=...)
# with every spelling FastMCP reads, typed data back in both eras.

PRIORITIES = {"low": {"title": "Low priority"}, "high": {"title": "High priority"}}


def fastmcp_server() -> Server:
    server = Server("ported")

    @server.tool
    async def ask(kind: str, ctx: Context) -> str:
        """Ask the user one question of the given kind."""
        spelled: dict[str, Any] = {
            "bool": {"response_type": bool},
            "int": {"response_type": int, "response_title": "How many?"},
            "confirm": {"response_type": None},
            "choice": {"response_type": ["low", "high"]},
            "choices": {"response_type": [["ai", "web"]]},
            "titled": {"response_type": PRIORITIES},
            "titled_many": {"response_type": [PRIORITIES]},
            "literal": {"response_type": Literal["yes", "no"]},
            "enum": {"response_type": Color},
            "dataclass": {"response_type": Point},
        }
        answer = await ctx.elicit(f"question {kind}", **spelled[kind])
        return f"{answer.action} {answer.data!r}"

    @server.tool
    async def misuse(ctx: Context) -> str:
        """Passes the type twice (a porting mistake)."""
        await ctx.elicit("Sure?", bool, response_type=bool)
        return "unreachable"

    return server


ANSWERS: dict[str, Any] = {
    "bool": {"value": True}, "int": {"value": 3}, "confirm": {}, "choice": {"value": "high"},
    "choices": {"value": ["web"]}, "titled": {"value": "low"}, "titled_many": {"value": ["high"]},
    "literal": {"value": "no"}, "enum": {"value": "blue"}, "dataclass": {"x": 2, "y": 1},
}
EXPECTED = {
    "bool": "accept True", "int": "accept 3", "confirm": "accept {}", "choice": "accept 'high'",
    "choices": "accept ['web']", "titled": "accept 'low'", "titled_many": "accept ['high']",
    "literal": "accept 'no'", "enum": "accept <Color.BLUE: 'blue'>",
    "dataclass": "accept Point(x=2.0, y=1.0)",
}


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
async def test_fastmcp_response_type_spellings_in_every_era(version: str) -> None:
    asked: dict[str, dict[str, Any]] = {}

    def user(params: dict[str, Any]) -> dict[str, Any]:
        kind = params["message"].split()[-1]
        asked[kind] = params["requestedSchema"]
        return {"action": "accept", "content": ANSWERS[kind]}

    mode = "stateless" if version == "2026-07-28" else "stateful"
    client = TappedClient(fastmcp_server(), protocol_version=version, mode=mode,
                          elicitation=user, timeout=LIMIT)
    multi = {"choices", "titled_many"}
    with anyio.fail_after(LIMIT):
        async with client:
            for kind, expected in EXPECTED.items():
                res = await client.call_tool("ask", {"kind": kind})
                if version == "2025-06-18" and kind in multi:  # no multi-select there
                    assert res.is_error and "cannot run in this session" in res.text, res.text
                    continue
                assert not res.is_error and res.text == expected, (kind, res.text)
    client.wire.assert_clean()  # every requestedSchema valid in that revision's schema
    assert asked["confirm"] == {"type": "object", "properties": {}}
    assert asked["int"]["properties"]["value"] == {"type": "integer", "title": "How many?"}
    assert asked["choice"]["properties"]["value"] == {"type": "string",
                                                      "enum": ["low", "high"]}
    titled = asked["titled"]["properties"]["value"]
    if version == "2025-06-18":  # titled choices as that revision spells them
        assert titled == {"type": "string", "enum": ["low", "high"],
                          "enumNames": ["Low priority", "High priority"]}
    else:
        assert titled == {"type": "string", "oneOf": [
            {"const": "low", "title": "Low priority"},
            {"const": "high", "title": "High priority"}]}
        assert asked["titled_many"]["properties"]["value"]["items"] == {
            "anyOf": titled["oneOf"]}


@pytest.mark.anyio
async def test_a_misused_elicit_is_logged_with_its_cause_on_the_first_line(
        caplog: pytest.LogCaptureFixture) -> None:
    client = TappedClient(fastmcp_server(), protocol_version="2025-11-25", timeout=LIMIT,
                          elicitation=lambda p: {"action": "cancel"})
    with anyio.fail_after(LIMIT), caplog.at_level("ERROR", logger="mcpkit"):
        async with client:
            res = await client.call_tool("misuse")
    assert res.is_error and "failed unexpectedly (TypeError)" in res.text
    (record,) = [r for r in caplog.records if "misuse" in r.getMessage()]
    first = record.getMessage().splitlines()[0]
    assert first.startswith("tool 'misuse' raised TypeError: elicit() takes what to ask "
                            "for once"), first


def test_shorthands_that_cannot_be_a_form_are_refused_plainly() -> None:
    from mcpkit.server.elicit_forms import shorthand_form

    for bad, words in (([], "non-empty list of strings"), ([1, 2], "list of strings"),
                       ({"low": "Low"}, "{value: {'title': ...}}"), ({}, "at least one")):
        with pytest.raises(TypeError, match=words.replace("(", r"\(").replace("{", r"\{")):
            shorthand_form(bad)
    with pytest.raises(TypeError, match="a confirmation"):
        shorthand_form(None, title="Sure?")
    with pytest.raises(TypeError, match="labels its own fields"):
        shorthand_form(Point, description="A point")
