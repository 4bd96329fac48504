"""The server side of ``Connection``, property-based: whatever the peer sends, the answer
is the one the specification gives, and nothing the peer sends raises.

``Spec`` below is the oracle: a server written from JSON-RPC 2.0 and the MCP revisions,
not from mcpkit's code. It reads one JSON value (or one framed line) at a time and says
which answers must go out (results and errors, with their ids and codes), which requests
reach the handler (``RequestReceived``) and which the peer cancels. The rules it applies:

- Framing (stdio): a line longer than the limit is -32600 with id null; a line that is not
  JSON is -32700 with id null; blank lines are nothing.
- JSON-RPC 2.0: a message must be an object with ``"jsonrpc": "2.0"``; a request has a
  string ``method`` (mcpkit: not empty) and, if present, object ``params`` (MCP: an
  object, never an array; mcpkit reads ``"params": null`` as absent, as clients in the
  wild send it, where JSON-RPC would refuse it); its id is a string or an integer (MCP:
  never null, fractional or boolean; mcpkit: the 64-bit integers orjson carries). A
  message that breaks these is -32600, answered with its id if that could be read, else
  null (2025-11-25: the id is omitted; its schema forbids null). A notification (no
  ``id``) is never answered, even an unknown one. A well-formed response is dropped
  (this server sent no request); a malformed one is -32600 with id null. Batches exist
  only in 2025-03-26: an empty one is a single -32600, each element is answered as if
  alone, ``initialize`` may not be in one, and the answers go out as one array once all
  are in (none at all for a batch of notifications).
- MCP, stateful revisions: before ``initialize`` only ``initialize`` and ``ping`` are
  served, until ``notifications/initialized`` only ``ping``, and ``initialize`` once
  (-32600 otherwise); bad ``initialize`` params are -32602; the server answers with the
  revision asked for if it speaks it, else its newest; a method the revision lacks, or
  whose capability the server did not declare, is -32601; ``logging/setLevel`` with an
  unknown level is -32602; a request id still in flight is -32600; ``ping`` and
  ``logging/setLevel`` are answered by the connection, other requests by the handler.
  ``notifications/cancelled`` for a request in flight takes it out of flight, unanswered.
- MCP 2026-07-28: a request whose ``params._meta`` names a protocol version is judged by
  that metadata alone, whatever the session: malformed fields -32602, then a version the
  server does not serve -32022, then the revision's method set and capabilities -32601;
  ``server/discover`` is answered by the connection.

Every test starts a server in each state where the rules apply: after a completed
handshake on each stateful revision, and fresh with no handshake (where 2026-07-28
requests are served, and everything else meets the handshake rules). Each answer must
also be tagged for Streamable HTTP (``Outgoing.related``): with its request's id, and a
batch's array with the id of the batch's first request.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import pairwise
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpkit.protocol.connection import (
    CancelRequested,
    Connection,
    Event,
    RequestReceived,
)
from mcpkit.protocol.errors import LocalProtocolError
from mcpkit.protocol.lifecycle import Role

# ------------------------------------------------------------------ the specification

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
UNSUPPORTED_VERSION = -32022

V2024, V2025_03, V2025_06, V2025_11, MODERN = (
    "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
STATEFUL = (V2024, V2025_03, V2025_06, V2025_11)
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
CI = "io.modelcontextprotocol/clientInfo"
LL = "io.modelcontextprotocol/logLevel"
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

_BASE = frozenset({
    "initialize", "ping", "resources/list", "resources/templates/list", "resources/read",
    "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get",
    "tools/list", "tools/call", "logging/setLevel", "completion/complete",
})
CLIENT_METHODS = {  # the requests a client may send, per revision (the schemas)
    V2024: _BASE,
    V2025_03: _BASE,
    V2025_06: _BASE,
    V2025_11: _BASE | {"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"},
    MODERN: frozenset({
        "server/discover", "resources/list", "resources/templates/list", "resources/read",
        "subscriptions/listen", "prompts/list", "prompts/get", "tools/list", "tools/call",
        "completion/complete", "tasks/get", "tasks/update", "tasks/cancel",
    }),
}
CAPABILITY = {  # the server capability each request needs: (key, sub-key or None)
    "resources/list": ("resources", None),
    "resources/templates/list": ("resources", None),
    "resources/read": ("resources", None),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "prompts/list": ("prompts", None),
    "prompts/get": ("prompts", None),
    "tools/list": ("tools", None),
    "tools/call": ("tools", None),
    "logging/setLevel": ("logging", None),
    "completion/complete": ("completions", None),
    "tasks/get": ("tasks", None),  # a server with task tools declares tasks (all of it)
    "tasks/result": ("tasks", None),
    "tasks/list": ("tasks", None),
    "tasks/cancel": ("tasks", None),
    "tasks/update": ("tasks", None),
}
SERVER_CAPS = [
    {"tools": {}, "prompts": {}, "resources": {"subscribe": True}, "logging": {},
     "completions": {}},
    {"tools": {"listChanged": True}, "resources": {}},
    {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
    {},
]
UNREAD = "<no id>"  # an error about an unreadable id, in a revision that omits the id


def readable_id(value: Any) -> bool:
    return type(value) is str or (type(value) is int and -(2**63) <= value < 2**64)


class Batch:
    def __init__(self, key: Any) -> None:
        self.parts: list[Any] = []
        self.key = key  # what Streamable HTTP names its answer by: the first request id


class Spec:
    """The server the specification describes (see the module docstring)."""

    def __init__(self, caps: dict[str, Any], version: str | None, limit: int) -> None:
        self.caps = caps
        self.version = version  # the session's revision; None before initialize
        self.state = "ready" if version else "new"
        self.limit = limit
        self.in_flight: dict[Any, tuple[str, Batch | None]] = {}
        self.singles: list[Any] = []  # answers to single messages, in no particular order
        self.batches: list[Batch] = []
        self.delivered: list[tuple[Any, str]] = []  # RequestReceived (id, method)
        self.cancelled: list[Any] = []
        self.accepted: Counter[Any] = Counter()  # ids served (past every gate)
        self.protected: Any = None  # a request the test answers itself, later

    # --------------------------------------------------------------- input

    def take_value(self, value: Any) -> None:
        if type(value) is list:
            self._batch(value)
        else:
            self._single(value, None)

    def take_line(self, line: bytes) -> None:
        """One framed line (without its LF)."""
        if len(line) > self.limit:
            self._error(None, INVALID_REQUEST, self.singles)
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return
        try:
            value = orjson.loads(line)  # what the transport reads (64-bit integers)
        except orjson.JSONDecodeError:
            self._error(None, PARSE_ERROR, self.singles)
            return
        self.take_value(value)

    def take_stream(self, data: bytes) -> None:
        """A whole stream, ended by EOF."""
        for line in data.split(b"\n"):
            self.take_line(line)

    # --------------------------------------------------------------- rules

    def _result(self, rid: Any, what: Any, sink: list[Any]) -> None:
        self.accepted[rid] += 1
        sink.append(("result", rid, what))

    def _error(self, rid: Any, code: int, sink: list[Any]) -> None:
        if rid is None and self.version == V2025_11:
            rid = UNREAD
        sink.append(("error", rid, code))

    def _batch(self, items: list[Any]) -> None:
        if self.version != V2025_03 or not items:
            self._error(None, INVALID_REQUEST, self.singles)
            return
        key = next((m["id"] for m in items if type(m) is dict and "method" in m
                    and "id" in m and readable_id(m["id"])), None)
        batch = Batch(key)
        self.batches.append(batch)
        for item in items:
            self._single(item, batch)

    def _single(self, msg: Any, batch: Batch | None) -> None:
        sink = batch.parts if batch is not None else self.singles
        if type(msg) is not dict:
            self._error(None, INVALID_REQUEST, sink)
            return
        rid = msg.get("id")
        known = rid if readable_id(rid) else None
        if msg.get("jsonrpc") != "2.0":
            self._error(known, INVALID_REQUEST, sink)
            return
        method = msg.get("method")
        if method is not None:
            params = msg.get("params")
            if type(method) is not str or not method or (
                    params is not None and type(params) is not dict):
                self._error(known, INVALID_REQUEST, sink)
            elif "id" not in msg:
                self._notification(method, params or {})
            elif known is None or (batch is not None and method == "initialize"):
                self._error(known, INVALID_REQUEST, sink)
            else:
                self._request(known, method, params or {}, batch, sink)
            return
        if "result" in msg:
            if "error" in msg or known is None or type(msg["result"]) is not dict:
                self._error(None, INVALID_REQUEST, sink)
            return  # a response to nothing of ours: dropped
        if "error" in msg:
            err = msg["error"]
            if (type(err) is not dict or type(err.get("code")) is not int
                    or type(err.get("message")) is not str or (rid is not None and known is None)):
                self._error(None, INVALID_REQUEST, sink)
            return
        self._error(known, INVALID_REQUEST, sink)

    def _has(self, method: str) -> bool:
        need = CAPABILITY.get(method)
        if need is None:
            return True
        key, sub = need
        if key not in self.caps or self.caps[key] is None:
            return False
        return sub is None or bool(self.caps[key].get(sub))

    def _request(self, rid: Any, method: str, params: dict[str, Any], batch: Batch | None,
                 sink: list[Any]) -> None:
        if rid in self.in_flight:
            self._error(rid, INVALID_REQUEST, sink)
            return
        meta = params.get("_meta")
        if type(meta) is dict and PV in meta:
            self._modern(rid, method, meta, batch, sink)
            return
        allowed = {"new": {"initialize", "ping"}, "initializing": {"ping"}}.get(self.state)
        if (allowed is not None and method not in allowed) or (
                self.state == "ready" and method == "initialize"):
            self._error(rid, INVALID_REQUEST, sink)
            return
        if method == "initialize":
            version, caps, info = (params.get("protocolVersion"), params.get("capabilities"),
                                   params.get("clientInfo"))
            if (type(version) is not str or type(caps) is not dict or type(info) is not dict
                    or type(info.get("name")) is not str):
                self._error(rid, INVALID_PARAMS, sink)
                return
            self.version = version if version in STATEFUL else V2025_11
            self.state = "initializing"
            self._result(rid, ("initialize", self.version), sink)
            return
        if (self.version is not None and method not in CLIENT_METHODS[self.version]) or (
                not self._has(method)):
            self._error(rid, METHOD_NOT_FOUND, sink)
        elif method == "ping":
            self._result(rid, "empty", sink)
        elif method == "logging/setLevel":  # served by the connection, even a bad level
            if params.get("level") in LEVELS:
                self._result(rid, "empty", sink)
            else:
                self.accepted[rid] += 1
                self._error(rid, INVALID_PARAMS, sink)
        else:
            self._deliver(rid, method, batch)

    def _modern(self, rid: Any, method: str, meta: dict[str, Any], batch: Batch | None,
                sink: list[Any]) -> None:
        version, level = meta[PV], meta.get(LL)
        if type(version) is not str or type(meta.get(CC)) is not dict or (
                level is not None and level not in LEVELS):
            self._error(rid, INVALID_PARAMS, sink)
        elif version != MODERN:
            self._error(rid, UNSUPPORTED_VERSION, sink)
        elif method not in CLIENT_METHODS[MODERN] or not self._has(method):
            self._error(rid, METHOD_NOT_FOUND, sink)
        elif method == "server/discover":
            self._result(rid, "discover", sink)
        else:
            self._deliver(rid, method, batch)

    def _deliver(self, rid: Any, method: str, batch: Batch | None) -> None:
        self.accepted[rid] += 1
        self.in_flight[rid] = (method, batch)
        self.delivered.append((rid, method))

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            rid = params.get("requestId")
            if readable_id(rid) and rid in self.in_flight:
                _, batch = self.in_flight.pop(rid)
                self.cancelled.append(rid)
                if batch is None:  # no answer will come: its exchange is withdrawn
                    self.singles.append(("withdrawn", rid))
        elif method == "notifications/initialized" and self.state == "initializing":
            self.state = "ready"

    # --------------------------------------------------------------- output

    def handler_answers(self) -> None:
        """The handler answers every request in flight but the protected one."""
        for rid, (method, batch) in list(self.in_flight.items()):
            if rid != self.protected:
                del self.in_flight[rid]
                (batch.parts if batch is not None else self.singles).append(
                    ("result", rid, ("handled", method)))

    def expected(self) -> Counter[Any]:
        """Everything due so far (then forgotten): single answers and complete batches."""
        out = Counter(self.singles)
        waiting = {id(b) for _, b in self.in_flight.values() if b is not None}
        for batch in self.batches:
            if id(batch) not in waiting and batch.parts:
                out[("batch", tuple(sorted(batch.parts, key=repr)))] += 1
            elif id(batch) not in waiting and batch.key is not None:
                out[("withdrawn", batch.key)] += 1  # every request of it was cancelled
        self.singles = []
        self.batches = [b for b in self.batches if id(b) in waiting]
        return out


# ------------------------------------------------------------------ the connection side


def answer_shape(msg: Any) -> Any:
    """An answer on the wire as the spec's tuple, after checking its JSON-RPC shape."""
    assert type(msg) is dict and msg.get("jsonrpc") == "2.0", msg
    assert ("result" in msg) != ("error" in msg) and set(msg) <= {
        "jsonrpc", "id", "result", "error"}, msg
    rid = msg["id"] if "id" in msg else UNREAD
    if "error" in msg:
        err = msg["error"]
        assert type(err) is dict and type(err.get("code")) is int, msg
        assert type(err.get("message")) is str and err["message"].strip(), msg
        return ("error", rid, err["code"])
    res = msg["result"]
    assert type(res) is dict and "id" in msg, msg
    if "handled" in res:
        return ("result", rid, ("handled", res["handled"]))
    if "protocolVersion" in res:
        return ("result", rid, ("initialize", res["protocolVersion"]))
    if "supportedVersions" in res:
        assert MODERN in res["supportedVersions"], res
        return ("result", rid, "discover")
    assert res == {}, msg
    return ("result", rid, "empty")


