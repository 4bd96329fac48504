"""The official ``mcp`` 2.3.0 client drives 2025-11-25 tasks on ``examples/everything.py``.

mcp 2.3.0 has no task helpers, and its ``send_request`` judges a ``tools/call`` answer
as a ``CallToolResult`` only; so the task-augmented call goes through the session's own
dispatcher (``send_raw_request``: the same transport, no result check) and is judged with
the official ``CreateTaskResult`` model, and ``tasks/get|list|result|cancel`` go through
``send_request``, which validates each answer with the official models: a second,
independent judge of the wire shapes beside our schema checks. The session runs behind the wiretap
of ``tests/test_interop_official.py`` (stdio, a real subprocess).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from tests.test_interop_official import Callbacks, official_client

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def create(session: ClientSession, params: dict[str, Any]) -> types.CreateTaskResult:
    raw = await session._dispatcher.send_raw_request(  # type: ignore[attr-defined]
        "tools/call", params, {"timeout": 20})
    return types.CreateTaskResult.model_validate(raw)


async def test_official_client_runs_a_task_end_to_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """R25-11.TASKS.4/7/8/11/12 with the official client: create, get, list, result,
    cancel, and a terminal cancel refused with -32602."""
    async with official_client("2025-11-25", tmp_path, monkeypatch, Callbacks()) as run:
        session = run.session
        created = await create(session, {"name": "slow_compute", "arguments": {
            "seconds": 0.2, "label": "x"}, "task": {"ttl": 30_000}})
        task_id = created.task.task_id
        assert created.task.status == "working" and created.task.ttl == 30_000
        got = await session.send_request(types.GetTaskRequest(
            params=types.GetTaskRequestParams(task_id=task_id)), types.GetTaskResult)
        assert got.task_id == task_id
        listed = await session.send_request(types.ListTasksRequest(), types.ListTasksResult)
        assert task_id in [t.task_id for t in listed.tasks]
        result = await session.send_request(types.GetTaskPayloadRequest(
            params=types.GetTaskPayloadRequestParams(task_id=task_id)), types.CallToolResult)
        assert result.content[0].text == "Computed x in 0.2s"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as refused:
            await session.send_request(types.CancelTaskRequest(
                params=types.CancelTaskRequestParams(task_id=task_id)),
                types.CancelTaskResult)
        assert refused.value.error.code == -32602
        slow = await create(session, {"name": "slow_compute", "arguments": {"seconds": 30},
                                      "task": {}})
        cancelled = await session.send_request(types.CancelTaskRequest(
            params=types.CancelTaskRequestParams(task_id=slow.task.task_id)),
            types.CancelTaskResult)
        assert cancelled.status == "cancelled"
        await anyio.sleep(0.05)
        again = await session.send_request(types.GetTaskRequest(
            params=types.GetTaskRequestParams(task_id=slow.task.task_id)),
            types.GetTaskResult)
        assert again.status == "cancelled"
