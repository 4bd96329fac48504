"""What a handler can see and touch of the server, in process (``Client(server)``).

``Context.stateless`` is the 2026-07-28 request's own metadata (``modern`` is its deprecated
read-only alias).
"""

from __future__ import annotations

import anyio
import pytest

from mcpkit import Context, Server
from mcpkit.client import Client
from mcpkit.protocol.stateless import RequestMeta

LIMIT = 10  # seconds any test may take

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_context_stateless_and_its_deprecated_alias() -> None:
    server = Server("alias")
    seen: list[Context] = []

    @server.tool
    async def which(ctx: Context) -> str:
        seen.append(ctx)
        return "seen"

    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            assert (await client.call_tool("which")).text == "seen"
        async with Client(server, mode="stateless") as client:
            assert (await client.call_tool("which")).text == "seen"
    stateful, stateless = seen
    assert stateful.stateless is None and stateful.modern is None
    assert isinstance(stateless.stateless, RequestMeta)
    assert stateless.stateless.revision.version == "2026-07-28"
    assert stateless.modern is stateless.stateless
    with pytest.raises(AttributeError):
        stateless.modern = None  # type: ignore[misc]
