"""mcpkit's client driving tasks on real servers, in both generations.

The peer is mcpkit's own server (``examples/everything.py``: ``slow_compute``,
``confirm_delete``, ``multi_input``, ``failing_job``, ``protocol_error_job``,
``test_tool_with_task``, ``greet``), in-process and over Streamable HTTP (uvicorn on
loopback), speaking 2025-11-25 (in-core tasks: ``task`` on the call, ``tasks/result``
carrying the server's input requests) and 2026-07-28 (the tasks extension:
``resultType: "task"``, ``tasks/update``). Every message the client sends is validated
against the official schema of the revision; the 2026-07-28 schema has no task methods
(they live in the extension), so those are checked against SEP-2663's shapes here.

Hostile peers: ``tests/servers/tasks_raw.py`` answers an empty task id, news of another
task, a terminal task that changes, an unknown status, a task that never ends, and a
cancellation that loses the race with completion.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit import CapabilityNotSupported, InvalidResult, RemoteError, TaskCancelled, TaskTimeout
from mcpkit.client import Client, TaskHandle
from mcpkit.protocol.tasks import EXTENSION
from mcpkit.protocol.versions import V2025_11_25, V2026_07_28

from .support.http import LiveServer, everything_server
from .support.tap import TappedClient

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[1]
RAW = str(ROOT / "tests" / "servers" / "tasks_raw.py")
LIMIT = 10
# The 2026-07-28 schema lacks the extension's methods; their shape is checked by hand.
EXTENSION_ONLY = tuple(f"'{m}' does not exist in revision 2026-07-28"
                       for m in ("tasks/get", "tasks/update", "tasks/cancel"))


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Both backends: the client, and mcpkit's task server in the same event loop (a
    task's handler is detached from its request on trio too)."""
    return str(request.param)


