"""The checker's channel over the legacy HTTP+SSE transport of revision 2024-11-05.

A 2024-11-05 server is reached at its SSE URL: ``GET`` opens the session's event stream,
whose first event, ``endpoint``, names the URI to POST messages to; every message the
server sends, responses included, then arrives as a ``message`` event on that one stream,
and POSTs are answered ``202 Accepted``. :class:`SseChannel` keeps the stream open in a
background task for as long as the channel lives, and pairs each POSTed request with the
event that answers it (by id), within the timeout.

Safety as for Streamable HTTP: an ``endpoint`` on another origin than the SSE URL is not
followed (the checker never leaves the target's origin), and the stream is closed when the
channel is. :func:`discover` is the cheap test the runner uses to tell a legacy SSE URL
from a server that is simply not there: a ``GET`` whose first event is ``endpoint``.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx
import orjson
from anyio.abc import TaskGroup

from ...protocol.sse import SSEParser
from ..model import trim
from . import Channel, HttpInfo, Reply, WireLog, dump, id_key

MAX_QUEUED = 1000
"""Messages buffered from the stream; past that the reader waits (the server is flooding)."""


def _same_origin(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.scheme, pa.hostname, pa.port) == (pb.scheme, pb.hostname, pb.port)


async def discover(client: httpx.AsyncClient, url: str, headers: dict[str, str],
                   timeout: float) -> tuple[str | None, str]:
    """The message endpoint a legacy SSE server at ``url`` names first (None when there is
    none to use), and, when ``url`` serves an event stream that cannot be used, why."""
    with anyio.move_on_after(timeout):
        try:
            async with client.stream("GET", url, headers={
                    **headers, "Accept": "text/event-stream"}) as resp:
                if resp.status_code != 200 or not resp.headers.get(
                        "content-type", "").startswith("text/event-stream"):
                    return None, ""
                parser = SSEParser(max_line=64 * 1024)
                async for chunk in resp.aiter_bytes():
                    for event in parser.feed(chunk):
                        if event.event != "endpoint":
                            return None, ""  # some other stream, not the legacy transport
                        endpoint = urljoin(url, event.data.strip())
                        if _same_origin(url, endpoint):
                            return endpoint, ""
                        return None, (f"its event stream names the endpoint {endpoint!r} on "
                                      "another origin, which the checker does not follow")
        except (httpx.HTTPError, ValueError):
            return None, ""
    return None, (f"GET {url} opened an event stream that named no endpoint within "
                  f"{timeout:g} s")


class SseChannel(Channel):
    """One session of a legacy HTTP+SSE server (use as an async context manager)."""

    transport = "sse"

    def __init__(self, client: httpx.AsyncClient, url: str, log: WireLog, label: str,
                 timeout: float, headers: dict[str, str] | None = None) -> None:
        super().__init__(log, label, timeout)
        self.client = client
        self.url = url
        self.base_headers = dict(headers or {})
        self.endpoint: str | None = None
        self.start_error = ""
        self.opening: list[str] = [f"→ GET {url} Accept: text/event-stream"]
        self._ready = anyio.Event()
        self._send, self._inbox = anyio.create_memory_object_stream[Any](MAX_QUEUED)
        self._tg: TaskGroup | None = None

    async def __aenter__(self) -> SseChannel:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._read)
        with anyio.move_on_after(self.timeout):
            await self._ready.wait()
        if self.endpoint is None and not self.start_error:
            self.start_error = "the SSE stream named no endpoint before the timeout"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        self._send.close()
        self._inbox.close()

    async def _read(self) -> None:
        try:
            async with self.client.stream("GET", self.url, headers={
                    **self.base_headers, "Accept": "text/event-stream"},
                    timeout=httpx.Timeout(self.timeout, read=None)) as resp:
                ctype = resp.headers.get("content-type", "")
                self.opening.append(f"← HTTP {resp.status_code} {ctype}".rstrip())
                if resp.status_code != 200 or not ctype.startswith("text/event-stream"):
                    self.start_error = f"GET {self.url} gave HTTP {resp.status_code} {ctype}"
                    return
                parser = SSEParser()
                async for chunk in resp.aiter_bytes():
                    for event in parser.feed(chunk):
                        await self._event(event.event, event.data)
        except (httpx.HTTPError, ValueError) as exc:
            self.start_error = self.start_error or f"the SSE stream failed: {exc!r}"
        finally:
            self._ready.set()

    async def _event(self, kind: str, data: str) -> None:
        if kind == "endpoint":
            endpoint = urljoin(self.url, data.strip())
            self.opening.append(f"← event endpoint: {trim(data, 300)}")
            if _same_origin(self.url, endpoint):
                self.endpoint = endpoint
            else:
                self.start_error = (f"the endpoint event names {endpoint!r}, another origin "
                                    "than the SSE URL; the checker does not follow it")
            self._ready.set()
            return
        if not data.strip():
            return
        try:
            msg = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.log.bad_lines.append((self.label, data[:2000]))
            return
        self._record(msg, data, "legacy sse")
        if isinstance(msg, dict) and "method" in msg and "id" in msg:
            await self._post(orjson.dumps(self._answer_for(msg)), [])
        await self._send.send(msg)

    async def _post(self, data: bytes, transcript: list[str]) -> HttpInfo | None:
        if self.endpoint is None:
            transcript.append(f"(not sent: {self.start_error or 'no endpoint'})")
            return None
        transcript += [f"→ POST {self.endpoint}", f"→ {dump(data)}"]
        try:
            resp = await self.client.post(self.endpoint, content=data, timeout=self.timeout,
                                          headers={**self.base_headers,
                                                   "Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            transcript.append(f"(HTTP failure: {exc!r})")
            return None
        info = HttpInfo(resp.status_code, {k.lower(): v for k, v in resp.headers.items()},
                        resp.headers.get("content-type", ""), resp.text[:4000])
        transcript.append(f"← HTTP {resp.status_code}" + (
            f" {trim(info.body, 300)}" if info.body.strip() else ""))
        return info

    async def _collect(self, reply: Reply, want: Any, limit: float) -> None:
        """Messages from the stream until the one answering ``want`` (None: any response,
        or a batch of them, to no request of ours) or ``limit`` seconds."""
        with anyio.move_on_after(limit):
            while True:
                msg = await self._inbox.receive()
                answers = isinstance(msg, dict) and "method" not in msg
                if (want is None and isinstance(msg, list)) or (answers and (
                        want is None or id_key(msg.get("id")) == id_key(want))):
                    reply.msg = msg
                    reply.transcript.append(f"← event message: {dump(msg)}")
                    return
                reply.others.append(msg)
        reply.timed_out = True

    async def request(
        self, method: str, params: Any = None, *, id: Any = None, timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        msg = self.make_request(method, params, id)
        reply = Reply(sent=msg)
        reply.http = await self._post(orjson.dumps(msg), reply.transcript)
        if reply.http is not None and reply.http.status < 300:
            await self._collect(reply, msg["id"], timeout if timeout is not None
                                else self.timeout)
        else:
            reply.timed_out = True
        return reply

    async def notify(self, method: str, params: Any = None) -> Reply:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.log.sent(self.label, msg)
        reply = Reply(sent=msg)
        reply.http = await self._post(orjson.dumps(msg), reply.transcript)
        return reply

    async def send_raw(
        self, data: bytes, *, wait: float | None = None, fence: dict[str, Any] | None = None
    ) -> Reply:
        """POST ``data`` as is; the first response to no request of ours is its answer."""
        self.log.sent(self.label, data)
        reply = Reply(sent=data)
        reply.http = await self._post(data, reply.transcript)
        if reply.http is not None and reply.http.status >= 400:
            try:  # an error in the POST's body, as some servers answer malformed input
                body = orjson.loads(reply.http.body) if reply.http.body.strip() else None
            except orjson.JSONDecodeError:
                body = None
            reply.msg = body if isinstance(body, dict) else None
            reply.timed_out = reply.msg is None
            return reply
        await self._collect(reply, None, wait if wait is not None else min(self.timeout, 2.0))
        return reply

    async def wait_orphan(self, seconds: float) -> Reply:
        """Up to ``seconds`` for a response no request of ours waits for."""
        reply = Reply(sent=None)
        await self._collect(reply, None, seconds if math.isfinite(seconds) else 1.0)
        return reply

    async def aclose(self) -> None:
        return None
