"""MCP extensions on the wire: the messages a negotiated extension adds, and their shapes.

A revision's core schema (``schemas.py``) knows nothing of extensions. In 2026-07-28 the
tasks of 2025-11-25 moved out of the core into the extension
``io.modelcontextprotocol/tasks`` (SEP-2663), so ``tasks/get`` is no method of the core
revision, and a ``resultType: "task"`` answer is only a bare ``Result`` to it. Once both
sides declared the extension (``capabilities.extensions``: the server in its
``server/discover`` or ``initialize`` result, the client in its capabilities, which in
2026-07-28 every request carries in its ``_meta``), its messages are judged here against
the extension's own shapes; an extension not negotiated stays refused by the caller.

The shapes are written from the extension's text (``modelcontextprotocol/experimental-
ext-tasks``, ``specification/draft/tasks.md``) in terms of the core schema's definitions
(``Result``, ``RequestParams``, ``InputRequests``...), so they are compiled inside the
core document of the revision, under ``$defs`` names prefixed with the extension's short
name (``tasks.GetTaskResult``), which also name them in error messages. They are what
mcpkit's server and client build (``protocol/tasks.py``): ``ttlMs`` and
``pollIntervalMs`` whole milliseconds, a ``DetailedTask`` carrying exactly the payload
its status calls for.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Final

import jsonschema_rs

from .schemas import load

JSON = dict[str, Any]


@dataclass(frozen=True)
class Extension:
    """What one extension adds to the revisions it applies to."""

    identifier: str
    """The ``capabilities.extensions`` key."""
    prefix: str
    """Its definitions' ``$defs`` prefix (``tasks.``)."""
    revisions: frozenset[str]
    """The revisions whose core does not already have these messages."""
    requests: dict[str, tuple[str, str]]
    """Request method -> (request definition, result definition)."""
    notifications: dict[str, str]
    """Notification method -> its definition."""
    result_types: dict[str, tuple[str, frozenset[str]]]
    """A ``resultType`` value it adds -> (its definition, the requests it may answer)."""
    augments: dict[str, str] = field(default_factory=dict)
    """Core method -> a definition its messages must also satisfy once negotiated."""
    defs: JSON = field(default_factory=dict)


def _ref(name: str) -> JSON:
    return {"$ref": f"#/$defs/{name}"}


def _request(method: str, params: JSON) -> JSON:
    """A JSON-RPC request of ``method`` whose params are the core ``RequestParams``
    (``_meta`` with the per-request version and capabilities) plus ``params``."""
    return {"allOf": [_ref("JSONRPCRequest"), {
        "properties": {"method": {"const": method},
                       "params": {"allOf": [_ref("RequestParams"), params]}},
        "required": ["params"]}]}


def _status_payload(status: str, payload: str | None) -> JSON:
    """A ``DetailedTask`` of ``status`` carries ``payload`` and none of the others."""
    then: JSON = {"properties": {p: False for p in ("inputRequests", "result", "error")
                                 if p != payload}}
    if payload is not None:
        then["required"] = [payload]
    return {"if": {"properties": {"status": {"const": status}}, "required": ["status"]},
            "then": then}


_T = "tasks."
_TASK_ID_PARAMS: JSON = {"properties": {"taskId": {"type": "string", "minLength": 1}},
                         "required": ["taskId"]}
_ACK: JSON = {"allOf": [_ref("Result"), {"properties": {"resultType": {"const": "complete"}}}]}

