"""How deeply a peer's JSON may nest: one limit, ``MAX_DEPTH``, wherever mcpkit walks it.

A peer's JSON is only as deep as its text, and the libraries that walk it stop at
different depths: orjson reads 1024 levels of arrays and objects but writes only 254,
jsonschema-rs converts an instance for its error messages up to about 255, Python's own
recursion limit is 1000 frames. Arguments nested past one of those failed deep inside a
library (-32603 and a logged traceback per request). So a value a peer sends is refused
as bad input once it nests past ``MAX_DEPTH`` levels, far below all of them (room is left
for the envelope a value travels or is stored in) and far above what real arguments,
answers and results need: tool arguments (the arguments object is level 1), elicitation
answers, ``tasks/update`` input responses, and, on the client, ``structuredContent``
checked against an ``outputSchema``. docs/limits.md lists the limit.

The walk (:func:`depth`) goes level by level without recursion and stops one level past
the limit, so a hostile value costs no more than its first ``MAX_DEPTH + 1`` levels.
"""

from __future__ import annotations

from typing import Any, Final

MAX_DEPTH: Final = 128
"""Levels of arrays and objects a value from a peer may nest (``{"a": [1]}``: 2)."""

TOO_DEEP: Final = (
    f"nested too deeply: arrays and objects may nest at most {MAX_DEPTH} levels, the "
    "outermost counted; send a flatter value"
)
"""What a refusal says about a value nested past ``MAX_DEPTH``."""


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Levels of arrays and objects in ``value`` (0 for a scalar), counted up to
    ``limit + 1`` at most (deeper values are not walked further)."""
    if type(value) is not dict and type(value) is not list:
        return 0
    level: list[Any] = [value]
    levels = 0
    while level:
        levels += 1
        if levels > limit:
            return levels
        below: list[Any] = []
        for node in level:
            for item in node.values() if type(node) is dict else node:
                if type(item) is dict or type(item) is list:
                    below.append(item)
        level = below
    return levels


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` levels deep."""
    return depth(value, limit) > limit


def deep_path(value: Any, limit: int = MAX_DEPTH) -> tuple[str | int, ...] | None:
    """The keys and indexes down to the first container nested past ``limit`` levels, or
    None when ``value`` is within it (for an error that says where). Each container is
    visited once; a path is only built for the one found."""
    steps: list[tuple[str | int, int]] = []  # (key, index of the parent's step; -1: root)
    todo: list[tuple[Any, int, int]] = [(value, -1, 0)]  # (node, its step, its depth)
    while todo:
        node, step, level = todo.pop()
        if type(node) is dict:
            items: Any = node.items()
        elif type(node) is list:
            items = enumerate(node)
        else:
            continue
        if level >= limit:
            path: list[str | int] = []
            while step >= 0:
                key, step = steps[step]
                path.append(key)
            return tuple(reversed(path))
        for key, item in items:
            if type(item) is dict or type(item) is list:
                steps.append((key, step))
                todo.append((item, len(steps) - 1, level + 1))
    return None
