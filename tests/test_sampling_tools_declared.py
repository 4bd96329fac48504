"""A server's ``ctx.sample(..., tools=...)`` reaches a client that declared
``sampling.tools`` (as ``{"tools": {}}``), in both eras; without it the call is refused
(an error result on a session, -32021 on a 2026-07-28 request)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import Context, Server
from mcpkit.protocol.errors import MISSING_CLIENT_CAPABILITY, RemoteError
from mcpkit.testing import ERAS, connect

pytestmark = pytest.mark.anyio

TOOL = {"name": "lookup", "inputSchema": {"type": "object"}}


def _server() -> Server:
    server = Server("tools-in-sampling")

    @server.tool
    async def ask(ctx: Context) -> str:
        """Sample with a tool offered to the model."""
        reply = await ctx.sample("Look it up", max_tokens=20, tools=[TOOL],
                                 tool_choice={"mode": "auto"})
        return str(reply["content"]["text"])

    return server


def _sampling(params: dict[str, Any]) -> dict[str, Any]:
    assert params["tools"] == [TOOL] and params["toolChoice"] == {"mode": "auto"}
    return {"role": "assistant", "model": "m", "stopReason": "endTurn",
            "content": {"type": "text", "text": "found"}}


@pytest.mark.parametrize("mode", ERAS)
async def test_tools_in_sampling_reach_a_client_that_declared_them(mode: Any) -> None:
    async with connect(_server(), mode=mode, sampling=_sampling,
                       sampling_tools=True) as client:
        assert (await client.call_tool("ask", {})).text == "found"


@pytest.mark.parametrize("mode", ERAS)
async def test_tools_in_sampling_refused_without_the_capability(mode: Any) -> None:
    async with connect(_server(), mode=mode, sampling=_sampling) as client:
        if mode == "stateless":  # 2026-07-28: -32021 names the missing capability
            with pytest.raises(RemoteError, match=r"sampling\.tools") as refused:
                await client.call_tool("ask", {})
            assert refused.value.code == MISSING_CLIENT_CAPABILITY
            return
        result = await client.call_tool("ask", {})
    assert result.is_error and "sampling.tools" in result.text
