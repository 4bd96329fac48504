"""The design lint (``mcpkit.check.lint``): one failing and one passing input per LINT rule,
a well-designed tool set that passes everything, and broken input that must not crash it."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from mcpkit.check.lint import LintInput, ProvokedError, ToolCall, lint
from mcpkit.check.model import Finding
from mcpkit.check.rules import RULES

LINT_IDS = [r for r in RULES if r.startswith("LINT.")]
INSTRUCTIONS = ("Documentation server. Use docs_search_pages to find pages, then "
                "docs_get_page to read one. Page ids are stable.")


def tool(name: str, **over: Any) -> dict[str, Any]:
    """A well-designed tool; ``over`` replaces (or, with value ``...``, removes) fields."""
    t: dict[str, Any] = {
        "name": name,
        "description": f"Use this when you need {name}. Returns the matching items as a list "
                       "with ids and titles.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for."},
                "sort": {"type": "string", "enum": ["relevance", "date"],
                         "pattern": "^[a-z]{1,20}$", "description": "Result order."},
                "limit": {"type": "integer", "default": 10, "description": "Maximum results."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "outputSchema": {"type": "object", "properties": {"items": {"type": "array"}}},
        "annotations": {"readOnlyHint": True, "destructiveHint": False},
    }
    for key, value in over.items():
        if value is ...:
            t.pop(key, None)
        else:
            t[key] = value
    return t


def params(name: str, properties: dict[str, Any], **schema: Any) -> dict[str, Any]:
    """A well-designed tool with the given top-level parameters."""
    return tool(name, inputSchema={"type": "object", "properties": properties,
                                   "additionalProperties": False, **schema})


def good_tools() -> list[dict[str, Any]]:
    return [tool("docs_search_pages"), tool("docs_get_page"), tool("docs_list_sections")]


def data(tools: list[Any] | None = None, *, instructions: str | None = INSTRUCTIONS,
         calls: list[ToolCall] | None = None, provoked: list[ProvokedError] | None = None,
         second: list[Any] | None = None) -> LintInput:
    return LintInput(good_tools() if tools is None else tools, instructions, calls or [],
                     provoked or [], second)


def result(text: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], **extra}


def call(res: dict[str, Any] | None, error: dict[str, Any] | None = None,
         name: str = "docs_search_pages") -> ToolCall:
    return ToolCall(name, {"query": "x"}, res, error, f"-> tools/call {name}\n<- ...")


def finding(d: LintInput, rule: str) -> Finding:
    found = [f for f in lint(d, "stateful") if f.rule == rule]
    assert len(found) == 1, found
    return found[0]


def verdict(d: LintInput, rule: str) -> str:
    return finding(d, rule).verdict


# ---------------------------------------------------------------------------------------------
# the whole


def test_one_finding_per_lint_rule_with_catalogue_fields() -> None:
    findings = lint(data(), "stateless")
    assert [f.rule for f in findings] == LINT_IDS
    for f in findings:
        rule = RULES[f.rule]
        assert (f.level, f.section, f.title, f.spec, f.era) == (
            rule.level, rule.section, rule.title, rule.spec, "stateless")
        assert f.verdict in ("pass", "fail", "n/a")
        assert f.message


def test_well_designed_server_passes_every_rule() -> None:
    tools = good_tools()
    calls = [
        call(result('{"items": []}', structuredContent={"items": []})),
        call(result("Parameter 'limit' must be between 1 and 50; received -1.", isError=True)),
    ]
    provoked = [
        ProvokedError("unknown tool", "Unknown tool 'nope'. Available tools: docs_search_pages, "
                      "docs_get_page.", ("nope",), "ev1"),
        ProvokedError("invalid arguments for docs_get_page",
                      "Parameter 'limit' must be an integer from 1 to 50, received 'x'.",
                      ("limit",), "ev2"),
    ]
    findings = lint(data(tools, calls=calls, provoked=provoked, second=copy.deepcopy(tools)),
                    "stateful")
    bad = [(f.rule, f.verdict, f.message) for f in findings if f.verdict not in ("pass", "n/a")]
    assert bad == []
    passed = {f.rule for f in findings if f.verdict == "pass"}
    assert passed == set(LINT_IDS)
    assert all(f.evidence == "" for f in findings)


def test_nothing_to_judge_is_na() -> None:
    findings = {f.rule: f.verdict for f in lint(data([], instructions=None), "stateful")}
    assert findings.pop("LINT.instructions") == "fail"
    assert set(findings.values()) == {"n/a"}


GARBAGE_TOOLS: list[Any] = [
    None, 1, "tool", [], ["name"], {},
    {"name": 5, "description": 7, "inputSchema": [], "annotations": "ro", "outputSchema": 3},
    {"name": None, "inputSchema": "object"},
    {"name": "x" * 300, "description": "", "inputSchema": {"properties": []}},
    {"name": "has space", "inputSchema": {"properties": {"a": 1, "b": None, 3: {}}}},
    {"name": "weird", "description": ["Use", "returns"],
     "inputSchema": {"type": ["object", 5], "additionalProperties": "no", "properties": {
         "mode": {"type": 7, "enum": "x"},
         "kind": {"type": ["string", None, 3], "description": 5},
         "loop": {"$ref": "#/properties/loop"},
         "deep": {"$ref": "#/$defs/A"},
         "bad_ref": {"$ref": "#/nowhere/~1x/0"},
         "num_ref": {"$ref": 5},
         "items": {"type": "array", "items": [1, 2]},
         "mix": {"anyOf": "x", "oneOf": [None, 3, {"$ref": "#"}], "allOf": {}},
     }, "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
                  "B": {"items": {"$ref": "#/$defs/A"}}}},
     "annotations": {"readOnlyHint": "yes", "destructiveHint": 1}},
    {"name": "weird", "annotations": None, "outputSchema": None,
     "inputSchema": {"properties": {"mode": {"type": "integer"}}}},
]


def test_garbage_input_does_not_raise() -> None:
    calls = [
        ToolCall("t", {}, {"content": "text"}, None, ""),
        ToolCall("t", {}, {"content": [None, 1, {"type": "text", "text": 5},
                                       {"type": "resource", "resource": "x"}]}, None, ""),
        ToolCall("t", {}, {"isError": "yes", "structuredContent": None}, None, ""),
        ToolCall("t", {}, None, {"code": -32602, "message": None}, ""),
        ToolCall(5, None, {"isError": True, "content": [{"type": "resource",  # type: ignore[arg-type]
                                                          "resource": {"text": "e"}}]}, None, 7),
    ]
    provoked = [
        ProvokedError("unknown tool", None, ("x",), ""),  # type: ignore[arg-type]
        ProvokedError("bad args", "", (), ""),
        ProvokedError("bad args", "!!!", (None, "", 5), None),  # type: ignore[arg-type]
        ProvokedError("bad cursor", "Invalid params", None, ""),  # type: ignore[arg-type]
    ]
    for instructions in (None, "", 5, "x" * 10):
        findings = lint(LintInput(GARBAGE_TOOLS, instructions, calls, provoked,  # type: ignore[arg-type]
                                  GARBAGE_TOOLS[::-1]), "stateful")
        assert [f.rule for f in findings] == LINT_IDS
        assert all(len(f.evidence) < 1300 for f in findings)
    lint(LintInput(None, None, None, None, None), "stateless")  # type: ignore[arg-type]


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    keys = ["name", "description", "inputSchema", "outputSchema", "annotations", "properties",
            "type", "items", "enum", "$ref", "anyOf", "readOnlyHint", "destructiveHint",
            "additionalProperties", "default", "mode", "query", "text", "content"]
    scalars: list[Any] = [None, True, False, 0, -1, 2.5, "", "object", "string", "array",
                          "#/properties/query", "#", "a|b", "2025-01-02T03:04", "mode"]
    if depth > 4 or rng.random() < 0.3:
        return rng.choice(scalars)
    if rng.random() < 0.5:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(keys): _random_json(rng, depth + 1) for _ in range(rng.randint(0, 6))}


def test_random_garbage_does_not_raise() -> None:
    rng = random.Random(1234)
    for _ in range(300):
        tools = [_random_json(rng) for _ in range(rng.randint(0, 5))]
        res = _random_json(rng)
        calls = [ToolCall("t", {}, res if isinstance(res, dict) else None, None, "")]
        lint(LintInput(tools, None, calls, [], tools[::-1]), "stateful")


# ---------------------------------------------------------------------------------------------
# naming


def test_tool_name() -> None:
    assert verdict(data(), "LINT.tool-name") == "pass"
    f = finding(data([tool("docs_ok"), tool("docs bad name"), tool("docs/x"), tool("x" * 129)]),
                "LINT.tool-name")
    assert f.verdict == "fail"
    assert f.message.startswith("Malformed names in 3 of 4 tools: ")
    assert "docs bad name" in f.message and "docs_bad_name" in f.message
    assert verdict(data([tool("")]), "LINT.tool-name") == "fail"
    assert verdict(data([tool("a.b-c_D9" + "x" * 120)]), "LINT.tool-name") == "pass"
    assert verdict(data([tool("docs_ok\n")]), "LINT.tool-name") == "fail"


def test_tool_name_unique() -> None:
    assert verdict(data(), "LINT.tool-name-unique") == "pass"
    f = finding(data([tool("docs_a"), tool("docs_b"), tool("docs_a")]), "LINT.tool-name-unique")
    assert f.verdict == "fail"
    assert "docs_a (2 times)" in f.message
    assert '"docs_a"' in f.evidence


def test_service_prefix() -> None:
    assert verdict(data(), "LINT.service-prefix") == "pass"
    assert verdict(data([tool("Docs.search"), tool("docs-get")]), "LINT.service-prefix") == "pass"
    f = finding(data([tool("search_docs"), tool("search_code"), tool("get_page")]),
                "LINT.service-prefix")
    assert f.verdict == "fail"
    assert "2 different prefixes: search (search_docs, search_code), get_page." in f.message
    assert "{service}_{action}_{resource}" in f.message
    assert verdict(data([tool("search")]), "LINT.service-prefix") == "n/a"
    assert verdict(data([]), "LINT.service-prefix") == "n/a"


# ---------------------------------------------------------------------------------------------
# descriptions


GOOD_DESCRIPTION = ("Use this to search the docs. Returns the best matching pages with titles "
                    "and URLs.")


@pytest.mark.parametrize("text", [
    GOOD_DESCRIPTION,
    "Call when the user asks about the weather in a city; gives temperature and wind.",
    "Lists every open issue of a repository, for triage and planning work.",
])
def test_description_passes(text: str) -> None:
    assert verdict(data([tool("docs_a", description=text)]), "LINT.description") == "pass"


@pytest.mark.parametrize("text", [
    "Searches.",
    "Use this to search. Returns pages.",  # too short
    "Searches the documentation index by keyword and ranks matching pages.",  # no when, no return
    "Use this when the user asks anything about the product documentation.",  # no return
])
def test_description_fails(text: str) -> None:
    f = finding(data([tool("docs_a", description=text), tool("docs_b")]), "LINT.description")
    assert f.verdict == "fail"
    assert f.message.startswith("Weak descriptions in 1 of 2 described tools: docs_a (")


def test_description_skips_missing_and_empty() -> None:
    tools = [tool("docs_a", description=...), tool("docs_b", description="  "),
             tool("docs_c", description=5)]
    assert verdict(data(tools), "LINT.description") == "n/a"


# ---------------------------------------------------------------------------------------------
# input schemas


def test_additional_properties() -> None:
    assert verdict(data(), "LINT.additional-properties") == "pass"
    unevaluated = tool("docs_a", inputSchema={"type": "object", "unevaluatedProperties": False})
    assert verdict(data([unevaluated]), "LINT.additional-properties") == "pass"
    tools = [tool("docs_a", inputSchema={"type": "object", "properties": {}}),
             tool("docs_b", inputSchema={"type": "object", "additionalProperties": True}),
             tool("docs_c", inputSchema={"type": "object", "additionalProperties": 0}),
             tool("docs_d"), tool("docs_e", inputSchema=["not", "a", "schema"])]
    f = finding(data(tools), "LINT.additional-properties")
    assert f.verdict == "fail"
    assert "in 3 of 4 tools: docs_a, docs_b, docs_c." in f.message
    assert verdict(data([tool("docs_a", inputSchema=...)]), "LINT.additional-properties") == "n/a"


def test_additional_properties_judges_nested_objects() -> None:
    """Issue #26 item 4: below the root, an object with properties that says nothing of
    other fields drops what the model invents there; maps and deliberate ``true`` pass."""
    closed = {"type": "object", "properties": {"title": {"type": "string"}},
              "additionalProperties": False}
    ok = params("docs_a", {
        "issue": closed,
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},  # a map
        "extra": {"type": "object", "properties": {"a": {}}, "additionalProperties": True},
        "many": {"type": "array", "items": {"$ref": "#/$defs/Closed"}},
        "maybe": {"anyOf": [{"$ref": "#/$defs/Closed"}, {"type": "null"}]},
    }, **{"$defs": {"Closed": closed, "Loop": {"$ref": "#/$defs/Loop"}}})
    assert verdict(data([ok]), "LINT.additional-properties") == "pass"
    open_ = {"type": "object", "properties": {"title": {"type": "string"}}}
    bad = params("docs_b", {
        "issue": open_,
        "many": {"type": "array", "items": {"$ref": "#/$defs/Open"}},
        "maybe": {"anyOf": [{"$ref": "#/$defs/Loop"}, {"type": "null"}]},
        "deep": {"type": "object", "additionalProperties": False, "properties": {
            "inner": {"type": "object", "properties": {"x": {}}}}},
    }, **{"$defs": {"Open": copy.deepcopy(open_), "Loop": {"$ref": "#/$defs/Loop"}}})
    f = finding(data([ok, bad]), "LINT.additional-properties")
    assert f.verdict == "fail"
    assert f.message.startswith("Open nested objects (no additionalProperties) in 1 of 2 "
                                "tools: docs_b (issue, many[], deep/inner). Close each")
    assert "docs_b" in f.evidence and "docs_a" not in f.evidence
    # a root failure and a nested one are both said
    both = finding(data([tool("docs_c", inputSchema={"type": "object", "properties": {
        "issue": open_}})]), "LINT.additional-properties")
    assert both.message.startswith('No "additionalProperties": false at the root')
    assert "Open nested objects (no additionalProperties) in 1 of 1 tool: docs_c (issue)" in (
        both.message)
    # broken schemas do not crash it
    for weird in ({"type": "object", "properties": ["a"], "additionalProperties": False},
                  {"type": "object", "properties": {"a": 5, "b": {"items": 3, "anyOf": 4}},
                   "additionalProperties": False}):
        assert verdict(data([tool("docs_d", inputSchema=weird)]),
                       "LINT.additional-properties") == "pass"


@pytest.mark.parametrize("prop", [
    {"type": "string"},
    {"type": "string", "enum": ["a", "b"]},
    {"type": "string", "description": "Free text, e.g. 'foo', 'bar' or 'baz'."},
    {"type": "string", "description": "Path such as docs/a|b."},
    {"type": "string", "description": "The user's name or the team's id."},
    {"type": "integer", "description": "one of 1, 2, 3"},
])
def test_enum_like_string_passes(prop: dict[str, Any]) -> None:
    tools = [params("docs_a", {"query": prop, "mode": {"type": "string", "enum": ["x"]},
                               "format": {"type": "string", "format": "date"},
                               "text": {"type": "string", "description": "Words to find."}})]
    assert verdict(data(tools), "LINT.enum-like-string") == "pass"


@pytest.mark.parametrize(("name", "prop"), [
    ("mode", {"type": "string"}),
    ("sortBy", {"type": "string"}),
    ("output-format", {"type": ["string", "null"]}),
    ("file_type", {"type": "string", "description": "File kind."}),
    ("q", {"type": "string", "description": "One of: fast, slow."}),
    ("q", {"type": "string", "description": "Either fast or slow."}),
    ("q", {"type": "string", "description": "Must be 'asc' or 'desc'."}),
    ("q", {"type": "string", "description": "'a', 'b' or 'c'"}),
    ("q", {"type": "string", "description": "Ranking: fast|balanced|thorough."}),
    ("q", {"type": "string", "description": "Allowed values are small, large."}),
])
def test_enum_like_string_fails(name: str, prop: dict[str, Any]) -> None:
    f = finding(data([params("docs_a", {name: prop, "query": {"type": "string"}})]),
                "LINT.enum-like-string")
    assert f.verdict == "fail"
    assert f"in 1 of 2 free string parameters: docs_a.{name} (" in f.message
    assert '"parameter":' in f.evidence


def test_enum_like_string_na_without_strings() -> None:
    tools = [params("docs_a", {"n": {"type": "integer"}})]
    assert verdict(data(tools), "LINT.enum-like-string") == "n/a"


@pytest.mark.parametrize("prop", [
    {"type": "string"},
    {"type": "array", "items": {"type": "string"}},
    {"type": "array", "items": {"type": "object", "properties": {
        "x": {"type": "number"}, "y": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}}}}},
    {"anyOf": [{"type": "string"}, {"type": "null"}]},
])
def test_nested_object_passes(prop: dict[str, Any]) -> None:
    assert verdict(data([params("docs_a", {"p": prop})]), "LINT.nested-object") == "pass"


@pytest.mark.parametrize(("prop", "defs"), [
    ({"type": "object"}, {}),
    ({"properties": {"status": {"type": "string"}}}, {}),
    ({"type": ["object", "null"]}, {}),
    ({"anyOf": [{"$ref": "#/$defs/Filter"}, {"type": "null"}]},
     {"Filter": {"type": "object", "properties": {"a": {"type": "string"}}}}),
    ({"type": "array", "items": {"type": "object", "properties": {
        "box": {"type": "object", "properties": {"x": {"type": "number"}}}}}}, {}),
    ({"type": "array", "items": {"$ref": "#/$defs/Item"}},
     {"Item": {"type": "object", "properties": {"sub": {"type": "array", "items": {
         "type": "object"}}}}}),
])
def test_nested_object_fails(prop: dict[str, Any], defs: dict[str, Any]) -> None:
    tools = [params("docs_a", {"filters": prop, "query": {"type": "string"}}, **{"$defs": defs}),
             tool("docs_b")]
    f = finding(data(tools), "LINT.nested-object")
    assert f.verdict == "fail"
    assert f.message.startswith("Nested objects in 1 of 5 parameters: docs_a.filters (")


def test_output_schema() -> None:
    assert verdict(data(), "LINT.output-schema") == "pass"
    f = finding(data([tool("docs_a", outputSchema=...), tool("docs_b"),
                      tool("docs_c", outputSchema=None)]), "LINT.output-schema")
    assert f.verdict == "fail"
    assert f.message.startswith("No outputSchema in 2 of 3 tools: docs_a, docs_c.")
    assert verdict(data([]), "LINT.output-schema") == "n/a"


# ---------------------------------------------------------------------------------------------
# annotations and instructions


def test_annotations() -> None:
    assert verdict(data(), "LINT.annotations") == "pass"
    write = tool("docs_b", annotations={"readOnlyHint": False, "destructiveHint": True})
    assert verdict(data([write]), "LINT.annotations") == "pass"
    tools = [tool("docs_a", annotations=...), tool("docs_b", annotations={"title": "B"}),
             tool("docs_c")]
    f = finding(data(tools), "LINT.annotations")
    assert f.verdict == "fail"
    assert f.message.startswith(
        "No readOnlyHint annotation in 2 of 3 tools: docs_a (no annotations), "
        "docs_b (no readOnlyHint).")


def test_annotations_contradictory() -> None:
    assert verdict(data(), "LINT.annotations-contradictory") == "pass"
    bad = tool("docs_a", annotations={"readOnlyHint": True, "destructiveHint": True})
    f = finding(data([bad, tool("docs_b")]), "LINT.annotations-contradictory")
    assert f.verdict == "fail"
    assert "in 1 of 2 annotated tools: docs_a." in f.message
    assert verdict(data([tool("docs_a", annotations=...)]),
                   "LINT.annotations-contradictory") == "n/a"


@pytest.mark.parametrize(("text", "expected"), [
    (INSTRUCTIONS, "pass"), (None, "fail"), ("", "fail"), ("   \n", "fail"),
    ("Docs server.", "fail"),
])
def test_instructions(text: str | None, expected: str) -> None:
    assert verdict(data(instructions=text), "LINT.instructions") == expected


# ---------------------------------------------------------------------------------------------
# consistency


def test_sibling_parameters() -> None:
    assert verdict(data(), "LINT.sibling-parameters") == "pass"
    enum_order = [params("docs_a", {"sort": {"type": "string", "enum": ["a", "b"]}}),
                  params("docs_b", {"sort": {"type": "string", "enum": ["b", "a"]}})]
    assert verdict(data(enum_order), "LINT.sibling-parameters") == "pass"
    tools = [
        params("docs_a", {"limit": {"type": "integer", "default": 10},
                          "query": {"type": "string", "description": "Search words."}}),
        params("docs_b", {"limit": {"type": "integer", "default": 20},
                          "query": {"type": "string", "description": "Search words."}}),
        params("docs_c", {"limit": {"type": "string", "default": 10}}),
    ]
    f = finding(data(tools), "LINT.sibling-parameters")
    assert f.verdict == "fail"
    assert ("in 1 of 2 shared parameters: limit in docs_a, docs_b, docs_c "
            "(differs in type, default).") in f.message
    assert '"docs_b":{"type":"integer","default":20}' in f.evidence
    alone = [params("docs_a", {"x": {"type": "string"}}), params("docs_b", {"y": {}})]
    assert verdict(data(alone), "LINT.sibling-parameters") == "n/a"


# ---------------------------------------------------------------------------------------------
# calls and errors


def test_response_size() -> None:
    assert verdict(data(), "LINT.response-size") == "n/a"
    small = call(result("x" * 20_000))
    assert verdict(data(calls=[small]), "LINT.response-size") == "pass"
    split = call({"content": [{"type": "text", "text": "x" * 15_000},
                              {"type": "resource", "resource": {"uri": "u", "text": "y" * 6000}}]})
    error = call(result("x" * 50_000, isError=True))
    f = finding(data(calls=[small, split, error]), "LINT.response-size")
    assert f.verdict == "fail"
    assert "in 1 of 2 successful calls: docs_search_pages (21,000 characters)." in f.message
    assert "tools/call docs_search_pages" in f.evidence
    assert verdict(data(calls=[error, call(None, {"code": -1})]), "LINT.response-size") == "n/a"


def test_tool_count() -> None:
    assert verdict(data(), "LINT.tool-count") == "pass"
    assert verdict(data([tool(f"docs_{i}") for i in range(15)]), "LINT.tool-count") == "pass"
    f = finding(data([tool(f"docs_{i}") for i in range(16)]), "LINT.tool-count")
    assert f.verdict == "fail" and "16 tools" in f.message
    assert verdict(data([]), "LINT.tool-count") == "n/a"


@pytest.mark.parametrize(("message", "expected_words"), [
    ("Unknown tool 'nope'. Available tools: docs_search_pages, docs_get_page.", ("nope",)),
    ("Parameter LIMIT must be an integer from 1 to 50.", ("limit",)),
    ("The cursor is stale or malformed; restart the listing without a cursor.", ()),
])
def test_actionable_errors_pass(message: str, expected_words: tuple[str, ...]) -> None:
    provoked = [ProvokedError("probe", message, expected_words, "ev")]
    assert verdict(data(provoked=provoked), "LINT.actionable-errors") == "pass"


@pytest.mark.parametrize(("message", "expected_words", "problem"), [
    ("Invalid params", (), "a generic phrase"),
    ("Invalid arguments.", ("limit",), "a generic phrase; does not name limit"),
    ("  not FOUND!", (), "a generic phrase"),
    ("Unknown tool: nope", ("nope",), "only 3 words"),
    ("Something is wrong with one of the parameters you sent.", ("limit",),
     "does not name limit"),
    ("The parameter is unlimited in this context, fine.", ("limit",), "does not name limit"),
    ("", (), "no message"),
])
def test_actionable_errors_fail(message: str, expected_words: tuple[str, ...],
                                problem: str) -> None:
    provoked = [ProvokedError("bad args", message, expected_words, "-> call\n<- error"),
                ProvokedError("unknown tool", "Unknown tool 'nope'; call tools/list first.",
                              ("nope",), "ev")]
    f = finding(data(provoked=provoked), "LINT.actionable-errors")
    assert f.verdict == "fail"
    assert "in 1 of 2 provoked errors: bad args → " in f.message
    assert f"({problem})" in f.message
    assert "-> call" in f.evidence


def test_actionable_errors_na() -> None:
    assert verdict(data(), "LINT.actionable-errors") == "n/a"


def test_error_structured_content() -> None:
    assert verdict(data(calls=[call(result("{}", structuredContent={}))]),
                   "LINT.error-structured-content") == "n/a"
    clean = call(result("Bad 'limit'.", isError=True))
    assert verdict(data(calls=[clean]), "LINT.error-structured-content") == "pass"
    dirty = call(result("Bad 'limit'.", isError=True, structuredContent={"error": "x"}),
                 name="docs_get_page")
    f = finding(data(calls=[clean, dirty]), "LINT.error-structured-content")
    assert f.verdict == "fail"
    assert f.message.startswith("structuredContent in 1 of 2 error results: docs_get_page.")
    assert "tools/call docs_get_page" in f.evidence


# ---------------------------------------------------------------------------------------------
# static descriptions


@pytest.mark.parametrize("text", [
    "Use this to read the clock. Returns the current time in the given time zone.",
    "Use this for events. Returns events; dates look like 2025-01-02T03:04:05Z.",
    "Use this for events. Returns events after a start given in ISO 8601 format "
    "2025-01-02T03:04:05Z.",
    "Use this for versions 1.2.3 and ratios 16:9. Returns the list.",
])
def test_static_descriptions_pass(text: str) -> None:
    tools = [tool("docs_a", description=text), tool("docs_b")]
    assert verdict(data(tools, second=copy.deepcopy(tools)), "LINT.static-descriptions") == "pass"


@pytest.mark.parametrize(("where", "text"), [
    ("description", "Use this to search. Returns pages. Index built 2025-06-01T12:00:00Z."),
    ("description", "Use this to search. Returns pages. Last refresh at 09:15:00."),
    ("description", "Use this to search. Today is Monday. Returns pages."),
    ("description", "Use this to search. Returns pages as of June 3, 2025."),
    ("instructions", "Docs server. The current time is 10 o'clock, use docs_search_pages."),
    ("instructions", "Docs server, data as of 2025-06-01. Use docs_search_pages."),
    ("parameter", "Start date; defaults to today. Today is 2025-06-01."),
])
def test_static_descriptions_fail(where: str, text: str) -> None:
    tools = good_tools()
    instructions = INSTRUCTIONS
    if where == "description":
        tools[1]["description"] = text
    elif where == "instructions":
        instructions = text
    else:
        tools[1]["inputSchema"]["properties"]["query"]["description"] = text
    f = finding(data(tools, instructions=instructions), "LINT.static-descriptions")
    assert f.verdict == "fail"
    assert f.message.startswith("Dynamic data in 1 of 13 descriptions and instructions: ")


def test_static_descriptions_second_listing() -> None:
    first = good_tools()
    second = copy.deepcopy(first)[::-1]  # order is LIST.deterministic-order's business
    assert verdict(data(first, second=second), "LINT.static-descriptions") == "pass"
    second[0]["description"] += " 3 pages indexed."
    second[1]["inputSchema"]["properties"]["limit"]["default"] = 11
    second.append(tool("docs_new"))  # a tool in one listing only is not judged here
    f = finding(data(first, second=second), "LINT.static-descriptions")
    assert f.verdict == "fail"
    assert ("2 tools changed between two listings: docs_get_page (inputSchema), "
            "docs_list_sections (description)") in f.message
    assert verdict(data([], instructions=None, second=None), "LINT.static-descriptions") == "n/a"


@pytest.mark.parametrize("pattern", [r"^[\w.-]{1,100}$", r"^\w{1,64}$", r"\p{L}{1,50}",
                                     r"^(\w\s?){2,30}$", r"^[\]\w]{5,40}$", r"\pL{20}"])
def test_costly_pattern_fails(pattern: str) -> None:
    tools = [params("docs_find", {"name": {"type": "string", "pattern": pattern,
                                           "description": "A name."}})]
    f = finding(data(tools), "LINT.costly-pattern")
    assert f.verdict == "fail", pattern
    assert "docs_find" in f.message and "[A-Za-z0-9_]" in f.message
    (offender,) = json.loads(f.evidence)
    assert offender["pattern"] == pattern and offender["estimated_mb"] >= 1.5


@pytest.mark.parametrize("pattern", [r"^[A-Za-z0-9_.-]{1,100}$", r"^\w+$", r"^\d{1,10}$",
                                     r"^\s{0,20}$", r"^[^/]{1,100}$", r"^\w{1,8}$",
                                     r"^\w{2,}$", r"(?:ab){1,99}", "x\\"])
def test_cheap_pattern_passes(pattern: str) -> None:
    nested = {"type": "object", "additionalProperties": False, "properties": {
        "inner": {"type": "string", "pattern": pattern}}}
    tools = [params("docs_find", {"name": {"type": "string", "pattern": pattern,
                                           "description": "A name."}, "nested": nested})]
    assert verdict(data(tools), "LINT.costly-pattern") == "pass", pattern


def test_costly_pattern_found_when_nested_and_na_without_patterns() -> None:
    deep = {"type": "array", "items": {"anyOf": [{"type": "string", "pattern": r"^\w{1,64}$"}]}}
    tools = [params("docs_find", {"names": deep})]
    assert verdict(data(tools), "LINT.costly-pattern") == "fail"
    assert verdict(data([params("docs_find", {"q": {"type": "string"}})]),
                   "LINT.costly-pattern") == "n/a"
