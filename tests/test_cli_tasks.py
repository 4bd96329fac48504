"""``mcpkit call --task`` and ``mcpkit tasks`` end to end, as subprocesses.

The server is ``examples/everything.py``: on stdio (2025-11-25: the task lives as long as
the session, so one command sees it whole) and over Streamable HTTP on loopback (the
CLI speaks 2026-07-28 there for tasks, whose tasks outlive the command that created
them, so ``tasks get|cancel|result`` in later processes reach them). The live display's
terminal form (a progress bar redrawn in place) is checked on a terminal-like stream.
"""

from __future__ import annotations

import io
import json
import re

import anyio
import pytest

from mcpkit.cli.tasks import Live
from mcpkit.client import Client

from .support.http import LiveServer, everything_server
from .test_cli import EVERYTHING, error_lines, mcpkit


def test_call_task_shows_status_and_progress_lines() -> None:
    res = mcpkit("call", "--stdio", EVERYTHING, "slow_compute", "seconds=0.5", "--task")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "Computed result in 0.5s"
    lines = error_lines(res)
    task_id = lines[0].split()[1].rstrip(":")
    assert lines[0] == f"task {task_id}: created"
    assert f"task {task_id}: status working" in lines
    assert f"task {task_id}: progress 2/2" in lines
    assert lines[-1] == f"task {task_id}: status completed"
    assert "\r" not in res.stderr and "\x1b[" not in res.stderr  # not a terminal: plain


