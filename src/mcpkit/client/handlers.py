"""The client's answers to server->client requests: sampling, elicitation, roots.

The application supplies plain callables (``Handlers`` holds them, and says which
capabilities they let the client declare); this module enforces the protocol rules
around them: tool-use pairing in sampling messages, elicitation modes the client
declared, schema defaults filled into accepted forms, and ``file://``-only roots. The
same answers serve a server's request in a session and an input request of a stateless
(2026-07-28) multi-round-trip request.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any
from urllib.parse import urlparse

from ..protocol.errors import InvalidParams
from ..protocol.jsonrpc import JSONObject
from ..protocol.tasks import EXTENSION as TASKS_EXTENSION
from ..protocol.versions import Revision

SamplingHandler = Callable[[JSONObject], Awaitable[JSONObject] | JSONObject]
"""Receives ``CreateMessageRequestParams``; returns a ``CreateMessageResult`` dict."""
ElicitationHandler = Callable[[JSONObject], Awaitable[JSONObject] | JSONObject]
"""Receives ``ElicitRequest`` params (``mode`` always set); returns an ``ElicitResult``."""
RootsType = Sequence[str | JSONObject] | Callable[[], Any]
"""The client's roots: ``file://`` URIs or ``{"uri", "name"}`` objects, or a function
(sync or async) returning them, called at each ``roots/list``."""
LogHandler = Callable[[JSONObject], Awaitable[None] | None]
"""Receives ``LoggingMessageNotification`` params (``level``, ``data``, ``logger``)."""
NotificationHandler = Callable[[str, JSONObject], Awaitable[None] | None]
"""Receives the method and params of every notification from the server."""


async def _call(fn: Callable[[JSONObject], Any], params: JSONObject) -> Any:
    res = fn(params)
    if hasattr(res, "__await__"):
        res = await res
    return res


def check_sampling_messages(messages: Any) -> None:
    """Raise ``InvalidParams`` unless tool_use/tool_result blocks follow the pairing rules."""
    if not isinstance(messages, list) or not messages:
        raise InvalidParams("Invalid params: 'messages' must be a non-empty array.")
    pending: set[str] = set()
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise InvalidParams(f"Invalid params: messages[{i}] must be an object.")
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [content]
        kinds = [b.get("type") if isinstance(b, dict) else None for b in blocks]
        if "tool_result" in kinds:
            if msg.get("role") != "user" or any(k != "tool_result" for k in kinds):
                raise InvalidParams(
                    f"Invalid params: messages[{i}] mixes tool_result with other content; a "
                    "user message with tool results must contain only tool_result blocks."
                )
            answered = {str(b.get("toolUseId")) for b in blocks if isinstance(b, dict)}
            if answered != pending:
                raise InvalidParams(
                    f"Invalid params: messages[{i}] must answer exactly the tool uses "
                    f"{sorted(pending)} (got {sorted(answered)})."
                )
            pending = set()
            continue
        if pending:
            raise InvalidParams(
                f"Invalid params: tool uses {sorted(pending)} are missing their tool_result "
                f"before messages[{i}]."
            )
        if msg.get("role") == "assistant":
            pending = {str(b.get("id")) for b in blocks
                       if isinstance(b, dict) and b.get("type") == "tool_use"}


async def handle_sampling(
    handler: SamplingHandler, params: JSONObject, tools_declared: bool
) -> JSONObject:
    if ("tools" in params or "toolChoice" in params) and not tools_declared:
        raise InvalidParams(
            "Invalid params: this client did not declare sampling.tools; do not send 'tools'."
        )
    check_sampling_messages(params.get("messages"))
    result = await _call(handler, params)
    if not isinstance(result, dict) or "content" not in result or "model" not in result:
        raise ValueError("the sampling handler must return a dict with role, content, model")
    result.setdefault("role", "assistant")
    return result


def _defaults(schema: Any) -> JSONObject:
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return {}
    return {k: v["default"] for k, v in props.items() if isinstance(v, dict) and "default" in v}


async def handle_elicitation(
    handler: ElicitationHandler, params: JSONObject, modes: Sequence[str]
) -> JSONObject:
    mode = params.get("mode") or "form"  # a missing mode means form
    if mode not in modes:
        raise InvalidParams(
            f"Invalid params: this client did not declare {mode!r} elicitation "
            f"(declared: {', '.join(modes)})."
        )
    if mode == "url" and not isinstance(params.get("url"), str):
        raise InvalidParams("Invalid params: URL-mode elicitation needs 'url'.")
    request = {**params, "mode": mode}
    if mode == "form":
        request["defaults"] = _defaults(params.get("requestedSchema"))
    result = await _call(handler, request)
    if not isinstance(result, dict) or result.get("action") not in ("accept", "decline",
                                                                     "cancel"):
        raise ValueError("the elicitation handler must return {'action': accept|decline|cancel}")
    if result["action"] == "accept" and mode == "form":
        content = {**request["defaults"], **(result.get("content") or {})}
        result = {"action": "accept", "content": content}
    elif result["action"] != "accept" or mode == "url":
        result = {"action": result["action"]}
    return result


def normalize_roots(value: Any) -> list[JSONObject]:
    """``Root`` objects from strings or dicts; only ``file://`` URIs without traversal."""
    roots: list[JSONObject] = []
    for item in value or []:
        root = {"uri": item} if isinstance(item, str) else dict(item)
        uri = root.get("uri")
        parsed = urlparse(uri) if isinstance(uri, str) else None
        if parsed is None or parsed.scheme != "file" or ".." in parsed.path.split("/"):
            raise ValueError(f"invalid root {uri!r}: roots must be file:// URIs without '..'")
        roots.append(root)
    return roots


