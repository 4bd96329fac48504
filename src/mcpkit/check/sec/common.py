"""What the security lint (``SEC.*``) reads, and the walk that turns definitions into text.

The security rules judge what a host would hand to its model: every string of every tool,
prompt, resource and resource-template definition (names, titles, descriptions, parameter
names and descriptions, enum values, defaults) and the server's ``instructions``; and, for
secrets only, what tools, resources and prompts returned. :class:`SecInput` holds those as
the probes saw them; :func:`texts` flattens them into ``(where, text)`` pairs with a
readable location (``tool notes_add .inputSchema.properties.title.description``).

Servers are foreign: anything of the wrong type is skipped, and the walk is bounded in depth
and count (:data:`MAX_DEPTH`, :data:`MAX_STRINGS`) so a hostile listing stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..lint.common import shorten

MAX_DEPTH = 12
"""Nesting levels of a definition walked; deeper values are not scanned."""

MAX_STRINGS = 20_000
"""Strings scanned per definition kind; a listing with more is cut (and still judged)."""

KINDS = (("tool", "tools"), ("prompt", "prompts"), ("resource", "resources"),
         ("template", "resourceTemplates"))
"""(label, :class:`SecInput` attribute) of every definition kind scanned."""


@dataclass(slots=True)
class SecInput:
    """Definitions and outputs one era of a server showed, for the ``SEC.*`` rules.

    ``url`` is the HTTP URL the server was reached at (None over stdio) and ``protected``
    whether it refused a request without credentials (the authorization probe).
    ``second_tools`` is a second ``tools/list`` of the same session and ``announced``
    whether the server sent ``notifications/tools/list_changed``.
    """

    tools: list[Any] = field(default_factory=list)
    prompts: list[Any] = field(default_factory=list)
    resources: list[Any] = field(default_factory=list)
    resourceTemplates: list[Any] = field(default_factory=list)  # the wire key
    instructions: str | None = None
    outputs: list[tuple[str, Any]] = field(default_factory=list)  # (where, result)
    url: str | None = None
    protected: bool | None = None
    second_tools: list[Any] | None = None  # tools/list asked again in the same session
    announced: bool = False  # notifications/tools/list_changed was received


def label(kind: str, index: int, item: Any) -> str:
    """``tool notes_add`` (``tool #3`` when the item has no string name)."""
    name = item.get("name") if isinstance(item, dict) else None
    if not isinstance(name, str) and isinstance(item, dict):
        name = item.get("uriTemplate") if kind == "template" else item.get("uri")
    return f"{kind} {shorten(name)}" if isinstance(name, str) else f"{kind} #{index}"


def walk(value: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """Every string in ``value`` (object keys included) as ``(json path, text)``."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                yield f"{path}.{k} (key)", k
                yield from walk(v, f"{path}.{k}", depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk(v, f"{path}[{i}]", depth + 1)


def definition_texts(data: SecInput) -> Iterator[tuple[str, str]]:
    """``(where, text)`` of every string in every definition, and the instructions."""
    if isinstance(data.instructions, str):
        yield "instructions", data.instructions
    for kind, attr in KINDS:
        count = 0
        for i, item in enumerate(getattr(data, attr)):
            if not isinstance(item, dict):
                continue
            where = label(kind, i, item)
            for path, text in walk(item):
                count += 1
                if count > MAX_STRINGS:
                    break
                yield f"{where} {path.lstrip('.')}", text


def output_texts(data: SecInput) -> Iterator[tuple[str, str]]:
    """``(where, text)`` of every string in what tools, resources and prompts returned."""
    count = 0
    for where, result in data.outputs:
        for path, text in walk(result):
            count += 1
            if count > MAX_STRINGS:
                return
            yield f"{where} {path.lstrip('.')}", text


def excerpt(text: str, start: int, end: int, width: int = 60) -> str:
    """The match ``text[start:end]`` with up to ``width`` characters either side."""
    lo, hi = max(0, start - width), min(len(text), end + width)
    return ("…" if lo else "") + text[lo:hi] + ("…" if hi < len(text) else "")
