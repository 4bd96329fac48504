"""Compiled JSON Schema validation of tool arguments and results.

``jsonschema_rs`` is the authority: full JSON Schema 2020-12 (or the dialect named by
``$schema``), remote ``$ref`` retrieval disabled, and the error messages callers see.
It costs ~7 MB of resident memory once loaded, so schemas that use only the plain
keywords mcpkit generates from type hints (``type``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``enum``, ``anyOf`` …, whose meaning is the same in
draft-07 and 2020-12) are first checked by ``fastjsonschema``, which compiles them to a
small Python function. Only a rejection (or a richer schema) loads ``jsonschema_rs``,
which then decides and explains. Both are compiled once per schema, on first use.

Instances nested past ``protocol.nesting.MAX_DEPTH`` are invalid whatever the schema (see
``nesting``): a schema whose valid values cannot nest that deep (most generated ones:
``additionalProperties: false`` and typed items) needs no extra walk, since validation
proves the depth; only an open one (``Any``, a bare ``dict``, a pydantic model, ``$ref``)
has its instances' depth counted first, and only the arguments' containers are visited.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..protocol.nesting import MAX_DEPTH, TOO_DEEP, deep_path, depth

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
        # lengths and ranges (``Schema``): counted in code points, compared as numbers,
        # alike in both; not ``pattern`` (Python's ``re`` is not ECMA-262: ``\d`` takes
        # any Unicode digit) nor ``const``/``multipleOf`` (``True == 1``; float steps)
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
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


def depth_bound(schema: Any, level: int = 0) -> int | None:
    """How deeply a value valid against the plain ``schema`` can nest arrays and
    objects; None when it is unbounded (or too deep to matter: past ``MAX_DEPTH``)."""
    if schema is False:
        return 0
    if not isinstance(schema, dict) or level > MAX_DEPTH:
        return None
    if isinstance(schema.get("enum"), list):
        return max((depth(v) for v in schema["enum"]), default=0)
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    own: int | None = 0
    for kind in ("array", "object"):
        if isinstance(kinds, list) and kind not in kinds:
            continue
        if kind == "array":
            inner = [schema["items"]] if "items" in schema else [True]
        else:
            props = schema.get("properties")
            inner = list(props.values()) if isinstance(props, dict) else []
            inner.append(schema.get("additionalProperties", True))
        bounds = [depth_bound(sub, level + 1) for sub in inner]
        if own is None or None in bounds:
            own = None
        else:
            own = max(own, 1 + max(b for b in bounds if b is not None))
    branches = schema.get("anyOf")
    if not isinstance(branches, list):
        return own
    bounds = [depth_bound(b, level + 1) for b in branches]
    either = None if not bounds or None in bounds else max(b for b in bounds if b is not None)
    return either if own is None else own if either is None else min(own, either)


class DepthError:
    """A validation error (the shape ``jsonschema_rs`` gives ``arg_errors``) for an
    instance nested past ``MAX_DEPTH``: at the top-level member that goes too deep."""

    __slots__ = ("instance_path", "message", "schema_path")

    def __init__(self, path: tuple[str | int, ...]) -> None:
        self.instance_path = path[:1]
        self.schema_path: tuple[str | int, ...] = ()  # judged at the instance path
        self.message = TOO_DEEP


class SchemaValidator:
    """Validates instances against one schema; compiled lazily."""

    __slots__ = ("_fast", "_full", "plain", "schema", "shallow")

    def __init__(self, schema: JSON, *, peer: bool = True) -> None:
        """``peer``: instances come from the peer (the depth limit applies); False for
        the server's own values (a tool's structured output)."""
        self.schema = schema
        self.plain = is_plain(schema)
        bound = depth_bound(schema) if self.plain and peer else None
        #: Whether instances need no depth walk: valid ones cannot nest past
        #: ``MAX_DEPTH``, or they are not the peer's.
        self.shallow = not peer or (bound is not None and bound <= MAX_DEPTH)
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
        if not self.shallow and depth(instance) > MAX_DEPTH:
            return False
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
        ``message``), for ``arg_errors`` to explain; a ``DepthError`` alone for an instance
        nested past ``MAX_DEPTH`` (which ``jsonschema_rs`` cannot always describe)."""
        path = deep_path(instance)
        if path is not None:
            return iter((DepthError(path),))
        return iter(self.full.iter_errors(instance))
