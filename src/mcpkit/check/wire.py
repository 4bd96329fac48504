"""Raw channels to the server under test, recording everything that crosses them.

The checker cannot use a well-behaved client: it must send malformed JSON, requests before
``initialize``, wrong headers, and it must see every byte the server answers with, however
broken. So a channel speaks JSON-RPC by hand:

* :class:`StdioChannel` runs the server as a subprocess (through
  :class:`~mcpkit.transports.process.ProcessStream`, which owns the shutdown order) and reads
  its stdout line by line.
* :class:`HttpChannel` POSTs one message at a time with ``httpx`` and reads the JSON or SSE
  answer; it can also open the GET stream and send DELETE.

Every message received goes into a :class:`WireLog` with what it answered, so the judges can
validate it later against the negotiated revision's schema. Requests the server sends to the
checker are answered at once: ``ping`` with ``{}``, anything else with -32601 (the checker
declares no client capabilities). Every wait is bounded by a timeout.
"""

from __future__ import annotations

import itertools
import json
import shlex
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import anyio
import httpx
import orjson
from anyio.abc import TaskGroup

from ..protocol.sse import SSEParser
from ..transports.process import ProcessStream
from .model import trim

CHECKER_INFO = {"name": "mcpkit-check", "version": "1"}
MAX_RECORDED = 20_000
"""Messages kept per era; a server that floods notifications cannot exhaust memory."""
MAX_LINE = 16 * 1024 * 1024
"""Longest stdout line or HTTP body read; longer is cut and reported as not a message."""
NO_CAPABILITY = -32601


def dump(msg: Any) -> str:
    """Compact JSON text of ``msg`` (bytes are shown as text, undecodable bytes escaped)."""
    if isinstance(msg, bytes):
        return msg.decode("utf-8", "backslashreplace")
    try:
        return orjson.dumps(msg).decode()
    except TypeError:
        return repr(msg)


@dataclass(slots=True)
class Received:
    """One message the server sent, and what the checker knew when it arrived."""

    msg: Any
    raw: str
    channel: str
    revision: str | None
    answered: str | None = None
    stream: str = ""
    blamed: bool = False


@dataclass(slots=True)
class WireLog:
    """Everything received during one era's probing, plus the lines that were not JSON."""

    received: list[Received] = field(default_factory=list)
    bad_lines: list[tuple[str, str]] = field(default_factory=list)  # (channel, line)
    server_requests: list[Received] = field(default_factory=list)
    sent_ids: dict[str, set[Any]] = field(default_factory=dict)  # channel -> ids we used
    http_replies: list[Reply] = field(default_factory=list)
    overflow: int = 0  # messages past MAX_RECORDED, not kept

    def sent(self, channel: str, msg: Any) -> None:
        """Remember the request ids in ``msg`` (one message, a batch, or raw bytes)."""
        if isinstance(msg, bytes):
            try:
                msg = orjson.loads(msg)
            except orjson.JSONDecodeError:
                return
        ids = self.sent_ids.setdefault(channel, set())
        for item in msg if isinstance(msg, list) else [msg]:
            if isinstance(item, dict) and "id" in item and "method" in item:
                ids.add(_key(item["id"]))


@dataclass(slots=True)
class HttpInfo:
    status: int
    headers: dict[str, str]
    content_type: str
    body: str
    sse_ids: list[str] = field(default_factory=list)
    sse_retry: int | None = None


@dataclass(slots=True)
class Reply:
    """The outcome of one request: the response (``None`` if none came), notifications and
    requests that arrived meanwhile, and the exchange as evidence text."""

    sent: Any
    msg: Any = None
    others: list[Any] = field(default_factory=list)
    timed_out: bool = False
    http: HttpInfo | None = None
    transcript: list[str] = field(default_factory=list)

    @property
    def result(self) -> Any:
        return self.msg.get("result") if isinstance(self.msg, dict) else None

    @property
    def error(self) -> Any:
        return self.msg.get("error") if isinstance(self.msg, dict) else None

    @property
    def error_code(self) -> Any:
        err = self.error
        return err.get("code") if isinstance(err, dict) else None

    @property
    def evidence(self) -> str:
        lines = list(self.transcript)
        if self.timed_out:
            lines.append("(no response before the timeout)")
        return trim("\n".join(lines))


