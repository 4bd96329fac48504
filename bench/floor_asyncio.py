"""Floor peer: bare asyncio answering initialize and tools/call over stdio (bench/run.sh
with FLOORS=1): what an asyncio server pays to start, without anyio."""

import asyncio
import sys

from floor_common import answer


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        out = answer(line)
        if out is not None:
            sys.stdout.buffer.write(out)
            sys.stdout.buffer.flush()


asyncio.run(main())
