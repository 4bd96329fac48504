"""The client when the server misbehaves: dies, goes silent, answers late, writes garbage,
ignores SIGTERM, or never starts. Nothing may hang: every wait here is bounded.

Servers: ``examples/everything.py`` and the raw scripted ``tests/servers/client_raw.py``
(which logs every line it receives, so the tests can see what the client sent).
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import pytest

from mcpkit import ConnectionClosed, RequestTimeout
from mcpkit.client import Client, HandshakeError, InvalidResult, ServerUnreachable, Stdio
from mcpkit.transports.process import ProcessStream

from .support.tap import TappedClient

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING_CMD = [sys.executable, str(ROOT / "examples" / "everything.py")]
RAW = str(ROOT / "tests" / "servers" / "client_raw.py")
LIMIT = 8

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def raw(mode: str, log: Path) -> list[str]:
    return [sys.executable, RAW, mode, str(log)]


def received(log: Path) -> list[dict[str, Any]]:
    """The JSON messages the raw server logged, in order."""
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def process_of(client: Client) -> ProcessStream:
    stream = client.stream
    inner = getattr(stream, "inner", stream)  # unwrap a TappedStream
    assert isinstance(inner, ProcessStream)
    return inner


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry))
    return found


# ---------------------------------------------------------------------- dying server


async def test_server_killed_mid_call_fails_the_call_promptly() -> None:
    client = Client(EVERYTHING_CMD, timeout=30)
    killed_at: list[float] = []

    def kill_on_first_progress(progress: float, total: float | None, msg: str | None) -> None:
        if not killed_at:  # the server is certainly inside the tool call now
            killed_at.append(anyio.current_time())
            os.killpg(process_of(client).pid, signal.SIGKILL)

    with anyio.fail_after(LIMIT):
        async with client:
            with pytest.raises(ConnectionClosed):
                await client.call_tool("sleep", {"seconds": 30},
                                       on_progress=kill_on_first_progress)
            assert killed_at, "the call ended before the server was killed"
            assert anyio.current_time() - killed_at[0] < 4  # not the 30 s of the call
            with pytest.raises(ConnectionClosed):
                await client.ping()
            with pytest.raises(ConnectionClosed):
                await client.call_tool("echo", {"text": "anyone?"})
        closed_at = anyio.current_time()
    assert closed_at - killed_at[0] < 5
    assert process_of(client).process.returncode == -signal.SIGKILL


async def test_server_exiting_mid_call_fails_all_pending_calls(tmp_path: Path) -> None:
    client = Client(raw("normal", tmp_path / "log"), timeout=30)
    errors: list[BaseException] = []

    async def pending_call() -> None:
        try:
            await client.call_tool("slow")
        except ConnectionClosed as exc:
            errors.append(exc)

    with anyio.fail_after(LIMIT):
        async with client:
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(pending_call)
                await client.ping()  # the three calls went out before this ping
                os.killpg(process_of(client).pid, signal.SIGKILL)
    assert len(errors) == 3


# ---------------------------------------------------------------------- silence, timeouts


async def test_timeout_cancels_and_the_session_stays_usable(tmp_path: Path) -> None:
    log = tmp_path / "log"
    client = TappedClient(raw("normal", log), timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            start = anyio.current_time()
            with pytest.raises(RequestTimeout):
                await client.call_tool("slow", timeout=0.5)
            assert 0.45 <= anyio.current_time() - start < 4
            await client.ping()  # answered: the cancel was processed before it
            res = await client.call_tool("fast")
            assert res.text == "FAST"
    msgs = received(log)
    (call,) = [m for m in msgs if m.get("method") == "tools/call"
               and m["params"]["name"] == "slow"]
    (cancel,) = [m for m in msgs if m.get("method") == "notifications/cancelled"]
    assert cancel["params"]["requestId"] == call["id"]
    assert cancel["params"].get("reason") == "timed out"
    assert msgs.index(cancel) < next(i for i, m in enumerate(msgs) if m.get("method") == "ping")
    client.wire.assert_clean()


async def test_caller_cancellation_cancels_on_the_server(tmp_path: Path) -> None:
    log = tmp_path / "log"
    client = TappedClient(raw("normal", log), timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            with anyio.move_on_after(0.3) as scope:
                await client.call_tool("slow", timeout=None)
            assert scope.cancelled_caught
            await client.ping()
    cancels = [m for m in received(log) if m.get("method") == "notifications/cancelled"]
    assert len(cancels) == 1
    client.wire.assert_clean()


async def test_late_response_to_a_cancelled_request_is_ignored(tmp_path: Path) -> None:
    log = tmp_path / "log"
    client = TappedClient(raw("late", log), timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            with pytest.raises(RequestTimeout):
                await client.call_tool("slow", timeout=0.3)
            # the server answers the cancelled call now (before reading anything else)
            res = await client.call_tool("fast")
            assert res.text == "FAST"
            await client.ping()
            late = [m for m in client.wire.received
                    if "LATE" in json.dumps(m.get("result", {}))]
            assert len(late) == 1, "the late answer should have reached the client"
    # the client neither answered the stray response nor complained about it
    assert not [m for m in client.wire.sent if "error" in m or "result" in m]
    client.wire.assert_clean()


async def test_server_never_answers_initialize() -> None:
    # reads (and ignores) everything until stdin closes, then exits
    client = Client([sys.executable, "-c", "import sys; sys.stdin.buffer.read()"],
                    timeout=0.5)
    with anyio.fail_after(LIMIT):
        with pytest.raises(HandshakeError, match="did not answer initialize"):
            async with client:
                pass
    assert process_of(client).process.returncode == 0


@pytest.fixture
def stderr_file(tmp_path: Path) -> Iterator[IO[str]]:
    with open(tmp_path / "stderr", "w+", errors="replace") as f:
        yield f


async def test_server_crashing_at_start(tmp_path: Path, stderr_file: IO[str]) -> None:
    client = Client(Stdio(raw("crash", tmp_path / "log"), stderr=stderr_file), timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        with pytest.raises(ServerUnreachable, match="exited with status 3 before answering"):
            async with client:
                pass
    assert process_of(client).process.returncode == 3
    assert "database is on fire" in (tmp_path / "stderr").read_text(errors="replace")


async def test_works_when_sys_stderr_is_not_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    # Jupyter, pytest --capture=sys, or a program that swapped in a StringIO: no fileno()
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with anyio.fail_after(LIMIT):
        async with Client(EVERYTHING_CMD, timeout=LIMIT) as client:
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"


async def test_malformed_result_raises_invalid_result(tmp_path: Path) -> None:
    with anyio.fail_after(LIMIT):
        async with Client(raw("normal", tmp_path / "log"), timeout=LIMIT) as client:
            with pytest.raises(InvalidResult, match=r"tools/call is malformed.*hologram"):
                await client.call_tool("bad")
            assert (await client.call_tool("fast")).text == "FAST"  # still usable


async def test_command_that_does_not_exist() -> None:
    with anyio.fail_after(LIMIT), pytest.raises(FileNotFoundError):
        async with Client(["/nonexistent/mcp-server-binary"]):
            pass


# ---------------------------------------------------------------------- garbage


async def test_garbage_on_stdout_is_answered_and_survived(tmp_path: Path) -> None:
    """Non-JSON lines from the server get JSON-RPC parse errors; the session goes on."""
    log = tmp_path / "log"
    client = TappedClient(raw("garbage", log), timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            tools = await client.list_tools()
            assert [tool.name for tool in tools] == ["fast", "slow", "bad"]
            assert (await client.call_tool("fast")).text == "FAST"
            await client.ping()
    wire = client.wire
    assert len(wire.unparsable_received) >= 9  # three junk lines before each answer
    errors = [m for m in wire.sent if "error" in m]
    assert errors and {e["error"]["code"] for e in errors} == {-32700}
    assert all(e.get("id") is None for e in errors)  # no id to answer: null or omitted
    # the parse errors the client sent went to the server, which saw them as responses
    assert [m for m in received(log) if "error" in m]
    wire.assert_clean()


# ---------------------------------------------------------------------- shutdown


async def test_close_ends_stdin_and_the_server_exits_by_itself() -> None:
    client = Client(EVERYTHING_CMD, timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            await client.ping()
            proc = process_of(client)
            proc.grace = 5  # ample even on a loaded machine: a SIGTERM would be a failure
            start = anyio.current_time()
        took = anyio.current_time() - start
    assert proc.process.returncode == 0  # exited on its own: no SIGTERM, no SIGKILL
    assert took < proc.grace


async def test_close_of_raw_server_closes_its_stdin(tmp_path: Path) -> None:
    log = tmp_path / "log"
    client = Client(raw("normal", log), timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            await client.ping()
    assert process_of(client).process.returncode == 0
    assert log.read_text().splitlines()[-1] == "stdin closed"


async def test_server_ignoring_sigterm_is_killed(tmp_path: Path) -> None:
    log = tmp_path / "log"
    client = Client(raw("noterm", log), timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            proc = process_of(client)
            proc.grace = 0.3
            await client.ping()
            lines = log.read_text().splitlines()
            child = int(next(line for line in lines if line.startswith("child "))
                        .split()[1])
            assert alive(child) and os.getpgid(child) == proc.pid
            child_fd = os.pidfd_open(child)  # readable once the child has exited
            start = anyio.current_time()
        took = anyio.current_time() - start
    try:
        assert proc.process.returncode == -signal.SIGKILL
        assert 0.5 <= took < 5  # two grace periods, then SIGKILL
        assert "stdin closed" in log.read_text()  # stdin was closed first
        with anyio.fail_after(3):  # the grandchild got SIGKILL too: wait for it to go
            await anyio.wait_readable(child_fd)
    finally:
        os.close(child_fd)
    assert not alive(child)
    assert group_members(proc.pid) == []  # nothing of the server's group survived


async def test_children_left_behind_do_not_outlive_the_client(tmp_path: Path) -> None:
    # the server exits by itself when stdin closes, leaving a child in its process group
    log = tmp_path / "log"
    client = Client(raw("orphan", log), timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            proc = process_of(client)
            await client.ping()
            child = int(next(line for line in log.read_text().splitlines()
                             if line.startswith("child ")).split()[1])
            assert alive(child) and os.getpgid(child) == proc.pid
            child_fd = os.pidfd_open(child)
    try:
        assert proc.process.returncode == 0  # the server itself exited cleanly
        with anyio.fail_after(3):
            await anyio.wait_readable(child_fd)
    finally:
        os.close(child_fd)
    assert group_members(proc.pid) == []
