"""Watch what a ``Client`` puts on the wire and validate it against the official schema.

``TappedStream`` wraps any ``ByteStream`` (memory pipe or subprocess pipes). Every chunk
the client *sends* is split into lines and each message goes through
``WireChecker.check`` (side ``"client"``); every line it *receives* goes to
``WireChecker.saw_peer`` so the checker learns the negotiated revision and which request
each answer belongs to. A schema violation never breaks the session under test: it is
recorded in ``violations`` for the test to assert on.

``TappedClient`` is a ``Client`` whose stream is tapped:

    async with TappedClient(server, protocol_version="2025-06-18") as client:
        ...
    client.tap.assert_clean()
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any

import anyio

from mcpkit.client import Client
from mcpkit.session import ByteStream

from .schemas import WireChecker


class TappedStream:
    """A ``ByteStream`` that validates what is sent and learns from what is received."""

    def __init__(self, inner: ByteStream, checker: WireChecker) -> None:
        self.inner = inner
        self.checker = checker
        self.sent: list[Any] = []  # every message the client sent, in order
        self.received: list[Any] = []  # every message the peer sent, in order
        self.unparsable_received: list[bytes] = []  # peer lines that were not JSON
        self.violations: list[str] = []  # what failed validation (message + reason)
        self._in = b""
        self._out = b""
        self._changed = anyio.Event()

    # ------------------------------------------------------------------ ByteStream

    async def receive(self) -> bytes:
        data = await self.inner.receive()
        self._in += data
        *lines, self._in = self._in.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.unparsable_received.append(line)
                continue
            self.received.append(msg)
            self.checker.saw_peer(msg)
        self._notify()
        return data

    async def send(self, data: bytes) -> None:
        self._out += data
        *lines, self._out = self._out.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except ValueError as exc:
                self.violations.append(f"client sent a line that is not JSON ({exc}): {line!r}")
                continue
            self.sent.append(msg)
            try:
                self.checker.check(msg)
            except Exception as exc:  # SchemaViolation, or a method unknown to the revision
                self.violations.append(f"{type(exc).__name__}: {exc}")
        self._notify()
        await self.inner.send(data)

    async def aclose(self) -> None:
        if self._out:
            self.violations.append(f"client left an unterminated line: {self._out!r}")
            self._out = b""
        await self.inner.aclose()

    # ------------------------------------------------------------------ for tests

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def sent_methods(self) -> list[str]:
        return [m.get("method") for m in self.sent if isinstance(m, dict) and "method" in m]

    def sent_with(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.sent if isinstance(m, dict) and m.get("method") == method]

    async def wait_sent(self, method: str, count: int = 1) -> list[dict[str, Any]]:
        """Wait until the client sent ``method`` at least ``count`` times (bound it!)."""
        while len(found := self.sent_with(method)) < count:
            await self._changed.wait()
        return found

    def assert_clean(self, allow: tuple[str, ...] = ()) -> None:
        """Something was checked, and every message the client sent was valid.

        ``allow``: substrings of violations a test knowingly tolerates (each must say why).
        """
        assert self.checker.checked > 0, "the tap validated nothing"
        left = [v for v in self.violations if not any(a in v for a in allow)]
        assert not left, "\n".join(left)
        valid = len(self.sent) - (len(self.violations) - len(left))
        assert self.checker.checked == valid, (self.checker.checked, valid)


class TappedClient(Client):
    """A ``Client`` whose byte stream goes through a ``TappedStream`` (``self.tap``)."""

    def __init__(self, target: Any, **options: Any) -> None:
        super().__init__(target, **options)
        self.checker = WireChecker("client", revision=options.get("protocol_version"))
        self.tap: TappedStream | None = None

    async def _open_stream(self, stack: AsyncExitStack, tg: anyio.abc.TaskGroup) -> ByteStream:
        inner = await super()._open_stream(stack, tg)
        self.tap = TappedStream(inner, self.checker)
        return self.tap

    @property
    def wire(self) -> TappedStream:
        assert self.tap is not None, "not connected yet"
        return self.tap
