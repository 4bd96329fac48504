"""Prompts: templates a user picks, rendered to messages from string arguments.

Arguments are checked before the function runs: a missing required argument, an unknown
one or a non-string value is ``-32602`` with a message naming the valid arguments.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from ..protocol.errors import InvalidParams
from ..protocol.scopes import check_scopes
from . import declared
from .content import to_blocks
from .context import Context
from .declared import ObjectLike
from .handler import HandlerSpec
from .schema import parse_docstring
from .visibility import check_tags

JSON = dict[str, Any]


class Prompt:
    """One registered prompt."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[ObjectLike] | None = None,
        scopes: Iterable[str] = (),
        tags: Iterable[str] = (),
    ) -> None:
        """``scopes``: the OAuth scopes getting it needs over a protected HTTP endpoint
        (``ValueError`` for a name that is not a scope-token); ``tags``: a set of strings
        that ``Server.enable``/``disable`` select it by."""
        self.fn = fn
        self.scopes = check_scopes(scopes)
        self.tags = check_tags(tags)
        self.spec = HandlerSpec(fn)
        self.name = name or self.spec.name
        self.title = title
        doc, param_docs = parse_docstring(inspect.getdoc(fn))
        self.description = description if description is not None else doc
        self.icons = declared.icons(icons)
        self.arguments: list[JSON] = []
        self.required: set[str] = set()
        for param, _hint in self.spec.parameters:
            pname = param.name
            arg: JSON = {"name": pname}
            if param_docs.get(pname):
                arg["description"] = param_docs[pname]
            req = param.default is inspect.Parameter.empty
            arg["required"] = req
            if req:
                self.required.add(pname)
            self.arguments.append(arg)
        self.names = {a["name"] for a in self.arguments}

    def definition(self) -> JSON:
        d: JSON = {"name": self.name}
        if self.title:
            d["title"] = self.title
        d["description"] = self.description or self.name
        if self.arguments:
            d["arguments"] = self.arguments
        if self.icons:
            d["icons"] = self.icons
        return d

    def check(self, arguments: Any) -> dict[str, str]:
        """Validated arguments, or ``InvalidParams`` saying what is wrong and what is valid."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise InvalidParams("Invalid params: 'arguments' must be an object of strings.")
        valid = ", ".join(
            f"{a['name']}{' (required)' if a['required'] else ''}" for a in self.arguments
        ) or "none"
        missing = sorted(self.required - set(arguments))
        if missing:
            raise InvalidParams(
                f"Invalid params: prompt '{self.name}' is missing required argument(s) "
                f"{', '.join(missing)}. Arguments: {valid}."
            )
        unknown = sorted(set(arguments) - self.names)
        if unknown:
            raise InvalidParams(
                f"Invalid params: prompt '{self.name}' has no argument(s) {_keys(unknown)}. "
                f"Arguments: {valid}."
            )
        bad = sorted(k for k, v in arguments.items() if not isinstance(v, str))
        if bad:
            raise InvalidParams(
                f"Invalid params: prompt arguments are strings; {_keys(bad)} is not."
            )
        return arguments

    async def render(self, arguments: dict[str, str], ctx: Context) -> JSON:
        value = await self.spec.invoke(dict(arguments), ctx)
        result: JSON = {}
        if self.description:
            result["description"] = self.description
        result["messages"] = to_messages(value)
        return result


def _keys(names: list[str]) -> str:
    """Names a peer sent, for an error: the first 8, each cut at 60 characters."""
    from .arg_errors import bounded

    more = f" and {len(names) - 8} more" if len(names) > 8 else ""
    return ", ".join(bounded(n, 60) for n in names[:8]) + more


def to_messages(value: Any) -> list[JSON]:
    """``PromptMessage`` list from a prompt's return value.

    A string is one user message; a dict with ``role`` is a message; content objects
    become user messages; a list may mix all of these.
    """
    items = value if isinstance(value, list | tuple) else [value]
    messages: list[JSON] = []
    for item in items:
        if isinstance(item, dict) and "role" in item and "content" in item:
            content = item["content"]
            blocks = to_blocks(content) if not (
                isinstance(content, dict) and "type" in content) else [content]
            for block in blocks:
                messages.append({"role": item["role"], "content": block})
            continue
        for block in to_blocks(item):
            messages.append({"role": "user", "content": block})
    return messages
