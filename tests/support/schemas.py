"""Validate wire messages against the official MCP JSON schema of a revision.

``WireChecker`` watches both directions of one session: it learns the negotiated revision
from the ``initialize`` exchange and which method each request id named, then validates
every message one side sent against the schema definition for exactly that message kind
(``CallToolResult`` for a ``tools/call`` answer, ``ProgressNotification`` for progress,
…), not merely against the generic JSON-RPC envelope.

One documented exception: JSON-RPC 2.0 §5 requires ``"id": null`` on an error answering a
message whose id could not be read (parse errors, invalid requests). The MCP schemas of
2024-11-05 … 2025-06-18 type the id as ``RequestId`` and 2025-11-25 makes it optional, so
such an error is validated with its null id removed.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

# The official schemas as mcpkit ships them (src/mcpkit/check/data/schema), so the tests
# need nothing outside the repository; test_check_units.py keeps these copies in step with
# the project's spec/ when that folder is beside the repo.
SCHEMA_DIR = Path(str(resources.files("mcpkit.check").joinpath("data", "schema")))

# Result types whose name is not "<Request name minus 'Request'>Result".
_RESULT_OVERRIDES = {
    "PingRequest": "EmptyResult",
    "SubscribeRequest": "EmptyResult",
    "UnsubscribeRequest": "EmptyResult",
    "SetLevelRequest": "EmptyResult",
    "GetTaskPayloadRequest": None,  # any result
    "CancelTaskRequest": "CancelTaskResult",
}


@functools.cache
def load(revision: str) -> dict[str, Any]:
    with open(SCHEMA_DIR / f"{revision}.schema.json") as f:
        return json.load(f)


def _defs(doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if "$defs" in doc:
        return "$defs", doc["$defs"]
    return "definitions", doc["definitions"]


@functools.cache
def _index(revision: str) -> tuple[dict[str, str], dict[str, str | None], dict[str, str]]:
    """(request method -> request def, request method -> result def, notification -> def)."""
    doc = load(revision)
    _, defs = _defs(doc)
    requests: dict[str, str] = {}
    results: dict[str, str | None] = {}
    notes: dict[str, str] = {}
    for name, d in defs.items():
        method = d.get("properties", {}).get("method", {}).get("const")
        if not method:
            continue
        if name.endswith("Notification"):
            notes[method] = name
        elif name.endswith("Request"):
            requests[method] = name
            if name in _RESULT_OVERRIDES:
                results[method] = _RESULT_OVERRIDES[name]
            else:
                guess = name[: -len("Request")] + "Result"
                results[method] = guess if guess in defs else "EmptyResult"
    return requests, results, notes


@functools.cache
def _validator(revision: str, definition: str) -> Any:
    doc = load(revision)
    key, defs = _defs(doc)
    if definition not in defs:
        raise KeyError(f"{definition} not in {revision} schema")
    root = dict(doc)
    root["$ref"] = f"#/{key}/{definition}"
    cls = jsonschema.validators.validator_for(doc)
    return cls(root)


class SchemaViolation(AssertionError):
    pass


def validate(revision: str, definition: str, instance: Any) -> None:
    errors = sorted(_validator(revision, definition).iter_errors(instance), key=str)
    if errors:
        detail = "; ".join(
            f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:300]}"
            for e in errors[:5]
        )
        raise SchemaViolation(
            f"message is not a valid {definition} of revision {revision}: {detail}\n"
            f"message: {json.dumps(instance)[:1500]}"
        )


def error_def(revision: str) -> str:
    _, defs = _defs(load(revision))
    return "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in defs else "JSONRPCError"


class WireChecker:
    """Validates every message of one session; ``side`` is who we check ("server"/"client")."""

    def __init__(self, side: str = "server", revision: str | None = None) -> None:
        self.side = side
        self.revision = revision
        self.checked = 0
        self._peer_requests: dict[Any, str] = {}  # ids the other side used -> method
        self._own_requests: dict[Any, str] = {}  # ids the checked side used -> method
        self._augmented: set[Any] = set()  # peer request ids that carried params.task

    # Messages the *other* side sent: only learned from (and the revision).
    def saw_peer(self, msg: Any) -> None:
        for m in msg if isinstance(msg, list) else [msg]:
            if not isinstance(m, dict):
                continue
            if "method" in m and "id" in m:
                self._peer_requests[m["id"]] = m["method"]
                params = m.get("params")
                if isinstance(params, dict) and "task" in params:  # 2025-11-25 tasks
                    self._augmented.add(m["id"])
            elif "result" in m and self._own_requests.get(m.get("id")) == "initialize":
                version = m["result"].get("protocolVersion")
                if isinstance(version, str):
                    self.revision = version

    # Messages the checked side sent: validated.
    def check(self, msg: Any) -> None:
        if isinstance(msg, list):
            for m in msg:
                self.check(m)
            return
        rev = self.revision
        if rev is None:
            rev = "2025-11-25"
        requests, results, notes = _index(rev)
        if "method" in msg:
            method = msg["method"]
            if "id" in msg:
                self._own_requests[msg["id"]] = method
                definition = requests.get(method)
            else:
                definition = notes.get(method)
            if definition is None:
                raise SchemaViolation(f"{method!r} does not exist in revision {rev}: {msg}")
            validate(rev, definition, msg)
        elif "error" in msg:
            if msg.get("id", 0) is None:
                msg = {k: v for k, v in msg.items() if k != "id"}
                if error_def(rev) == "JSONRPCError":
                    # pre-2025-11-25 schemas require an id; validate the error object alone
                    msg = {**msg, "id": 0}
            validate(rev, error_def(rev), msg)
        else:
            method = self._peer_requests.pop(msg.get("id"), None)
            augmented = msg.get("id") in self._augmented
            self._augmented.discard(msg.get("id"))
            if method == "initialize":
                version = msg.get("result", {}).get("protocolVersion")
                if isinstance(version, str):
                    self.revision = rev = version
            validate(rev, "JSONRPCResponse" if "JSONRPCResponse" in _defs(load(rev))[1]
                     else "JSONRPCResultResponse", msg)
            result_def = results.get(method) if method else None
            if augmented and isinstance(msg.get("result"), dict) and "task" in msg["result"]:
                result_def = "CreateTaskResult"  # the receiver ran it as a task
            if result_def:
                validate(rev, result_def, msg["result"])
        self.checked += 1
