"""2025-11-25 tasks over Streamable HTTP, against ``examples/everything.py``.

- In process (uvicorn on 127.0.0.1, ``LiveServer``; ``McpHttp`` validates every message
  against the official schema): a task that needs the user's confirmation moves to
  ``input_required``; its ``elicitation/create`` is sent on the SSE stream of the client's
  ``tasks/result`` with the related-task ``_meta`` (R25-11.TASKS.9, HTTP.22), and
  ``tasks/get`` answers stay plain JSON.
- A real process restart: everything.py with ``--sqlite`` (sessions, events and tasks in
  one file) is killed with SIGKILL while one task runs and after another finished; the
  restarted process serves the finished task's result to the same session, and reports
  the running one ``failed`` with a message saying why.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcpkit.protocol.tasks import RELATED_TASK
from tests.support.daemon import Daemon
from tests.support.http import (
    EVERYTHING,
    LiveServer,
    McpHttp,
    everything_server,
    free_port,
)

pytestmark = pytest.mark.anyio
LATEST = "2025-11-25"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


async def wait_status(c: McpHttp, task_id: str, wanted: str) -> dict[str, Any]:
    got: dict[str, Any] = {}
    for _ in range(500):  # bounded: 5 s
        reply = await c.request("tasks/get", {"taskId": task_id})
        assert reply.content_type == "application/json"  # HTTP.22: not upgraded to SSE
        got = reply.json["result"]
        if got["status"] == wanted:
            return got
        await anyio.sleep(0.01)
    raise AssertionError(f"task stayed {got.get('status')}")


async def test_elicitation_rides_the_tasks_result_stream(http: httpx.AsyncClient) -> None:
    """R25-11.TASKS.9 / HTTP.22 over HTTP: input_required, then the elicitation arrives
    on the tasks/result SSE stream with related-task _meta; answered by POST, the same
    stream ends with the tool's result."""
    with LiveServer(everything_server().asgi_app()) as live:
        c = McpHttp(http, live.url)
        await c.initialize(LATEST, capabilities={"elicitation": {}})
        created = await c.request("tools/call", {"name": "confirm_delete", "arguments": {
            "filename": "notes.txt"}, "task": {"ttl": 60_000}})
        task_id = created.json["result"]["task"]["taskId"]
        await wait_status(c, task_id, "input_required")
        msg = {"jsonrpc": "2.0", "id": c.next_id(), "method": "tasks/result",
               "params": {"taskId": task_id}}
        async with c.open_post(msg) as stream:
            assert stream.content_type == "text/event-stream"
            _, request = await stream.next_message()
            assert request["method"] == "elicitation/create"
            assert request["params"]["_meta"][RELATED_TASK] == {"taskId": task_id}
            answer = await c.post({"jsonrpc": "2.0", "id": request["id"], "result": {
                "action": "accept", "content": {"confirm": True}}})
            assert answer.status == 202
            _, final = await stream.next_message(timeout=10)
        assert final["id"] == msg["id"]
        assert final["result"]["content"][0]["text"] == "Deleted notes.txt"
        assert final["result"]["_meta"][RELATED_TASK] == {"taskId": task_id}
        assert (await wait_status(c, task_id, "completed"))["status"] == "completed"


def everything_process(port: int, log: Path, *options: str) -> Daemon:
    """``examples/everything.py --http --port port <options>`` started as a process of its
    own group (its output in ``log``)."""
    daemon = Daemon([sys.executable, str(EVERYTHING), "--http", "--port", str(port),
                     *options], port, log)
    daemon.start()
    return daemon


async def test_sqlite_restart_after_a_crash(http: httpx.AsyncClient, tmp_path: Path) -> None:
    """Durable tasks: after SIGKILL and a restart on the same SQLite file, the session's
    finished task still answers tasks/result with its result; the task that was running
    is failed, with a message that says the server restarted."""
    db, port = tmp_path / "mcp.db", free_port()
    first = everything_process(port, db.with_suffix(".log"), "--sqlite", str(db))
    try:
        c = McpHttp(http, f"http://127.0.0.1:{port}/mcp")
        await c.initialize(LATEST)
        done = (await c.request("tools/call", {"name": "slow_compute", "arguments": {
            "seconds": 0, "label": "kept"}, "task": {}})).json["result"]["task"]["taskId"]
        await wait_status(c, done, "completed")
        running = (await c.request("tools/call", {"name": "slow_compute", "arguments": {
            "seconds": 60}, "task": {}})).json["result"]["task"]["taskId"]
    finally:
        first.kill()
    second = everything_process(port, db.with_suffix(".log"), "--sqlite", str(db))
    try:
        reply = await c.request("tasks/result", {"taskId": done})
        assert "result" in reply.json, reply.json
        result = reply.json["result"]
        assert result["content"][0]["text"] == "Computed kept in 0s"
        orphan = (await c.request("tasks/get", {"taskId": running})).json["result"]
        assert orphan["status"] == "failed" and "restarted" in orphan["statusMessage"]
        error = (await c.request("tasks/result", {"taskId": running})).json["error"]
        assert error["code"] == -32603 and "restarted" in error["message"]
    finally:
        second.kill()
