"""Nested objects are closed (issue #26, item 4).

A tool taking ``issue: Issue`` (a pydantic model with ``title``) called with ``{"title":
"x", "assignee": "bob"}`` used to succeed with ``assignee`` silently gone: the top level
of an ``inputSchema`` had ``additionalProperties: false``, the objects of models,
dataclasses and TypedDicts inside it did not, and pydantic ignores extra fields. Now
every such object is closed unless its type allows extra fields, so the call is refused
and the model is told which field is unknown and what the object accepts, at any depth,
in both eras. ``outputSchema`` objects are closed too (what mcpkit sends is the value
dumped with the declared type: only its fields), and ``mcpkit check``'s lint agrees with
what mcpkit generates. One case runs in a real stdio subprocess.
"""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict, RootModel
from pydantic.dataclasses import dataclass as pydantic_dataclass
from typing_extensions import TypedDict

from mcpkit import Server
from mcpkit.check.lint import LintInput, lint
from mcpkit.testing import ERAS, connect

from .support.stdio import ServerProcess

LIMIT = 10


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # what is judged here does not depend on the event loop


class Issue(BaseModel):
    title: str


class Label(TypedDict):
    name: str


@dataclasses.dataclass
class Due:
    day: int


@pydantic_dataclass
class Owner:
    login: str


class Board(BaseModel):
    name: str
    issues: list[Issue]
    owner: Owner | None = None


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: str


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str


class OpenLabel(TypedDict):
    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]
    name: str


class NotReallyOpen(TypedDict, closed=False):
    """PEP 728 says extra keys may be there, but pydantic drops them: closed."""

    name: str


class Counted(TypedDict, extra_items=int):
    name: str


class Scores(RootModel[dict[str, int]]):
    pass


CALLS: list[tuple[str, Any]] = []


def tracker() -> Server:
    server = Server("tracker")

    @server.tool
    def file_issue(issue: Issue) -> Issue:
        """File an issue; returns it as filed."""
        CALLS.append(("file_issue", issue))
        return issue

    @server.tool
    def plan(board: Board, label: Label | None = None, due: Due | None = None) -> str:
        """Plan a board."""
        CALLS.append(("plan", (board, label, due)))
        return "planned"

    @server.tool
    def tag(loose: Loose, strict: Strict, open_label: OpenLabel, counted: Counted,
            scores: Scores, weights: dict[str, int], dropped: NotReallyOpen | None = None
            ) -> str:
        """Tag things whose types allow extra fields, or are maps."""
        CALLS.append(("tag", (loose, open_label, counted, scores, weights)))
        return "tagged"

    @server.tool
    def summary() -> Label:
        """A label built with more keys than the TypedDict declares."""
        return {"name": "bug", "colour": "red"}  # type: ignore[typeddict-unknown-key]

    return server


async def call(mode: str, name: str, arguments: dict[str, Any]) -> tuple[bool, str, Any]:
    with anyio.fail_after(LIMIT):
        async with connect(tracker(), mode=mode) as client:  # type: ignore[arg-type]
            res = await client.call_tool(name, arguments)
    return res.is_error, res.text, res.structured_content


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_the_issue_s_call_is_refused_naming_the_field(mode: str) -> None:
    CALLS.clear()
    is_error, text, _ = await call(mode, "file_issue", {"issue": {"title": "x",
                                                                  "assignee": "bob"}})
    assert is_error and CALLS == []  # the function never ran with a field dropped
    assert text == (
        "Invalid arguments for tool 'file_issue': issue: Additional properties are not "
        "allowed ('assignee' was unexpected). Expected at issue: an object with title "
        "(string, required). Fix these arguments to match the tool's inputSchema and call "
        "it again.")
    is_error, _, structured = await call(mode, "file_issue", {"issue": {"title": "x"}})
    assert not is_error and structured == {"title": "x"}


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(("arguments", "where", "unknown", "accepts"), [
    # a model in a list in a model
    ({"board": {"name": "b", "issues": [{"title": "t"}, {"title": "u", "points": 3}]}},
     "board/issues/1", "points", "title (string, required)"),
    # the board itself
    ({"board": {"name": "b", "issues": [], "colour": "red"}}, "board", "colour",
     "name (string, required), issues (array, required), owner (any)"),
    # a pydantic dataclass behind Optional
    ({"board": {"name": "b", "issues": [], "owner": {"login": "ann", "id": 7}}},
     "board/owner", "id", "login (string, required)"),
    # a TypedDict behind Optional
    ({"board": {"name": "b", "issues": []}, "label": {"name": "bug", "colour": "red"}},
     "label", "colour", "name (string, required)"),
    # a stdlib dataclass behind Optional
    ({"board": {"name": "b", "issues": []}, "due": {"day": 1, "month": 2}},
     "due", "month", "day (integer, required)"),
])
async def test_every_kind_of_object_is_closed_at_any_depth(
        mode: str, arguments: dict[str, Any], where: str, unknown: str, accepts: str) -> None:
    CALLS.clear()
    is_error, text, _ = await call(mode, "plan", arguments)
    assert is_error and CALLS == [], text
    assert (f"{where}: Additional properties are not allowed ('{unknown}' was unexpected). "
            f"Expected at {where}: an object with {accepts}.") in text


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_types_that_allow_extra_fields_stay_open(mode: str) -> None:
    CALLS.clear()
    is_error, text, _ = await call(mode, "tag", {
        "loose": {"kind": "k", "note": "kept"}, "strict": {"kind": "k"},
        "open_label": {"name": "n", "anything": [1]}, "counted": {"name": "n", "extra": 2},
        "scores": {"a": 1}, "weights": {"b": 2}})
    assert not is_error, text
    ((_, (loose, open_label, counted, scores, weights)),) = CALLS
    assert loose.note == "kept" and open_label["anything"] == [1] and counted["extra"] == 2
    assert scores.root == {"a": 1} and weights == {"b": 2}
    # extra_items=int: an extra item is an int; extra="forbid" is closed, as pydantic says
    for bad, place in ((("counted", {"name": "n", "extra": "two"}), "counted/extra"),
                       (("strict", {"kind": "k", "x": 1}), "strict"),
                       (("dropped", {"name": "n", "x": 1}), "dropped")):
        args = {"loose": {"kind": "k"}, "strict": {"kind": "k"}, "open_label": {"name": "n"},
                "counted": {"name": "n"}, "scores": {}, "weights": {}}
        args[bad[0]] = bad[1]
        is_error, text, _ = await call(mode, "tag", args)
        assert is_error and f"{place}: " in text, text