class Harness:
    """A server ``Connection`` beside its ``Spec``; the test's handler answers every
    request the connection delivers (but the protected one) with ``{"handled": method}``."""

    def __init__(self, setup: str, caps: dict[str, Any], limit: int = 4096) -> None:
        self.conn = Connection(Role.SERVER, info={"name": "props", "version": "1"},
                               capabilities=caps, max_message_size=limit)
        version = None if setup == "fresh" else setup
        if version is not None:
            self.conn.receive_message({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                                       "params": {"protocolVersion": version,
                                                  "capabilities": {},
                                                  "clientInfo": {"name": "c", "version": "1"}}})
            self.conn.receive_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
            (init,) = self.conn.messages_to_send()
            assert orjson.loads(init.data)["result"]["protocolVersion"] == version
        self.spec = Spec(caps, version, limit)
        self.live: dict[Any, str] = {}  # requests delivered and not answered or cancelled
        self.delivered: list[tuple[Any, str]] = []
        self.cancelled: list[Any] = []

    def saw(self, events: list[Event]) -> None:
        for ev in events:
            if type(ev) is RequestReceived:
                assert ev.id not in self.live, f"request {ev.id!r} delivered twice"
                self.live[ev.id] = ev.method
                self.delivered.append((ev.id, ev.method))
            elif type(ev) is CancelRequested:
                assert self.live.pop(ev.id, None) is not None, f"cancelled {ev.id!r}: not live"
                self.cancelled.append(ev.id)

    def message(self, value: Any) -> None:
        self.saw(self.conn.receive_message(value))
        self.spec.take_value(value)

    def line(self, line: bytes) -> None:
        self.saw(self.conn.receive_data(line + b"\n"))
        self.spec.take_stream(line + b"\n")  # garbage may hold line ends of its own

    def handler_answers(self) -> None:
        for rid, method in list(self.live.items()):
            if rid != self.spec.protected:
                del self.live[rid]
                assert self.conn.send_result(rid, {"handled": method}) is True
        self.spec.handler_answers()

    def check(self) -> None:
        """The answers due are exactly the spec's; each names its request for HTTP (an
        answer its id, a batch's array the batch's first request id); the same requests
        were delivered and cancelled."""
        got: Counter[Any] = Counter()
        for out in self.conn.messages_to_send():
            assert out.final, out  # a server answering (no notifications here)
            if not out.data:  # withdrawn: the peer cancelled it (or its whole batch)
                got[("withdrawn", out.related)] += 1
                continue
            msg = orjson.loads(out.data)
            if type(msg) is list:
                parts = tuple(sorted((answer_shape(m) for m in msg), key=repr))
                assert parts, "an empty array is never sent"
                got[("batch", parts)] += 1
                keys = {b.key for b in self.spec.batches if b.parts
                        and tuple(sorted(b.parts, key=repr)) == parts}
                assert out.related in keys, (out.related, keys)
            else:
                answer = answer_shape(msg)
                got[answer] += 1
                rid = answer[1]
                assert out.related == (None if rid is UNREAD else rid), (out.related, msg)
        assert got == self.spec.expected()
        assert Counter(self.delivered) == Counter(self.spec.delivered)
        assert self.cancelled == self.spec.cancelled


