"""What a declaration takes as a JSON object (issue #26, item 3).

``@server.tool(annotations=mcp.types.ToolAnnotations(readOnlyHint=True))`` (the official
SDK's pydantic model, common in ported code) used to be accepted at declaration and then
fail every ``tools/list`` with -32603 (orjson cannot encode the model), for every tool.
Now pydantic models, dataclasses and mappings are accepted wherever a declaration takes a
JSON object (annotations, icons, meta, the schemas; tools, resources, templates, prompts,
the server; the decorators, the declarative forms and mounted servers), converted once
at declaration, and anything else is a ``TypeError`` naming the argument. Every accepted
form is listed afterwards, in both eras, with the wire checked against the official
schema (``mcpkit.testing``); one form is served by a real stdio subprocess.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import anyio
import pytest
from mcp import types as sdk  # the official SDK's models (the dev extra's mcp==2.3.0)
from pydantic import BaseModel, ConfigDict

from mcpkit import Server
from mcpkit.server import Prompt, Resource, ResourceTemplate, Tool
from mcpkit.testing import ERAS, connect

from .support.stdio import ServerProcess

LIMIT = 10


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # what is judged here is the same under trio


@dataclass
class Hints:
    readOnlyHint: bool | None = None  # the wire's names, as a user writes them
    openWorldHint: bool | None = None
    title: str | None = None


@dataclass
class IconSpec:
    src: str
    mimeType: str | None = None
    sizes: tuple[str, ...] = ()


@dataclass
class Owner:
    team: str
    oncall: list[str]


def hello() -> str:
    """Say hello."""
    return "hello"


def note(name: str) -> str:
    """A note, by name."""
    return f"note {name}"


ICON_WIRE = {"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"]}
HINTS_WIRE = {"readOnlyHint": True, "openWorldHint": False}

TOOL_FORMS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # name -> (declaration options, the listed definition's fields)
    "sdk-models": (
        {"annotations": sdk.ToolAnnotations(readOnlyHint=True, openWorldHint=False),
         "icons": [sdk.Icon(src="https://example.com/i.png", mimeType="image/png",
                            sizes=["48x48"])],
         "meta": sdk.Implementation(name="x", version="1")},
        {"annotations": HINTS_WIRE, "icons": [ICON_WIRE],
         "_meta": {"name": "x", "version": "1"}}),
    "dataclasses": (
        {"annotations": Hints(readOnlyHint=True, openWorldHint=False),
         "icons": (IconSpec("https://example.com/i.png", "image/png", ("48x48",)),),
         "meta": {"example.com/owner": Owner("infra", ["ann", "bob"])}},
        {"annotations": HINTS_WIRE, "icons": [ICON_WIRE],
         "_meta": {"example.com/owner": {"team": "infra", "oncall": ["ann", "bob"]}}}),
    "mappings": (
        {"annotations": MappingProxyType(HINTS_WIRE),
         "icons": [MappingProxyType(ICON_WIRE)],
         "meta": MappingProxyType({"example.com/tier": ("gold", 1)})},
        {"annotations": HINTS_WIRE, "icons": [ICON_WIRE],
         "_meta": {"example.com/tier": ["gold", 1]}}),
}


async def listed(server: Server, mode: str) -> dict[str, list[dict[str, Any]]]:
    """Every listing of ``server`` in ``mode``; the wire is checked against the schema
    when the block ends (``WireViolation`` otherwise)."""
    with anyio.fail_after(LIMIT):
        async with connect(server, mode=mode) as client:  # type: ignore[arg-type]
            out: dict[str, list[dict[str, Any]]] = {}
            for method, key in (("tools/list", "tools"), ("resources/list", "resources"),
                                ("resources/templates/list", "resourceTemplates"),
                                ("prompts/list", "prompts")):
                out[key] = (await client.request(method))[key]
            if mode == "stateful":
                out["server"] = [dict(client.server_info or {})]
    return out


def by_name(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(i for i in items if i["name"] == name)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("form", sorted(TOOL_FORMS))
@pytest.mark.parametrize("how", ["decorator", "declarative", "mounted"])
async def test_every_accepted_form_lists(form: str, how: str, mode: str) -> None:
    options, wire = TOOL_FORMS[form]
    res_options = {"icons": options["icons"], "annotations": (
        sdk.Annotations(audience=["user"], priority=0.5) if form == "sdk-models" else
        {"audience": ("user",), "priority": 0.5})}
    if how == "declarative":
        server = Server("s", icons=options["icons"], tools=[Tool(hello, **options)],
                        resources=[Resource(hello, "memo://hello", **res_options),
                                   ResourceTemplate(note, "memo://notes/{name}",
                                                    **res_options)],
                        prompts=[Prompt(hello, icons=options["icons"])])
    else:
        server = Server("s", icons=options["icons"])
        server.tool(**options)(hello)
        server.resource("memo://hello", **res_options)(hello)
        server.resource("memo://notes/{name}", **res_options)(note)
        server.prompt(icons=options["icons"])(hello)
    prefix = ""
    if how == "mounted":
        parent, prefix = Server("parent"), "kid_"
        parent.mount("kid", server)
        server = parent
    got = await listed(server, mode)
    tool = by_name(got["tools"], prefix + "hello")
    assert {k: tool[k] for k in wire} == wire
    resource, template = got["resources"][0], got["resourceTemplates"][0]
    for item in (resource, template):
        assert item["annotations"] == {"audience": ["user"], "priority": 0.5}
        assert item["icons"] == [ICON_WIRE]
    assert by_name(got["prompts"], prefix + "hello")["icons"] == [ICON_WIRE]
    if mode == "stateful" and how != "mounted":
        assert got["server"][0]["icons"] == [ICON_WIRE]


@pytest.mark.anyio
async def test_the_issue_s_server_lists_every_tool() -> None:
    """The report: one tool declared with the SDK's model broke tools/list for all."""
    server = Server("tracker")
    server.tool(annotations=sdk.ToolAnnotations(readOnlyHint=True))(hello)
    server.tool(note)
    for mode in ERAS:
        tools = (await listed(server, mode))["tools"]
        assert [t["name"] for t in tools] == ["hello", "note"]
        assert tools[0]["annotations"] == {"readOnlyHint": True}


