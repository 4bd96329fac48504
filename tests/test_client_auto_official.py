"""mcpkit's Client in auto mode against official-SDK (mcp 2.3.0) servers of each era: a
dual-era server is spoken to statelessly (2026-07-28); a handshake-only one through
``initialize``. Either way the same calls work."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from mcpkit.client import Client, Stdio

SERVER = Path(__file__).resolve().parent / "servers" / "official_everything.py"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize(("legacy_only", "expected"), [(False, "2026-07-28"),
                                                        (True, "2025-11-25")])
async def test_auto_mode_against_official_servers(legacy_only: bool, expected: str) -> None:
    env = {"OFFICIAL_LEGACY_ONLY": "1"} if legacy_only else {}

    async def elicit(params: dict[str, object]) -> dict[str, object]:
        return {"action": "accept", "content": {}}

    with anyio.fail_after(60):
        async with Client(Stdio([sys.executable, str(SERVER)], env=env),
                          mode="auto", elicitation=elicit) as client:
            assert client.protocol_version == expected
            assert (client.stateless_version is not None) == (not legacy_only)
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.structured_content is not None
            assert "echo" in {t.name for t in await client.list_tools()}
