"""The Streamable HTTP channel: one conversation with the endpoint under test.

:class:`HttpChannel` POSTs one message at a time with ``httpx`` and reads the JSON body or
the SSE stream that answers it, recording every message in the
:class:`~mcpkit.check.wire.WireLog`; it can also open the GET stream and send DELETE. It
keeps the session id the server mints and sends the protocol version header, and any
header can be overridden or dropped per request, since the probes test how the server
treats wrong ones. A JSON body is read up to ``MAX_LINE`` bytes.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import orjson

from ...protocol.sse import SSEParser
from ..model import trim
from . import MAX_LINE, Channel, HttpInfo, Reply, WireLog, dump, id_key


async def _read_capped(resp: httpx.Response) -> bytes:
    """The body, or its first ``MAX_LINE`` bytes."""
    parts, size = [], 0
    async for chunk in resp.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size > MAX_LINE:
            break
    return b"".join(parts)[:MAX_LINE]


class HttpChannel(Channel):
    """One conversation with a Streamable HTTP endpoint (a session, once one is minted)."""

    transport = "http"

    def __init__(
        self, client: httpx.AsyncClient, url: str, log: WireLog, label: str, timeout: float,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(log, label, timeout)
        self.client = client
        self.url = url
        self.base_headers = dict(headers or {})
        self.session_id: str | None = None
        self.send_version_header = True

    def headers_for(self, extra: dict[str, str] | None) -> dict[str, str]:
        h = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            **self.base_headers,
        }
        if self.session_id is not None:
            h["Mcp-Session-Id"] = self.session_id
        if self.revision is not None and self.send_version_header:
            h["MCP-Protocol-Version"] = self.revision
        for k, v in (extra or {}).items():
            for existing in [e for e in h if e.lower() == k.lower()]:
                del h[existing]
            if v is not None:
                h[k] = v
        return {k: v for k, v in h.items() if v != ""}

    async def post(
        self, body: Any, *, headers: dict[str, str] | None = None, want_id: Any = None,
        timeout: float | None = None,
    ) -> tuple[HttpInfo | None, list[Any], list[str]]:
        """POST ``body`` (bytes as is, else JSON); read a JSON body or an SSE stream until
        the response with ``want_id`` arrives. Returns (http info, messages, transcript)."""
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        hdrs = self.headers_for(headers)
        transcript = [
            f"→ POST {self.url} " + " ".join(
                f"{k}: {v}" for k, v in hdrs.items()
                if k.lower() not in ("accept", "content-type", "authorization")
            ),
            f"→ {dump(data)}",
        ]
        messages: list[Any] = []
        info: HttpInfo | None = None
        limit = timeout if timeout is not None else self.timeout
        with anyio.move_on_after(limit) as scope:
            try:
                async with self.client.stream("POST", self.url, content=data, headers=hdrs) as resp:
                    info = HttpInfo(
                        resp.status_code, {k.lower(): v for k, v in resp.headers.items()},
                        resp.headers.get("content-type", ""), "",
                    )
                    transcript.append(f"← HTTP {resp.status_code} {info.content_type}".rstrip())
                    if info.content_type.startswith("text/event-stream"):
                        await self._read_sse(resp, info, messages, transcript, want_id, "POST sse")
                    else:
                        raw = await _read_capped(resp)
                        info.body = raw.decode("utf-8", "replace")
                        if raw.strip():
                            transcript.append(f"← {trim(info.body, 1500)}")
                        if info.content_type.startswith("application/json") or raw[:1] in b"{[":
                            try:
                                msg = orjson.loads(raw)
                            except orjson.JSONDecodeError:
                                msg = None
                            if msg is not None:
                                messages.append(msg)
                                if 200 <= resp.status_code < 300 or (
                                    isinstance(msg, dict) and "jsonrpc" in msg
                                ):
                                    self._record(msg, info.body, "POST json")
            except httpx.HTTPError as exc:
                transcript.append(f"(HTTP failure: {exc!r})")
        if scope.cancelled_caught:
            transcript.append("(no complete answer before the timeout)")
        if info is not None and "mcp-session-id" in info.headers and self.session_id is None:
            self.session_id = info.headers["mcp-session-id"]
        return info, messages, transcript

    async def _read_sse(
        self, resp: httpx.Response, info: HttpInfo, messages: list[Any], transcript: list[str],
        want_id: Any, stream: str,
    ) -> None:
        parser = SSEParser()
        async for chunk in resp.aiter_bytes():
            for event in parser.feed(chunk):
                if event.id is not None:
                    info.sse_ids.append(event.id)
                if event.retry is not None:
                    info.sse_retry = event.retry
                if not event.data.strip():
                    continue
                transcript.append(f"← event {event.id or ''}: {trim(event.data, 1500)}")
                try:
                    msg = orjson.loads(event.data)
                except orjson.JSONDecodeError:
                    self.log.bad_lines.append((self.label, event.data[:2000]))
                    continue
                messages.append(msg)
                self._record(msg, event.data, stream)
                if isinstance(msg, dict) and "method" in msg and "id" in msg:
                    await self._answer_server_request(msg)
                if (
                    want_id is not None and isinstance(msg, dict) and "method" not in msg
                    and id_key(msg.get("id")) == id_key(want_id)
                ):
                    return

    async def _answer_server_request(self, msg: dict[str, Any]) -> None:
        answer = self._answer_for(msg)
        try:
            await self.client.post(
                self.url, content=orjson.dumps(answer), headers=self.headers_for(None),
                timeout=self.timeout,
            )
        except httpx.HTTPError:
            pass

    async def request(
        self, method: str, params: Any = None, *, id: Any = None, timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        msg = self.make_request(method, params, id)
        return await self.exchange(msg, headers=headers, timeout=timeout)

    async def exchange(
        self, msg: dict[str, Any], *, headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> Reply:
        info, messages, transcript = await self.post(
            msg, headers=headers, want_id=msg.get("id"), timeout=timeout
        )
        reply = Reply(sent=msg, http=info, transcript=transcript)
        for m in messages:
            answers = isinstance(m, dict) and "method" not in m
            if answers and id_key(m.get("id")) == id_key(msg.get("id")):
                reply.msg = m
            elif isinstance(m, dict) and "method" not in m and reply.msg is None and (
                info is not None and info.status >= 400
            ):
                reply.msg = m  # an error body on a 4xx may carry no id
            else:
                reply.others.append(m)
        if reply.msg is None and messages and info is not None and info.status >= 400:
            reply.msg = messages[0]
        reply.timed_out = reply.msg is None
        self.log.http_replies.append(reply)
        return reply

    async def notify(self, method: str, params: Any = None) -> Reply:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        info, messages, transcript = await self.post(msg)
        reply = Reply(sent=msg, http=info, transcript=transcript, others=messages)
        reply.msg = messages[0] if messages else None
        return reply

    async def send_raw(
        self, data: bytes, *, wait: float | None = None, fence: dict[str, Any] | None = None
    ) -> Reply:
        self.log.sent(self.label, data)
        info, messages, transcript = await self.post(data, timeout=wait)
        reply = Reply(sent=data, http=info, transcript=transcript)
        reply.msg = messages[0] if messages else None
        reply.timed_out = reply.msg is None
        return reply

    async def get(self, *, headers: dict[str, str] | None = None, read_for: float = 0.5) -> Reply:
        """Open the GET stream and read it for ``read_for`` seconds."""
        hdrs = self.headers_for(
            {"Accept": "text/event-stream", "Content-Type": "", **(headers or {})})
        transcript = [f"→ GET {self.url} " + " ".join(
            f"{k}: {v}" for k, v in hdrs.items() if k.lower() != "authorization"
        )]
        reply = Reply(sent=None, transcript=transcript)
        messages: list[Any] = []
        with anyio.move_on_after(self.timeout):
            try:
                async with self.client.stream("GET", self.url, headers=hdrs) as resp:
                    info = HttpInfo(
                        resp.status_code, {k.lower(): v for k, v in resp.headers.items()},
                        resp.headers.get("content-type", ""), "",
                    )
                    reply.http = info
                    transcript.append(f"← HTTP {resp.status_code} {info.content_type}".rstrip())
                    if info.content_type.startswith("text/event-stream"):
                        with anyio.move_on_after(read_for):
                            await self._read_sse(resp, info, messages, transcript, None, "GET sse")
                    else:
                        info.body = (await resp.aread()).decode("utf-8", "replace")
                        if info.body.strip():
                            transcript.append(f"← {trim(info.body, 800)}")
            except httpx.HTTPError as exc:
                transcript.append(f"(HTTP failure: {exc!r})")
        reply.others = messages
        return reply

    async def delete(self, *, headers: dict[str, str] | None = None) -> Reply:
        hdrs = self.headers_for({"Content-Type": "", **(headers or {})})
        reply = Reply(sent=None, transcript=[f"→ DELETE {self.url}"])
        try:
            resp = await self.client.delete(self.url, headers=hdrs, timeout=self.timeout)
        except httpx.HTTPError as exc:
            reply.transcript.append(f"(HTTP failure: {exc!r})")
            return reply
        reply.http = HttpInfo(
            resp.status_code, {k.lower(): v for k, v in resp.headers.items()},
            resp.headers.get("content-type", ""), resp.text,
        )
        reply.transcript.append(f"← HTTP {resp.status_code}")
        return reply

    async def aclose(self) -> None:
        return None