@pytest.fixture(params=[V2025_11_25, V2026_07_28])
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Asked:
    """An elicitation handler that confirms, and counts what it was asked."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.messages.append(params["message"])
        return {"action": "accept", "content": {"confirm": True, "name": "Ada"}}


def client_for(version: str, target: Any = None, **options: Any) -> TappedClient:
    mode = "stateless" if version == V2026_07_28 else "stateful"
    return TappedClient(target if target is not None else everything_server(), mode=mode,
                        protocol_version=version, timeout=LIMIT, task_timeout=LIMIT,
                        **options)


def check_wire(client: TappedClient) -> None:
    """Clean against the schema; the extension's requests have SEP-2663's shape."""
    client.wire.assert_clean(allow=EXTENSION_ONLY)
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        for msg in client.wire.sent_with(method):
            params = msg["params"]
            assert isinstance(params["taskId"], str) and params["taskId"]
            if client.stateless_version is not None:
                caps = params["_meta"]["io.modelcontextprotocol/clientCapabilities"]
                assert caps["extensions"] == {EXTENSION: {}}
            if method == "tasks/update":
                assert isinstance(params["inputResponses"], dict) and params["inputResponses"]


async def test_a_task_ends_with_what_the_plain_call_returns(version: str) -> None:
    async with client_for(version) as client:
        with anyio.fail_after(LIMIT):
            handle = await client.call_tool("slow_compute", {"seconds": 0.3, "label": "x"},
                                            task=True)
            assert isinstance(handle, TaskHandle) and handle.task_id
            assert handle.task is not None and handle.task.status == "working"
            assert handle.task.created_at and handle.task.ttl is not None
            seen = [task.status async for task in handle]
            assert seen[0] == "working" and seen[-1] == "completed"
            result = await handle.result()
            plain = await client.call_tool("slow_compute", {"seconds": 0.01, "label": "x"})
        assert result.text == "Computed x in 0.3s" and not result.is_error
        assert plain.text == "Computed x in 0.01s"
        assert (await handle.status()) == handle.task  # terminal: it stays so
        if version == V2025_11_25:
            assert client.wire.sent_with("tools/call")[0]["params"]["task"] == {}
        else:  # the server decides; the client only declares the extension
            assert "task" not in client.wire.sent_with("tools/call")[0]["params"]
        check_wire(client)


async def test_listening_for_a_tasks_notifications() -> None:
    """``listen(task_ids=...)`` asks for ``notifications/tasks``; they reach the handles'
    watchers (which wake a waiting handle before its next poll) with the full task,
    result inlined, and the handle still ends with the right state and result. The task
    finishes only once the listen is acknowledged (a timed task could end before it on a
    loaded machine, and then nothing is pushed)."""
    server = everything_server()
    gate = anyio.Event()

    @server.tool(task="required")
    async def gated_job() -> str:
        """Answers once the test opens the gate."""
        await gate.wait()
        return "Computed result in 0.3s"

    async with client_for(V2026_07_28, server) as client:
        with anyio.fail_after(LIMIT):
            handle = await client.call_tool("gated_job", {}, task=True)
            task_id = handle.task_id
            assert task_id is not None
            watchers = client.task_watchers
            watchers.watch(task_id)
            async with client.listen(task_ids=[task_id]) as changes:
                ack = await changes.receive()
                assert ack["params"]["notifications"] == {"taskIds": [task_id]}
                gate.set()
                pushed = None
                for _ in range(10):  # working, then completed: a few at most
                    pushed = await watchers.next(task_id, LIMIT)
                    if pushed is not None and pushed.terminal:
                        break
                watchers.unwatch(task_id)
                assert pushed is not None and pushed.status == "completed"
                assert pushed.result is not None
                assert pushed.result["content"][0]["text"] == "Computed result in 0.3s"
                final = await handle.wait()
                assert final is not None and final.status == "completed"
                assert (await handle.result()).text == "Computed result in 0.3s"
        sent = client.wire.sent_with("subscriptions/listen")[0]["params"]["notifications"]
        assert sent == {"taskIds": [task_id]}
        check_wire(client)


async def test_a_ttl_is_requested_in_2025_11_25() -> None:
    async with client_for(V2025_11_25) as client:
        with anyio.fail_after(LIMIT):
            handle = await client.call_tool("slow_compute", {"seconds": 0.05},
                                            task={"ttl": 90_000})
            await handle.wait()
        assert client.wire.sent_with("tools/call")[0]["params"]["task"] == {"ttl": 90_000}
        assert handle.task is not None and handle.task.ttl is not None
        check_wire(client)


async def test_progress_follows_a_2025_11_25_task(anyio_backend: str) -> None:
    got: list[tuple[float, float | None]] = []
    async with client_for(V2025_11_25) as client:
        with anyio.fail_after(LIMIT):
            handle = await client.call_tool("slow_compute", {"seconds": 0.5}, task=True,
                                            on_progress=lambda p, t, m: got.append((p, t)))
            await handle.result()
        # after the CreateTaskResult, on its token. Callbacks run in tasks of their own:
        # asyncio starts them in arrival order, so the last progress is in before the
        # result; trio starts them in no set order, so there the one sent just before
        # the result may be dispatched after the task ended, and dropped (docs/client.md)
        assert got and got[0][0] <= 1.0
        if anyio_backend == "asyncio":
            assert got[-1] == (2.0, 2.0)
        assert not client.session.conn._task_tokens  # released with the task's end
        check_wire(client)


async def test_input_required_is_answered_by_the_handlers(version: str) -> None:
    asked = Asked()
    async with client_for(version, elicitation=asked) as client:
        with anyio.fail_after(LIMIT):
            handle = await client.call_tool("confirm_delete", {"filename": "a.txt"}, task=True)
            statuses = [task.status async for task in handle]
            result = await handle.result()
        assert result.text == "Deleted a.txt"
        assert asked.messages == ["Delete a.txt?"]  # asked once, however often polled
        assert "input_required" in statuses and statuses[-1] == "completed"
        if version == V2025_11_25:
            assert client.wire.sent_with("tasks/result")  # the requests came on it
        else:
            updates = client.wire.sent_with("tasks/update")
            assert [list(u["params"]["inputResponses"]) for u in updates] == [["confirm"]]
        check_wire(client)


async def test_two_inputs_at_once(version: str) -> None:
    """Both generations: two requests pending at once (2025-11-25: both ride the
    tasks/result stream; a second asker once waited forever for a listener)."""
    asked = Asked()
    async with client_for(version, elicitation=asked) as client:
        with anyio.fail_after(LIMIT):
            result = await (await client.call_tool("multi_input", task=True)).result()
        assert result.text == "Ada confirmed"
        assert sorted(asked.messages) == ["Go ahead?", "Your name?"]
        check_wire(client)


async def test_a_required_tool_runs_as_a_task_when_called_plainly(version: str) -> None:
    async with client_for(version) as client:
        with anyio.fail_after(LIMIT):
            result = await client.call_tool("failing_job")
        assert result.is_error and "input data was rejected" in result.text
        sent = client.wire.sent_with("tools/call")[-1]["params"]
        assert ("task" in sent) == (version == V2025_11_25)
        if version == V2025_11_25:  # the server refused it plainly (-32601): learnt, retried
            calls = [m for m in client.wire.sent_methods() if m in ("tools/call", "tools/list")]
            assert calls == ["tools/call", "tools/list", "tools/call"]
            with anyio.fail_after(LIMIT):  # known now: straight to a task
                assert (await client.call_tool("failing_job")).is_error
            assert "task" in client.wire.sent_with("tools/call")[-1]["params"]
            assert len(client.wire.sent_with("tools/call")) == 3
        check_wire(client)


async def test_mrtr_then_a_task(version: str) -> None:
    asked = Asked()
    async with client_for(version, elicitation=asked) as client:
        with anyio.fail_after(LIMIT):
            result = await client.call_tool("test_tool_with_task")
        assert result.text == "Hello, Ada, from a task!"
        assert asked.messages == ["What is your name?"]
        check_wire(client)


async def test_a_forbidden_tool_is_never_called_as_a_task(version: str) -> None:
    async with client_for(version) as client:
        with anyio.fail_after(LIMIT):
            if version == V2025_11_25:
                with pytest.raises(CapabilityNotSupported, match="taskSupport"):
                    await client.call_tool("greet", {"name": "Ada"}, task=True)
                assert not client.wire.sent_with("tools/call")  # nothing was sent
            else:  # the server answered at once: a handle without a task
                handle = await client.call_tool("greet", {"name": "Ada"}, task=True)
                assert handle.task_id is None and handle.done
                assert (await handle.status()) is None
                assert (await handle.result()).text == "Hello, Ada!"
        check_wire(client)


async def test_a_failed_task_raises_the_calls_error(version: str) -> None:
    async with client_for(version) as client:
        with anyio.fail_after(LIMIT):
            handle = await client.call_tool("protocol_error_job", task=True)
            with pytest.raises(RemoteError) as caught:
                await handle.result()
            with pytest.raises(RemoteError) as plain:
                await client.call_tool("protocol_error_job")
        assert caught.value.code == plain.value.code == -32603
        assert caught.value.message == plain.value.message
        check_wire(client)


async def test_cancel(version: str) -> None:
    async with client_for(version) as client:
        with anyio.fail_after(LIMIT):
            handle = await client.call_tool("slow_compute", {"seconds": 30}, task=True)
            await handle.cancel()
            final = await handle.wait()
            assert final is not None and final.status == "cancelled"
            with pytest.raises(TaskCancelled):
                await handle.result()
            if version == V2025_11_25:  # a task that ended cannot be cancelled
                with pytest.raises(RemoteError) as caught:
                    await handle.cancel()
                assert caught.value.code == -32602
        check_wire(client)


async def test_cancellation_racing_completion(version: str) -> None:
    """Cancel tasks just as they end: either the cancel wins (cancelled, no result) or the
    work does (completed with its result; 2025-11-25 refuses the cancel with -32602) —
    never a mix, never a hang."""
    outcomes = set()
    async with client_for(version) as client:
        with anyio.fail_after(LIMIT * 2):
            for i in range(12):
                handle = await client.call_tool("slow_compute", {"seconds": 0.02}, task=True)
                await anyio.sleep(0.005 * i)
                try:
                    await handle.cancel()
                except RemoteError as exc:
                    assert exc.code == -32602 and version == V2025_11_25
                final = await handle.wait()
                assert final is not None
                if final.status == "completed":
                    assert (await handle.result()).text.startswith("Computed")
                else:
                    assert final.status == "cancelled"
                    with pytest.raises(TaskCancelled):
                        await handle.result()
                outcomes.add(final.status)
    assert outcomes <= {"completed", "cancelled"}
    check_wire(client)


async def test_list_get_cancel_and_follow_in_2025_11_25() -> None:
    async with client_for(V2025_11_25) as client:
        with anyio.fail_after(LIMIT):
            done = await client.call_tool("slow_compute", {"seconds": 0.01}, task=True)
            await done.wait()
            assert done.task_id in {t.task_id for t in await client.list_tasks()}
            got = await client.get_task(done.task_id)
            assert got.status == "completed" and got.task_id == done.task_id
            with pytest.raises(RemoteError) as caught:
                await client.cancel_task(done.task_id)
            assert caught.value.code == -32602
            again = await client.follow_task(done.task_id)
            assert (await again.result()).text == "Computed result in 0.01s"
        check_wire(client)


async def test_unknown_task_ids(version: str) -> None:
    async with client_for(version) as client:
        with anyio.fail_after(LIMIT):
            for call in (client.get_task, client.cancel_task):
                with pytest.raises(RemoteError) as caught:
                    await call("no-such-task")
                assert caught.value.code == -32602
            if version == V2026_07_28:
                with pytest.raises(CapabilityNotSupported):
                    await client.list_tasks()  # no tasks/list in the extension
        check_wire(client)


async def test_no_tasks_before_2025_11_25() -> None:
    async with TappedClient(everything_server(), protocol_version="2025-06-18") as client:
        with pytest.raises(CapabilityNotSupported, match="2025-11-25"):
            await client.call_tool("slow_compute", {"seconds": 0}, task=True)
        result = await client.call_tool("slow_compute", {"seconds": 0})  # plainly: fine
        assert result.text == "Computed result in 0s"


async def test_a_client_without_tasks_declares_no_extension() -> None:
    async with client_for(V2026_07_28, tasks=False) as client:
        with anyio.fail_after(LIMIT):
            with pytest.raises(CapabilityNotSupported, match="tasks=True"):
                await client.call_tool("slow_compute", {"seconds": 0}, task=True)
            plain = await client.call_tool("slow_compute", {"seconds": 0.01})
        assert plain.text == "Computed result in 0.01s"
        meta = client.wire.sent_with("tools/call")[0]["params"]["_meta"]
        assert "extensions" not in meta["io.modelcontextprotocol/clientCapabilities"]
        check_wire(client)


async def test_over_http(version: str) -> None:
    asked = Asked()
    with LiveServer(everything_server().asgi_app()) as live:
        async with client_for(version, live.url, elicitation=asked) as client:
            with anyio.fail_after(LIMIT):
                handle = await client.call_tool("confirm_delete", {"filename": "b"},
                                                task=True)
                assert (await handle.result()).text == "Deleted b"
                assert await client.get_task(handle.task_id or "")
            check_wire(client)
    assert asked.messages == ["Delete b?"]


# ------------------------------------------------------------------ hostile servers


BOTH = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
"""The hostile servers are raw scripts: the client's side runs on both backends."""


