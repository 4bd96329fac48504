"""The client's result types read wire JSON without pydantic (``client/model.py``): what
they accept, what they refuse and how they say so, and what they give back."""

from typing import Any

import pytest

from mcpkit.client import types as t
from mcpkit.client.model import Wire, WireError, field
from mcpkit.protocol.errors import InvalidResult
from tests.support.modules import modules_after
from tests.support.schemas import validate

TOOL = {"name": "search", "inputSchema": {"type": "object"}, "title": "Search",
        "annotations": {"readOnlyHint": True}, "icons": [{"src": "data:,x"}],
        "execution": {"taskSupport": "optional"}, "_meta": {"k": 1}}


def test_a_listed_tool_reads_into_snake_case_attributes_and_back() -> None:
    tool = t.ToolInfo.from_wire(TOOL)
    assert tool.input_schema == {"type": "object"} and tool.title == "Search"
    assert tool.annotations == t.ToolAnnotations(read_only_hint=True)
    assert tool.icons == [t.Icon(src="data:,x")] and tool.task_support == "optional"
    assert tool.meta == {"k": 1} and tool.output_schema is None
    assert tool.to_wire() == TOOL
    validate("2025-11-25", "Tool", tool.to_wire())


def test_names_are_read_as_wire_names_or_attribute_names() -> None:
    by_wire = t.ToolAnnotations.from_wire({"readOnlyHint": True})
    by_attr = t.ToolAnnotations.from_wire({"read_only_hint": True})
    assert by_wire == by_attr == t.ToolAnnotations(readOnlyHint=True)
    assert by_attr.to_wire() == {"readOnlyHint": True}


def test_unknown_fields_survive_as_attributes_and_on_the_way_back() -> None:
    icon = t.Icon.from_wire({"src": "a.png", "xScale": 2, "x-note": None})
    assert icon.xScale == 2
    assert icon.to_wire() == {"src": "a.png", "xScale": 2}
    assert "xScale=2" in repr(icon)
    with pytest.raises(AttributeError, match="'Icon' object has no attribute 'nope'"):
        _ = icon.nope


@pytest.mark.parametrize(("cls", "data", "message"), [
    (t.ToolInfo, [], "<object>: should be an object, got []"),
    (t.ToolInfo, {"inputSchema": {}}, "name: is required and missing"),
    (t.ToolInfo, {"name": 3, "inputSchema": {}}, "name: should be a string, got 3"),
    (t.ToolInfo, {"name": "a", "inputSchema": []}, "inputSchema: should be an object"),
    (t.ToolInfo, {"name": "a", "inputSchema": {}, "annotations": {"readOnlyHint": "yes"}},
     "annotations.readOnlyHint: should be a boolean, got 'yes'"),
    (t.ToolInfo, {"name": "a", "inputSchema": {}, "icons": [{"src": "x"}, {}]},
     "icons.1.src: is required and missing"),
    (t.ToolInfo, {"name": "a", "inputSchema": {}, "icons": {"src": "x"}},
     "icons: should be an array"),
    (t.CallToolResult, {"content": [{"type": "video", "data": ""}]},
     "content.0.type: should be one of 'text', 'image', 'audio', 'resource', "
     "'resource_link', got 'video'"),
    (t.CallToolResult, {"content": ["hi"]}, "content.0.type: should be one of"),
    (t.CallToolResult, {"content": [], "isError": "false"}, "isError: should be a boolean"),
    (t.CallToolResult, {"content": [], "isError": None}, "isError: should be a boolean"),
    (t.Annotations, {"priority": "high"}, "priority: should be a number, got 'high'"),
    (t.Annotations, {"priority": True}, "priority: should be a number, got True"),
    (t.ResourceLink, {"type": "resource_link", "uri": "u", "name": "n", "size": 1.5},
     "size: should be an integer, got 1.5"),
    (t.PromptMessage, {"role": "system", "content": {"type": "text", "text": ""}},
     "role: should be one of 'user', 'assistant', got 'system'"),
    (t.Task, {"taskId": "", "status": "working", "createdAt": "", "lastUpdatedAt": ""},
     "taskId: should have at least 1 character"),
    (t.Task, {"taskId": "a", "status": "running", "createdAt": "", "lastUpdatedAt": ""},
     "status: should be one of 'working'"),
    (t.GetPromptResult, {"messages": [{"role": "user", "content": {"type": "text"}}]},
     "messages.0.content.text: is required and missing"),
])
def test_a_value_that_does_not_fit_is_refused_with_its_path(cls: type[Wire], data: Any,
                                                             message: str) -> None:
    with pytest.raises(WireError) as caught:
        cls.from_wire(data)
    assert str(caught.value).startswith(message)


