"""Arguments for probing tools: some that must fail a tool's ``inputSchema``, some that pass.

Safety first: by default the checker calls a tool only with arguments that *must* fail
validation, so a conformant server never runs the tool. "Must fail" is not a guess: every
candidate is validated against the tool's own schema here, and only a candidate the schema
rejects is ever sent. Valid arguments (for ``--call-tools all``) are built from defaults,
``const``/``enum`` values and type-appropriate examples, and likewise verified before use.
"""

from __future__ import annotations

from typing import Any

from .schemas import check_instance

_WRONG_TYPE: dict[str, Any] = {
    "string": {"mcpkit-check": "not a string"},
    "integer": "not an integer",
    "number": "not a number",
    "boolean": "not a boolean",
    "array": "not an array",
    "object": "not an object",
    "null": "not null",
}


def _fails(schema: Any, candidate: dict[str, Any]) -> bool:
    errors = check_instance(schema, candidate)
    return bool(errors)


def invalid_arguments(schema: Any) -> tuple[dict[str, Any], str] | None:
    """Arguments the schema rejects and the parameter they break, or ``None`` when no
    candidate is certain to fail (e.g. ``{"type": "object"}`` accepts anything)."""
    if not isinstance(schema, dict):
        return None
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    candidates: list[tuple[dict[str, Any], str]] = []
    for name, sub in props.items():
        if not isinstance(sub, dict):
            continue
        kind = sub.get("type")
        kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
        wrong = next((v for v in _WRONG_TYPE.values() if _type_of(v) not in kinds), None) if (
            kinds
        ) else None
        if wrong is None and "enum" in sub:
            wrong = "mcpkit-check-not-in-enum"
        if wrong is not None:
            base = valid_arguments(schema) or {}
            candidates.append(({**base, name: wrong}, name))
    if required:
        candidates.append(({}, required[0]))
    if schema.get("additionalProperties") is False:
        candidates.append(({"mcpkit_check_unexpected": 1}, "mcpkit_check_unexpected"))
    for args, param in candidates:
        if _fails(schema, args):
            return args, param
    return None


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _example(schema: Any, depth: int = 0) -> Any:
    if not isinstance(schema, dict) or depth > 4:
        return None
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _example(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "string":
        fmt = schema.get("format")
        text = {
            "date": "2025-01-01", "date-time": "2025-01-01T00:00:00Z", "email": "a@example.com",
            "uri": "https://example.com/", "uuid": "00000000-0000-4000-8000-000000000000",
        }.get(fmt if isinstance(fmt, str) else "", "example")
        low = schema.get("minLength")
        if isinstance(low, int) and len(text) < low:
            text = text + "x" * (low - len(text))
        return text
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        value = low if isinstance(low, (int, float)) and not isinstance(low, bool) else 1
        if "exclusiveMinimum" in schema and value == low:
            value = value + 1
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "array":
        n = schema.get("minItems")
        n = n if isinstance(n, int) and 0 < n <= 5 else 0
        return [_example(schema.get("items"), depth + 1) for _ in range(n)]
    if kind == "object" or "properties" in schema:
        return _object(schema, depth + 1)
    return None


def _object(schema: dict[str, Any], depth: int) -> dict[str, Any]:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    return {n: _example(props.get(n), depth) for n in required if isinstance(n, str)}


def valid_arguments(schema: Any) -> dict[str, Any] | None:
    """Arguments the schema accepts (checked), or ``None`` if none could be built."""
    if not isinstance(schema, dict):
        return None
    candidate = _object(schema, 0)
    errors = check_instance(schema, candidate)
    return candidate if errors == [] else None