class Handlers:
    """The application's handlers for what a server may ask (see the module docstring)."""

    __slots__ = ("elicitation", "elicitation_modes", "roots", "sampling", "sampling_tools",
                 "tasks")

    def __init__(
        self,
        sampling: SamplingHandler | None,
        sampling_tools: bool,
        elicitation: ElicitationHandler | None,
        elicitation_modes: Sequence[str],
        roots: RootsType | None,
        tasks: bool = True,
    ) -> None:
        self.sampling = sampling
        self.sampling_tools = sampling_tools  # declare sampling.tools (2025-11-25 and later)
        self.elicitation = elicitation
        self.elicitation_modes = tuple(elicitation_modes)
        self.roots = roots
        #: Tasks: run the server's task-augmented sampling / elicitation (2025-11-25) and
        #: accept tasks from a server (the 2026-07-28 extension).
        self.tasks = tasks

    def capabilities(self, offered: Revision | None) -> JSONObject:
        """What ``initialize`` declares when offering ``offered``: only what has a handler
        (and exists in that revision)."""
        caps: JSONObject = {}
        if self.roots is not None:
            caps["roots"] = {"listChanged": True}
        if self.sampling is not None:
            tools = self.sampling_tools and (offered is None or offered.has("sampling_tools"))
            caps["sampling"] = {"tools": {}} if tools else {}
        if self.elicitation is not None and (offered is None or offered.has("elicitation")):
            modes: JSONObject = {m: {} for m in self.elicitation_modes}
            caps["elicitation"] = {} if modes == {"form": {}} else modes
        in_core = offered is None or offered.has("tool_execution")  # 2025-11-25 tasks
        hosted = self.hosted_task_requests() if in_core else {}
        if hosted:
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": hosted}
        return caps

    def hosted_task_requests(self) -> JSONObject:
        """2025-11-25 ``tasks.requests``: the server requests this client runs as tasks
        when asked (those it has a handler for)."""
        out: JSONObject = {}
        if self.tasks and self.sampling is not None:
            out["sampling"] = {"createMessage": {}}
        if self.tasks and self.elicitation is not None:
            out["elicitation"] = {"create": {}}
        return out

    def stateless_capabilities(self) -> JSONObject:
        """What each stateless request declares in its ``_meta``."""
        caps: JSONObject = {}
        if self.roots is not None:
            caps["roots"] = {}
        if self.sampling is not None:
            caps["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.elicitation is not None:
            caps["elicitation"] = {m: {} for m in self.elicitation_modes}
        if self.tasks:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        return caps

    def answer(self, method: str | None, params: JSONObject
               ) -> Coroutine[Any, Any, JSONObject] | None:
        """The answer to the server's ``method`` request, to be awaited; None when this
        client has no handler for it. Awaiting raises ``InvalidParams`` for a request
        that breaks the rules above, and whatever the application's handler raises."""
        if method == "sampling/createMessage" and self.sampling is not None:
            return handle_sampling(self.sampling, params, self.sampling_tools)
        if method == "elicitation/create" and self.elicitation is not None:
            return handle_elicitation(self.elicitation, params, self.elicitation_modes)
        if method == "roots/list" and self.roots is not None:
            return self._list_roots()
        return None

    async def _list_roots(self) -> JSONObject:
        roots = self.roots
        value: Any = roots() if callable(roots) else roots
        if inspect.isawaitable(value):
            value = await value
        return {"roots": normalize_roots(value)}
