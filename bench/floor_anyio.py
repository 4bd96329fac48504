"""Floor peer: the anyio + asyncio stack answering initialize and tools/call over stdio,
nothing else (bench/run.sh with FLOORS=1). What any anyio-based server pays to start."""

import sys

import anyio
from floor_common import answer


async def main() -> None:
    async for line in anyio.wrap_file(sys.stdin.buffer):
        out = answer(line)
        if out is not None:
            sys.stdout.buffer.write(out)
            sys.stdout.buffer.flush()


anyio.run(main)
