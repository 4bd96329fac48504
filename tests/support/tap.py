"""Watch what a ``Client`` puts on the wire and validate it against the official schema.

A ``Tap`` sees every message the client *sends* (each goes through ``WireChecker.check``,
side ``"client"``) and every message it *receives* (``WireChecker.saw_peer``, so the
checker learns the negotiated revision and which request each answer belongs to). A
schema violation never breaks the session under test: it is recorded in ``violations``
for the test to assert on. Two taps exist, one per kind of transport:

- ``TappedStream`` wraps any ``ByteStream`` (memory pipe or subprocess pipes) and splits
  the chunks into lines;
- ``TapTransport`` is an httpx transport for the client's ``http_client``: a POSTed body
  is one message sent; a JSON answer, or each SSE ``data``, one message received.

``TappedClient`` is a ``Client`` whose stream or HTTP client is tapped:

    async with TappedClient(server, protocol_version="2025-06-18") as client:
        ...
    client.wire.assert_clean()
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx

from mcpkit.client import Client, Http
from mcpkit.client.connect import Target, transport_for
from mcpkit.protocol.sse import SSEParser
from mcpkit.session import ByteStream

from .schemas import WireChecker


class Tap:
    """What a client sent and received, validated (see the module docstring)."""

    def __init__(self, checker: WireChecker) -> None:
        self.checker = checker
        self.sent: list[Any] = []  # every message the client sent, in order
        self.received: list[Any] = []  # every message the peer sent, in order
        self.unparsable_received: list[bytes] = []  # peer lines that were not JSON
        self.violations: list[str] = []  # what failed validation (message + reason)
        self._changed = anyio.Event()

    def saw_received(self, line: bytes) -> None:
        """One message (a line, a body, an SSE ``data``) the peer sent."""
        if not line.strip():
            return
        try:
            msg = json.loads(line)
        except ValueError:
            self.unparsable_received.append(line)
            return
        self.received.append(msg)
        self.checker.saw_peer(msg)
        self._notify()

    def saw_sent(self, line: bytes) -> None:
        """One message (a line, a POST body) the client sent."""
        if not line.strip():
            return
        try:
            msg = json.loads(line)
        except ValueError as exc:
            self.violations.append(f"client sent a line that is not JSON ({exc}): {line!r}")
            return
        self.sent.append(msg)
        try:
            self.checker.check(msg)
        except Exception as exc:  # SchemaViolation, or a method unknown to the revision
            self.violations.append(f"{type(exc).__name__}: {exc}")
        self._notify()

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


class TappedStream(Tap):
    """A ``ByteStream`` that validates what is sent and learns from what is received."""

    def __init__(self, inner: ByteStream, checker: WireChecker) -> None:
        super().__init__(checker)
        self.inner = inner
        self._in = b""
        self._out = b""

    # ------------------------------------------------------------------ ByteStream

    async def receive(self) -> bytes:
        data = await self.inner.receive()
        self._in += data
        *lines, self._in = self._in.split(b"\n")
        for line in lines:
            self.saw_received(line)
        return data

    async def send(self, data: bytes) -> None:
        self._out += data
        *lines, self._out = self._out.split(b"\n")
        for line in lines:
            self.saw_sent(line)
        await self.inner.send(data)

    async def aclose(self) -> None:
        if self._out:
            self.violations.append(f"client left an unterminated line: {self._out!r}")
            self._out = b""
        await self.inner.aclose()


class TapTransport(httpx.AsyncBaseTransport):
    """An httpx transport that shows a ``Tap`` the messages of every exchange."""

    def __init__(self, tap: Tap) -> None:
        self.tap = tap
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            self.tap.saw_sent(request.content)
        resp = await self.inner.handle_async_request(request)
        sse = resp.headers.get("content-type", "").startswith("text/event-stream")
        assert isinstance(resp.stream, httpx.AsyncByteStream)
        return httpx.Response(resp.status_code, headers=resp.headers,
                              stream=_TappedBody(resp.stream, self.tap, sse),
                              extensions=resp.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _TappedBody(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, tap: Tap, sse: bool) -> None:
        self.inner = inner
        self.tap = tap
        self.parser = SSEParser() if sse else None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        body = b""
        async for chunk in self.inner:
            if self.parser is None:
                body += chunk
            else:
                for event in self.parser.feed(chunk):
                    self.tap.saw_received(event.data.encode())
            yield chunk
        self.tap.saw_received(body)

    async def aclose(self) -> None:
        await self.inner.aclose()


class TappedClient(Client):
    """A ``Client`` whose byte stream goes through a ``TappedStream``, or whose HTTP client
    through a ``TapTransport`` (``self.wire``)."""

    def __init__(self, target: Target, **options: Any) -> None:
        self.checker = WireChecker("client", revision=options.get("protocol_version"))
        self.tap: Tap | None = None
        self.tapped_http: httpx.AsyncClient | None = None
        transport = transport_for(target)
        if isinstance(transport, Http):
            assert transport.http_client is None, "TappedClient brings its own http_client"
            self.tap = Tap(self.checker)
            self.tapped_http = httpx.AsyncClient(
                transport=TapTransport(self.tap),
                timeout=httpx.Timeout(options.get("timeout", 30.0), read=None))
            transport = Http(transport.url, headers=transport.headers, auth=transport.auth,
                             http_client=self.tapped_http)
        super().__init__(transport, **options)

    async def _open_stream(self, stack: AsyncExitStack, tg: anyio.abc.TaskGroup) -> ByteStream:
        inner = await super()._open_stream(stack, tg)
        self.tap = TappedStream(inner, self.checker)
        return self.tap

    async def __aexit__(self, *exc: object) -> None:
        try:
            await super().__aexit__(*exc)
        finally:
            if self.tapped_http is not None:
                await self.tapped_http.aclose()

    @property
    def wire(self) -> Tap:
        assert self.tap is not None, "not connected yet"
        return self.tap
