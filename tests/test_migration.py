"""The migration guide's converted server answers like the original (docs/migration.md).

``examples/migration/sdk_todo.py`` is written with the official SDK (mcp 2.3.0, in the dev
extras), ``examples/migration/mcpkit_todo.py`` is its mcpkit conversion. Both run over stdio
as real processes and get the same calls from mcpkit's client; the answers must agree:
the tools and their input schemas, structured results, the model-facing error, the
resource, the prompt, and a refused read (whose code differs by design, as the guide says).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit import RemoteError
from mcpkit.client import Client

ROOT = Path(__file__).resolve().parents[1]
SERVERS = {name: ROOT / "examples" / "migration" / f"{name}.py"
           for name in ("sdk_todo", "mcpkit_todo")}


async def _session(path: Path) -> dict[str, Any]:
    """What one server answers to the guide's calls, in comparable form."""
    seen: dict[str, Any] = {}
    async with Client([sys.executable, str(path)], timeout=20) as client:
        tools = await client.list_tools()
        seen["tools"] = {t.name: (t.description, sorted(t.input_schema["properties"]),
                                  t.input_schema.get("required", []),
                                  t.annotations and t.annotations.read_only_hint)
                         for t in tools}
        seen["added"] = [(await client.call_tool("todo_add", {"text": text})).structured_content
                         for text in ("buy milk", " call Ada ")]
        listed = await client.call_tool("todo_list")
        seen["listed"] = listed.structured_content
        empty = await client.call_tool("todo_add", {"text": "  "})
        seen["empty"] = (empty.is_error, empty.structured_content,
                         empty.text.endswith("text is empty; say what the task is."))
        missing = await client.call_tool("todo_add", {})
        seen["missing_is_error"] = missing.is_error
        read = await client.read_resource("todo://2")
        seen["read"] = [(c.uri, c.text) for c in read.contents]  # type: ignore[union-attr]
        with pytest.raises(RemoteError) as refused:
            await client.read_resource("todo://9")
        seen["refused"] = refused.value.code
        prompt = await client.get_prompt("plan_day", {"focus": "work"})
        seen["prompt"] = [(m.role, m.content.text) for m in prompt.messages]  # type: ignore[union-attr]
    return seen


def test_the_converted_server_answers_like_the_original() -> None:
    sdk = anyio.run(_session, SERVERS["sdk_todo"])
    ours = anyio.run(_session, SERVERS["mcpkit_todo"])
    # a refused read: the SDK 2.x sends -32602 (the 2026-07-28 rule), mcpkit -32002 with
    # data.uri on the stateful revisions, as those revisions specify
    assert (sdk.pop("refused"), ours.pop("refused")) == (-32602, -32002)
    assert ours == sdk
    assert ours["added"] == [{"id": 1, "text": "buy milk"}, {"id": 2, "text": "call Ada"}]
    assert ours["listed"] == {"result": ours["added"]}
    assert ours["empty"] == (True, None, True) and ours["missing_is_error"] is True
    assert ours["read"] == [("todo://2", "call Ada")]


def test_the_guides_commands_install_the_sdk_they_run() -> None:
    """Issue #26 item 12: the guide's command line runs ``sdk_todo.py``, which imports the
    official SDK that mcpkit does not depend on; the block installs the version the
    example is written for (the one the dev extras pin) before running it."""
    import re
    import tomllib

    from tests.test_docs_examples import blocks

    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["dev"]
    (pin,) = [p for p in pins if re.fullmatch(r"mcp==[\d.]+", p)]
    runs = [b.body for b in blocks(ROOT / "docs" / "migration.md") if b.mark == "run"]
    (block,) = [b for b in runs if "sdk_todo.py" in b]
    lines = block.splitlines()
    first = next(i for i, line in enumerate(lines) if "sdk_todo.py" in line)
    assert f'pip install "{pin}"' in lines[:first], block


def test_the_fastmcp_port_passes_its_tests_written_as_fastmcps() -> None:
    """``examples/migration/bookmarks.py`` (a FastMCP 4.x server ported: tags, a custom
    route, typed elicitation, ``.data`` read by attribute) and its tests as FastMCP
    projects write them (pytest-asyncio fixtures), run by pytest as a user would."""
    import subprocess

    folder = ROOT / "examples" / "migration"
    res = subprocess.run([sys.executable, "-m", "pytest", "-c", str(folder / "pytest.ini"),
                          "-q", "-p", "no:cacheprovider", str(folder)],
                         capture_output=True, text=True, timeout=120, cwd=folder)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "6 passed" in res.stdout