def raw(mode: str) -> Client:
    return Client([sys.executable, RAW, mode], timeout=LIMIT, task_timeout=LIMIT)


@BOTH
async def test_a_task_that_never_ends_times_out() -> None:
    async with raw("stuck") as client:
        handle = await client.call_tool("job", task=True)
        start = anyio.current_time()
        with anyio.fail_after(LIMIT), pytest.raises(TaskTimeout, match="did not end within"):
            await handle.wait(timeout=0.3)
        assert anyio.current_time() - start < 2
        with anyio.fail_after(LIMIT), pytest.raises(TaskTimeout):
            async for _ in handle.changes(timeout=0.2):
                pass
        cancelled = await handle.cancel()
        assert cancelled is not None and cancelled.status == "cancelled"


@BOTH
@pytest.mark.parametrize("mode", ["otherid", "badstatus"])
async def test_junk_task_states(mode: str) -> None:
    async with raw(mode) as client:
        handle = await client.call_tool("job", task=True)
        with anyio.fail_after(LIMIT), pytest.raises(InvalidResult):
            await handle.status()


@BOTH
async def test_an_empty_task_id() -> None:
    async with raw("emptyid") as client:
        with anyio.fail_after(LIMIT), pytest.raises(InvalidResult, match="taskId"):
            await client.call_tool("job", task=True)


