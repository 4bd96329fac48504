"""Which revision has what: the table that drives gating and serialization.

Revisions are a set, not a number: code asks ``rev.has("structured_content")`` or
``"elicitation/create" in rev.server_requests`` instead of comparing dates.

A feature name is a ``Feature`` literal, so mypy rejects a misspelt ``rev.has("titel")``;
the table is checked against ``Feature`` when this module is imported, and a test
(``tests/protocol/test_versions.py``) checks that every feature is queried somewhere.
Facts that are fields of ``Revision`` (``stateful``, ``batches``, the method sets) are
not repeated as features.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from .release import V2024_11_05 as V2024_11_05
from .release import V2025_03_26 as V2025_03_26
from .release import V2025_06_18 as V2025_06_18
from .release import V2025_11_25 as V2025_11_25
from .release import V2026_07_28 as V2026_07_28

STATEFUL_VERSIONS: Final = (V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25)
"""The handshake-era revisions, oldest first."""
STATELESS_VERSIONS: Final = (V2026_07_28,)
LATEST_STATEFUL: Final = V2025_11_25
DEFAULT_HTTP_VERSION: Final = V2025_03_26
"""What a Streamable HTTP server assumes when ``MCP-Protocol-Version`` is absent."""

_BASE_CLIENT_REQUESTS = frozenset(
    {
        "initialize",
        "ping",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "tools/list",
        "tools/call",
        "logging/setLevel",
        "completion/complete",
    }
)
_BASE_SERVER_REQUESTS = frozenset({"ping", "sampling/createMessage", "roots/list"})
_BASE_CLIENT_NOTIFICATIONS = frozenset(
    {
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/roots/list_changed",
    }
)
_BASE_SERVER_NOTIFICATIONS = frozenset(
    {
        "notifications/cancelled",
        "notifications/progress",
        "notifications/message",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/prompts/list_changed",
        "notifications/tools/list_changed",
    }
)
_TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
# 2026-07-28: the io.modelcontextprotocol/tasks extension (SEP-2663). Listed in the table so
# they reach the server, which answers -32021 unless the request declares the extension.
_EXTENSION_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})


class Revision:
    """Everything that differs between protocol revisions (immutable; one per revision in
    ``REVISIONS``). A plain slotted class, not a dataclass: a dataclass costs about 1 ms
    of every process's start-up to generate (issue #28)."""

    __slots__ = ("batches", "client_notifications", "client_requests", "features",
                 "server_notifications", "server_requests", "stateful", "version")

    version: str
    stateful: bool
    batches: bool
    client_requests: frozenset[str]
    server_requests: frozenset[str]
    client_notifications: frozenset[str]
    server_notifications: frozenset[str]
    features: frozenset[Feature]

    def __init__(self, version: str, stateful: bool, batches: bool,
                 client_requests: frozenset[str], server_requests: frozenset[str],
                 client_notifications: frozenset[str], server_notifications: frozenset[str],
                 features: frozenset[Feature] = frozenset()) -> None:
        values = (version, stateful, batches, client_requests, server_requests,
                  client_notifications, server_notifications, features)
        for name, value in zip(_REVISION_FIELDS, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Revision is immutable: cannot set {name!r}")

    def _key(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _REVISION_FIELDS)

    def __eq__(self, other: object) -> bool:
        return other is self or (isinstance(other, Revision) and other._key() == self._key())

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Revision({self.version!r}, stateful={self.stateful})"

    def has(self, feature: Feature) -> bool:
        """Whether this revision has a named feature (see ``FEATURES``)."""
        return feature in self.features


_REVISION_FIELDS = ("version", "stateful", "batches", "client_requests", "server_requests",
                    "client_notifications", "server_notifications", "features")


Feature = Literal[
    "audio_content",
    "tool_annotations",
    "completions_capability",
    "progress_message",
    "title",
    "structured_content",
    "resource_link",
    "elicitation",
    "completion_context",
    "icons",
    "implementation_extras",
    "elicitation_url",
    "elicitation_choices",
    "sampling_tools",
    "tool_execution",
    "resource_not_found_32002",
    "tool_input_errors",
    "omit_unreadable_id",
    "sse_priming",
    "result_type",
    "caching",
    "mrtr",
    "tasks_extension",
    "extensions",
]
"""Every feature name ``Revision.has`` accepts (described in ``FEATURES``)."""

FEATURES: Final[dict[Feature, str]] = {
    "audio_content": "AudioContent blocks (type: audio)",
    "tool_annotations": "Tool.annotations (readOnlyHint, …)",
    "completions_capability": "server capability `completions` gates completion/complete",
    "progress_message": "notifications/progress carries `message`",
    "title": "`title` on tools, resources, prompts, arguments, Implementation",
    "structured_content": "Tool.outputSchema and CallToolResult.structuredContent",
    "resource_link": "resource_link content blocks",
    "elicitation": "elicitation/create (form)",
    "completion_context": "completion/complete context.arguments",
    "icons": "icons on Implementation, tools, resources, templates, prompts",
    "implementation_extras": "Implementation.description / websiteUrl",
    "elicitation_url": "URL-mode elicitation, -32042, notifications/elicitation/complete",
    "elicitation_choices": "elicitation form fields: multi-select arrays and titled "
    "choices as oneOf/anyOf of consts (SEP-1330; before: enum with enumNames)",
    "sampling_tools": "tools / toolChoice / tool_use / tool_result in sampling",
    "tool_execution": "Tool.execution.taskSupport",
    "resource_not_found_32002": "resources/read of an unknown URI answers -32002",
    "tool_input_errors": "bad tool arguments are isError results, not JSON-RPC errors",
    "omit_unreadable_id": "an error answering an unreadable id omits `id` (null is invalid)",
    "sse_priming": "an SSE answer opens with a priming event (id, retry, empty data)",
    "result_type": "every result carries resultType (complete | input_required)",
    "caching": "ttlMs and cacheScope on list/read/discover results",
    "mrtr": "server->client input travels as InputRequiredResult + retry",
    "extensions": "capabilities.extensions (SEP-2133) in client and server capabilities",
    "tasks_extension": "tasks as the io.modelcontextprotocol/tasks extension (flat "
    "CreateTaskResult, ttlMs, tasks/update; no tasks/result, tasks/list)",
}



def _features(*names: Feature) -> frozenset[Feature]:
    return frozenset(names)


_F_2411 = _features("resource_not_found_32002")
_F_2503 = _F_2411 | _features(
    "audio_content",
    "tool_annotations",
    "completions_capability",
    "progress_message",
)
_F_2506 = _F_2503 | _features(
    "title", "structured_content", "resource_link", "elicitation", "completion_context"
)
_F_2511 = _F_2506 | _features(
    "icons",
    "implementation_extras",
    "elicitation_url",
    "elicitation_choices",
    "sampling_tools",
    "tool_execution",
    "tool_input_errors",
    "omit_unreadable_id",
    "sse_priming",
)
_F_2607 = (
    _F_2511 - _features("resource_not_found_32002", "tool_execution", "elicitation_url")
) | _features("result_type", "caching", "mrtr", "tasks_extension",
                                             "extensions")

REVISIONS: Final[dict[str, Revision]] = {
    V2024_11_05: Revision(
        V2024_11_05,
        stateful=True,
        batches=False,
        client_requests=_BASE_CLIENT_REQUESTS,
        server_requests=_BASE_SERVER_REQUESTS,
        client_notifications=_BASE_CLIENT_NOTIFICATIONS,
        server_notifications=_BASE_SERVER_NOTIFICATIONS,
        features=_F_2411,
    ),
    V2025_03_26: Revision(
        V2025_03_26,
        stateful=True,
        batches=True,
        client_requests=_BASE_CLIENT_REQUESTS,
        server_requests=_BASE_SERVER_REQUESTS,
        client_notifications=_BASE_CLIENT_NOTIFICATIONS,
        server_notifications=_BASE_SERVER_NOTIFICATIONS,
        features=_F_2503,
    ),
    V2025_06_18: Revision(
        V2025_06_18,
        stateful=True,
        batches=False,
        client_requests=_BASE_CLIENT_REQUESTS,
        server_requests=_BASE_SERVER_REQUESTS | {"elicitation/create"},
        client_notifications=_BASE_CLIENT_NOTIFICATIONS,
        server_notifications=_BASE_SERVER_NOTIFICATIONS,
        features=_F_2506,
    ),
    V2025_11_25: Revision(
        V2025_11_25,
        stateful=True,
        batches=False,
        client_requests=_BASE_CLIENT_REQUESTS | _TASK_METHODS,
        server_requests=_BASE_SERVER_REQUESTS | {"elicitation/create"} | _TASK_METHODS,
        client_notifications=_BASE_CLIENT_NOTIFICATIONS | {"notifications/tasks/status"},
        server_notifications=_BASE_SERVER_NOTIFICATIONS
        | {"notifications/elicitation/complete", "notifications/tasks/status"},
        features=_F_2511,
    ),
    V2026_07_28: Revision(
        V2026_07_28,
        stateful=False,
        batches=False,
        client_requests=frozenset(
            {
                "server/discover",
                "resources/list",
                "resources/templates/list",
                "resources/read",
                "subscriptions/listen",
                "prompts/list",
                "prompts/get",
                "tools/list",
                "tools/call",
                "completion/complete",
            }
        )
        | _EXTENSION_TASK_METHODS,
        server_requests=frozenset(),  # server->client requests are MRTR inputRequests
        client_notifications=frozenset({"notifications/cancelled"}),
        server_notifications=frozenset(
            {
                "notifications/cancelled",
                "notifications/progress",
                "notifications/message",
                "notifications/subscriptions/acknowledged",
                "notifications/tools/list_changed",
                "notifications/prompts/list_changed",
                "notifications/resources/list_changed",
                "notifications/resources/updated",
                "notifications/tasks",
            }
        ),
        features=_F_2607,
    ),
}


def check_table(revisions: dict[str, Revision]) -> None:
    """Raise ``TypeError`` unless every revision's features are declared ``Feature`` names
    (a typo in the table, which mypy does not see through ``frozenset`` arithmetic)."""
    declared = frozenset(get_args(Feature))
    if set(FEATURES) != declared:
        raise TypeError(f"FEATURES and Feature disagree: {sorted(set(FEATURES) ^ declared)}")
    for version, rev in revisions.items():
        unknown = rev.features - declared
        if unknown:
            raise TypeError(f"revision {version} lists undeclared features {sorted(unknown)}")


check_table(REVISIONS)


def negotiate(requested: object, supported: tuple[str, ...] = STATEFUL_VERSIONS) -> str:
    """The version a server answers ``initialize`` with: the requested one if supported,
    else the newest it supports (the client then decides whether it can go on)."""
    if isinstance(requested, str) and requested in supported:
        return requested
    return max(supported)


def revision(version: str) -> Revision:
    """The table row of a stateful revision; ``KeyError`` for an unknown version."""
    return REVISIONS[version]
