"""``TOOLS.input-schema-object``: every tool's ``inputSchema`` is an object schema.

A tool without any ``inputSchema`` fails ``M067`` instead; this rule judges the schemas
that are present: root ``type`` must be ``"object"`` (R25-11.TOOLS.3), and the schema
must compile as JSON Schema (external ``$ref`` are not fetched).
"""

from __future__ import annotations

from typing import Any

from .facts import Facts
from .model import Finding
from .rules import finding
from .schemas import check_instance
from .wire import dump


def _problem(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None  # M067's business
    if schema.get("type") != "object":
        return f"type is {dump(schema.get('type'))}, not \"object\""
    if check_instance(schema, {}) is None:
        return "it is not a valid JSON Schema (or needs an external $ref)"
    return None


def judge_input_schemas(facts: Facts) -> Finding:
    tools = [t for t in facts.tools if isinstance(t, dict)]
    with_schema = [t for t in tools if isinstance(t.get("inputSchema"), dict)]
    if not with_schema:
        return finding("TOOLS.input-schema-object", "n/a", "No tool with an inputSchema.", "",
                       facts.era)
    bad = [(t, p) for t in with_schema if (p := _problem(t["inputSchema"])) is not None]
    if bad:
        facts.blame_answers("tools/list")
        tool, problem = bad[0]
        return finding(
            "TOOLS.input-schema-object", "fail",
            f"{len(bad)} tool(s) with a bad inputSchema; {tool.get('name')}: {problem}. Use "
            "{\"type\": \"object\", \"properties\": {...}} (no parameters: "
            "{\"type\": \"object\", \"additionalProperties\": false}).",
            dump([t for t, _ in bad[:3]]), facts.era)
    return finding("TOOLS.input-schema-object", "pass",
                   f"All {len(with_schema)} inputSchema(s) are object schemas.", "", facts.era)
