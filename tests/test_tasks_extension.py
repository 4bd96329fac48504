"""2026-07-28 tasks: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663,
R26-07.TASKS.1) on an mcpkit server, over the raw wire, and the SQLite task store.

Stateless requests (``_meta`` names the revision and the client's capabilities) go to a
``Server`` in this process through ``RawPeer``; the server's messages are validated
against the 2026-07-28 schema (the extension's own shapes are checked field by field:
the schema does not define them). The SQLite tests restart the server on the same
database file: a finished task's result is still there, a task that was running is
``failed`` with a message saying why.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcpkit import Context, InternalError, Server, ToolError
from mcpkit.protocol.tasks import EXTENSION, RELATED_TASK
from mcpkit.storage import MemoryTaskStore, SQLiteTaskStore, TaskRecord
from mcpkit.storage.tasks import decode_cursor, encode_cursor
from tests.support.raw_peer import RawPeer, raw_peer

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
MISSING_CAPABILITY = -32021
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
SUB = "io.modelcontextprotocol/subscriptionId"
WITH_EXT = {"elicitation": {}, "extensions": {EXTENSION: {}}}


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Tasks run on both anyio backends (a task's handler is detached from its request:
    an asyncio task, or a trio system task)."""
    return str(request.param)


def meta(caps: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": WITH_EXT if caps is None else caps,
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}


