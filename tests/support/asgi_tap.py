"""Record what crosses an ASGI app's HTTP boundary, without changing a byte of it.

``AsgiTap(app)`` is ASGI middleware for Streamable HTTP tests. For every HTTP exchange
``n`` it records, in the order things happen:

- ``{"ev": "request", "n", "method", "path", "headers"}`` when the request arrives;
- ``{"ev": "c2s", "n", "msg"}`` once the app has read the whole body (``"raw"`` with
  the text instead of ``"msg"`` when the body is not JSON);
- ``{"ev": "response", "n", "status", "headers"}`` when the app starts its answer;
- ``{"ev": "s2c", "n", "msg", "via", "status"}`` for each JSON-RPC message of the
  answer: the whole body of an ``application/json`` response (``via: "json"``), or one
  SSE event's ``data`` (``via: "sse"``, with the event's ``id``). An SSE event without
  data (a priming event) is ``{"ev": "sse-prime", "n", "id", "retry"}``; a body or data
  that is not JSON is recorded with ``"raw"`` instead of ``"msg"``;
- ``{"ev": "end", "n"}`` when the app sent the last body chunk.

A message is recorded *before* it is passed on, so the order is causal: the server's
request on an SSE stream is always recorded before the client's POSTed answer to it.

Entries go to ``entries`` (a list) and, if ``log`` is given, are appended to that file
as JSON lines (flushed at once, so another process can read them). The SSE parser here
is deliberately independent of mcpkit's own.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class _SSE:
    """A minimal event-stream parser: LF or CRLF line ends, data/id/retry/event fields."""

    def __init__(self) -> None:
        self.buf = b""
        self.data: list[str] = []
        self.id: str | None = None
        self.retry: int | None = None
        self.event = ""
        self.has_id = False

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self.buf += chunk
        out: list[dict[str, Any]] = []
        while b"\n" in self.buf:
            raw, self.buf = self.buf.split(b"\n", 1)
            line = raw.decode("utf-8").removesuffix("\r")
            if not line:
                if self.data or self.has_id:
                    out.append({"data": "\n".join(self.data), "id": self.id,
                                "retry": self.retry, "event": self.event or "message"})
                self.data, self.id, self.retry, self.event, self.has_id = [], None, None, "", False
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                self.data.append(value)
            elif name == "id":
                self.id, self.has_id = value, True
            elif name == "retry":
                self.retry = int(value)
            elif name == "event":
                self.event = value
        return out


def _headers(raw: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in raw or ():
        name = key.decode("latin-1").lower()
        text = value.decode("latin-1")
        out[name] = f"{out[name]}, {text}" if name in out else text
    return out


def _parsed(text: str) -> dict[str, Any]:
    try:
        return {"msg": json.loads(text)}
    except ValueError:
        return {"raw": text}


class AsgiTap:
    """ASGI middleware recording every HTTP exchange of ``app`` (see the module docstring)."""

    def __init__(self, app: App, log: str | Path | None = None) -> None:
        self.app = app
        self.entries: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._file = open(log, "a", encoding="utf-8") if log is not None else None
        self._count = 0

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.entries.append(entry)
            if self._file is not None:
                self._file.write(json.dumps(entry) + "\n")
                self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with self._lock:
            self._count += 1
            n = self._count
        self.record({"ev": "request", "n": n, "method": scope["method"],
                     "path": scope.get("path", ""), "headers": _headers(scope.get("headers"))})
        body: list[bytes] = []
        body_done = False

        async def tapped_receive() -> Message:
            nonlocal body_done
            message = await receive()
            if message["type"] == "http.request" and not body_done:
                body.append(message.get("body", b""))
                if not message.get("more_body", False):
                    body_done = True
                    data = b"".join(body)
                    if data:
                        self.record({"ev": "c2s", "n": n, **_parsed(data.decode("utf-8"))})
            return message

        status = 0
        ctype = ""
        sse = _SSE()
        json_body: list[bytes] = []

        async def tapped_send(message: Message) -> None:
            nonlocal status, ctype
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = _headers(message.get("headers"))
                ctype = headers.get("content-type", "").split(";")[0].strip().lower()
                self.record({"ev": "response", "n": n, "status": status, "headers": headers})
            elif message["type"] == "http.response.body":
                chunk = message.get("body", b"")
                more = message.get("more_body", False)
                if ctype == "text/event-stream":
                    for event in sse.feed(chunk):
                        if event["data"]:
                            self.record({"ev": "s2c", "n": n, "via": "sse", "status": status,
                                         "id": event["id"], "event": event["event"],
                                         **_parsed(event["data"])})
                        else:
                            self.record({"ev": "sse-prime", "n": n, "id": event["id"],
                                         "retry": event["retry"]})
                else:
                    json_body.append(chunk)
                    if not more:
                        data = b"".join(json_body)
                        if data.strip():
                            self.record({"ev": "s2c", "n": n, "via": "json", "status": status,
                                         "ctype": ctype, **_parsed(data.decode("utf-8"))})
                if not more:
                    self.record({"ev": "end", "n": n})
            await send(message)

        await self.app(scope, tapped_receive, tapped_send)


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """The entries an ``AsgiTap`` appended to ``path``."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
