"""An in-memory byte stream pair: a client and a server in one process, no pipes.

Used by tests and by ``Client(server)``. Each direction is an anyio memory object stream
of byte chunks; closing one end makes the other's ``receive`` raise ``EndOfStream``.
"""

from __future__ import annotations

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream


class MemoryStream:
    """One end of an in-memory byte pipe pair."""

    def __init__(
        self, send: MemoryObjectSendStream[bytes], receive: MemoryObjectReceiveStream[bytes]
    ) -> None:
        self._send = send
        self._receive = receive

    async def receive(self) -> bytes:
        return await self._receive.receive()

    async def send(self, data: bytes) -> None:
        await self._send.send(data)

    async def aclose(self) -> None:
        await self._send.aclose()
        await self._receive.aclose()


def memory_pair(buffer: int = 1024) -> tuple[MemoryStream, MemoryStream]:
    """Two connected ends: bytes sent on one are received on the other."""
    a_send, b_receive = anyio.create_memory_object_stream[bytes](buffer)
    b_send, a_receive = anyio.create_memory_object_stream[bytes](buffer)
    return MemoryStream(a_send, a_receive), MemoryStream(b_send, b_receive)
