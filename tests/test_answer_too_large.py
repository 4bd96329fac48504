"""An answer larger than the client takes (``max_message_size``, 4 MiB by default) fails
its request at once, saying why, instead of leaving it to wait for its timeout: the
framing keeps an oversized line's first bytes (``TooLarge.head``) and the connection
reads the ``id`` there. Real servers: in memory and a subprocess over stdio."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from mcpkit import Server
from mcpkit.client import Client
from mcpkit.protocol.errors import RemoteError
from mcpkit.protocol.framing import HEAD_BYTES, TOO_LARGE, LineBuffer, TooLarge

pytestmark = pytest.mark.anyio
LIMIT = 30
BIG = '''
from mcpkit import Server
server = Server("big")

@server.tool
def big(megabytes: int) -> str:
    return "x" * (megabytes * 1024 * 1024)

server.run()
'''


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_an_oversized_line_keeps_its_start() -> None:
    buf = LineBuffer(max_size=300)
    line = b'{"jsonrpc":"2.0","id":7,"result":"' + b"y" * 1000 + b'"}'
    for chunks in ([line + b"\n"], [line[:100], line[100:500], line[500:] + b"\n{}\n"]):
        out = buf.feed(b"".join(chunks)) if len(chunks) == 1 else [
            x for c in chunks for x in buf.feed(c)]
        first = out[0]
        assert isinstance(first, TooLarge) and first == TOO_LARGE
        assert first.head == line[:HEAD_BYTES]
    tail = LineBuffer(max_size=10)
    (only,) = tail.feed(b"a" * 20 + b"\n")
    assert isinstance(only, TooLarge) and only.head == b"a" * 20


async def test_an_answer_too_large_fails_its_request_at_once(tmp_path: Path) -> None:
    script = tmp_path / "big.py"
    script.write_text(BIG)
    server = Server("big")
    server.add_tool(lambda megabytes: "x" * (megabytes * 1024 * 1024), name="big")
    for target in (server, [sys.executable, str(script)]):
        async with Client(target, timeout=LIMIT) as client:
            started = time.monotonic()
            with pytest.raises(RemoteError) as caught:
                await client.call_tool("big", {"megabytes": 5})
            assert time.monotonic() - started < LIMIT / 2  # not the request's timeout
            assert caught.value.code == -32603
            assert "larger than this connection takes (4194304 bytes" in caught.value.message
            assert caught.value.data == {"limit": 4194304, "local": True}
            small = await client.call_tool("big", {"megabytes": 1})  # the session goes on
            assert len(small.text) == 1024 * 1024
