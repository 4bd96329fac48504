"""Compiled JSON Schema validation of tool arguments and results.

``jsonschema_rs`` is the authority: full JSON Schema 2020-12 (or the dialect named by
``$schema``), remote ``$ref`` retrieval disabled, and the error messages callers see.
It costs ~7 MB of resident memory once loaded, so schemas that use only the plain
keywords mcpkit generates from type hints (``type``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``enum``, ``anyOf`` …, whose meaning is the same in
draft-07 and 2020-12) are first checked by ``fastjsonschema``, which compiles them to a
small Python function. Only a rejection (or a richer schema) loads ``jsonschema_rs``,
which then decides and explains. Both are compiled once per schema, on first use.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

JSON = dict[str, Any]

_PLAIN_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "anyOf",
        "default",
        "description",
        "title",
        "uniqueItems",
    }
)


def is_plain(schema: Any) -> bool:
    """Whether ``schema`` uses only keywords with identical draft-07/2020-12 semantics."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or not set(schema) <= _PLAIN_KEYWORDS:
        return False
    props = schema.get("properties", {})
    if not isinstance(props, dict) or not all(is_plain(v) for v in props.values()):
        return False
    if "items" in schema and not is_plain(schema["items"]):
        return False
    if "anyOf" in schema and not (
        isinstance(schema["anyOf"], list) and all(is_plain(s) for s in schema["anyOf"])
    ):
        return False
    extra = schema.get("additionalProperties", True)
    return isinstance(extra, bool) or is_plain(extra)


class SchemaValidator:
    """Validates instances against one schema; compiled lazily."""

    __slots__ = ("_fast", "_full", "plain", "schema")

    def __init__(self, schema: JSON) -> None:
        self.schema = schema
        self.plain = is_plain(schema)
        self._fast: Any = None
        self._full: Any = None

    @property
    def full(self) -> Any:
        """The ``jsonschema_rs`` validator (loaded on first need)."""
        if self._full is None:
            import jsonschema_rs

            self._full = jsonschema_rs.validator_for(self.schema, offline=True)
        return self._full

    def is_valid(self, instance: Any) -> bool:
        if self.plain:
            fast = self._fast
            if fast is None:
                import fastjsonschema

                fast = self._fast = fastjsonschema.compile(
                    self.schema, use_default=False, use_formats=False
                )
            try:
                fast(instance)
                return True
            except Exception:
                pass
        return bool(self.full.is_valid(instance))

    def iter_errors(self, instance: Any) -> Iterator[Any]:
        """``jsonschema_rs`` validation errors (``instance_path``, ``schema_path``,
        ``message``), for ``arg_errors`` to explain."""
        return iter(self.full.iter_errors(instance))