def test_a_long_value_is_cut_in_the_message() -> None:
    assert t.Icon.from_wire({"src": "x" * 10_000}).src == "x" * 10_000
    with pytest.raises(WireError) as caught:
        t.Icon.from_wire({"src": ["x" * 10_000]})
    assert len(str(caught.value)) < 80 and str(caught.value).endswith("...")


def test_numbers_read_as_json_has_them() -> None:
    link = t.ResourceLink.from_wire({"type": "resource_link", "uri": "u", "name": "n",
                                     "size": 3.0})
    assert link.size == 3 and type(link.size) is int  # 3.0 is an integer in JSON
    assert t.Annotations.from_wire({"priority": 1}).priority == 1


def test_tasks_read_both_generations() -> None:
    base = {"taskId": "a", "status": "input_required", "createdAt": "c",
            "lastUpdatedAt": "d"}
    core = t.Task.from_wire({**base, "ttl": 5, "pollInterval": 7})
    ext = t.Task.from_wire({**base, "ttlMs": 5, "pollIntervalMs": 7})
    assert (core.ttl, core.poll_interval) == (ext.ttl, ext.poll_interval) == (5, 7)
    assert not core.terminal
    unlimited = t.Task.from_wire({**base, "ttl": None})
    assert unlimited.ttl is None and unlimited.to_wire() == base


def test_defaults_are_not_shared_between_objects() -> None:
    one, two = t.CallToolResult.from_wire({}), t.CallToolResult.from_wire({})
    one.content.append(t.TextContent(text="x"))
    assert two.content == [] and t.CallToolResult().content == []
    assert one.is_error is False and one.data is None and one.text == "x"


def test_equality_and_hashing() -> None:
    assert t.Icon(src="a") == t.Icon.from_wire({"src": "a"})
    assert t.Icon(src="a") != t.Icon(src="b")
    assert t.Icon(src="a") != t.Icon.from_wire({"src": "a", "x": 1})
    assert t.Icon(src="a") != {"src": "a"}
    with pytest.raises(TypeError):
        hash(t.Icon(src="a"))


def test_a_declaration_that_cannot_be_read_is_refused_when_the_class_is_made() -> None:
    with pytest.raises(TypeError, match="cannot hold"):
        class Odd(Wire):
            when: set[str]
    with pytest.raises(TypeError, match="literal 'type'"):
        class Untagged(Wire):
            either: t.Icon | t.Implementation
    with pytest.raises(TypeError, match="a string"):
        class Postponed(Wire):
            name: "str"  # what `from __future__ import annotations` makes of every hint

    class Named(Wire):
        meta: dict[str, Any] | None = field(None, wire="_meta")
        count: int = 0
    assert Named.from_wire({"_meta": {}, "count": 2}).to_wire() == {"_meta": {}, "count": 2}


def test_a_malformed_result_is_an_invalid_result_naming_the_method() -> None:
    from mcpkit.client.results import parse

    with pytest.raises(InvalidResult, match=r"answer to tools/call is malformed: "
                       r"content\.0\.text: should be a string, got None"):
        parse(t.CallToolResult, {"content": [{"type": "text", "text": None}]}, "tools/call")


def test_importing_the_client_loads_no_pydantic() -> None:
    loaded = modules_after("import mcpkit.client\nfrom mcpkit import Client")
    assert not [m for m in ("pydantic", "pydantic_core", "httpx", "uvicorn", "starlette",
                            "mcpkit.server", "mcpkit.auth") if m in loaded]
