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
messages of an extension both sides negotiated (``capabilities.extensions``; the
2026-07-28 tasks extension's ``tasks/get``, ``resultType: "task"``...) are validated
against that extension's shapes (:mod:`mcpkit.check.extensions`); an extension not
negotiated is refused like any message the revision lacks. The
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

from .check import extensions
from .check.schemas import REVISIONS, known_method, validate_definition, validate_message
from .client import Client, Servable
from .client.connect import Target
from .protocol.stateless import CLIENT_CAPABILITIES

if TYPE_CHECKING:
    from .server import Server
    from .session import ByteStream

__all__ = ["ERAS", "Wire", "WireViolation", "connect"]

ERAS: tuple[Literal["stateful"], Literal["stateless"]] = ("stateful", "stateless")

Direction = Literal["client", "server"]
JSON = dict[str, Any]


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
        """What fails the schema of ``revision``, one line per problem. The messages of an
        extension both sides negotiated (2026-07-28 tasks: ``tasks/get``...) are judged
        against the extension's shapes (``mcpkit.check.extensions``); others are refused."""
        if revision not in REVISIONS:
            return [f"unknown revision {revision!r}"]
        judge = _Judge(revision)
        out: list[str] = []
        for sender, msg in self.messages:
            if isinstance(msg, bytes):
                out.append(f"{sender} sent a line that is not JSON: {msg[:200]!r}")
                continue
            for one in msg if isinstance(msg, list) else [msg]:
                out.extend(f"{sender}: {p}" for p in judge.judge(sender, one))
        return out


class _Asked:
    """A request seen on the wire, for judging its answer."""

    __slots__ = ("extensions", "method", "task")

    def __init__(self, method: str, task: bool, extensions: frozenset[str]) -> None:
        self.method = method
        self.task = task  # a 2025-11-25 task-augmented request: a task may answer it
        self.extensions = extensions  # the extensions negotiated for it


class _Judge:
    """One pass over a connection's messages in order, knowing what each side declared:
    the server in its ``initialize`` / ``server/discover`` result, the client in
    ``initialize`` or (2026-07-28) in each request's ``_meta``."""

    def __init__(self, revision: str) -> None:
        self.revision = revision
        self.applicable = {e.identifier: e for e in extensions.for_revision(revision)}
        self.asked: dict[tuple[Direction, Any], _Asked] = {}
        self.server_declared: frozenset[str] = frozenset()
        self.client_session: frozenset[str] = frozenset()  # declared in ``initialize``
        self.client_any: frozenset[str] = frozenset()  # declared in any request so far

    def judge(self, sender: Direction, msg: Any) -> list[str]:
        if not isinstance(msg, dict):
            return [f"a message that is not a JSON object: {msg!r:.200}"]
        method = msg.get("method")
        if isinstance(method, str):
            problems = self._message(sender, method, msg)
        else:
            problems = self._answer("server" if sender == "client" else "client", msg)
        return [f"{p} (in {orjson.dumps(msg).decode()[:300]})" for p in problems]

    def _client_declares(self, params: Any) -> frozenset[str]:
        """The extensions a client request declares (2026-07-28 ``_meta``; else the
        session's)."""
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and CLIENT_CAPABILITIES in meta:
            return extensions.declared(meta[CLIENT_CAPABILITIES])
        return self.client_session

    def _message(self, sender: Direction, method: str, msg: JSON) -> list[str]:
        request = "id" in msg
        params = msg.get("params")
        negotiated: frozenset[str] = frozenset()
        if sender == "client":
            if method == "initialize" and isinstance(params, dict):
                self.client_session = extensions.declared(params.get("capabilities"))
            client = self._client_declares(params)
            self.client_any |= client
            negotiated = client & self.server_declared
        else:
            negotiated = self.client_any & self.server_declared
        if request:
            task = isinstance(params, dict) and isinstance(params.get("task"), dict)
            self.asked[(sender, msg["id"])] = _Asked(method, task, negotiated)
        if known_method(self.revision, method, request=request):
            problems = validate_message(self.revision, msg)
            for one in self._negotiated(negotiated):
                if method in one.augments:
                    problems += extensions.errors(self.revision, one, one.augments[method], msg)
            return problems
        kind = "request" if request else "notification"
        ext = extensions.owner(self.revision, method, request=request)
        if ext is None:
            return [f"{kind} {method!r} does not exist in revision {self.revision}"]
        if (sender == "client") != request:  # its requests go client -> server
            return [f"{kind} {method!r} of the extension {ext.identifier} is never sent by "
                    f"the {sender}"]
        if ext.identifier not in negotiated:
            return [f"{kind} {method!r} belongs to the extension {ext.identifier}, which "
                    + self._missing(ext.identifier, "this request" if sender == "client"
                                    else "the client")]
        definition = ext.requests[method][0] if request else ext.notifications[method]
        return extensions.errors(self.revision, ext, definition, msg)

    def _missing(self, identifier: str, client: str) -> str:
        """Which side did not declare ``identifier``, for a refusal: the server, or
        ``client`` (this request, the request answered, the client)."""
        if identifier not in self.server_declared:
            return ("the server did not declare (capabilities.extensions of its "
                    "initialize or server/discover result)")
        return f"{client} did not declare (capabilities.extensions)"

    def _negotiated(self, ids: frozenset[str]) -> list[extensions.Extension]:
        return [self.applicable[i] for i in ids if i in self.applicable]

    def _answer(self, requester: Direction, msg: JSON) -> list[str]:
        asked = self.asked.pop((requester, msg.get("id")), None)
        result = msg.get("result")
        if asked is None or not isinstance(result, dict):
            return validate_message(self.revision, msg, asked.method if asked else None)
        if asked.method in ("initialize", "server/discover"):
            self.server_declared = extensions.declared(result.get("capabilities"))
        if asked.task and isinstance(result.get("task"), dict):
            # A 2025-11-25 task-augmented request may be answered with a task instead.
            return validate_message(self.revision, msg, None) + validate_definition(
                self.revision, "CreateTaskResult", result)
        kind = result.get("resultType")
        for ext in self.applicable.values():
            if isinstance(kind, str) and kind in ext.result_types:  # e.g. a task instead
                definition, answers = ext.result_types[kind]
                if asked.method not in answers:
                    return [f"a {kind!r} result answers {asked.method!r}, which the "
                            f"extension {ext.identifier} does not let become one"]
                if ext.identifier not in asked.extensions:
                    return [f"a {kind!r} result answers {asked.method!r}, but the extension "
                            f"{ext.identifier} was not negotiated: "
                            + self._missing(ext.identifier, "the request")]
                return validate_message(self.revision, msg, None) + extensions.errors(
                    self.revision, ext, definition, result)
        for ext in self._negotiated(asked.extensions):
            if asked.method in ext.requests:  # the answer to one of its requests
                return validate_message(self.revision, msg, None) + extensions.errors(
                    self.revision, ext, ext.requests[asked.method][1], result)
        return validate_message(self.revision, msg, asked.method)


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