def make_server(**options: Any) -> Server:
    server = Server("ext-test", **options)

    @server.tool(task="optional")
    async def work(seconds: float) -> str:
        await anyio.sleep(seconds)
        return f"worked {seconds}"

    @server.tool(task="required")
    async def only_task() -> str:
        await anyio.lowlevel.checkpoint()
        raise ToolError("rejected input")

    @server.tool(task="optional")
    async def crash() -> str:
        await anyio.lowlevel.checkpoint()
        raise InternalError("Internal error: worker crashed")

    @server.tool
    async def hello(name: str) -> str:
        return f"Hello, {name}!"

    @server.tool(task="optional")
    async def two_inputs(ctx: Context) -> str:
        answers = await ctx.request_inputs({
            "a": ("elicitation/create", {"mode": "form", "message": "a?",
                                         "requestedSchema": NAME}),
            "b": ("elicitation/create", {"mode": "form", "message": "b?",
                                         "requestedSchema": NAME}),
        })
        return "+".join(str((answers[k].get("content") or {}).get("name")) for k in "ab")

    @server.tool(task="required", task_start="explicit")
    async def ask_then_task(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", NAME, key="user_name")
        assert await ctx.start_task()
        await anyio.sleep(0.01)
        return f"Hi {(answer.content or {}).get('name')}"

    return server


async def call(peer: RawPeer, method: str, params: dict[str, Any],
               caps: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    return await peer.request(method, {**params, "_meta": meta(caps)}, **kw)


async def create(peer: RawPeer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = await call(peer, "tools/call", {"name": name, "arguments": arguments},
                        expect_result="Result")
    result: dict[str, Any] = answer["result"]
    assert result["resultType"] == "task", result
    return result


async def poll(peer: RawPeer, task_id: str, until: tuple[str, ...]) -> dict[str, Any]:
    got: dict[str, Any] = {}
    for _ in range(500):  # bounded: 5 s
        got = (await call(peer, "tasks/get", {"taskId": task_id}))["result"]
        if got["status"] in until:
            return got
        await anyio.sleep(0.01)
    raise AssertionError(f"task {task_id} stayed {got.get('status')}")


async def test_negotiation_gates_everything_r26_07_tasks_1() -> None:
    """Without the extension declared on the request: tasks/get|update|cancel -32021 naming
    it; a required tool -32021; an optional one runs plainly; ``task`` on a plain tool is
    tolerated. tasks/result and tasks/list do not exist (-32601)."""
    async with raw_peer(make_server(), MODERN) as peer:
        for method, extra in (("tasks/get", {}), ("tasks/update", {"inputResponses": {}}),
                              ("tasks/cancel", {})):
            error = (await call(peer, method, {"taskId": "x", **extra}, {}))["error"]
            assert error["code"] == MISSING_CAPABILITY
            assert error["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
        error = (await call(peer, "tools/call", {"name": "only_task", "arguments": {}},
                            {}))["error"]
        assert error["code"] == MISSING_CAPABILITY and EXTENSION in str(error["data"])
        plain = (await call(peer, "tools/call", {"name": "work", "arguments": {
            "seconds": 0}}, {}))["result"]
        assert plain["resultType"] == "complete" and "taskId" not in plain
        legacy = (await call(peer, "tools/call", {"name": "hello", "arguments": {
            "name": "x"}, "task": {"ttl": 1000}}))["result"]
        assert legacy["content"][0]["text"] == "Hello, x!" and "taskId" not in legacy
        for method in ("tasks/result", "tasks/list"):
            error = (await call(peer, method, {"taskId": "x"}))["error"]
            assert error["code"] == METHOD_NOT_FOUND


async def test_flat_create_and_detailed_get() -> None:
    """SEP-2663: CreateTaskResult is flat (resultType task, ttlMs/pollIntervalMs integers,
    no ttl/pollInterval/task/requestState) and resolvable at once; a completed task
    inlines its result without related-task _meta; tasks/get says resultType complete."""
    async with raw_peer(make_server(), MODERN) as peer:
        created = await create(peer, "work", {"seconds": 0.05})
        assert {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"} <= set(created)
        assert not {"task", "ttl", "pollInterval", "requestState", "result"} & set(created)
        assert isinstance(created["ttlMs"], int) and isinstance(created["pollIntervalMs"], int)
        now = (await call(peer, "tasks/get", {"taskId": created["taskId"]}))["result"]
        assert now["taskId"] == created["taskId"] and now["resultType"] == "complete"
        done = await poll(peer, created["taskId"], ("completed",))
        assert done["result"]["content"][0]["text"] == "worked 0.05"
        assert RELATED_TASK not in done["result"].get("_meta", {})
        assert "error" not in done and "inputRequests" not in done


async def test_tool_error_completes_protocol_error_fails() -> None:
    """SEP-2663 error semantics: isError -> completed with result.isError; a JSON-RPC
    error -> failed with the error inlined and no result."""
    async with raw_peer(make_server(), MODERN) as peer:
        created = await create(peer, "only_task", {})
        done = await poll(peer, created["taskId"], ("completed", "failed"))
        assert done["status"] == "completed" and done["result"]["isError"] is True
        created = await create(peer, "crash", {})
        failed = await poll(peer, created["taskId"], ("completed", "failed"))
        assert failed["status"] == "failed" and "result" not in failed
        assert failed["error"]["code"] == -32603 and "crashed" in failed["error"]["message"]


async def test_input_requests_and_partial_update() -> None:
    """SEP-2663 tasks/update: both pending inputs are listed; answering one is acked and
    leaves only the other; a malformed answer is -32602; unknown keys are ignored; once
    all are answered the task completes."""
    async with raw_peer(make_server(), MODERN) as peer:
        created = await create(peer, "two_inputs", {})
        task_id = created["taskId"]
        got: dict[str, Any] = {}
        for _ in range(500):
            got = (await call(peer, "tasks/get", {"taskId": task_id}))["result"]
            if len(got.get("inputRequests", {})) == 2:
                break
            await anyio.sleep(0.01)
        assert got["status"] == "input_required"
        assert {r["method"] for r in got["inputRequests"].values()} == {"elicitation/create"}
        bad = (await call(peer, "tasks/update", {"taskId": task_id, "inputResponses": {
            "a": {"content": {}}}}))["error"]
        assert bad["code"] == INVALID_PARAMS
        ack = (await call(peer, "tasks/update", {"taskId": task_id, "inputResponses": {
            "a": {"action": "accept", "content": {"name": "one"}}, "zzz": {}}}))["result"]
        assert ack["resultType"] == "complete" and "taskId" not in ack
        got = (await call(peer, "tasks/get", {"taskId": task_id}))["result"]
        assert got["status"] == "input_required" and list(got["inputRequests"]) == ["b"]
        await call(peer, "tasks/update", {"taskId": task_id, "inputResponses": {
            "b": {"action": "accept", "content": {"name": "two"}}}})
        done = await poll(peer, task_id, ("completed",))
        assert done["result"]["content"][0]["text"] == "one+two"
        error = (await call(peer, "tasks/update", {"taskId": task_id,
                                                   "inputResponses": []}))["error"]
        assert error["code"] == INVALID_PARAMS


async def test_cancel_is_an_empty_ack_also_when_terminal() -> None:
    """SEP-2663 tasks/cancel: an empty ack (resultType complete) for a running task, which
    then reads cancelled; the same ack for a terminal one; -32602 for an unknown id."""
    async with raw_peer(make_server(), MODERN) as peer:
        created = await create(peer, "work", {"seconds": 30})
        ack = (await call(peer, "tasks/cancel", {"taskId": created["taskId"]}))["result"]
        assert ack == {"resultType": "complete", "_meta": ack["_meta"]}
        assert (await poll(peer, created["taskId"], ("cancelled",)))["status"] == "cancelled"
        again = (await call(peer, "tasks/cancel", {"taskId": created["taskId"]}))["result"]
        assert again["resultType"] == "complete" and "status" not in again
        error = (await call(peer, "tasks/cancel", {"taskId": "nope"}))["error"]
        assert error["code"] == INVALID_PARAMS


async def test_mrtr_then_task_explicit_start() -> None:
    """SEP-2663 x SEP-2322: a tool that gathers input by MRTR first answers
    input_required (no taskId), then on the retry CreateTaskResult without requestState;
    the task's result carries the gathered answer."""
    async with raw_peer(make_server(), MODERN) as peer:
        first = (await call(peer, "tools/call", {"name": "ask_then_task", "arguments": {}},
                            expect_result="Result"))["result"]
        assert first["resultType"] == "input_required" and "taskId" not in first
        second = (await call(peer, "tools/call", {
            "name": "ask_then_task", "arguments": {}, "requestState": first["requestState"],
            "inputResponses": {"user_name": {"action": "accept", "content": {
                "name": "Alice"}}}}, expect_result="Result"))["result"]
        assert second["resultType"] == "task" and "requestState" not in second
        done = await poll(peer, second["taskId"], ("completed",))
        assert done["result"]["content"][0]["text"] == "Hi Alice"


def test_cursor_round_trip_and_refusal() -> None:
    """R25-11.TASKS.14: a cursor names a position; one not issued by us is -32602."""
    record = TaskRecord("t", "o", "core", "tools/call", "working", 5.0, 5.0, None, None)
    assert decode_cursor(encode_cursor(record)) == (5.0, "t")
    assert decode_cursor(None) is None
    with pytest.raises(Exception, match="cursor"):
        decode_cursor("%%%")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_store_contract(kind: str, tmp_path: Path) -> None:
    """Both stores: put/get, pages per owner in creation order, expiry hides and sweeps."""
    store = MemoryTaskStore() if kind == "memory" else SQLiteTaskStore(
        str(tmp_path / "t.db"))
    now = time.time()
    records = [TaskRecord(f"id{i}", "me" if i % 2 == 0 else "you", "core", "tools/call",
                          "working", now + i, now + i, 60_000, 100) for i in range(6)]
    records.append(TaskRecord("old", "me", "core", "tools/call", "completed", now - 10,
                              now - 10, 1_000, 100, result={"content": []}))
    for r in records:
        await store.put(r)
    assert (await store.get("id0")) == records[0]
    assert await store.get("old") is None  # expired
    mine = await store.page("me", None, 2)
    assert [r.task_id for r in mine] == ["id0", "id2"]
    rest = await store.page("me", (mine[-1].created, mine[-1].task_id), 10)
    assert [r.task_id for r in rest] == ["id4"]
    assert "old" in await store.sweep(time.time()) or kind == "memory"
    assert await store.get("old") is None


async def test_sqlite_restart_keeps_results_and_fails_orphans(tmp_path: Path) -> None:
    """Durable store: after a restart on the same SQLite file a finished task's result
    is still served; a task that was running is failed with a message that says so."""
    path = str(tmp_path / "tasks.db")
    first = make_server(task_store=SQLiteTaskStore(path))
    async with raw_peer(first, MODERN) as peer:
        done = await create(peer, "work", {"seconds": 0})
        await poll(peer, done["taskId"], ("completed",))
        running = await create(peer, "work", {"seconds": 30})
    handles = [r.handle for r in first.tasks.runs.values() if r.handle is not None]
    second = make_server(task_store=SQLiteTaskStore(path))  # "the restarted process"
    async with raw_peer(second, MODERN) as peer:
        kept = (await call(peer, "tasks/get", {"taskId": done["taskId"]}))["result"]
        assert kept["status"] == "completed"
        assert kept["result"]["content"][0]["text"] == "worked 0"
        orphan = (await call(peer, "tasks/get", {"taskId": running["taskId"]}))["result"]
        assert orphan["status"] == "failed" and "restarted" in orphan["statusMessage"]
        assert orphan["error"]["code"] == -32603
    for handle in handles:
        handle.cancel()


async def test_listen_stream_reports_task_status() -> None:
    """SEP-2663 status notifications: subscriptions/listen with taskIds (the extension
    declared) acknowledges the caller's live tasks and then sends notifications/tasks, the
    DetailedTask tagged with the subscription id, at each change; without the extension
    the listen request is -32021."""
    async with raw_peer(make_server(), MODERN) as peer:
        peer.unchecked.add("notifications/tasks")  # the extension's; not in the schema
        created = await create(peer, "work", {"seconds": 30})
        task_id = created["taskId"]
        error = (await call(peer, "subscriptions/listen", {"notifications": {
            "taskIds": [task_id]}}, {}))["error"]
        assert error["code"] == MISSING_CAPABILITY
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: call(peer, "subscriptions/listen", {"notifications": {
                "taskIds": [task_id, "not-mine"]}}, timeout=30))
            await peer.wait_for(lambda: any(
                n["method"] == "notifications/subscriptions/acknowledged"
                for n in peer.notifications))
            (ack,) = [n for n in peer.notifications
                      if n["method"] == "notifications/subscriptions/acknowledged"]
            assert ack["params"]["notifications"]["taskIds"] == [task_id]
            await call(peer, "tasks/cancel", {"taskId": task_id})
            await peer.wait_for(lambda: any(
                n["method"] == "notifications/tasks" for n in peer.notifications))
            (note,) = [n for n in peer.notifications if n["method"] == "notifications/tasks"]
            assert note["params"]["taskId"] == task_id
            assert note["params"]["status"] == "cancelled"
            assert note["params"]["_meta"][SUB] == ack["params"]["_meta"][SUB]
            assert {"createdAt", "lastUpdatedAt", "ttlMs"} <= set(note["params"])
            tg.cancel_scope.cancel()


async def test_progress_of_an_extension_task_is_its_status_message() -> None:
    """Issue #26 item 7: the extension has no progress notifications for tasks, so a task
    handler's ``ctx.report_progress`` becomes the task's ``statusMessage`` (SEP-2663:
    "progress descriptions for working"), which the next ``tasks/get`` shows; a value
    that does not grow is dropped, as for notifications; the end replaces it."""
    server = Server("progress")
    step = anyio.Event()
    go = anyio.Event()

    @server.tool(task="optional")
    async def copy(ctx: Context) -> str:
        await ctx.report_progress(1, 4, "copying a.txt")
        await ctx.report_progress(1, 4, "not shown: no progress")
        step.set()
        await go.wait()
        await ctx.report_progress(3, None)
        return "copied"

    async with raw_peer(server, MODERN) as peer:
        created = await create(peer, "copy", {})
        task_id = created["taskId"]
        with anyio.fail_after(5):
            await step.wait()
        got = (await call(peer, "tasks/get", {"taskId": task_id}))["result"]
        assert (got["status"], got["statusMessage"]) == ("working",
                                                         "progress 1/4 (25%): copying a.txt")
        go.set()
        done = await poll(peer, task_id, ("completed",))
        assert "statusMessage" not in done and done["result"]["content"][0]["text"] == "copied"