@pytest.mark.anyio
async def test_the_schemas_say_so_and_the_lint_agrees() -> None:
    async with connect(tracker()) as client:
        tools = {t["name"]: t for t in (await client.request("tools/list"))["tools"]}
    plan = tools["plan"]["inputSchema"]
    defs = plan["$defs"]
    assert plan["properties"]["board"]["additionalProperties"] is False
    assert all(defs[name]["additionalProperties"] is False
               for name in ("Issue", "Owner", "Label", "Due"))
    tag = tools["tag"]["inputSchema"]
    # each type's object, wherever pydantic put it ($defs, or inline under a property)
    found = [*tag.get("$defs", {}).values(), *tag["properties"].values()]
    found += [b for p in tag["properties"].values() for b in p.get("anyOf", ())]
    props = {name: next(o for o in found if o.get("title") == name) for name in (
        "Loose", "Strict", "OpenLabel", "Counted", "Scores", "NotReallyOpen")}
    assert props["Loose"]["additionalProperties"] is True
    assert props["Strict"]["additionalProperties"] is False
    assert props["OpenLabel"]["additionalProperties"] is True
    assert props["Counted"]["additionalProperties"] == {"type": "integer"}
    assert props["Scores"]["additionalProperties"] == {"type": "integer"}
    assert props["NotReallyOpen"]["additionalProperties"] is False
    assert tag["properties"]["weights"]["additionalProperties"] == {"type": "integer"}
    # what a tool returns: closed too, and what is sent matches it
    assert tools["file_issue"]["outputSchema"]["additionalProperties"] is False
    assert tools["summary"]["outputSchema"]["additionalProperties"] is False
    findings = [f for f in lint(LintInput(list(tools.values()), None, [], [], None),
                                "stateful") if f.rule == "LINT.additional-properties"]
    assert [f.verdict for f in findings] == ["pass"], findings


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_a_result_carries_only_the_declared_fields(mode: str) -> None:
    """``summary`` returns a dict with a key its TypedDict lacks: the structured content
    is the value dumped with the type, valid against the closed outputSchema (the wire is
    checked on leaving ``connect``)."""
    is_error, text, structured = await call(mode, "summary", {})
    assert not is_error, text
    assert structured == {"name": "bug"}


SCRIPT = '''
from pydantic import BaseModel
from mcpkit import Server

server = Server("tracker")


class Issue(BaseModel):
    title: str


@server.tool
def file_issue(issue: Issue) -> str:
    """File an issue."""
    return "filed " + issue.title


server.run()
'''


def test_over_stdio(tmp_path: Path) -> None:
    script = tmp_path / "tracker.py"
    script.write_text(textwrap.dedent(SCRIPT))
    with ServerProcess(script) as proc:
        proc.initialize()
        (tool,) = proc.request("tools/list")["result"]["tools"]
        assert tool["inputSchema"]["properties"]["issue"]["additionalProperties"] is False
        res = proc.request("tools/call", {"name": "file_issue", "arguments": {
            "issue": {"title": "x", "assignee": "bob"}}})["result"]
        assert res["isError"] is True
        assert "issue: Additional properties are not allowed ('assignee' was unexpected)" in (
            res["content"][0]["text"])
        res = proc.request("tools/call", {"name": "file_issue", "arguments": {
            "issue": {"title": "x"}}})["result"]
        assert res["content"][0]["text"] == "filed x"
