"""``mcpkit.testing`` (issue #15, item 4): a Client on a Server in memory, wire checked.

The documented pytest module (docs/testing.md) is extracted and run by pytest in a
subprocess, in a temporary directory, as a user would run it; the helper itself is
judged here in both eras, including a server that answers outside the schema (which
must fail the test) and a message that does not exist in the negotiated revision.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from mcpkit import Context, InvalidParams, InvalidResult, RemoteError, Server
from mcpkit.testing import ERAS, Wire, WireViolation, connect

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 8


def shouting_server() -> Server:
    server = Server("shout")

    @server.tool
    async def shout(text: str) -> str:
        """Upper-case ``text``."""
        return text.upper()

    @server.tool
    async def broken() -> dict[str, Any]:
        """Returns a CallToolResult whose text block has no text (the schema says it must)."""
        return {"content": [{"type": "text"}], "isError": False}

    return server


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_connect_serves_in_memory_and_checks_the_wire(mode: str) -> None:
    with anyio.fail_after(LIMIT):
        async with connect(shouting_server(), mode=mode) as client:  # type: ignore[arg-type]
            assert (await client.call_tool("shout", {"text": "hi"})).text == "HI"
            calls = client.wire.sent("client", "tools/call")
    assert len(calls) == 1 and calls[0]["params"]["name"] == "shout"
    senders = {who for who, _ in client.wire.messages}  # type: ignore[attr-defined]
    assert senders == {"client", "server"}


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_a_server_answer_outside_the_schema_fails_the_test(mode: str) -> None:
    with anyio.fail_after(LIMIT), pytest.raises(WireViolation) as err:
        async with connect(shouting_server(), mode=mode) as client:  # type: ignore[arg-type]
            with pytest.raises(InvalidResult):  # the client refuses it too
                await client.call_tool("broken")
    assert "server: " in str(err.value) and "text" in str(err.value)
    # check_wire=False: the test itself judges.
    with anyio.fail_after(LIMIT):
        async with connect(shouting_server(), mode=mode,  # type: ignore[arg-type]
                           check_wire=False) as client:
            with pytest.raises(InvalidResult):
                await client.call_tool("broken")


def test_wire_judges_methods_ids_and_garbage() -> None:
    wire = Wire()
    wire.feed("client", b'{"jsonrpc":"2.0","id":1,"method":"tasks/list"}\n{"jsonrpc":')
    wire.feed("client", b'"2.0","method":"notifications/initialized"}\n')
    wire.feed("server", b'{"jsonrpc":"2.0","id":1,"result":{"tools":"nope"}}\nnot json\n')
    problems = wire.violations("2025-06-18")
    assert any("request 'tasks/list' does not exist in revision 2025-06-18" in p
               for p in problems)
    assert any(p.startswith("server sent a line that is not JSON") for p in problems)
    assert len(wire.sent("client")) == 2  # the split line was put back together
    assert wire.violations("1999-01-01") == ["unknown revision '1999-01-01'"]


def test_connect_refuses_what_is_not_a_server() -> None:
    async def main() -> None:
        async with connect("python server.py"):  # type: ignore[arg-type]
            pass

    with pytest.raises(TypeError, match=r"use mcpkit\.client\.Client directly"):
        anyio.run(main)


def test_the_documented_pytest_module_runs(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "testing.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S)
              if "def test_add" in b]  # the page's one whole module (the rest: fragments)
    assert len(blocks) == 1
    (tmp_path / "test_calculator.py").write_text(blocks[0])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "no:randomly", "test_calculator.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "8 passed" in proc.stdout  # four tests, each in both eras


# --- extensions (issue #26, item 2): the 2026-07-28 tasks extension on the wire ---------

EXT = "io.modelcontextprotocol/tasks"


def task_server() -> Server:
    server = Server("jobs")

    @server.tool(task="optional")
    async def confirm(ctx: Context) -> str:
        """Asks the user, then answers (input while a task runs)."""
        answer = await ctx.elicit("Go on?", bool)
        return "went on" if answer.accepted and answer.data else "stopped"

    @server.tool(task="required")
    async def wait(seconds: float) -> str:
        """Waits ``seconds`` (to be cancelled, or listened to)."""
        await anyio.sleep(seconds)
        return "waited"

    @server.tool(task="optional")
    async def fail() -> str:
        """Fails with a protocol error once running (a ``failed`` task)."""
        await anyio.sleep(0.01)
        raise InvalidParams("no such job")

    return server


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_task_tools_pass_the_wire_check_in_both_eras(mode: str) -> None:
    """Plain calls, a task asking for input, a cancelled task, a failed one and (2026-07-28)
    a listened one: every message is judged, the extension's against its own shapes, and
    nothing is refused. On main the 2026-07-28 run failed: 'tasks/get' does not exist."""
    with anyio.fail_after(LIMIT):
        async with connect(task_server(), mode=mode,  # type: ignore[arg-type]
                           elicitation=lambda p: {"action": "accept",
                                                  "content": {"value": True}}) as client:
            assert (await client.call_tool("confirm")).text == "went on"
            handle = await client.call_tool("confirm", task=True)
            assert (await handle.result()).text == "went on"
            handle = await client.call_tool("wait", {"seconds": 30}, task=True)
            await handle.cancel()
            handle = await client.call_tool("fail", task=True)
            with pytest.raises(RemoteError, match="no such job"):
                await handle.result()
            if mode == "stateless":
                handle = await client.call_tool("wait", {"seconds": 0.2}, task=True)
                async with client.listen(task_ids=[handle.task_id or ""]) as changes:
                    async for note in changes:
                        if note["method"] == "notifications/tasks":
                            assert note["params"]["status"] == "completed"
                            break
            sent = {m.get("method") for m in client.wire.sent("client")}
            heard = {m.get("method") for m in client.wire.sent("server")}
    tasks_sent = {m for m in sent if m and m.startswith("tasks/")}
    if mode == "stateless":
        assert tasks_sent == {"tasks/get", "tasks/update", "tasks/cancel"}
        assert "notifications/tasks" in heard
    else:
        assert {"tasks/result", "tasks/cancel"} <= tasks_sent


def _meta(declares: bool = True) -> dict[str, Any]:
    caps = {"extensions": {EXT: {}}} if declares else {}
    return {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}}


def _task(*, drop: tuple[str, ...] = (), **fields: Any) -> dict[str, Any]:
    out = {"taskId": "t1", "status": "working", "createdAt": "2026-01-01T00:00:00Z",
           "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 60000, "pollIntervalMs": 50}
    out.update(fields)
    return {k: v for k, v in out.items() if k not in drop}


class _Talk:
    """A hand-written 2026-07-28 exchange on a ``Wire``, after ``server/discover``."""

    def __init__(self, *, server_declares: bool = True, client_declares: bool = True) -> None:
        self.wire, self.next_id = Wire(), 1
        caps: dict[str, Any] = {"tools": {}}
        if server_declares:
            caps["extensions"] = {EXT: {}}
        self.ask("server/discover", {"_meta": _meta(client_declares)}, {
            "supportedVersions": ["2026-07-28"], "capabilities": caps, "ttlMs": 0,
            "cacheScope": "private"})

    def send(self, who: str, msg: dict[str, Any]) -> None:
        self.wire.feed(who, orjson.dumps({"jsonrpc": "2.0", **msg}) + b"\n")  # type: ignore[arg-type]

    def ask(self, method: str, params: dict[str, Any], result: dict[str, Any] | None,
            result_type: str = "complete") -> None:
        self.next_id += 1
        self.send("client", {"id": self.next_id, "method": method, "params": params})
        if result is not None:
            self.send("server", {"id": self.next_id,
                                 "result": {"resultType": result_type, **result}})

    def problems(self) -> list[str]:
        return self.wire.violations("2026-07-28")


def test_negotiated_extension_messages_pass() -> None:
    talk = _Talk()
    call = {"name": "x", "arguments": {}, "_meta": _meta()}
    talk.ask("tools/call", call, _task(), result_type="task")
    talk.ask("tasks/get", {"taskId": "t1", "_meta": _meta()}, _task(
        status="input_required", inputRequests={"k": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "?", "requestedSchema": {
                "type": "object", "properties": {}}}}}))
    talk.ask("tasks/update", {"taskId": "t1", "inputResponses": {"k": {"action": "decline"}},
                              "_meta": _meta()}, {})
    talk.ask("tasks/get", {"taskId": "t1", "_meta": _meta()}, _task(
        status="completed", result={"content": [], "isError": False}, ttlMs=None))
    talk.ask("tasks/cancel", {"taskId": "t1", "_meta": _meta()}, {})
    talk.send("server", {"method": "notifications/tasks", "params": _task(
        status="failed", error={"code": -32603, "message": "x"})})
    assert talk.problems() == []


def test_extension_messages_are_judged_against_the_extension_shapes() -> None:
    """Each defect is named with the extension's definition and where it is."""
    talk = _Talk()
    call = {"name": "x", "arguments": {}, "_meta": _meta()}
    # The 2025-11-25 names in an extension task; a poll interval that is not a number.
    talk.ask("tools/call", call, _task(drop=("ttlMs",), ttl=60000, pollIntervalMs="5"),
             result_type="task")
    talk.ask("tasks/get", {"_meta": _meta()}, _task(status="completed"))  # no id, no result
    talk.ask("tasks/get", {"taskId": "t1", "_meta": _meta()}, _task(result={}))  # working
    talk.ask("tasks/update", {"taskId": "t1", "_meta": _meta()}, {})  # no inputResponses
    talk.ask("tasks/cancel", {"taskId": "t1", "_meta": _meta()}, {}, result_type="task")
    talk.send("server", {"method": "notifications/tasks", "params": _task(status="done")})
    talk.ask("tools/list", {"_meta": _meta()}, _task(), result_type="task")
    problems = talk.problems()
    expected = [
        'server: tasks.CreateTaskResult at <root>: "ttlMs" is a required property',
        'server: tasks.CreateTaskResult at pollIntervalMs: "5" is not of type "integer"',
        "server: tasks.CreateTaskResult at ttl: False schema does not allow 60000",
        'client: tasks.GetTaskRequest at params: "taskId" is a required property',
        'server: tasks.GetTaskResult at <root>: "result" is a required property',
        "server: tasks.GetTaskResult at result: False schema does not allow {}",
        'client: tasks.UpdateTaskRequest at params: "inputResponses" is a required property',
        "server: a 'task' result answers 'tasks/cancel', which the extension "
        f"{EXT} does not let become one",
        'server: tasks.TaskStatusNotification at params/status: "done" is not one of',
        "server: a 'task' result answers 'tools/list', which the extension",
    ]
    for want in expected:
        assert any(p.startswith(want) for p in problems), (want, problems)
    assert len(problems) == len(expected), problems


