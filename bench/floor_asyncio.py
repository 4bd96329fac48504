"""Floor peer: bare asyncio answering initialize and tools/call over stdio (bench/run.sh
with FLOORS=1): what an asyncio server pays to start and per message, without anyio.

The tightest loop asyncio allows: stdin is read inside the loop's readiness callback
(``add_reader``), every complete line is answered, and the answers go out in one
``os.write`` — no stream objects, no tasks. mcpkit's stdio pump takes the same path, so
its cost above this peer is its own.
"""

import asyncio
import os

from floor_common import answer


async def main() -> None:
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    pending = b""

    def on_readable() -> None:
        nonlocal pending
        data = os.read(0, 1 << 16)
        if not data:
            loop.remove_reader(0)
            ended.set_result(None)
            return
        *lines, pending = (pending + data).split(b"\n")
        out = [a for a in map(answer, filter(bytes.strip, lines)) if a is not None]
        if out:
            os.write(1, b"".join(out))  # stdout stays blocking: the write is whole

    os.set_blocking(0, False)
    loop.add_reader(0, on_readable)
    await ended


asyncio.run(main())