TASKS: Final = Extension(
    identifier="io.modelcontextprotocol/tasks",
    prefix=_T,
    revisions=frozenset({"2026-07-28"}),
    requests={
        "tasks/get": (_T + "GetTaskRequest", _T + "GetTaskResult"),
        "tasks/update": (_T + "UpdateTaskRequest", _T + "UpdateTaskResult"),
        "tasks/cancel": (_T + "CancelTaskRequest", _T + "CancelTaskResult"),
    },
    notifications={"notifications/tasks": _T + "TaskStatusNotification"},
    result_types={"task": (_T + "CreateTaskResult", frozenset({"tools/call"}))},
    augments={"subscriptions/listen": _T + "ListenTaskIds",
              "notifications/subscriptions/acknowledged": _T + "ListenTaskIds"},
    defs={
        _T + "Task": {
            "type": "object",
            "properties": {
                "taskId": {"type": "string", "minLength": 1},
                "status": {"enum": ["working", "input_required", "completed", "failed",
                                    "cancelled"]},
                "statusMessage": {"type": "string"},
                "createdAt": {"type": "string"},
                "lastUpdatedAt": {"type": "string"},
                "ttlMs": {"type": ["integer", "null"], "minimum": 0},
                "pollIntervalMs": {"type": "integer", "minimum": 0},
            },
            "required": ["taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"],
        },
        _T + "DetailedTask": {"allOf": [
            _ref(_T + "Task"),
            {"properties": {"inputRequests": _ref("InputRequests"),
                            "result": _ref("JSONObject"), "error": _ref("Error")}},
            _status_payload("working", None),
            _status_payload("input_required", "inputRequests"),
            _status_payload("completed", "result"),
            _status_payload("failed", "error"),
            _status_payload("cancelled", None),
        ]},
        _T + "CreateTaskResult": {"allOf": [
            _ref("Result"), _ref(_T + "Task"),
            # the flat form, in whole milliseconds: none of 2025-11-25's names
            {"properties": {"resultType": {"const": "task"}, "task": False, "ttl": False,
                            "pollInterval": False}},
        ]},
        _T + "GetTaskRequest": _request("tasks/get", _TASK_ID_PARAMS),
        _T + "GetTaskResult": {"allOf": [
            _ref("Result"), _ref(_T + "DetailedTask"),
            {"properties": {"resultType": {"const": "complete"}}}]},
        _T + "UpdateTaskRequest": _request("tasks/update", {
            "allOf": [_TASK_ID_PARAMS, {"properties": {"inputResponses": _ref("InputResponses")},
                                        "required": ["inputResponses"]}]}),
        _T + "UpdateTaskResult": _ACK,
        _T + "CancelTaskRequest": _request("tasks/cancel", _TASK_ID_PARAMS),
        _T + "CancelTaskResult": _ACK,
        _T + "TaskStatusNotification": {"allOf": [_ref("JSONRPCNotification"), {
            "properties": {"method": {"const": "notifications/tasks"},
                           "params": {"allOf": [_ref("NotificationParams"),
                                                _ref(_T + "DetailedTask")]}},
            "required": ["params"]}]},
        _T + "ListenTaskIds": {"properties": {"params": {"properties": {"notifications": {
            "properties": {"taskIds": {"type": "array",
                                       "items": {"type": "string", "minLength": 1}}}}}}}},
    },
)

KNOWN: Final[dict[str, Extension]] = {TASKS.identifier: TASKS}
"""The extensions whose messages the judge knows, by identifier."""


def for_revision(revision: str) -> tuple[Extension, ...]:
    """The known extensions that apply to ``revision``."""
    return tuple(e for e in KNOWN.values() if revision in e.revisions)


def declared(caps: Any) -> frozenset[str]:
    """The extension identifiers a ``capabilities`` object declares (each value must be
    an object, the settings; an empty one declares support)."""
    ext = caps.get("extensions") if isinstance(caps, dict) else None
    if not isinstance(ext, dict):
        return frozenset()
    return frozenset(k for k, v in ext.items() if isinstance(v, dict))


def owner(revision: str, method: str, *, request: bool) -> Extension | None:
    """The extension (applying to ``revision``) that adds the request or notification
    ``method``, if any."""
    for ext in for_revision(revision):
        if method in (ext.requests if request else ext.notifications):
            return ext
    return None


@functools.cache
def _validator(revision: str, identifier: str, definition: str) -> Any:
    """A validator of one extension definition, compiled inside the revision's core
    document (its ``$ref`` to core definitions resolve there)."""
    ext = KNOWN[identifier]
    doc = load(revision)
    core = doc["$defs"]
    clash = sorted(set(core) & set(ext.defs))
    if clash:
        raise KeyError(f"{identifier} definitions {clash} clash with the {revision} core")
    root = {"$schema": doc.get("$schema"), "$defs": {**core, **ext.defs},
            "$ref": f"#/$defs/{definition}"}
    return jsonschema_rs.validator_for(root)


def errors(revision: str, ext: Extension, definition: str, instance: Any) -> list[str]:
    """Schema errors of ``instance`` against an extension definition (at most five)."""
    found = []
    for err in _validator(revision, ext.identifier, definition).iter_errors(instance):
        where = "/".join(str(p) for p in err.instance_path) or "<root>"
        found.append(f"{definition} at {where}: {err.message[:300]}")
        if len(found) >= 5:
            break
    return found