SCRIPT = '''
import sys
from dataclasses import dataclass

from mcp import types as sdk
from mcpkit import Server

server = Server("ported", icons=[sdk.Icon(src="https://example.com/s.png")])


@dataclass
class Budget:
    calls: int


@server.tool(annotations=sdk.ToolAnnotations(readOnlyHint=True, title="Search"),
             icons=[sdk.Icon(src="https://example.com/t.png", mimeType="image/png")],
             meta={"example.com/budget": Budget(3)})
def search(query: str) -> str:
    """Search the notes."""
    return query


@server.resource("memo://readme", annotations=sdk.Annotations(audience=["assistant"]))
def readme() -> str:
    return "read me"


server.run()
'''


def test_a_ported_server_lists_over_stdio(tmp_path: Path) -> None:
    """A real subprocess, every message it writes checked against the 2025-11-25 schema."""
    script = tmp_path / "ported.py"
    script.write_text(textwrap.dedent(SCRIPT))
    with ServerProcess(script) as proc:
        init = proc.initialize()
        assert init["serverInfo"]["icons"] == [{"src": "https://example.com/s.png"}]
        tools = proc.request("tools/list")
        assert "error" not in tools, tools
        (tool,) = tools["result"]["tools"]
        assert tool["annotations"] == {"readOnlyHint": True, "title": "Search"}
        assert tool["icons"] == [{"src": "https://example.com/t.png", "mimeType": "image/png"}]
        assert tool["_meta"] == {"example.com/budget": {"calls": 3}}
        resources = proc.request("resources/list")["result"]["resources"]
        assert resources[0]["annotations"] == {"audience": ["assistant"]}
        assert proc.request("tools/call", {"name": "search", "arguments": {"query": "q"}})[
            "result"]["content"][0]["text"] == "q"
    assert sys.executable  # the child ran with this interpreter (mcp installed beside)