class Channel:
    """What both transports share: ids, the log, answering server requests."""

    transport = ""

    def __init__(self, log: WireLog, label: str, timeout: float) -> None:
        self.log = log
        self.label = label
        self.timeout = timeout
        self.revision: str | None = None
        self._ids = itertools.count(1)
        self._methods: dict[Any, str] = {}

    def next_id(self) -> int:
        return next(self._ids)

    def _record(self, msg: Any, raw: str, stream: str) -> Received:
        if len(self.log.received) >= MAX_RECORDED:
            self.log.overflow += 1
            return Received(msg, "", self.label, self.revision)
        answered = None
        if isinstance(msg, dict) and "method" not in msg:
            rid = msg.get("id")
            if isinstance(rid, (str, int)) and not isinstance(rid, bool):
                answered = self._methods.get(rid)
        rec = Received(msg, trim(raw, 4000), self.label, self.revision, answered, stream)
        self.log.received.append(rec)
        if isinstance(msg, dict) and "method" in msg and "id" in msg:
            self.log.server_requests.append(rec)
        return rec

    @staticmethod
    def _answer_for(msg: dict[str, Any]) -> dict[str, Any]:
        if msg.get("method") == "ping":
            return {"jsonrpc": "2.0", "id": msg.get("id"), "result": {}}
        return {
            "jsonrpc": "2.0",
            "id": msg.get("id"),
            "error": {
                "code": NO_CAPABILITY,
                "message": "mcpkit check declares no client capabilities",
            },
        }

    async def request(
        self, method: str, params: Any = None, *, id: Any = None, timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        raise NotImplementedError

    async def notify(self, method: str, params: Any = None) -> Reply:
        raise NotImplementedError

    async def send_raw(
        self, data: bytes, *, wait: float | None = None, fence: dict[str, Any] | None = None
    ) -> Reply:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    def make_request(self, method: str, params: Any, id: Any) -> dict[str, Any]:
        rid = self.next_id() if id is None else id
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        if isinstance(rid, (str, int)) and not isinstance(rid, bool):
            self._methods[rid] = method
        self.log.sent(self.label, msg)
        return msg


# ------------------------------------------------------------------------------ stdio


class StdioChannel(Channel):
    """One server process; messages are lines on its stdin and stdout."""

    transport = "stdio"

    def __init__(
        self, command: Sequence[str], log: WireLog, label: str, timeout: float,
        env: dict[str, str] | None = None, cwd: str | None = None,
    ) -> None:
        super().__init__(log, label, timeout)
        self.command = list(command)
        self.env = env
        self.cwd = cwd
        self._proc: ProcessStream | None = None
        self._stderr: IO[bytes] | None = None
        self._tg: TaskGroup | None = None
        self._waiters: dict[Any, anyio.Event] = {}
        self._answers: dict[Any, Any] = {}
        self._orphans: list[Any] = []
        self._orphan_event = anyio.Event()
        self._seen = 0
        self._eof = anyio.Event()
        self._pending_text = b""
        self._pending_lines = 0
        self.start_error: str | None = None

    @classmethod
    def parse_command(cls, command: str) -> list[str]:
        return shlex.split(command)

    async def __aenter__(self) -> StdioChannel:
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = await ProcessStream.open(
                self.command, env=self.env, cwd=self.cwd, stderr=self._stderr, grace=1.0
            )
        except OSError as exc:
            self.start_error = f"cannot start {shlex.join(self.command)}: {exc}"
            self._eof.set()
            return self
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._reader)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._proc is not None:
            await self._proc.aclose()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()
            await self._tg.__aexit__(None, None, None)
            self._tg = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def stderr_tail(self, limit: int = 600) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, 2)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - limit))
        return self._stderr.read().decode("utf-8", "replace")

    @property
    def alive(self) -> bool:
        return self._proc is not None and not self._eof.is_set()

    async def _reader(self) -> None:
        assert self._proc is not None
        buf = b""
        try:
            while True:
                chunk = await self._proc.receive()
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    await self._line(line)
                if len(buf) > MAX_LINE:
                    self.log.bad_lines.append(
                        (self.label, f"(a line longer than {MAX_LINE} bytes, dropped)"))
                    buf = b""
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            if buf.strip():
                await self._line(buf)
        finally:
            self._eof.set()
            for ev in self._waiters.values():
                ev.set()
            self._orphan_event.set()

    async def _line(self, line: bytes) -> None:
        text = line.rstrip(b"\r")
        if not text.strip():
            return
        if self._pending_text:
            # A message pretty-printed over several lines (an M015 defect): keep joining
            # lines until they parse, so the messages themselves are not lost.
            self._pending_text += b"\n" + text
            self._pending_lines += 1
            try:
                msg = orjson.loads(self._pending_text)
            except orjson.JSONDecodeError:
                if len(self._pending_text) > 1_000_000 or self._pending_lines > 200:
                    self.log.bad_lines.append((self.label, dump(self._pending_text[:2000])))
                    self._pending_text = b""
                return
            joined, self._pending_text = self._pending_text, b""
            self.log.bad_lines.append((self.label, "MULTILINE:" + dump(joined[:2000])))
            await self._dispatch(msg, joined)
            return
        try:
            msg = orjson.loads(text)
        except orjson.JSONDecodeError:
            several = _split_values(text)
            if several is not None:  # several messages on one line (an M014 defect)
                self.log.bad_lines.append((self.label, "JOINED:" + dump(text[:2000])))
                for value in several:
                    await self._dispatch(value, orjson.dumps(value))
                return
            if text.lstrip()[:1] in (b"{", b"["):
                self._pending_text = text
                self._pending_lines = 1
                return
            self.log.bad_lines.append((self.label, dump(text[:2000])))
            return
        await self._dispatch(msg, text)

    async def _dispatch(self, msg: Any, raw: bytes) -> None:
        self._record(msg, raw.decode("utf-8", "backslashreplace"), "stdout")
        if isinstance(msg, list):
            if msg and all(isinstance(m, dict) and "method" not in m for m in msg):
                self._orphans.append(msg)  # a batch response answers a raw batch we sent
                self._orphan_event.set()
                return
            for item in msg:
                await self._dispatch_one(item)
            return
        await self._dispatch_one(msg)

    async def _dispatch_one(self, msg: Any) -> None:
        if not isinstance(msg, dict):
            return
        if "method" in msg:
            if "id" in msg:
                await self._write(self._answer_for(msg))
            return
        rid = msg.get("id")
        key = _key(rid)
        if key in self._waiters and key not in self._answers:
            self._answers[key] = msg
            self._waiters[key].set()
        else:
            self._orphans.append(msg)
            self._orphan_event.set()

    async def _write(self, msg: Any) -> None:
        data = msg if isinstance(msg, bytes) else orjson.dumps(msg) + b"\n"
        if self._proc is None or self._eof.is_set():
            return
        try:
            await self._proc.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass

    def _others_since(self, start: int) -> list[Any]:
        return [
            r.msg for r in self.log.received[start:]
            if r.channel == self.label and isinstance(r.msg, dict) and "method" in r.msg
        ]

    async def request(
        self, method: str, params: Any = None, *, id: Any = None, timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        msg = self.make_request(method, params, id)
        return await self.exchange(msg, timeout=timeout)

    async def exchange(self, msg: dict[str, Any], *, timeout: float | None = None) -> Reply:
        """Send one request object and wait for the response carrying its id."""
        reply = Reply(sent=msg, transcript=[f"→ {dump(msg)}"])
        if self.start_error:
            reply.transcript.append(f"(server not running: {self.start_error})")
            reply.timed_out = True
            return reply
        key = _key(msg.get("id"))
        ev = anyio.Event()
        self._waiters[key] = ev
        self._answers.pop(key, None)
        start = len(self.log.received)
        await self._write(msg)
        with anyio.move_on_after(timeout if timeout is not None else self.timeout):
            if not self._eof.is_set():  # a dead server answers nothing: do not wait
                await ev.wait()
        self._waiters.pop(key, None)
        reply.msg = self._answers.pop(key, None)
        reply.others = self._others_since(start)
        for other in reply.others:
            reply.transcript.append(f"← {dump(other)}")
        if reply.msg is not None:
            reply.transcript.append(f"← {dump(reply.msg)}")
        else:
            reply.timed_out = True
            if self._eof.is_set():
                reply.transcript.append(f"(server closed stdout; stderr: {self.stderr_tail()!r})")
        return reply

    async def notify(self, method: str, params: Any = None) -> Reply:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        await self._write(msg)
        return Reply(sent=msg, transcript=[f"→ {dump(msg)}"])

    async def send_raw(
        self, data: bytes, *, wait: float | None = None, fence: dict[str, Any] | None = None
    ) -> Reply:
        """Write ``data`` (one line) and wait for a response no request of ours waits for.

        With ``fence`` (a harmless request sent right after), a server that answers the
        fence but not ``data`` is taken to have dropped ``data`` after a short grace, instead
        of waiting out the whole timeout: servers answer their stdin in order.
        """
        self.log.sent(self.label, data)
        shown = dump(data.rstrip(b"\n"))
        reply = Reply(sent=data, transcript=[f"→ {shown}"])
        self._orphans.clear()
        self._orphan_event = anyio.Event()
        start = len(self.log.received)
        await self._write(data if data.endswith(b"\n") else data + b"\n")
        limit = wait if wait is not None else self.timeout
        if fence is not None and not self._eof.is_set():
            fenced = await self.exchange(fence, timeout=limit)
            if not self._orphans and fenced.msg is not None:
                limit = 0.2
            reply.transcript.append(f"(then {fenced.transcript[0][2:]}: "
                                    f"{'answered' if fenced.msg is not None else 'no answer'})")
        with anyio.move_on_after(limit):
            await self._orphan_event.wait()
        reply.others = self._others_since(start)
        if self._orphans:
            reply.msg = self._orphans[0]
            reply.transcript.insert(1, f"← {dump(reply.msg)}")
        else:
            reply.timed_out = True
            if limit == 0.2:
                reply.transcript.append("(no answer to the first message, while the request "
                                        "after it was answered: the server dropped it)")
                reply.timed_out = False
        return reply

    async def wait_orphan(self, seconds: float) -> Reply:
        """Wait up to ``seconds`` for a response no request of ours is waiting for."""
        reply = Reply(sent=None)
        self._orphans.clear()
        self._orphan_event = anyio.Event()
        with anyio.move_on_after(seconds):
            await self._orphan_event.wait()
        if self._orphans:
            reply.msg = self._orphans[0]
            reply.transcript.append(f"← {dump(reply.msg)}")
        return reply

    async def quiet(self, seconds: float) -> list[Any]:
        """Wait ``seconds`` and return what the server sent meanwhile (unsolicited)."""
        start = len(self.log.received)
        await anyio.sleep(seconds)
        return [r.msg for r in self.log.received[start:] if r.channel == self.label]


async def _read_capped(resp: httpx.Response) -> bytes:
    """The body, or its first ``MAX_LINE`` bytes."""
    parts, size = [], 0
    async for chunk in resp.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size > MAX_LINE:
            break
    return b"".join(parts)[:MAX_LINE]


def _split_values(text: bytes) -> list[Any] | None:
    """Two or more JSON values written back to back on one line, else ``None``."""
    decoder = json.JSONDecoder()
    source = text.decode("utf-8", "replace").strip()
    values, pos = [], 0
    try:
        while pos < len(source):
            value, end = decoder.raw_decode(source, pos)
            values.append(value)
            pos = end
            while pos < len(source) and source[pos] in " \t":
                pos += 1
    except json.JSONDecodeError:
        return None
    return values if len(values) > 1 else None


def _key(rid: Any) -> Any:
    # 1 and 1.0 and True must not collide with each other or with "1".
    return (type(rid).__name__, rid)


# ------------------------------------------------------------------------------- HTTP


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
                    and _key(msg.get("id")) == _key(want_id)
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
            if answers and _key(m.get("id")) == _key(msg.get("id")):
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

