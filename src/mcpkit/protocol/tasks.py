"""Tasks on the wire: names, the state machine, and the shapes of both generations.

Two designs share one model. 2025-11-25 has in-core, requestor-opted tasks: a request
carries ``task: {ttl?}``, the receiver answers ``CreateTaskResult {task: Task}``, the
requestor polls ``tasks/get``, fetches the payload with the blocking ``tasks/result``,
lists with ``tasks/list``, cancels with ``tasks/cancel`` (a terminal task: -32602), and
everything a task sends carries ``_meta["io.modelcontextprotocol/related-task"]``
(R25-11.TASKS.1-16). 2026-07-28 moves tasks to the extension
``io.modelcontextprotocol/tasks`` (SEP-2663): the server alone decides, answering
``resultType: "task"`` with the flat ``Result & Task``; ``tasks/get`` inlines ``result``,
``error`` or ``inputRequests``; input arrives by ``tasks/update``; ``tasks/cancel`` is an
empty ack (also for a terminal task); the durations are ``ttlMs``/``pollIntervalMs``.

This module holds only names and pure functions that build or read those shapes, so
the server, the client and the checker agree on them; nothing here keeps state.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final, Literal, get_args

from .errors import InvalidParams
from .jsonrpc import without_meta_key
from .versions import Revision

JSON = dict[str, Any]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
"""A task's status (R25-11.TASKS.6; SEP-2663 Task Status)."""
STATUSES: Final[tuple[TaskStatus, ...]] = get_args(TaskStatus)
TERMINAL: Final[frozenset[str]] = frozenset({"completed", "failed", "cancelled"})
"""Statuses a task never leaves."""
MOVES: Final[dict[str, frozenset[str]]] = {
    "working": frozenset({"input_required", "completed", "failed", "cancelled"}),
    "input_required": frozenset({"working", "completed", "failed", "cancelled"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}
"""The allowed status changes (R25-11.TASKS.6): terminal states have none."""

TaskSupport = Literal["forbidden", "optional", "required"]
"""A tool's ``execution.taskSupport`` (2025-11-25) / whether it runs as a task."""
TASK_SUPPORT: Final[tuple[TaskSupport, ...]] = get_args(TaskSupport)

EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The 2026-07-28 tasks extension identifier (``capabilities.extensions`` key)."""
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
"""The 2025-11-25 ``_meta`` key tying a message to a task (R25-11.TASKS.9)."""
MODEL_IMMEDIATE_RESPONSE: Final = "io.modelcontextprotocol/model-immediate-response"

# Methods and notifications, per generation.
CORE_METHODS: Final = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
"""2025-11-25 task methods (either direction)."""
EXTENSION_METHODS: Final = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
"""2026-07-28 extension methods (client -> server only)."""
CORE_STATUS_NOTIFICATION: Final = "notifications/tasks/status"
EXTENSION_STATUS_NOTIFICATION: Final = "notifications/tasks"
AUGMENTABLE: Final = frozenset({"tools/call"})
"""Requests this implementation runs as tasks when asked (server side)."""


def can_move(old: str, new: str) -> bool:
    """Whether a task may go from status ``old`` to ``new`` (R25-11.TASKS.6)."""
    return new in MOVES.get(old, frozenset())


def is_terminal(status: str) -> bool:
    return status in TERMINAL


class WireForm:
    """The field names of one generation (the rest of ``Task`` is spelt the same); two
    instances, ``CORE`` and ``EXT``, compared by identity."""

    __slots__ = ("extension", "poll_interval", "ttl")

    def __init__(self, ttl: str, poll_interval: str, *, extension: bool) -> None:
        self.ttl = ttl
        self.poll_interval = poll_interval
        self.extension = extension

    def __repr__(self) -> str:
        return "EXT" if self.extension else "CORE"


CORE: Final = WireForm("ttl", "pollInterval", extension=False)
"""2025-11-25: ``ttl``, ``pollInterval``; ``CreateTaskResult`` wraps ``task``."""
EXT: Final = WireForm("ttlMs", "pollIntervalMs", extension=True)
"""2026-07-28 extension: ``ttlMs``, ``pollIntervalMs``; ``CreateTaskResult`` is flat."""


def form_for(rev: Revision) -> WireForm:
    """The wire form tasks take in revision ``rev``."""
    return EXT if rev.has("tasks_extension") else CORE


def iso(ts: float) -> str:
    """An epoch time as ISO 8601 UTC with milliseconds (``2026-01-02T03:04:05.678Z``)."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def task_fields(task_id: str, status: str, created: float, updated: float,
                ttl_ms: int | None, poll_ms: int | None, message: str | None,
                form: WireForm) -> JSON:
    """The ``Task`` object in ``form`` (R25-11.TASKS.5/7): ``createdAt``,
    ``lastUpdatedAt`` and the actual ttl always present (ttl null: unlimited)."""
    out: JSON = {"taskId": task_id, "status": status}
    if message is not None:
        out["statusMessage"] = message
    out["createdAt"] = iso(created)
    out["lastUpdatedAt"] = iso(updated)
    out[form.ttl] = ttl_ms
    if poll_ms is not None:
        out[form.poll_interval] = poll_ms
    return out


def create_result(task: JSON, form: WireForm) -> JSON:
    """``CreateTaskResult`` for a ``Task`` object: ``{task}`` (2025-11-25) or the flat
    ``resultType: "task"`` form (2026-07-28)."""
    if form.extension:
        return {"resultType": "task", **task}
    return {"task": task}


def detailed(task: JSON, *, result: JSON | None = None, error: JSON | None = None,
             input_requests: JSON | None = None) -> JSON:
    """The 2026-07-28 ``DetailedTask``: the status-specific payload inlined (``result``
    when completed, ``error`` when failed, ``inputRequests`` when input_required)."""
    status = task["status"]
    out = dict(task)
    if status == "completed" and result is not None:
        out["result"] = without_meta_key(result, RELATED_TASK)
    elif status == "failed" and error is not None:
        out["error"] = error
    elif status == "input_required":
        out["inputRequests"] = input_requests or {}
    return out


def related_meta(task_id: str) -> JSON:
    """``{"io.modelcontextprotocol/related-task": {"taskId": ...}}`` for a ``_meta``."""
    return {RELATED_TASK: {"taskId": task_id}}


def with_related(obj: JSON, task_id: str) -> JSON:
    """A copy of a result or params object with the related-task ``_meta`` added."""
    meta = dict(obj.get("_meta") or {})
    meta[RELATED_TASK] = {"taskId": task_id}
    return {**obj, "_meta": meta}


def requested_ttl(params: JSON) -> tuple[bool, int | None]:
    """Whether a 2025-11-25 request asks to be a task (``params.task``), and the ttl it
    asks for (None: none given). A malformed ``task`` is ``InvalidParams``."""
    task = params.get("task")
    if task is None:
        return False, None
    if not isinstance(task, dict):
        raise InvalidParams("Invalid params: 'task' must be an object such as {\"ttl\": "
                            "60000} (ttl in milliseconds, optional).")
    ttl = task.get("ttl")
    if ttl is None:
        return True, None
    if type(ttl) is not int or ttl < 0:
        raise InvalidParams("Invalid params: 'task.ttl' must be a non-negative integer "
                            "(milliseconds).")
    return True, ttl


def new_task_id(nbytes: int = 24) -> str:
    """An unguessable task id (``nbytes`` random bytes, URL-safe base64) that never
    starts with ``-``, so a command line never takes it for an option."""
    import secrets  # here: importing mcpkit must not load it (tests/test_startup.py)

    while True:
        task_id = secrets.token_urlsafe(nbytes)
        if not task_id.startswith("-"):
            return task_id


def task_id_param(params: JSON) -> str:
    """The ``taskId`` a ``tasks/*`` request names (R25-11.TASKS.10: never the meta)."""
    task_id = params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise InvalidParams("Invalid params: this request needs 'taskId' (the string from "
                            "the CreateTaskResult).")
    return task_id


def unknown_task(task_id: str) -> InvalidParams:
    """The error for a task that does not exist, expired or is not the caller's
    (R25-11.TASKS.14/15: all three look the same)."""
    return InvalidParams(f"Invalid params: no task {task_id[:80]!r} (unknown, expired, or "
                         "not created by this caller). Start the request again.")


def declares_extension(caps: Any) -> bool:
    """Whether 2026-07-28 client capabilities declare the tasks extension."""
    ext = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(ext, dict) and isinstance(ext.get(EXTENSION), dict)


def extension_required() -> JSON:
    """The ``data`` of a -32021 naming the tasks extension (SEP-2663)."""
    return {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}


def core_capability(*, listing: bool = True) -> JSON:
    """The 2025-11-25 server ``tasks`` capability (R25-11.TASKS.1): ``tools/call`` may be
    augmented, ``tasks/cancel`` and (when requestors can be told apart) ``tasks/list``."""
    caps: JSON = {"cancel": {}, "requests": {"tools": {"call": {}}}}
    if listing:
        caps["list"] = {}
    return caps


def client_accepts(caps: Any, method: str) -> bool:
    """Whether 2025-11-25 client capabilities let a server task-augment ``method``
    (``tasks.requests.sampling.createMessage`` / ``tasks.requests.elicitation.create``)."""
    tasks = caps.get("tasks") if isinstance(caps, dict) else None
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    group, _, leaf = method.partition("/")
    node = requests.get(group) if isinstance(requests, dict) else None
    return isinstance(node, dict) and isinstance(node.get(leaf), dict)
