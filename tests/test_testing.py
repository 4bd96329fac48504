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
import pytest

from mcpkit import InvalidResult, Server
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
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1
    (tmp_path / "test_calculator.py").write_text(blocks[0])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "no:randomly", "test_calculator.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "6 passed" in proc.stdout  # three tests, each in both eras