# ------------------------------------------------------------------ near-valid JSON-RPC

_HOT_IDS = st.sampled_from([1, "a"])
_ID_POOL = st.sampled_from([1, 2, 0, "a", "", "1", 2**64 - 1, -(2**63)])
ids = st.one_of(_HOT_IDS, _ID_POOL, _ID_POOL, st.integers(), st.text(max_size=3))  # collide
bad_ids = st.sampled_from(
    [None, True, False, 1.5, 1.0, -0.0, 1e300, {}, [], [1], {"id": 1}, 2**64, -(2**63) - 1,
     10**30, -(10**30)]
)
text = st.text(max_size=6)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                          allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
junk = st.one_of(
    st.sampled_from([None, True, 0, 2.5, "", "x", [], [1, 2], {}, {"a": 1}]), json_values
)
request_methods = st.sampled_from(  # mostly served ones
    sorted(_BASE) * 3 + ["initialize"] * 6 + sorted(CLIENT_METHODS[MODERN]) * 2 + sorted(
        CLIENT_METHODS[V2025_11] - _BASE | {
            "sampling/createMessage", "roots/list", "elicitation/create", "nope/x",
            "tools/List", "notifications/cancelled"})
)
notification_methods = st.sampled_from([
    "notifications/cancelled", "notifications/cancelled", "notifications/cancelled",
    "notifications/initialized", "notifications/initialized",
    "notifications/progress", "notifications/roots/list_changed", "notifications/unknown",
    "ping", "tools/list",
])
_VALID_MODERN = st.fixed_dictionaries(
    {PV: st.just(MODERN), CC: st.sampled_from([{}, {"sampling": {}}])},
    optional={CI: st.just({"name": "c", "version": "1"}), LL: st.sampled_from(LEVELS),
              "progressToken": ids},
)
_BROKEN_MODERN = st.tuples(_VALID_MODERN, st.sampled_from([PV, CC, LL, CI, "progressToken"]),
                           st.sampled_from([V2025_11, "2099-01-01", "", None, 2026, [MODERN],
                                            {}, "x", "DEBUG", 3, "<delete>", True])).map(
    lambda t: {**{k: v for k, v in t[0].items() if k != t[1]},
               **({} if t[2] == "<delete>" else {t[1]: t[2]})})