@BOTH
async def test_a_terminal_task_that_changes() -> None:
    async with raw("flip") as client:
        handle = await client.call_tool("job", task=True)
        with anyio.fail_after(LIMIT):
            final = await handle.wait()
            assert final is not None and final.status == "completed"
            with pytest.raises(InvalidResult, match="terminal states never change"):
                await handle.status()


@BOTH
async def test_a_cancel_that_loses_the_race() -> None:
    async with raw("racy") as client:
        handle = await client.call_tool("job", task=True)
        with anyio.fail_after(LIMIT):
            assert (await handle.status()) is not None and handle.done
            with pytest.raises(RemoteError) as caught:
                await handle.cancel()
            assert caught.value.code == -32602
            assert (await handle.result()).text == "job done"


@BOTH
async def test_no_cancel_or_list_unless_declared() -> None:
    async with raw("bare") as client:
        handle = await client.call_tool("job", task=True)
        with anyio.fail_after(LIMIT):
            with pytest.raises(CapabilityNotSupported, match=r"tasks\.cancel"):
                await handle.cancel()
            with pytest.raises(CapabilityNotSupported, match=r"tasks\.cancel"):
                await client.cancel_task("t-1")
            with pytest.raises(CapabilityNotSupported, match=r"tasks\.list"):
                await client.list_tasks()
