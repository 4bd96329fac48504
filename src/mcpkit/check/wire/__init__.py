"""Raw channels to the server under test: what every channel shares, and the record of
everything that crossed it.

The checker cannot use a well-behaved client: it must send malformed JSON, requests before
``initialize``, wrong headers, and it must see every byte the server answers with, however
broken. So a channel speaks JSON-RPC by hand, over stdio
(:class:`~mcpkit.check.wire.stdio.StdioChannel`) or Streamable HTTP
(:class:`~mcpkit.check.wire.http.HttpChannel`). This module holds what both share: the
:class:`Channel` interface (ids, the log, the answer to a server's request), a request's
outcome (:class:`Reply`) and the :class:`WireLog`.

Every message received goes into a :class:`WireLog` with what it answered, so the judges can
validate it later against the negotiated revision's schema. Requests the server sends to the
checker are answered at once: ``ping`` with ``{}``, anything else with -32601 (the checker
declares no client capabilities). Every wait is bounded by a timeout.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..model import trim

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
                ids.add(id_key(item["id"]))


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


def id_key(rid: Any) -> Any:
    """A request id as a dict/set key: 1, 1.0 and True must not collide with each other
    or with "1"."""
    return (type(rid).__name__, rid)
