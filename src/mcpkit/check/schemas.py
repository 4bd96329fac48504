"""Validate received messages against the official MCP schema of a revision.

The schemas ship inside the package (``data/schema/<revision>.schema.json``, copied from the
project's ``spec/schema``) so that ``mcpkit check`` works anywhere. Each message is checked
against the definition for exactly its kind: ``ListToolsResult`` for the answer to
``tools/list``, ``ProgressNotification`` for ``notifications/progress`` and so on, as well as
against the JSON-RPC envelope of that revision. Validators are compiled once per
(revision, definition) with ``jsonschema_rs``.

JSON-RPC 2.0 §5 puts ``"id": null`` on an error answering a message whose id could not be
read; revisions before 2025-11-25 type the id as ``RequestId`` and 2025-11-25 makes it
optional, so such an error is validated with its null id removed.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import jsonschema_rs
import orjson

from ..protocol.nesting import MAX_DEPTH, too_deep

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")

# Request definitions whose result is not "<name minus Request>Result".
_RESULT_OVERRIDES: dict[str, str] = {
    "PingRequest": "EmptyResult",
    "SubscribeRequest": "EmptyResult",
    "UnsubscribeRequest": "EmptyResult",
    "SetLevelRequest": "EmptyResult",
    "GetTaskPayloadRequest": "Result",
}


@functools.cache
def load(revision: str) -> dict[str, Any]:
    """The schema document of ``revision`` (raises ``KeyError`` for an unknown one)."""
    if revision not in REVISIONS:
        raise KeyError(revision)
    path = resources.files(__package__).joinpath(f"data/schema/{revision}.schema.json")
    doc: dict[str, Any] = orjson.loads(path.read_bytes())
    return doc


def _defs(doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if "$defs" in doc:
        return "$defs", doc["$defs"]
    return "definitions", doc["definitions"]


@functools.cache
def _index(revision: str) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(request method -> request def, request method -> result def, notification -> def)."""
    _, defs = _defs(load(revision))
    requests: dict[str, str] = {}
    results: dict[str, str] = {}
    notes: dict[str, str] = {}
    for name, d in defs.items():
        if not isinstance(d, dict):
            continue
        method = d.get("properties", {}).get("method", {}).get("const")
        if not method:
            continue
        if name.endswith("Notification"):
            notes[method] = name
        elif name.endswith("Request"):
            requests[method] = name
            guess = _RESULT_OVERRIDES.get(name, name[: -len("Request")] + "Result")
            results[method] = guess if guess in defs else "Result"
    return requests, results, notes


@functools.cache
def _validator(revision: str, definition: str) -> Any:
    doc = load(revision)
    key, defs = _defs(doc)
    if definition not in defs:
        raise KeyError(f"{definition} not in {revision} schema")
    root = {k: v for k, v in doc.items() if k in ("$schema", "$defs", "definitions")}
    root["$ref"] = f"#/{key}/{definition}"
    return jsonschema_rs.validator_for(root)


def known_method(revision: str, method: str, *, request: bool) -> bool:
    """Whether ``revision`` has the request (or notification) ``method``."""
    requests, _, notes = _index(revision)
    return method in (requests if request else notes)


def has_definition(revision: str, definition: str) -> bool:
    return definition in _defs(load(revision))[1]


def _errors(revision: str, definition: str, instance: Any) -> list[str]:
    validator = _validator(revision, definition)
    if too_deep(instance):  # jsonschema_rs cannot explain errors that deep: judged whole
        return [] if validator.is_valid(instance) else [
            f"{definition}: not valid, and nested more than {MAX_DEPTH} levels deep (the "
            "problems are not listed)"]
    found = []
    for err in validator.iter_errors(instance):
        where = "/".join(str(p) for p in err.instance_path) or "<root>"
        found.append(f"{definition} at {where}: {err.message[:300]}")
        if len(found) >= 5:
            break
    return found


def result_definition(revision: str, method: str | None, result: Any) -> str:
    """The definition a result answering ``method`` must satisfy. A task created for a
    ``tools/call`` is a ``CreateTaskResult`` (2025-11-25); the 2026-07-28 extension's
    shapes (``resultType: "task"``) are not in the core schema, so only ``Result`` binds
    them here (``TASKS.fields`` judges the rest)."""
    if revision >= "2026-07-28" and isinstance(result, dict):
        if result.get("resultType") == "input_required":
            return "InputRequiredResult"
        if result.get("resultType") == "task":
            return "Result"
    if (method == "tools/call" and isinstance(result, dict) and isinstance(result.get("task"), dict)
            and has_definition(revision, "CreateTaskResult")):
        return "CreateTaskResult"
    if method is None:
        return "Result"
    return _index(revision)[1].get(method, "Result")


def validate_message(revision: str, msg: Any, answered_method: str | None = None) -> list[str]:
    """Schema errors of one received message (empty when it is valid).

    ``answered_method`` is the method of our request a response answers (``None`` for a
    response we cannot match, which is then checked against the envelope only).
    """
    if not isinstance(msg, dict):
        return [f"message is {type(msg).__name__}, not a JSON object"]
    requests, _, notes = _index(revision)
    # From 2025-11-25 on, the schema names the response envelopes JSONRPCResultResponse and
    # JSONRPCErrorResponse.
    renamed_envelopes = has_definition(revision, "JSONRPCResultResponse")
    if "method" in msg:
        envelope, table = ("JSONRPCRequest", requests) if "id" in msg else (
            "JSONRPCNotification", notes)
        errs = _errors(revision, envelope, msg)
        method = msg.get("method")
        definition = table.get(method) if isinstance(method, str) else None
        if not errs and definition is not None:
            errs = _errors(revision, definition, msg)
        return errs
    if "error" in msg:
        instance = msg
        if msg.get("id", 0) is None:
            instance = {k: v for k, v in msg.items() if k != "id"}
            if revision < "2025-11-25":
                instance["id"] = 0  # the older schemas require an id; null is JSON-RPC's rule
        error_def = "JSONRPCErrorResponse" if renamed_envelopes else "JSONRPCError"
        return _errors(revision, error_def, instance)
    envelope = "JSONRPCResultResponse" if renamed_envelopes else "JSONRPCResponse"
    errs = _errors(revision, envelope, msg)
    if errs or "result" not in msg:
        return errs
    definition = result_definition(revision, answered_method, msg["result"])
    return _errors(revision, definition, msg["result"])


def validate_definition(revision: str, definition: str, instance: Any) -> list[str]:
    """Schema errors of ``instance`` against one named definition."""
    return _errors(revision, definition, instance)


def _no_fetch(uri: str) -> Any:
    """Refuse every external ``$ref``: the checker never follows a server's URLs."""
    raise ValueError(f"external $ref {uri!r} is not fetched")


def check_instance(schema: Any, instance: Any) -> list[str] | None:
    """Errors of ``instance`` against a tool's own JSON Schema; ``None`` if the schema
    itself cannot be compiled (it is then not the checker's to judge the instance)."""
    try:
        validator = jsonschema_rs.validator_for(schema, retriever=_no_fetch)
    except Exception:  # a foreign schema: any compile failure means "cannot judge"
        return None
    if too_deep(instance):
        return [] if validator.is_valid(instance) else [
            f"<root>: not valid, and nested more than {MAX_DEPTH} levels deep"]
    out = []
    for err in validator.iter_errors(instance):
        where = "/".join(str(p) for p in err.instance_path) or "<root>"
        out.append(f"{where}: {err.message[:200]}")
        if len(out) >= 5:
            break
    return out
