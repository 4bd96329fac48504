"""2025-11-25 in-core tasks on an mcpkit server, over the raw wire (R25-11.TASKS.1-16,
R25-11.PROG.2, R25-11.CANCEL.2).

A ``Server`` in this process is driven by ``RawPeer`` (tests/support/raw_peer.py) over an
in-memory stream: every message the server sends is validated against the official
2025-11-25 schema (``CreateTaskResult`` for the answers to task-augmented calls). Each
test names the rule it checks; every wait is bounded.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcpkit import Context, InternalError, Server, ToolError
from mcpkit.protocol.tasks import RELATED_TASK, TERMINAL, can_move
from tests.support.raw_peer import RawPeer, raw_peer

pytestmark = pytest.mark.anyio

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Tasks run on both anyio backends (a task's handler is detached from its request:
    an asyncio task, or a trio system task)."""
    return str(request.param)


def make_server(**options: Any) -> Server:
    server = Server("tasks-test", **options)

    @server.tool(task="optional")
    async def quick(x: int) -> str:
        """Answers at once."""
        return f"x={x}"

    @server.tool(task="optional")
    async def slow(seconds: float, ctx: Context) -> str:
        """Reports progress while it sleeps."""
        await ctx.info("starting")
        for i in range(3):
            await anyio.sleep(seconds / 3)
            await ctx.report_progress(i + 1, 3, "step")
        return "slept"

    @server.tool(task="optional")
    async def tool_error() -> str:
        raise ToolError("the job failed: fix the input")

    @server.tool(task="optional")
    async def proto_error() -> str:
        await anyio.lowlevel.checkpoint()
        raise InternalError("Internal error: worker crashed")

    @server.tool(task="required")
    async def must() -> str:
        await anyio.lowlevel.checkpoint()
        return "ran as a task"

    @server.tool
    async def plain() -> str:
        return "plain"

    @server.tool(task="optional")
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Proceed?", CONFIRM)
        return f"ok={(answer.content or {}).get('ok')}"

    return server


async def create(peer: RawPeer, name: str, arguments: dict[str, Any] | None = None,
                 task: dict[str, Any] | None = None, meta: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {},
                              "task": task if task is not None else {}}
    if meta:
        params["_meta"] = meta
    result = await peer.result("tools/call", params)
    task_obj: dict[str, Any] = result["task"]
    return task_obj


async def started(peer: RawPeer, caps: dict[str, Any] | None = None) -> RawPeer:
    await peer.initialize("2025-11-25", caps)
    return peer


def test_state_machine_edges_r25_11_tasks_6() -> None:
    """R25-11.TASKS.6: working/input_required move to each other and to the terminal
    statuses; a terminal status never changes."""
    assert can_move("working", "input_required") and can_move("input_required", "working")
    for end in TERMINAL:
        assert can_move("working", end) and can_move("input_required", end)
        assert not any(can_move(end, s) for s in ("working", "input_required", *TERMINAL))
    assert not can_move("working", "working")


