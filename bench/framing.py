"""Framing cost by chunk size: one 4 MiB line (JSON lines) and one 4 MiB SSE data line,
fed in 4 KiB, 64 KiB and 256 KiB chunks. Linear framing costs about the same for every
chunk size; a parser that rebuilds its buffer per chunk grows with the number of chunks.

    .venv/bin/python bench/framing.py
"""

from __future__ import annotations

import time

from mcpkit.protocol.framing import LineBuffer
from mcpkit.protocol.sse import SSEParser

SIZE = 4 * 1024 * 1024


def _feed(feed: object, data: bytes, chunk: int) -> float:
    began = time.perf_counter()
    for i in range(0, len(data), chunk):
        feed(data[i:i + chunk])  # type: ignore[operator]
    return (time.perf_counter() - began) * 1e3


def main() -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * SIZE + b'"}}\n'
    event = b"data: " + b"a" * SIZE + b"\n\n"
    for chunk in (4096, 65536, 262144):
        lines = _feed(LineBuffer(SIZE * 2).feed, line, chunk)
        sse = _feed(SSEParser(SIZE * 2).feed, event, chunk)
        print(f"{chunk // 1024:>4} KiB chunks: JSON lines {lines:7.1f} ms   SSE {sse:7.1f} ms")


if __name__ == "__main__":
    main()
