"""Testing helpers: a ``Client`` connected to your ``Server`` in memory, wire checked.

    from mcpkit.testing import connect

    async def test_add():
        async with connect(server) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"

:func:`connect` serves ``server`` in this process over a memory pipe (no subprocess, no
port) and yields a connected :class:`mcpkit.client.Client`: a stateful session (the
``initialize`` handshake, newest revision unless ``protocol_version`` says otherwise) or,
with ``mode="stateless"``, the 2026-07-28 era where every request carries its own
version. Every message either side sends is recorded (``client.wire``) and, when the
block ends, validated against the official JSON schema of the negotiated revision (the
schemas ship with mcpkit): a server that sends what the specification does not allow
fails the test with :class:`WireViolation`, naming each message and what is wrong. The
other options (``elicitation=``, ``sampling=``, ``roots=`` handlers, ``timeout=``…) are
the ``Client``'s own.

``ERAS`` (``("stateful", "stateless")``) is there to parametrize a test over both.
See docs/testing.md for a pytest fixture.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import anyio.abc
import orjson

from .check.schemas import REVISIONS, known_method, validate_definition, validate_message
from .client import Client, Servable
from .client.connect import Target

if TYPE_CHECKING:
    from .server import Server
    from .session import ByteStream

__all__ = ["ERAS", "Wire", "WireViolation", "connect"]

ERAS: tuple[Literal["stateful"], Literal["stateless"]] = ("stateful", "stateless")

Direction = Literal["client", "server"]


class WireViolation(AssertionError):
    """Messages on the wire that the negotiated revision's schema does not allow."""


class Wire:
    """Every message of one connection, in order, with who sent it."""

    def __init__(self) -> None:
        #: (sender, message) in the order they were written.
        self.messages: list[tuple[Direction, Any]] = []
        self._partial: dict[Direction, bytes] = {"client": b"", "server": b""}

    def feed(self, sender: Direction, data: bytes) -> None:
        """Bytes ``sender`` wrote: complete lines become messages."""
        *lines, self._partial[sender] = (self._partial[sender] + data).split(b"\n")
        for line in lines:
            if line.strip():
                try:
                    self.messages.append((sender, orjson.loads(line)))
                except orjson.JSONDecodeError:
                    self.messages.append((sender, line))  # reported by ``violations``

    def sent(self, sender: Direction, method: str | None = None) -> list[Any]:
        """The messages ``sender`` sent (only the requests/notifications of ``method``)."""
        return [m for who, m in self.messages if who == sender and (
            method is None or (isinstance(m, dict) and m.get("method") == method))]

    def violations(self, revision: str) -> list[str]:
        """What fails the schema of ``revision``, one line per problem."""
        if revision not in REVISIONS:
            return [f"unknown revision {revision!r}"]
        out: list[str] = []
        asked: dict[tuple[Direction, Any], str] = {}  # (requester, id) -> method
        for sender, msg in self.messages:
            peer: Direction = "server" if sender == "client" else "client"
            if isinstance(msg, bytes):
                out.append(f"{sender} sent a line that is not JSON: {msg[:200]!r}")
                continue
            for one in msg if isinstance(msg, list) else [msg]:
                out.extend(f"{sender}: {p}" for p in self._judge(revision, sender, peer,
                                                                 one, asked))
        return out

    @staticmethod
    def _judge(revision: str, sender: Direction, peer: Direction, msg: Any,
               asked: dict[tuple[Direction, Any], str]) -> list[str]:
        if not isinstance(msg, dict):
            return [f"a message that is not a JSON object: {msg!r:.200}"]
        method = msg.get("method")
        if isinstance(method, str):
            request = "id" in msg
            if request:
                params = msg.get("params")
                augmented = isinstance(params, dict) and isinstance(params.get("task"), dict)
                # A 2025-11-25 task-augmented request may be answered with a task instead.
                asked[(sender, msg["id"])] = f"{method}+task" if augmented else method
            if not known_method(revision, method, request=request):
                kind = "request" if request else "notification"
                return [f"{kind} {method!r} does not exist in revision {revision}"]
            answered = None
        else:
            answered = asked.pop((peer, msg.get("id")), None)
            if answered is not None and answered.endswith("+task"):
                answered = answered[:-5]
                result = msg.get("result")
                if isinstance(result, dict) and isinstance(result.get("task"), dict):
                    problems = validate_message(revision, msg, None) + validate_definition(
                        revision, "CreateTaskResult", result)
                    return [f"{p} (in {orjson.dumps(msg).decode()[:300]})" for p in problems]
        problems = validate_message(revision, msg, answered)
        return [f"{p} (in {orjson.dumps(msg).decode()[:300]})" for p in problems]


class _RecordedStream:
    """A ``ByteStream`` that shows the ``Wire`` what passes through it."""

    def __init__(self, inner: ByteStream, wire: Wire) -> None:
        self.inner, self.wire = inner, wire

    async def receive(self) -> bytes:
        data = await self.inner.receive()
        self.wire.feed("server", data)
        return data

    async def send(self, data: bytes) -> None:
        self.wire.feed("client", data)
        await self.inner.send(data)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _WiredClient(Client):
    """A ``Client`` whose byte stream is recorded in ``wire``."""

    def __init__(self, target: Target, **options: Any) -> None:
        super().__init__(target, **options)
        self.wire = Wire()

    async def _open_stream(self, stack: AsyncExitStack, tg: anyio.abc.TaskGroup) -> ByteStream:
        return _RecordedStream(await super()._open_stream(stack, tg), self.wire)


@asynccontextmanager
async def connect(server: Server, *, mode: Literal["stateful", "stateless"] = "stateful",
                  protocol_version: str | None = None, check_wire: bool = True,
                  **options: Any) -> AsyncIterator[Client]:
    """A ``Client`` connected to ``server`` in memory (see the module docstring); on
    leaving, ``WireViolation`` if a message broke the schema (``check_wire=False`` to
    skip, e.g. for a test that sends bad input on purpose). ``client.wire`` (a
    :class:`Wire`) holds the messages for a test to inspect."""
    if not isinstance(server, Servable):
        raise TypeError("connect() takes an mcpkit Server; for a command or a URL use "
                        "mcpkit.client.Client directly")
    client = _WiredClient(server, mode=mode, protocol_version=protocol_version, **options)
    async with client:
        yield client
        revision = client.protocol_version
    if check_wire:
        problems = client.wire.violations(revision)
        if problems:
            raise WireViolation(f"{len(problems)} message(s) break the {revision} schema:\n"
                                + "\n".join(problems[:20]))