metas = st.one_of(  # _meta: 2026-07-28 (valid, broken), progress only, anything
    _VALID_MODERN, _VALID_MODERN, _VALID_MODERN, _BROKEN_MODERN, _BROKEN_MODERN,
    st.fixed_dictionaries({}, optional={"progressToken": ids | bad_ids}), junk,
)


@st.composite
def params_for(draw: st.DrawFn, method: str) -> Any:
    params: dict[str, Any]
    if method == "initialize":
        params = {
            "protocolVersion": draw(st.sampled_from([*STATEFUL, MODERN, "2099-01-01"])),
            "capabilities": draw(st.sampled_from([{}, {"roots": {}}])),
            "clientInfo": draw(st.sampled_from([{"name": "c", "version": "1"}])
                               | st.dictionaries(text, json_values, max_size=2).map(
                                   lambda d: {**d, "name": "c"})),
        }
        if draw(st.integers(0, 2)) == 0:  # one of them missing or wrong
            key = draw(st.sampled_from(sorted(params)))
            bad = draw(st.sampled_from(["<delete>", None, 20241105, [], "c", {"name": 5}]))
            if bad == "<delete>":
                del params[key]
            else:
                params[key] = bad
    elif method == "logging/setLevel":
        params = draw(st.fixed_dictionaries({}, optional={
            "level": st.sampled_from([*LEVELS, "DEBUG", "verbose", None, 3])}))
    elif method == "notifications/cancelled":
        params = draw(st.fixed_dictionaries({"requestId": st.one_of(_HOT_IDS, _HOT_IDS, ids,
                                                                    bad_ids)},
                                            optional={"reason": text | junk}))
    else:
        params = draw(st.dictionaries(st.sampled_from(["name", "uri", "cursor", "arguments"]),
                                      json_values, max_size=2))
    if method != "notifications/cancelled" and draw(st.booleans()):
        params["_meta"] = draw(metas)
    return params