# ---------------------------------------------------------------------- refused


class Opaque:
    """Neither a mapping, a pydantic model nor a dataclass."""


class Unserializable(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    handle: Opaque


REFUSED: dict[str, tuple[Callable[[Server], Any], str]] = {
    "a model pydantic cannot dump": (
        lambda s: s.tool(meta={"x": Unserializable(handle=Opaque())})(hello),
        r"^meta\['x'\]: the Unserializable model does not turn into JSON \("),
    "a string": (lambda s: s.tool(annotations="readOnly")(hello),
                 r"^annotations takes a JSON object: a dict \(or other mapping\), a pydantic "
                 r"model or a dataclass instance, such as \{'readOnlyHint': True\}.*; got a str$"),
    "a model class": (lambda s: s.tool(annotations=sdk.ToolAnnotations)(hello),
                      r"^annotations takes .*; got the class ToolAnnotations \(pass an "
                      r"instance\)$"),
    "an opaque object": (lambda s: s.tool(meta=Opaque())(hello),
                         r"^meta takes a JSON object.*; got a Opaque$"),
    "a value inside that is not JSON": (
        lambda s: s.tool(meta={"example.com/x": {"when": Opaque()}})(hello),
        r"^meta\['example.com/x'\]\['when'\] is a Opaque, which is not JSON; meta takes"),
    "a cycle": (lambda s: s.tool(meta=(cyclic := {}, cyclic.update(me=cyclic))[0])(hello),
                r"^meta(\['me'\])+\['me… nests deeper than 64 levels \(a cycle\?\)"),
    "a key that is not a string": (lambda s: s.tool(meta={1: "x"})(hello),
                                   r"^meta has the key 1; JSON object keys are strings"),
    "not a finite number": (lambda s: s.tool(meta={"x": float("nan")})(hello),
                            r"^meta\['x'\] is nan, which JSON cannot carry"),
    "a hint that is not a boolean": (
        lambda s: s.tool(annotations={"readOnlyHint": "very"})(hello),
        r"^annotations\['readOnlyHint'\] must be true or false, got 'very'$"),
    "one icon, not a list": (
        lambda s: s.tool(icons=sdk.Icon(src="https://example.com/i.png"))(hello),
        r"^icons takes a list of icons, each a JSON object.*; got a Icon$"),
    "an icon without src": (lambda s: s.prompt(icons=[{"mimeType": "image/png"}])(hello),
                            r"^icons\[0\] has no 'src'"),
    "an icon with a bad theme": (
        lambda s: s.resource("memo://a", icons=[{"src": "x:y", "theme": "blue"}])(hello),
        r"^icons\[0\]\['theme'\] must be \"light\" or \"dark\", got 'blue'$"),
    "a priority out of range": (
        lambda s: s.resource("memo://{a}", annotations={"priority": 2})(note),
        r"^annotations\['priority'\] must be a number from 0 to 1, got 2$"),
    "a model class as a schema": (
        lambda s: s.tool(input_schema=sdk.Icon)(hello),
        r"^input_schema takes a JSON Schema object \(a dict\); for a pydantic model's "
        r"schema pass Icon.model_json_schema\(\)"),
    "a server icon": (lambda s: Server("x", icons=["https://example.com/i.png"]),
                      r"^icons\[0\] takes a list of icons.*; got a str$"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_anything_else_is_refused_at_declaration(case: str) -> None:
    declare, message = REFUSED[case]
    server = Server("s")
    with pytest.raises(TypeError, match=message):
        declare(server)

    async def still_lists() -> None:  # nothing half-registered
        for mode in ERAS:
            got = await listed(server, mode)
            assert got["tools"] == got["resources"] == got["prompts"] == []

    anyio.run(still_lists)