async def test_capability_and_tool_execution_r25_11_tasks_1() -> None:
    """R25-11.TASKS.1: a server with task tools declares tasks (list, cancel,
    requests.tools.call) and each tool's execution.taskSupport; one without declares
    none."""
    async with raw_peer(make_server()) as peer:
        init = await peer.initialize()
        assert init["capabilities"]["tasks"] == {
            "list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        assert "extensions" not in init["capabilities"]
        tools = {t["name"]: t for t in (await peer.result("tools/list"))["tools"]}
        assert tools["quick"]["execution"] == {"taskSupport": "optional"}
        assert tools["must"]["execution"] == {"taskSupport": "required"}
        assert "execution" not in tools["plain"]
    bare = Server("bare")

    @bare.tool
    async def echo(text: str) -> str:
        return text

    async with raw_peer(bare) as peer:
        assert "tasks" not in (await peer.initialize())["capabilities"]
        error = await peer.error("tasks/list")
        assert error["code"] == METHOD_NOT_FOUND


async def test_augmentation_rules_r25_11_tasks_3() -> None:
    """R25-11.TASKS.3: ``task`` on a forbidden tool -> -32601; a required tool called
    plainly -> -32601; an optional tool called plainly runs plainly."""
    async with raw_peer(make_server()) as peer:
        await started(peer)
        error = await peer.error("tools/call", {"name": "plain", "arguments": {},
                                                "task": {}})
        assert error["code"] == METHOD_NOT_FOUND and "forbidden" in error["message"]
        error = await peer.error("tools/call", {"name": "must", "arguments": {}})
        assert error["code"] == METHOD_NOT_FOUND and "'task'" in error["message"]
        result = await peer.result("tools/call", {"name": "quick", "arguments": {"x": 1}})
        assert result["content"][0]["text"] == "x=1" and "task" not in result
        error = await peer.error("tools/call", {"name": "quick", "arguments": {"x": 1},
                                                "task": {"ttl": "soon"}})
        assert error["code"] == INVALID_PARAMS


async def test_create_get_and_result_equal_plain_r25_11_tasks_4_5_7_8() -> None:
    """R25-11.TASKS.4/5/7/8: CreateTaskResult at once with the Task (createdAt,
    lastUpdatedAt, the actual ttl, pollInterval); tasks/get reports it; tasks/result
    blocks until terminal and returns exactly the plain result plus related-task _meta."""
    async with raw_peer(make_server()) as peer:
        await started(peer)
        plain = await peer.result("tools/call", {"name": "slow", "arguments": {
            "seconds": 0.03}})
        task = await create(peer, "slow", {"seconds": 0.3}, {"ttl": 60_000})
        assert task["status"] == "working" and task["ttl"] == 60_000
        assert task["pollInterval"] > 0 and len(task["taskId"]) >= 32
        assert task["createdAt"].endswith("Z") and task["lastUpdatedAt"]
        got = await peer.result("tasks/get", {"taskId": task["taskId"]})
        assert got["taskId"] == task["taskId"] and got["status"] == "working"
        assert got["ttl"] == 60_000 and RELATED_TASK not in got.get("_meta", {})
        started_at = time.monotonic()
        result = await peer.result("tasks/result", {"taskId": task["taskId"]})
        assert time.monotonic() - started_at > 0.1  # it waited for the end
        assert result["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
        assert {k: v for k, v in result.items() if k != "_meta"} == plain
        done = await peer.result("tasks/get", {"taskId": task["taskId"]})
        assert done["status"] == "completed" and done["lastUpdatedAt"] >= done["createdAt"]


async def test_ttl_is_capped_and_defaulted_r25_11_tasks_7() -> None:
    """R25-11.TASKS.7: the receiver may override the requested ttl and reports the
    actual one."""
    server = make_server()
    server.tasks.max_ttl_ms = 10_000
    async with raw_peer(server) as peer:
        await started(peer)
        assert (await create(peer, "quick", {"x": 1}, {"ttl": 99_000_000}))["ttl"] == 10_000
        assert (await create(peer, "quick", {"x": 1}))["ttl"] == server.tasks.default_ttl_ms


async def test_tool_error_fails_task_but_result_is_the_tool_result_r25_11_tasks_16() -> None:
    """R25-11.TASKS.16/8: an isError result ends the task ``failed``; tasks/result
    returns that very CallToolResult. A JSON-RPC error ends it ``failed`` and tasks/result
    answers with the same error."""
    async with raw_peer(make_server()) as peer:
        await started(peer)
        task = await create(peer, "tool_error")
        result = await peer.result("tasks/result", {"taskId": task["taskId"]})
        assert result["isError"] is True and "fix the input" in result["content"][0]["text"]
        assert (await peer.result("tasks/get", {"taskId": task["taskId"]}))["status"] == \
            "failed"
        plain_error = await peer.error("tools/call", {"name": "proto_error", "arguments": {}})
        task = await create(peer, "proto_error")
        error = await peer.error("tasks/result", {"taskId": task["taskId"]})
        assert error == plain_error
        got = await peer.result("tasks/get", {"taskId": task["taskId"]})
        assert got["status"] == "failed" and "crashed" in got["statusMessage"]


async def test_input_required_rides_tasks_result_r25_11_tasks_9() -> None:
    """R25-11.TASKS.9/10/13: the task moves to input_required; the elicitation is sent on
    the client's tasks/result with related-task _meta; answered, the task goes back to
    working and completes. Status notifications carry the full Task, no related meta."""
    async with raw_peer(make_server()) as peer:
        await started(peer, {"elicitation": {}})
        peer.on_request = lambda msg: {"action": "accept", "content": {"ok": True}}
        task = await create(peer, "ask")
        task_id = task["taskId"]

        async def status() -> str:
            return str((await peer.result("tasks/get", {"taskId": task_id}))["status"])

        for _ in range(500):  # polls, as a client does (bounded: 5 s)
            if await status() == "input_required":
                break
            await anyio.sleep(0.01)
        assert await status() == "input_required"
        assert not peer.requests  # nothing is sent before the client asks for the result
        result = await peer.result("tasks/result", {"taskId": task_id})
        assert result["content"][0]["text"] == "ok=True"
        (elicit,) = peer.requests
        assert elicit["method"] == "elicitation/create"
        assert elicit["params"]["_meta"][RELATED_TASK] == {"taskId": task_id}
        await peer.wait_for(lambda: any(
            n["params"].get("status") == "completed" for n in peer.notifications
            if n["method"] == "notifications/tasks/status"))
        seen = [n["params"]["status"] for n in peer.notifications
                if n["method"] == "notifications/tasks/status"]
        assert seen == ["input_required", "working", "completed"]
        assert all(RELATED_TASK not in n["params"].get("_meta", {})
                   for n in peer.notifications if n["method"] == "notifications/tasks/status")


async def test_progress_and_logs_keep_token_and_related_meta_r25_11_prog_2() -> None:
    """R25-11.PROG.2 / TASKS.9: progress after CreateTaskResult uses the original token
    and stops at the terminal status; progress and logs carry related-task _meta."""
    async with raw_peer(make_server()) as peer:
        await started(peer)
        await peer.result("logging/setLevel", {"level": "debug"})
        task = await create(peer, "slow", {"seconds": 0.06}, meta={"progressToken": "p1"})
        await peer.result("tasks/result", {"taskId": task["taskId"]})
        progress = [n["params"] for n in peer.notifications
                    if n["method"] == "notifications/progress"]
        assert [p["progress"] for p in progress] == [1, 2, 3]
        assert all(p["progressToken"] == "p1" for p in progress)
        assert all(p["_meta"][RELATED_TASK]["taskId"] == task["taskId"] for p in progress)
        logs = [n["params"] for n in peer.notifications
                if n["method"] == "notifications/message"]
        assert logs and logs[0]["_meta"][RELATED_TASK]["taskId"] == task["taskId"]


async def test_cancel_r25_11_tasks_11() -> None:
    """R25-11.TASKS.11 / CANCEL.2: tasks/cancel moves a working task to cancelled before
    answering (the answer is the Task) and it stays cancelled; cancelling a terminal task
    is -32602; tasks/result of a cancelled task is an error."""
    async with raw_peer(make_server()) as peer:
        await started(peer)
        task = await create(peer, "slow", {"seconds": 5})
        answer = await peer.result("tasks/cancel", {"taskId": task["taskId"]})
        assert answer["status"] == "cancelled" and answer["taskId"] == task["taskId"]
        await anyio.sleep(0.05)
        assert (await peer.result("tasks/get", {"taskId": task["taskId"]}))["status"] == \
            "cancelled"
        error = await peer.error("tasks/cancel", {"taskId": task["taskId"]})
        assert error["code"] == INVALID_PARAMS and "cancelled" in error["message"]
        assert (await peer.error("tasks/result", {"taskId": task["taskId"]}))["code"]
        done = await create(peer, "quick", {"x": 2})
        await peer.result("tasks/result", {"taskId": done["taskId"]})
        error = await peer.error("tasks/cancel", {"taskId": done["taskId"]})
        assert error["code"] == INVALID_PARAMS and "completed" in error["message"]


async def test_cancel_racing_completion_never_changes_a_terminal_status() -> None:
    """R25-11.TASKS.6/11 under a race: a cancel sent while the task finishes either wins
    (answer cancelled, stays cancelled) or loses (-32602, stays completed)."""
    async with raw_peer(make_server()) as peer:
        await started(peer)
        outcomes = set()
        for i in range(40):
            task = await create(peer, "slow", {"seconds": 0.003 * (i % 4)})
            await anyio.sleep(0.001 * (i % 5))
            answer = await peer.request("tasks/cancel", {"taskId": task["taskId"]})
            await anyio.sleep(0.02)
            final = (await peer.result("tasks/get", {"taskId": task["taskId"]}))["status"]
            if "result" in answer:
                assert answer["result"]["status"] == "cancelled" == final
            else:
                assert answer["error"]["code"] == INVALID_PARAMS and final == "completed"
            outcomes.add(final)
            again = (await peer.result("tasks/get", {"taskId": task["taskId"]}))["status"]
            assert again == final
        assert outcomes <= {"cancelled", "completed"}


async def test_list_paginates_r25_11_tasks_12() -> None:
    """R25-11.TASKS.12/14: tasks/list pages with nextCursor through every task of the
    caller; a cursor it did not issue is -32602."""
    server = make_server()
    server.tasks.page_size = 2
    async with raw_peer(server) as peer:
        await started(peer)
        ids = [(await create(peer, "quick", {"x": i}))["taskId"] for i in range(5)]
        seen: list[str] = []
        cursor = None
        for _ in range(10):
            page = await peer.result("tasks/list", {"cursor": cursor} if cursor else {})
            seen += [t["taskId"] for t in page["tasks"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert seen == ids
        assert (await peer.error("tasks/list", {"cursor": "bogus"}))["code"] == INVALID_PARAMS


async def test_unknown_and_foreign_ids_r25_11_tasks_14_15() -> None:
    """R25-11.TASKS.14/15: an unknown id, and another session's id, are both -32602 for
    get, result and cancel; tasks/list shows only the caller's tasks."""
    server = make_server()
    async with raw_peer(server) as alice, raw_peer(server) as mallory:
        await started(alice)
        await started(mallory)
        task = await create(alice, "slow", {"seconds": 0.2})
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            for task_id in (task["taskId"], "no-such-task"):
                error = await mallory.error(method, {"taskId": task_id})
                assert error["code"] == INVALID_PARAMS
        assert (await mallory.result("tasks/list"))["tasks"] == []
        assert (await alice.error("tasks/get", {}))["code"] == INVALID_PARAMS
        assert (await alice.result("tasks/get", {"taskId": task["taskId"]}))["taskId"]


async def test_ttl_expiry_frees_everything_r25_11_tasks_7() -> None:
    """R25-11.TASKS.7/14: after its ttl a task is gone (-32602) from the store and from
    the server's memory."""
    server = make_server()
    async with raw_peer(server) as peer:
        await started(peer)
        task = await create(peer, "quick", {"x": 1}, {"ttl": 100})
        await peer.result("tasks/result", {"taskId": task["taskId"]})
        await anyio.sleep(0.15)
        assert (await peer.error("tasks/get", {"taskId": task["taskId"]}))["code"] == \
            INVALID_PARAMS
        assert task["taskId"] not in server.tasks.runs
        assert await server.tasks.store.get(task["taskId"]) is None


async def test_live_task_limit_per_owner() -> None:
    """Security: at most ``max_tasks`` unfinished tasks per owner; more are refused with
    an isError result that says what to do, and room frees up when tasks end."""
    async with raw_peer(make_server(max_tasks=2)) as peer:
        await started(peer)
        first = await create(peer, "slow", {"seconds": 5})
        await create(peer, "slow", {"seconds": 5})
        refused = await peer.result("tools/call", {"name": "slow", "arguments": {
            "seconds": 5}, "task": {}})
        assert refused["isError"] is True and "cancel" in refused["content"][0]["text"]
        await peer.result("tasks/cancel", {"taskId": first["taskId"]})
        await create(peer, "quick", {"x": 1})


async def test_older_revision_ignores_task() -> None:
    """R25-11.TASKS.14 (and revisions without tasks): a 2025-06-18 session's ``task`` is
    ignored and the call runs plainly."""
    async with raw_peer(make_server()) as peer:
        await peer.initialize("2025-06-18")
        result = await peer.result("tools/call", {"name": "quick", "arguments": {"x": 3},
                                                  "task": {}})
        assert result["content"][0]["text"] == "x=3"


async def test_thousand_concurrent_tasks() -> None:
    """1,000 tasks created at once on one server all complete, in bounded time."""
    async with raw_peer(make_server(max_tasks=2000)) as peer:
        await started(peer)
        ids: list[str] = []
        begin = time.monotonic()

        async def one(i: int) -> None:
            ids.append((await create(peer, "slow", {"seconds": 0.03}))["taskId"])

        async with anyio.create_task_group() as tg:
            for i in range(1000):
                tg.start_soon(one, i)
        results: list[dict[str, Any]] = []

        async def fetch(task_id: str) -> None:
            results.append(await peer.result("tasks/result", {"taskId": task_id},
                                             timeout=60))

        async with anyio.create_task_group() as tg:
            for task_id in ids:
                tg.start_soon(fetch, task_id)
        assert len(set(ids)) == 1000 and len(results) == 1000
        assert all(r["content"][0]["text"] == "slept" for r in results)
        assert time.monotonic() - begin < 60


class _Out:
    def wake(self, now: bool) -> None:
        return None

    def congested(self, related: object) -> None:
        return None


class _Principal:
    def __init__(self, identity: str) -> None:
        self.identity = identity


def test_owner_binds_principal_and_session_r25_11_tasks_15() -> None:
    """R25-11.TASKS.15: a task belongs to the principal's identity (when the request was
    authenticated) and, on a stateful session, to that session (its HTTP session id when
    it has one, so a resumed session keeps its tasks); a stateless request without a
    principal has only the unguessable id."""
    from mcpkit.protocol.events import Origin, RequestReceived
    from mcpkit.protocol.stateless import RequestMeta
    from mcpkit.protocol.versions import REVISIONS
    from mcpkit.server.task_calls import owner_of
    from mcpkit.session import Session

    def request(who: str | None, stateless: bool) -> RequestReceived:
        meta = RequestMeta(REVISIONS["2026-07-28"], {}, {}, None) if stateless else None
        event = RequestReceived(1, "tools/call", {}, meta)
        event.origin = Origin(None if who is None else _Principal(who))
        return event

    server = make_server()
    alice, bob, anon = (Session(server.connection(), output=_Out()) for _ in range(3))
    assert owner_of(alice, request("alice", True)) == "alice\n" != owner_of(
        bob, request("bob", True))
    assert owner_of(anon, request(None, True)) == "\n"
    assert owner_of(alice, request("alice", False)) == owner_of(
        alice, request("alice", False)) != owner_of(anon, request(None, False))
    assert owner_of(alice, request("alice", False)).startswith("alice\n")
    alice.key = "session-1"
    assert owner_of(alice, request("alice", False)) == "alice\nsession-1"
    bob.key = "session-1"  # the same session id under another identity: another owner
    assert owner_of(bob, request("bob", False)) != owner_of(alice, request("alice", False))