def test_call_task_json_and_ttl() -> None:
    res = mcpkit("call", "--stdio", EVERYTHING, "slow_compute", "seconds=0", "--task",
                 "--ttl", "5000", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["content"][0]["text"] == "Computed result in 0s"


def test_call_task_of_a_failing_tool_exits_1() -> None:
    res = mcpkit("call", "--stdio", EVERYTHING, "failing_job", "--task")
    assert res.returncode == 1
    assert "input data was rejected" in res.stderr


def test_call_task_of_a_forbidden_tool_is_a_usage_error_in_the_commands_words() -> None:
    """Issue #26 item 10: exit 2 (what cli.md documents for a wrong call), and the
    command's option named, not the Python API's ``task=``."""
    res = mcpkit("call", "--stdio", EVERYTHING, "greet", "name=Ada", "--task")
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert line == ("mcpkit: error: tool 'greet' cannot run as a task (its "
                    "execution.taskSupport is 'forbidden' or absent); call it without --task")


def test_tasks_needs_a_task_id() -> None:
    res = mcpkit("tasks", "get", "--stdio", EVERYTHING)
    assert res.returncode == 2
    assert "give one task id" in res.stderr


def test_tasks_list_on_a_stateful_server_is_empty_for_a_new_session() -> None:
    res = mcpkit("tasks", "list", "--stdio", EVERYTHING)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "(none)"


def test_tasks_get_cancel_result_over_http() -> None:
    with LiveServer(everything_server().asgi_app()) as live:
        async def start() -> str:
            async with Client(live.url, mode="stateless") as client:
                handle = await client.call_tool("slow_compute", {"seconds": 30}, task=True)
                assert handle.task_id is not None
                return handle.task_id

        task_id = anyio.run(start)
        got = mcpkit("tasks", "get", live.url, task_id)
        assert got.returncode == 0, got.stderr
        assert got.stdout.split()[:3] == [task_id, "working:", "progress"]  # (its progress)
        cancel = mcpkit("tasks", "cancel", live.url, task_id)
        assert cancel.returncode == 0, cancel.stderr
        assert cancel.stdout.strip() == f"cancellation of task {task_id} requested"
        other = anyio.run(start)
        as_json = mcpkit("tasks", "cancel", live.url, other, "--json")
        assert json.loads(as_json.stdout) == {"taskId": other, "cancelRequested": True}
        again = mcpkit("tasks", "get", live.url, task_id, "--json")
        assert json.loads(again.stdout)["status"] == "cancelled"
        result = mcpkit("tasks", "result", live.url, task_id)
        assert result.returncode == 1 and "was cancelled" in result.stderr
        unknown = mcpkit("tasks", "get", live.url, "no-such-task")
        assert unknown.returncode == 1 and "-32602" in unknown.stderr
        listing = mcpkit("tasks", "list", live.url)  # issue #26 item 10: what to do instead
        assert listing.returncode == 2
        (line,) = error_lines(listing)
        assert line == ("mcpkit: error: this server's tasks (the 2026-07-28 tasks extension) "
                        "cannot be listed: the extension has no tasks/list. A task is reached "
                        "by its id, which mcpkit call --task prints ('task ID: created'): "
                        f"mcpkit tasks get|result|cancel {live.url} TASK_ID")


def test_call_task_over_http_shows_the_progress_of_an_extension_task() -> None:
    """Issue #26 item 7: over HTTP ``--task`` speaks the 2026-07-28 extension, which has
    no progress notifications for tasks; the server carries progress in the task's
    ``statusMessage``, and the command shows each one it polls."""
    with LiveServer(everything_server().asgi_app()) as live:
        res = mcpkit("call", "--task", live.url, "slow_compute", "seconds:=2", timeout=30)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "Computed result in 2s"
    lines = error_lines(res)
    task_id = lines[0].split()[1].rstrip(":")
    assert lines[0] == f"task {task_id}: created"
    shown = [line.rsplit(": ", 1)[1] for line in lines
             if line.startswith(f"task {task_id}: status working: ")]
    assert shown and all(re.fullmatch(r"progress [1-8]/8 \(\d+%\)", s) for s in shown), lines
    assert lines[-1] == f"task {task_id}: status completed"


def test_live_shows_a_status_message_on_a_terminal() -> None:
    out = Terminal()
    live = Live(out, "t1")
    live.changed("working", "progress 1/4 (25%)")
    live.end()
    assert out.getvalue() == "\r\x1b[2Ktask working        progress 1/4 (25%)\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_live_draws_a_bar_on_a_terminal() -> None:
    out = Terminal()
    live = Live(out, "t1")
    live.changed("working", None)
    live.progress(1, 4, "step one")
    live.progress(4, 4, None)
    live.changed("completed", None)
    live.end()
    text = out.getvalue()
    assert text.count("\r\x1b[2K") == 4 and text.endswith("\n")
    assert "[######------------------]  25% step one" in text
    assert "[########################] 100%" in text
    assert text.rstrip().endswith("task completed      [########################] 100%")


@pytest.mark.parametrize("total, shown", [(None, "task t1: progress 3"),
                                          (0, "task t1: progress 3")])
def test_live_without_a_total(total: float | None, shown: str) -> None:
    out = io.StringIO()
    Live(out, "t1").progress(3, total, None)
    assert out.getvalue() == shown + "\n"


def test_live_of_a_plain_call_shows_the_tool_and_no_server_escapes() -> None:
    out = Terminal()
    live = Live(out, name="slow")
    live.progress(1, 2, "half\x1b[2J way\u202e")
    live.end()
    live.end()  # ending twice adds nothing
    assert out.getvalue() == (
        "\r\x1b[2Kslow [############------------]  50% half\\x1b[2J way\\u202e\n")
    plain = io.StringIO()
    Live(plain, name="slow").progress(1, 2, "half\nway")
    assert plain.getvalue() == "slow: progress 1/2 half way\n"


def test_task_ids_never_look_like_options() -> None:
    """A task id starting with '-' was taken by argparse for an option (seen in CI:
    ``mcpkit tasks get URL -_wL...`` failed); ids never start with one."""
    from mcpkit.protocol.tasks import new_task_id

    ids = [new_task_id(3) for _ in range(2000)]  # 4 characters: '-' first 1 in 64 draws
    assert not [i for i in ids if i.startswith("-")]
    assert len(set(ids)) > 1900 and all(len(i) == 4 for i in ids)