def test_an_extension_not_negotiated_stays_refused() -> None:
    """Not declared by the server, or not by the request: its messages are refused, and
    say which side did not declare it; the revisions it does not apply to never know it."""
    talk = _Talk(server_declares=False)
    talk.ask("tasks/get", {"taskId": "t1", "_meta": _meta()}, None)
    talk.ask("tools/call", {"name": "x", "arguments": {}, "_meta": _meta()}, _task(),
             result_type="task")
    talk.send("server", {"method": "notifications/tasks", "params": _task()})
    problems = talk.problems()
    assert len(problems) == 3, problems
    assert all(EXT in p and "the server did not declare" in p for p in problems)
    assert problems[0].startswith("client: request 'tasks/get' belongs to the extension")
    assert problems[1].startswith("server: a 'task' result answers 'tools/call', but")

    talk = _Talk()
    talk.ask("tasks/get", {"taskId": "t1", "_meta": _meta(declares=False)}, None)
    talk.ask("tools/call", {"name": "x", "arguments": {}, "_meta": _meta(declares=False)},
             _task(), result_type="task")
    talk.send("server", {"id": 99, "method": "tasks/get", "params": {"taskId": "t1"}})
    problems = talk.problems()
    assert len(problems) == 3, problems
    assert "which this request did not declare (capabilities.extensions)" in problems[0]
    assert "was not negotiated: the request did not declare" in problems[1]
    assert "is never sent by the server" in problems[2]

    for revision in ("2025-06-18", "2025-11-25"):
        wire = Wire()
        wire.feed("client", b'{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":'
                            b'{"taskId":"t1","inputResponses":{}}}\n')
        assert [p for p in wire.violations(revision)
                if f"request 'tasks/update' does not exist in revision {revision}" in p]
