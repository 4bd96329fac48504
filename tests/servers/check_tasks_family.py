"""A stdio relay that breaks exactly one ``TASKS.*`` rule of the good tasks server.

    python tests/servers/check_tasks_family.py RULE

runs ``check_tasks_good.py`` as a child behind the relay of ``check_family.py`` (same
threads, same ``Defect`` pairs), applying the defect :data:`DEFECTS` names: a task rule id,
``@stateless`` for the 2026-07-28 form of the defect. ``tests/test_check_tasks.py`` checks
each variant and expects exactly that rule to fail (and ``WIRE.schema`` not to repeat it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from check_family import (
    Defect,
    Msg,
    Relay,
    error_code,
    is_result,
    main,
    method,
    params,
)

GOOD = Path(__file__).with_name("check_tasks_good.py")
UNKNOWN_PREFIX = "mcpkit-check-no-such-task"


def known(req: Msg) -> bool:
    """``req`` names a task the server issued (not the checker's made-up id)."""
    return not str(params(req).get("taskId", "")).startswith(UNKNOWN_PREFIX)


def answers(name: str, req: Msg) -> bool:
    return method(req) == name


def _create_plain(relay: Relay, msg: Msg) -> Msg:
    if method(msg) == "tools/call":
        msg.get("params", {}).pop("task", None)  # the server never sees the request for a task
    return msg


def _bad_created_at(relay: Relay, msg: Msg, req: Msg) -> Msg:
    if answers("tasks/get", req) and is_result(msg):
        msg["result"]["createdAt"] = "yesterday"
    return msg


def _reopen(relay: Relay, msg: Msg, req: Msg) -> Msg:
    """A task read terminal once reads ``working`` on the next tasks/get."""
    if answers("tasks/get", req) and is_result(msg):
        tid = msg["result"].get("taskId")
        if relay.memory.get(tid):
            msg["result"]["status"] = "working"
        elif msg["result"].get("status") in ("completed", "failed", "cancelled"):
            relay.memory[tid] = True
    return msg


def _sequential_down(relay: Relay, msg: Msg, req: Msg) -> Msg:
    """Task ids rewritten to ``task-1``, ``task-2`` … (and back on the way up)."""
    text = json.dumps(msg)
    created = msg.get("result", {}).get("task", {}) if answers("tools/call", req) and \
        is_result(msg) else {}
    if isinstance(created, dict) and isinstance(created.get("taskId"), str):
        fakes = relay.memory.setdefault("ids", {})
        fakes[created["taskId"]] = f"task-{len(fakes) + 1}"
    for real, fake in relay.memory.get("ids", {}).items():
        text = text.replace(real, fake)
    return json.loads(text)


def _sequential_up(relay: Relay, msg: Msg) -> Msg:
    text = json.dumps(msg)
    for real, fake in relay.memory.get("ids", {}).items():
        text = text.replace(f'"{fake}"', f'"{real}"')
    return json.loads(text)


def _unknown_code(relay: Relay, msg: Msg, req: Msg) -> Msg:
    if answers("tasks/get", req) and not known(req) and error_code(msg) == -32602:
        msg["error"]["code"] = -32603
    return msg


def _cancel_terminal_ok(relay: Relay, msg: Msg, req: Msg) -> Msg:
    if answers("tasks/cancel", req) and known(req) and error_code(msg) == -32602:
        return {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
    return msg


def _required_runs(relay: Relay, msg: Msg, req: Msg) -> Msg:
    if answers("tools/call", req) and error_code(msg) == -32601:
        return {"jsonrpc": "2.0", "id": msg["id"], "result": {
            "content": [{"type": "text", "text": "Archived 3 reports."}], "isError": False}}
    return msg


def _no_related(relay: Relay, msg: Msg, req: Msg) -> Msg:
    if answers("tasks/result", req) and is_result(msg):
        msg["result"].pop("_meta", None)
    return msg


def _list_empty(relay: Relay, msg: Msg, req: Msg) -> Msg:
    if answers("tasks/list", req) and is_result(msg) and "cursor" not in params(req):
        msg["result"]["tasks"] = []
    return msg


# --- 2026-07-28 (the extension)


def _no_inlined_result(relay: Relay, msg: Msg, req: Msg) -> Msg:
    if answers("tasks/get", req) and is_result(msg):
        msg["result"].pop("result", None)
    return msg


def _cancel_terminal_error(relay: Relay, msg: Msg, req: Msg) -> Msg:
    if answers("tasks/cancel", req) and known(req) and is_result(msg):
        return {"jsonrpc": "2.0", "id": msg["id"], "error": {
            "code": -32602, "message": "Invalid params: the task already ended."}}
    return msg


def _v1_ttl(relay: Relay, msg: Msg, req: Msg) -> Msg:
    if answers("tools/call", req) and is_result(msg) and "ttlMs" in msg["result"]:
        msg["result"]["ttl"] = msg["result"].pop("ttlMs")
    return msg


def _unnamed_extension(relay: Relay, msg: Msg, req: Msg) -> Msg:
    if answers("tools/call", req) and error_code(msg) == -32021:
        msg["error"].pop("data", None)
    return msg


DEFECTS: dict[str, Defect] = {
    "TASKS.create": Defect(up=_create_plain),
    "TASKS.fields": Defect(down=_bad_created_at),
    "TASKS.state-machine": Defect(down=_reopen),
    "TASKS.ids": Defect(up=_sequential_up, down=_sequential_down),
    "TASKS.unknown-id": Defect(down=_unknown_code),
    "TASKS.cancel-terminal": Defect(down=_cancel_terminal_ok),
    "TASKS.plain-call": Defect(down=_required_runs),
    "TASKS.result": Defect(down=_no_related),
    "TASKS.list": Defect(down=_list_empty),
    "TASKS.result@stateless": Defect(down=_no_inlined_result),
    "TASKS.cancel-terminal@stateless": Defect(down=_cancel_terminal_error),
    "TASKS.fields@stateless": Defect(down=_v1_ttl),
    "TASKS.plain-call@stateless": Defect(down=_unnamed_extension),
}
"""Rule (``@stateless``: in the 2026-07-28 form) -> the defect that breaks it."""


if __name__ == "__main__":
    sys.exit(main(DEFECTS, GOOD))
