"""What a Streamable HTTP server sends back to the client: JSON bodies, the SSE streams of
POSTs (resumed after a cut) and the standalone GET stream.

``AnswerReader`` decodes every message once and feeds it to the client's ``Session``
(``receive_message``), noting whether a POST's response carried the answer to the
request it was for: a request left without one fails at once with a ``TransportError``
(``AnswerLost`` for a stateless request, which has no resumption) instead of waiting for
its timeout. A message that is not JSON is logged and dropped, so one bad message or one
bad response never ends the session.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import httpx
import orjson

from ..protocol.connection import Outgoing
from ..protocol.errors import AnswerLost, TransportError
from ..protocol.jsonrpc import RequestId
from ..protocol.sse import SSEParser

if TYPE_CHECKING:
    from .http_client import HttpClientTransport

log = logging.getLogger("mcpkit.client.http")


MAX_RETRY_DELAY = 30.0
"""Seconds at most between reconnections, whatever ``retry`` a server asks for (a hostile
or broken one could otherwise stall the client for days)."""


class Redirected(TransportError):
    """A 3xx answer, which mcpkit does not follow; ``location`` is where it pointed (the
    absolute URL; None without a ``Location``)."""

    def __init__(self, message: str, *, status: int, location: str | None) -> None:
        super().__init__(message, status=status)
        self.location = location


def redirected(resp: httpx.Response) -> Redirected | None:
    """The error for a 3xx answer, else None. mcpkit follows no redirect: an MCP endpoint
    that moved (a host app's slash redirect, a proxy) is a configuration to fix, and
    following it would resend the request body and credentials to another URL. The
    message names where it points without calling it the server's URL: nobody has
    tried it (``mcpkit`` tries it before saying more)."""
    if not 300 <= resp.status_code < 400:
        return None
    location = resp.headers.get("location")
    target = str(resp.request.url.join(location)) if location else None
    where = f" to {target}" if target else " without a Location"
    return Redirected(
        f"HTTP {resp.status_code} from the server: it redirects{where}; mcpkit does not "
        "follow redirects (they would carry the request and its credentials elsewhere): "
        "give the URL of the MCP endpoint itself", status=resp.status_code, location=target)


def server_words(body: bytes) -> str | None:
    """What an HTTP error body says in words, if anything: a JSON-RPC error's message, or a
    short one-line plain text (not an HTML page); None otherwise."""
    obj = _decode(body)
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
        message = obj["error"].get("message")
        return message[:300] if isinstance(message, str) and message.strip() else None
    text = body.decode(errors="replace").strip()
    if text and len(text) <= 200 and "\n" not in text and not text.startswith(("<", "{")):
        return text
    return None


class AnswerReader:
    """Feeds what a server sends over HTTP to the session of ``transport``."""

    def __init__(self, transport: HttpClientTransport, max_resumes: int) -> None:
        self.transport = transport
        self.max_resumes = max_resumes  # resumptions of one cut stream before giving up
        self.max_retry_delay = MAX_RETRY_DELAY

    def _retry_delay(self, parser: SSEParser) -> float:
        """The server's ``retry`` (1 s when it gave none), capped at ``max_retry_delay``."""
        return min((parser.retry or 1000) / 1000, self.max_retry_delay)

    def deliver(self, data: str | bytes, rid: RequestId | None) -> bool:
        """Feed one message (or batch) to the session; True if it answers our request
        ``rid``. Not JSON: logged and dropped."""
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            log.warning("the server sent a message that is not JSON; dropped: %s",
                        _snippet(data))
            return False
        self.transport.session.receive_message(obj)
        return rid is not None and _answers(obj, rid)

    async def answer(self, resp: httpx.Response, out: Outgoing, *, stateless: bool) -> None:
        """Read the 2xx response to ``out``: one JSON body, or an SSE stream (resumed with
        ``Last-Event-ID`` after a cut, up to ``max_resumes`` times).

        Raises ``TransportError`` when ``out`` is a request whose answer did not come
        (a body that is not its answer, a stream that ended early and cannot be resumed),
        ``AnswerLost`` for such a stream of a stateless request."""
        ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == "text/event-stream":
            await self._read_stream(resp, out, stateless)
            return
        body = (await resp.aread()).strip()
        answered = bool(body) and self.deliver(body, out.id)
        if out.id is not None and not answered:
            raise TransportError(f"HTTP {resp.status_code} from the server without an answer "
                                 f"to {out.method}: {_snippet(body)}", status=resp.status_code)

    async def refusal(self, resp: httpx.Response, out: Outgoing) -> None:
        """An HTTP error (4xx/5xx) for ``out``. A JSON-RPC answer to its request in the body
        is the server's own answer and is fed as such; otherwise raises ``TransportError``
        with the status and the server's words."""
        body = await resp.aread()
        obj = _decode(body)
        if out.id is not None and _answers(obj, out.id):
            self.transport.session.receive_message(obj)
            return
        raise TransportError(f"HTTP {resp.status_code} from the server: {error_detail(body)}",
                             status=resp.status_code)

    async def _read_stream(self, resp: httpx.Response, out: Outgoing, stateless: bool) -> None:
        transport = self.transport
        parser = SSEParser()
        answered = await self._consume(resp, parser, out.id)
        resumes = 0
        while out.id is not None and not answered and not transport.closed:
            if parser.last_event_id is None:
                if stateless:
                    raise AnswerLost(f"the answer stream of {out.method} ended before its "
                                     "answer")
                raise TransportError("the server closed the response stream before answering")
            if resumes >= self.max_resumes:
                raise TransportError(f"the response stream was cut {resumes + 1} times; "
                                     "giving up")
            resumes += 1
            await anyio.sleep(self._retry_delay(parser))
            headers = transport.headers(post=False)
            headers["last-event-id"] = parser.last_event_id
            async with transport.http.stream(
                    "GET", transport.url, headers=headers,
                    auth=transport.auth or httpx.USE_CLIENT_DEFAULT) as again:
                if again.status_code != 200:
                    await again.aread()
                    raise TransportError(f"could not resume the response stream (HTTP "
                                         f"{again.status_code})", status=again.status_code)
                answered = await self._consume(again, parser, out.id)

    async def _consume(self, resp: httpx.Response, parser: SSEParser,
                       rid: RequestId | None) -> bool:
        """Feed a stream's messages until it ends or is cut; True if one answered ``rid``."""
        answered = False
        try:
            async for chunk in resp.aiter_bytes():
                for event in parser.feed(chunk):
                    if event.event != "message" or not event.data.strip():
                        continue
                    if self.deliver(event.data, rid):
                        answered = True
                    # Let what this message started (a progress callback) take its first
                    # step before the next message, which may be the answer, is fed.
                    await anyio.lowlevel.checkpoint()
        except (httpx.ReadError, httpx.RemoteProtocolError):
            pass  # the connection was cut: the caller resumes it, or gives up
        return answered

    async def get_stream(self, sid: str, ready: anyio.Event) -> None:
        """The standalone GET stream of session ``sid``: what the server sends outside any
        request. When it ends it is opened again (with ``Last-Event-ID``) after the
        server's ``retry`` delay, until the transport closes, the server refuses it (405:
        it offers none; 404: the session is gone), or ``max_resumes`` attempts in a row
        failed. ``ready`` is set once the first attempt got its answer (or failed)."""
        transport = self.transport
        parser = SSEParser()
        attempts = 0
        while not transport.closed and attempts <= self.max_resumes:
            headers = transport.headers(post=False, session_id=sid)
            if parser.last_event_id:
                headers["last-event-id"] = parser.last_event_id
            try:
                async with transport.http.stream(
                        "GET", transport.url, headers=headers,
                        auth=transport.auth or httpx.USE_CLIENT_DEFAULT) as resp:
                    ready.set()
                    if resp.status_code != 200:
                        await resp.aread()
                        return
                    attempts = 0
                    await self._consume(resp, parser, None)
            except httpx.HTTPError:
                ready.set()
            attempts += 1
            if not transport.closed:
                await anyio.sleep(self._retry_delay(parser))


def _decode(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _answers(obj: Any, rid: RequestId) -> bool:
    """Whether a decoded message (or batch) holds the answer to our request ``rid``."""
    items = obj if isinstance(obj, list) else [obj]
    return any(isinstance(o, dict) and o.get("id") == rid and "method" not in o
               and ("result" in o or "error" in o) for o in items)


def error_detail(body: bytes) -> str:
    """What an HTTP error body says: a JSON-RPC error's message, else the start of it."""
    obj = _decode(body)
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
        return str(obj["error"].get("message"))
    return body.decode(errors="replace")[:300] or "(empty body)"


def _snippet(data: str | bytes) -> str:
    text = data.decode(errors="replace") if isinstance(data, bytes) else data
    return repr(text[:200]) if text else "(empty body)"
