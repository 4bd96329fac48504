"""The client as a task receiver (2025-11-25): task-augmented sampling and elicitation.

The peer is a real mcpkit ``Server`` in-process whose tools, from inside a request, send
the client task-augmented ``sampling/createMessage`` / ``elicitation/create`` and then
``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel`` on the server's own
session, exactly as a server hosting such a flow would. Every message the client sends
goes through a ``TappedStream`` and is validated against the 2025-11-25 schema
(``CreateTaskResult`` for the augmented requests, ``GetTaskResult``, ``ListTasksResult``,
``CancelTaskResult``, ``notifications/tasks/status``).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpkit import Context, RemoteError, Server
from mcpkit.client import task_host
from mcpkit.protocol.tasks import RELATED_TASK

from .support.tap import TappedClient

pytestmark = pytest.mark.anyio
LIMIT = 8


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


RELEASE: dict[str, anyio.Event] = {}


async def slow_sampler(params: dict[str, Any]) -> dict[str, Any]:
    gate = RELEASE.get("gate")
    if gate is not None:
        await gate.wait()
    text = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "model": "m", "content": {"type": "text",
                                                           "text": f"echo {text}"}}


def elicitor(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
          "maxTokens": 5}


def make_server() -> Server:
    server = Server("task-asker")

    @server.tool()
    async def sample_as_task(ctx: Context, ttl: int = 60_000) -> dict[str, Any]:
        """Ask for a sampling task, poll it, fetch its result, list it."""
        ask = ctx._session.request
        created = await ask("sampling/createMessage", {**SAMPLE, "task": {"ttl": ttl}})
        task_id = created["task"]["taskId"]
        first = await ask("tasks/get", {"taskId": task_id})
        result = await ask("tasks/result", {"taskId": task_id})
        after = await ask("tasks/get", {"taskId": task_id})
        listed = await ask("tasks/list", {})
        try:
            await ask("tasks/cancel", {"taskId": task_id})
            cancel_error = None
        except RemoteError as exc:
            cancel_error = exc.code
        return {"created": created, "first": first, "result": result, "after": after,
                "listed": listed, "cancel_error": cancel_error}

    @server.tool()
    async def cancel_sampling_task(ctx: Context) -> dict[str, Any]:
        """Start a sampling task that blocks, cancel it, and read what is left."""
        ask = ctx._session.request
        created = await ask("sampling/createMessage", {**SAMPLE, "task": {}})
        task_id = created["task"]["taskId"]
        cancelled = await ask("tasks/cancel", {"taskId": task_id})
        got = await ask("tasks/get", {"taskId": task_id})
        try:
            await ask("tasks/result", {"taskId": task_id})
            result_error = None
        except RemoteError as exc:
            result_error = exc.code
        return {"cancelled": cancelled, "got": got, "result_error": result_error}

    @server.tool()
    async def elicit_as_task(ctx: Context) -> dict[str, Any]:
        ask = ctx._session.request
        created = await ask("elicitation/create", {
            "mode": "form", "message": "name?", "task": {"ttl": 10 ** 12},
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}})
        task_id = created["task"]["taskId"]
        return {"created": created,
                "result": await ask("tasks/result", {"taskId": task_id})}

    @server.tool()
    async def junk_task_requests(ctx: Context) -> dict[str, Any]:
        """Hostile: ids and cursors the client never issued, a malformed task."""
        ask = ctx._session.request
        codes = {}
        for name, method, params in [
            ("get-unknown", "tasks/get", {"taskId": "nope"}),
            ("result-unknown", "tasks/result", {"taskId": "nope"}),
            ("cancel-unknown", "tasks/cancel", {"taskId": "nope"}),
            ("get-no-id", "tasks/get", {}),
            ("list-bad-cursor", "tasks/list", {"cursor": "nope"}),
            ("bad-ttl", "sampling/createMessage", {**SAMPLE, "task": {"ttl": -1}}),
        ]:
            try:
                await ask(method, params)
                codes[name] = None
            except RemoteError as exc:
                codes[name] = exc.code
        return codes

    @server.tool()
    async def plain_sampling(ctx: Context) -> dict[str, Any]:
        """A request with ``task`` the client did not declare for: processed normally."""
        return await ctx._session.request("sampling/createMessage", {**SAMPLE, "task": {}})

    return server


async def call(client: TappedClient, tool: str, **args: Any) -> Any:
    with anyio.fail_after(LIMIT):
        res = await client.call_tool(tool, args)
    assert not res.is_error, res.text
    return res.structured_content


def tapped(**options: Any) -> TappedClient:
    return TappedClient(make_server(), protocol_version="2025-11-25", **options)


@pytest.mark.usefixtures("anyio_backend")
async def test_declares_hosted_tasks_only_for_its_handlers() -> None:
    async with tapped(sampling=slow_sampler) as client:
        caps = client.session.conn.capabilities
        assert caps["tasks"] == {"list": {}, "cancel": {},
                                 "requests": {"sampling": {"createMessage": {}}}}
    async with tapped(sampling=slow_sampler, elicitation=elicitor, tasks=False) as client:
        assert "tasks" not in client.session.conn.capabilities
    async with TappedClient(make_server(), protocol_version="2025-06-18",
                            sampling=slow_sampler) as client:
        assert "tasks" not in client.session.conn.capabilities  # no tasks before 2025-11-25
    client.wire.assert_clean()


async def test_sampling_task_round_trip() -> None:
    RELEASE.pop("gate", None)
    async with tapped(sampling=slow_sampler) as client:
        out = await call(client, "sample_as_task", ttl=5_000)
        created = out["created"]["task"]
        assert created["status"] == "working" and created["ttl"] == 5_000
        assert len(created["taskId"]) >= 20  # unguessable
        assert out["first"]["taskId"] == created["taskId"]
        assert out["first"]["status"] in ("working", "completed")
        assert out["result"]["content"]["text"] == "echo hi"
        assert out["result"]["_meta"][RELATED_TASK] == {"taskId": created["taskId"]}
        assert out["after"]["status"] == "completed"
        assert [t["taskId"] for t in out["listed"]["tasks"]] == [created["taskId"]]
        assert out["cancel_error"] == -32602  # a terminal task cannot be cancelled
        notes = [m for m in client.wire.sent_with("notifications/tasks/status")]
        assert notes and notes[-1]["params"]["status"] == "completed"
        client.wire.assert_clean()


async def test_cancelling_a_hosted_task() -> None:
    RELEASE["gate"] = anyio.Event()  # the sampler never answers on its own
    try:
        async with tapped(sampling=slow_sampler) as client:
            out = await call(client, "cancel_sampling_task")
            assert out["cancelled"]["status"] == "cancelled"
            assert out["got"]["status"] == "cancelled"  # and it stays so
            assert out["result_error"] == -32602
            client.wire.assert_clean()
    finally:
        RELEASE.pop("gate", None)


async def test_elicitation_task_caps_the_ttl() -> None:
    async with tapped(elicitation=elicitor) as client:
        out = await call(client, "elicit_as_task")
        assert out["created"]["task"]["ttl"] == task_host.MAX_TTL_MS
        assert out["result"]["action"] == "accept"
        assert out["result"]["content"] == {"name": "Ada"}
        client.wire.assert_clean()


async def test_junk_task_requests_get_invalid_params() -> None:
    async with tapped(sampling=slow_sampler) as client:
        codes = await call(client, "junk_task_requests")
        assert codes == {k: -32602 for k in codes}, codes
        client.wire.assert_clean()


async def test_undeclared_augmentation_is_processed_normally() -> None:
    RELEASE.pop("gate", None)
    async with tapped(sampling=slow_sampler, tasks=False) as client:
        out = await call(client, "plain_sampling")
        assert out["content"]["text"] == "echo hi" and "task" not in out
        client.wire.assert_clean()


async def test_hosted_task_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    RELEASE["gate"] = anyio.Event()
    monkeypatch.setattr(task_host, "MAX_TASKS", 2)
    server = Server("limit")

    @server.tool()
    async def many(ctx: Context) -> dict[str, Any]:
        codes = []
        for _ in range(3):
            try:
                await ctx._session.request("sampling/createMessage", {**SAMPLE, "task": {}})
                codes.append(None)
            except RemoteError as exc:
                codes.append(exc.code)
        return {"codes": codes}

    try:
        async with TappedClient(server, protocol_version="2025-11-25",
                                sampling=slow_sampler) as client:
            out = await call(client, "many")
            assert out["codes"] == [None, None, -32600]
            client.wire.assert_clean()
    finally:
        RELEASE["gate"].set()
        RELEASE.pop("gate", None)
