"""Tasks across the instances of a deployment on Redis (``asgi_app(store=...)``).

Three in-process instances of ``examples/everything.py``'s server (uvicorn on loopback,
one real redis-server) take 2026-07-28 task requests (the io.modelcontextprotocol/tasks
extension, stateless, so any instance may get any of them, as behind a round-robin
balancer): a task created on A is polled on B, its input requests answered on B and C
(``tasks/update`` carried to A over the bus, a malformed answer refused with A's error),
cancelled from B (A's handler stopped), status notifications reaching a listen stream
held by another instance, and 2025-11-25 ``tasks/result`` blocking on an instance that
does not run the task. An instance killed with SIGKILL mid-task (a separate process):
the survivors report its task ``failed`` once its heartbeat lapses, never ``working``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcpkit.protocol.tasks import EXTENSION
from mcpkit.transports.http_routing import header_value
from tests.support.http import ACCEPT_BOTH, LiveServer, McpHttp, free_port
from tests.support.redis import BOUNDED, RedisServer
from tests.test_redis_instances import instances
from tests.test_tasks_http import everything_process

pytestmark = [pytest.mark.anyio, BOUNDED]
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {},
                                                       "extensions": {EXTENSION: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "redis-tasks", "version": "1"}}
NAMED = {"tools/call": "name", "tasks/get": "taskId", "tasks/update": "taskId",
         "tasks/cancel": "taskId"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def three(redis: RedisServer) -> Iterator[list[LiveServer]]:
    with instances(redis.url) as stack:
        yield stack.servers  # type: ignore[attr-defined]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=15) as client:
        yield client


async def rpc(http: httpx.AsyncClient, url: str, method: str,
              params: dict[str, Any]) -> dict[str, Any]:
    """One stateless 2026-07-28 request (routing headers added); its JSON-RPC reply."""
    headers = {"content-type": "application/json", "accept": ACCEPT_BOTH,
               "mcp-protocol-version": MODERN, "mcp-method": method}
    if method in NAMED:
        headers["mcp-name"] = header_value(str(params[NAMED[method]]))
    reply = await http.post(url, headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}})
    assert reply.status_code == 200, reply.text
    if reply.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in reply.text.splitlines() if line.startswith("data:")]
        answer = json.loads(data[-1])
    else:
        answer = reply.json()
    if "result" in answer:  # what every 2026-07-28 result carries
        assert answer["result"].pop("resultType") in ("complete", "task")
        answer["result"].pop("_meta", None)
    return dict(answer)


async def create(http: httpx.AsyncClient, url: str, tool: str,
                 arguments: dict[str, Any]) -> str:
    result = (await rpc(http, url, "tools/call", {"name": tool, "arguments": arguments}))[
        "result"]
    assert result["status"] == "working" and "ttlMs" in result, result
    return str(result["taskId"])


async def get(http: httpx.AsyncClient, url: str, task_id: str
              ) -> dict[str, Any]:
    result = (await rpc(http, url, "tasks/get", {"taskId": task_id}))["result"]
    assert result["taskId"] == task_id and {"createdAt", "lastUpdatedAt"} <= set(result)
    return dict(result)


async def until(http: httpx.AsyncClient, url: str, task_id: str,
                status: str, seconds: float = 10) -> dict[str, Any]:
    got: dict[str, Any] = {}
    with anyio.fail_after(seconds):
        while got.get("status") != status:
            got = await get(http, url, task_id)
            await anyio.sleep(0.05)
    return got


async def test_inputs_answered_through_other_instances(three: list[LiveServer],
                                                       http: httpx.AsyncClient) -> None:
    a, b, c = three
    task_id = await create(http, a.url, "multi_input", {})
    waiting = await until(http, b.url, task_id, "input_required")
    for _ in range(100):  # bounded: 5 s; A stores the second request right after the first
        if set(waiting["inputRequests"]) == {"name", "confirm"}:
            break
        await anyio.sleep(0.05)
        waiting = await get(http, b.url, task_id)
    assert set(waiting["inputRequests"]) == {"name", "confirm"}
    assert waiting["inputRequests"]["name"]["method"] == "elicitation/create"
    # a malformed answer: A's check, relayed back as it answered (-32602)
    bad = await rpc(http, c.url, "tasks/update", {"taskId": task_id, "inputResponses": {
        "name": {"action": "maybe"}}})
    assert bad["error"]["code"] == -32602, bad
    ack = await rpc(http, b.url, "tasks/update", {"taskId": task_id, "inputResponses": {
        "name": {"action": "accept", "content": {"name": "Ada"}}}})
    assert ack["result"] == {}
    for _ in range(100):  # bounded: 5 s; the record drops the answered key
        if set((await get(http, c.url, task_id)).get("inputRequests") or {}) == {"confirm"}:
            break
        await anyio.sleep(0.05)
    else:
        raise AssertionError("the answered input request is still listed")
    await rpc(http, c.url, "tasks/update", {"taskId": task_id, "inputResponses": {
        "confirm": {"action": "accept", "content": {"confirm": True}}}})
    done = await until(http, b.url, task_id, "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "Ada confirmed"}]
    assert "inputRequests" not in done
    # an unknown task is -32602 on every instance, as before
    for server in three:
        error = (await rpc(http, server.url, "tasks/get", {"taskId": "nope"}))["error"]
        assert error["code"] == -32602


async def test_cancel_from_another_instance_stops_the_handler(
        three: list[LiveServer], http: httpx.AsyncClient) -> None:
    a, b, c = three
    task_id = await create(http, a.url, "slow_compute", {"seconds": 30})
    assert (await get(http, c.url, task_id))["status"] == "working"
    assert (await rpc(http, b.url, "tasks/cancel", {"taskId": task_id}))["result"] == {}
    cancelled = await get(http, c.url, task_id)
    assert cancelled["status"] == "cancelled"
    await anyio.sleep(0.3)
    assert (await get(http, a.url, task_id))["status"] == "cancelled"
    # a terminal task: still an empty ack, and it stays cancelled
    assert (await rpc(http, c.url, "tasks/cancel", {"taskId": task_id}))["result"] == {}
    assert (await get(http, b.url, task_id))["status"] == "cancelled"


async def test_listen_stream_on_another_instance_hears_the_status(
        three: list[LiveServer], http: httpx.AsyncClient) -> None:
    a, b, c = three
    task_id = await create(http, a.url, "slow_compute", {"seconds": 30})
    headers = {"content-type": "application/json", "accept": ACCEPT_BOTH,
               "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"}
    seen: list[dict[str, Any]] = []
    async with http.stream("POST", b.url, headers=headers, json={
            "jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
            "params": {"notifications": {"taskIds": [task_id, "not-mine"]},
                       "_meta": META}}) as stream:
        with anyio.fail_after(10):
            async for line in stream.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                seen.append(message)
                if message.get("method") == "notifications/subscriptions/acknowledged":
                    assert message["params"]["notifications"]["taskIds"] == [task_id]
                    await rpc(http, c.url, "tasks/cancel", {"taskId": task_id})
                if message.get("method") == "notifications/tasks":
                    break
    note = seen[-1]["params"]
    assert note["taskId"] == task_id and note["status"] == "cancelled"
    assert note["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7


async def test_core_result_blocks_on_another_instance(three: list[LiveServer]) -> None:
    a, b, _ = three
    async with httpx.AsyncClient(timeout=15) as http:
        client = McpHttp(http, a.url)
        await client.initialize()
        reply = await client.request("tools/call", {"name": "slow_compute", "arguments": {
            "seconds": 0.5}, "task": {"ttl": 60000}})
        task_id = reply.json["result"]["task"]["taskId"]
        client.url = b.url
        result = (await client.request("tasks/result", {"taskId": task_id})).json["result"]
        assert result["content"][0]["text"] == "Computed result in 0.5s"
        listed = (await client.request("tasks/list")).json["result"]["tasks"]
        assert [t["taskId"] for t in listed] == [task_id]


async def test_a_killed_instances_task_fails_on_the_survivors(
        redis: RedisServer, http: httpx.AsyncClient, tmp_path: Path) -> None:
    port = free_port()
    doomed = everything_process(port, tmp_path / "doomed.log", "--redis", redis.url)
    doomed_url = f"http://127.0.0.1:{port}/mcp"
    try:
        with instances(redis.url, count=1) as stack:
            (survivor,) = stack.servers  # type: ignore[attr-defined]
            task_id = await create(http, doomed_url, "slow_compute", {"seconds": 60})
            assert (await get(http, survivor.url, task_id))["status"] == "working"
            doomed.kill()
            failed = await until(http, survivor.url, task_id, "failed", seconds=10)
            assert "stopped before the task finished" in failed["statusMessage"]
            assert failed["error"]["code"] == -32603
    finally:
        doomed.kill()


async def test_a_stopped_instances_running_task_ends_failed_at_once(
        redis: RedisServer, http: httpx.AsyncClient) -> None:
    """An instance stopped gracefully (its ASGI lifespan ends) stops its task handlers and
    stores their end before closing its Redis connections: the survivor reads ``failed``
    at once, with the handler's own message, not only once the heartbeat lapses."""
    with instances(redis.url, count=1) as stack:
        (survivor,) = stack.servers  # type: ignore[attr-defined]
        with instances(redis.url, count=1) as leaving:
            (doomed,) = leaving.servers  # type: ignore[attr-defined]
            task_id = await create(http, doomed.url, "slow_compute", {"seconds": 60})
            assert (await get(http, survivor.url, task_id))["status"] == "working"
        failed = await get(http, survivor.url, task_id)
        assert failed["status"] == "failed", failed
        assert failed["statusMessage"] == "The server stopped this task before it finished."


async def test_an_extension_tasks_progress_reaches_the_other_instances(
        three: list[LiveServer], http: httpx.AsyncClient) -> None:
    """Issue #26 item 7: the extension has no progress notifications for tasks; the
    running instance stores each progress as the task's statusMessage, at most once per
    poll interval (500 ms), so a poll on another instance shows it."""
    a, b, _ = three
    task_id = await create(http, a.url, "slow_compute", {"seconds": 3})  # 12 reports
    seen: list[str] = []
    with anyio.fail_after(10):
        while True:
            got = await get(http, b.url, task_id)
            if got["status"] == "completed":
                break
            if "statusMessage" in got and got["statusMessage"] not in seen:
                seen.append(got["statusMessage"])
            await anyio.sleep(0.05)
    assert seen and all(s.startswith("progress ") and s.endswith("%)") for s in seen), seen
    assert len(seen) <= 8  # stored at most every 500 ms over ~3 s, not 12 times
    assert "statusMessage" not in got  # the end replaced it