_BREAKS = st.tuples(
    st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]),
    st.one_of(st.just("<delete>"), bad_ids, junk, st.sampled_from(["1.0", "2.0 ", 2.0])),
)


@st.composite
def envelopes(draw: st.DrawFn) -> Any:
    """A valid request (stateful or 2026-07-28), notification or response, then now and
    then broken in a place or two: a member deleted or given a value of the wrong type or
    range."""
    kind = draw(st.sampled_from(["request"] * 4 + ["modern"] * 3 + ["notification"] * 3
                                + ["result", "error"]))
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind == "modern":  # a 2026-07-28 request, its _meta valid or broken in one field
        method = draw(st.sampled_from([*sorted(CLIENT_METHODS[MODERN]), "ping", "initialize"]))
        params = draw(params_for(method))
        params["_meta"] = draw(st.one_of(_VALID_MODERN, _VALID_MODERN, _BROKEN_MODERN))
        msg.update(id=draw(ids), method=method, params=params)
    elif kind in ("request", "notification"):
        method = draw(request_methods if kind == "request" else notification_methods)
        msg["method"] = method
        if kind == "request":
            msg["id"] = draw(ids)
        if draw(st.integers(0, 4)):
            msg["params"] = draw(params_for(method))
    else:
        msg["id"] = draw(ids)
        if kind == "result":
            msg["result"] = draw(st.sampled_from([{}, {"x": 1}]) | junk)
        else:
            msg["error"] = draw(st.sampled_from([{"code": -32601, "message": "no"}]) | junk)
    for field, value in draw(st.lists(_BREAKS, max_size=draw(st.sampled_from([0, 0, 1, 2])))):
        if value == "<delete>":
            msg.pop(field, None)
        else:
            msg[field] = value
    return msg


