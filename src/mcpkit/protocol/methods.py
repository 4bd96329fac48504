"""What each method and notification needs: the capability that gates it, and its shape.

A capability is written as a dotted path into a capabilities object: ``"resources.subscribe"``
means ``capabilities["resources"]["subscribe"]`` must be true, or an object (``"sampling.tools"``
is declared as ``{"tools": {}}``: an empty object counts); ``"tools"`` means the key must be
present (an empty object counts).
"""

from __future__ import annotations

from typing import Any, Final

SERVER_CAPABILITY_FOR_REQUEST: Final[dict[str, str]] = {
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "resources/subscribe": "resources.subscribe",
    "resources/unsubscribe": "resources.subscribe",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "tools/list": "tools",
    "tools/call": "tools",
    "logging/setLevel": "logging",
    "completion/complete": "completions",
    "tasks/get": "tasks",
    "tasks/result": "tasks",
    "tasks/list": "tasks",
    "tasks/cancel": "tasks",
    "tasks/update": "tasks",
}
"""Client->server requests and the server capability each one needs (the task methods:
the 2025-11-25 ``tasks`` capability, which a server declares whenever it has a tool that
runs as a task, always with ``list`` and ``cancel`` (empty objects, which the dotted
form would read as absent); its 2026-07-28 form is the extension, see
``protocol.tasks``)."""

CLIENT_CAPABILITY_FOR_REQUEST: Final[dict[str, str]] = {
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
    "elicitation/create": "elicitation",
}
"""Server->client requests and the client capability each one needs."""

SERVER_CAPABILITY_FOR_NOTIFICATION: Final[dict[str, str]] = {
    "notifications/message": "logging",
    "notifications/resources/updated": "resources.subscribe",
    "notifications/resources/list_changed": "resources.listChanged",
    "notifications/prompts/list_changed": "prompts.listChanged",
    "notifications/tools/list_changed": "tools.listChanged",
}

CLIENT_CAPABILITY_FOR_NOTIFICATION: Final[dict[str, str]] = {
    "notifications/roots/list_changed": "roots.listChanged",
}

PAGINATED: Final = frozenset(
    {"resources/list", "resources/templates/list", "prompts/list", "tools/list", "tasks/list"}
)

LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
"""RFC 5424 severities, least severe first."""
LOG_LEVEL_RANK: Final = {name: rank for rank, name in enumerate(LOG_LEVELS)}


def has_capability(capabilities: dict[str, Any] | None, path: str) -> bool:
    """Whether ``capabilities`` declares the dotted capability ``path``."""
    if "." not in path:  # the common case: a top-level capability such as "tools"
        if not isinstance(capabilities, dict):
            return False
        value = capabilities.get(path, False)
        return value is not None and value is not False
    node: Any = capabilities
    parts = path.split(".")
    for i, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
        if i < len(parts) - 1 and node is None:
            return False
    if len(parts) > 1:  # a flag (listChanged: true) or an object (sampling.tools: {})
        return isinstance(node, dict) or bool(node)
    return node is not None and node is not False
