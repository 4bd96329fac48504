"""A hand-written stdio 2025-11-25 "server" whose tasks misbehave on purpose.

    python tests/servers/tasks_raw.py MODE

It speaks raw JSON lines (no mcpkit): ``initialize`` (declaring ``tasks`` for
``tools/call``), ``tools/list`` (one tool, ``job``, ``taskSupport: optional``) and a
task-augmented ``tools/call "job"``, then behaves according to MODE:

    stuck     the task stays ``working`` for ever (pollInterval 10 ms); ``tasks/cancel``
              moves it to ``cancelled``
    emptyid   the CreateTaskResult's taskId is an empty string
    otherid   ``tasks/get`` answers about another task
    flip      ``tasks/get`` says ``completed``, then ``working`` again
    badstatus ``tasks/get`` answers status ``"done"`` (not a status)
    racy      the task completes on the first ``tasks/get``; ``tasks/cancel`` then
              answers -32602 (it ended first); ``tasks/result`` returns the result
    bare      like stuck, but the ``tasks`` capability has neither ``list`` nor ``cancel``
"""

from __future__ import annotations

import json
import sys
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "stuck"
TOOL = {"name": "job", "inputSchema": {"type": "object"},
        "execution": {"taskSupport": "optional"}}
NOW = "2026-01-01T00:00:00Z"
RESULT = {"content": [{"type": "text", "text": "job done"}], "isError": False}
state = {"status": "working", "gets": 0}


def send(msg: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def task(task_id: str = "t-1", status: str | None = None) -> dict[str, Any]:
    return {"taskId": task_id, "status": status or state["status"], "createdAt": NOW,
            "lastUpdatedAt": NOW, "ttl": 60000, "pollInterval": 10}


def on_get() -> dict[str, Any]:
    state["gets"] += 1
    if MODE == "otherid":
        return task("t-2")
    if MODE == "flip":
        return task(status="completed" if state["gets"] == 1 else "working")
    if MODE == "badstatus":
        return task(status="done")
    if MODE == "racy":
        state["status"] = "completed"
    return task()


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
    if method == "initialize":
        tasks: dict[str, Any] = {"requests": {"tools": {"call": {}}}}
        if MODE != "bare":
            tasks.update({"list": {}, "cancel": {}})
        return {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}, "tasks": tasks},
                "serverInfo": {"name": "tasks-raw", "version": "0"}}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        return {"task": task("" if MODE == "emptyid" else "t-1")}
    if method == "tasks/get":
        return on_get()
    if method == "tasks/cancel":
        if state["status"] != "working":
            return (-32602, f"task t-1 is already {state['status']}")
        state["status"] = "cancelled"
        return task()
    if method == "tasks/result":
        if state["status"] == "completed":
            return {**RESULT, "_meta": {"io.modelcontextprotocol/related-task": {
                "taskId": "t-1"}}}
        return (-32602, "no result yet")
    if method == "ping":
        return {}
    return (-32601, f"Method not found: {method}")


def main() -> None:
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
            continue
        out = answer(msg["method"], msg.get("params") or {})
        if isinstance(out, tuple):
            send({"jsonrpc": "2.0", "id": msg["id"],
                  "error": {"code": out[0], "message": out[1]}})
        else:
            send({"jsonrpc": "2.0", "id": msg["id"], "result": out})


if __name__ == "__main__":
    main()