_batches = st.lists(envelopes() | junk | st.lists(envelopes(), max_size=2), max_size=4)
messages = st.sampled_from(["envelope"] * 6 + ["batch", "junk"]).flatmap(
    lambda kind: {"envelope": envelopes(), "batch": _batches, "junk": junk}[kind])
garbage = st.one_of(
    st.binary(max_size=12),
    st.sampled_from([b"not json", b'{"jsonrpc":"2.0",', b"\xff\xfe", b'{"a":"\xc3\x28"}',
                     b"NaN", b'"\\ud800"', b"1e400", b"  ", b"\r", b"[]", b"{}",
                     b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r',
                     b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}',
                     b'{"jsonrpc":"2.0","id":1,"method":"ping","id":"x"}']),
    st.integers(5000, 6000).map(lambda n: b'{"jsonrpc":"2.0","id":1,"method":"ping","p":"'
                                + b"x" * n + b'"}'),
)


def as_line(value: Any) -> bytes:
    """JSON text for ``value`` as any peer may write it (integers of any size)."""
    return json.dumps(value).encode()


_cancel = _HOT_IDS.map(lambda rid: ("message", {
    "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}))
inputs = st.sampled_from(["message"] * 3 + ["line", "garbage", "cancel"]).flatmap(
    # one input: a value fed decoded, the same value as a JSON line, raw bytes, or the
    # cancellation of a request whose id is common (likely in flight, perhaps protected)
    lambda how: {"garbage": garbage.map(lambda b: ("line", b)), "cancel": _cancel}.get(
        how, messages.map(lambda v: (how, v if how == "message" else as_line(v)))))

SETUPS = [*STATEFUL, "fresh"]


def _handshake(version: str) -> list[tuple[str, Any]]:
    init = {"jsonrpc": "2.0", "id": "hello", "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "c", "version": "1"}}}
    return [("message", init), ("message", {"jsonrpc": "2.0",
                                            "method": "notifications/initialized"})]


# Inputs, perhaps after a handshake or half of one (a fresh server then serves the
# handshake era; a ready one refuses a second initialize and ignores the notification).
feeds = st.tuples(
    st.sampled_from([*STATEFUL, "2099-01-01"]).flatmap(
        lambda v: st.sampled_from([[], _handshake(v)[:1], _handshake(v)])),
    st.lists(inputs, min_size=1, max_size=6),
).map(lambda t: t[0] + t[1])


def _feed(h: Harness, how: str, what: Any) -> None:
    if how == "message":
        h.message(what)
    else:
        h.line(what)


# ------------------------------------------------------------------ properties


@pytest.mark.parametrize("setup", SETUPS)
@given(st.sampled_from(SERVER_CAPS), feeds)
def test_every_input_gets_the_spec_answer(
    setup: str, caps: dict[str, Any], feed: list[tuple[str, Any]]
) -> None:
    """One input at a time (each answered by the handler before the next): nothing raises,
    and what goes out is exactly the spec's answer to it."""
    h = Harness(setup, caps)
    for how, what in feed:
        _feed(h, how, what)
        h.handler_answers()
        h.check()


@pytest.mark.parametrize("setup", SETUPS)
@given(st.sampled_from(SERVER_CAPS), feeds,
       st.lists(st.integers(min_value=1, max_value=100_000), max_size=10))
def test_any_stream_in_any_chunks_gets_the_spec_answers(
    setup: str, caps: dict[str, Any], feed: list[tuple[str, Any]], cuts: list[int]
) -> None:
    """Many inputs in one byte stream, cut anywhere, ended by EOF; requests stay in flight
    until the handler answers them all at the end (so ids collide and cancellations land)."""
    stream = b"\n".join(as_line(w) if how == "message" else w for how, w in feed)
    h = Harness(setup, caps, limit=1024)
    bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    for a, b in pairwise(bounds):
        h.saw(h.conn.receive_data(stream[a:b]))
    h.saw(h.conn.receive_eof())
    h.spec.take_stream(stream)
    h.handler_answers()
    h.check()


def _protected_request(setup: str, rid: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "slow", "arguments": {}}
    if setup == "fresh":
        params["_meta"] = {PV: MODERN, CC: {}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


@pytest.mark.parametrize("setup", SETUPS)
@given(st.sampled_from([1, "a", 0, 2**64 - 1]), feeds)
def test_hostile_input_does_not_disturb_a_request_in_flight(
    setup: str, rid: Any, feed: list[tuple[str, Any]]
) -> None:
    """A request is in flight (delivered, not answered); then anything arrives; then its
    handler answers: the answer goes out with its id (unless the peer validly cancelled
    it), and the connection still serves a new request. Fresh: the request is a
    2026-07-28 one, served with no handshake."""
    h = Harness(setup, SERVER_CAPS[0])
    h.message(_protected_request(setup, rid))
    assert h.delivered == [(rid, "tools/call")]
    h.spec.protected = rid
    for how, what in feed:
        _feed(h, how, what)
        if rid in h.spec.cancelled:
            h.spec.protected = None  # the peer cancelled it: its id is free for reuse
        h.handler_answers()
        h.check()
    if rid in h.spec.cancelled:  # the peer cancelled it: a late answer never goes out
        try:
            assert h.conn.send_result(rid, {"handled": "late"}) is False  # dropped
        except LocalProtocolError:  # ... unless the peer reused the id since (MCP forbids
            assert h.spec.accepted[rid] > 1  # it) and that request was answered
        assert h.conn.messages_to_send() == []
        return
    assert h.conn.send_result(rid, {"handled": "tools/call"}) is True
    (out,) = h.conn.messages_to_send()
    assert out.related == rid and out.final
    assert answer_shape(orjson.loads(out.data)) == ("result", rid, ("handled", "tools/call"))
    with pytest.raises(LocalProtocolError):
        h.conn.send_result(rid, {})  # answered once
    h.spec.protected = None
    del h.spec.in_flight[rid]
    del h.live[rid]
    h.message(_protected_request(setup, "after"))
    assert h.delivered[-1] == ("after", "tools/call")
    h.handler_answers()
    h.check()
