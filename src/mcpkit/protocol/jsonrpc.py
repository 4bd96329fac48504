"""JSON-RPC 2.0 envelopes: parse once with orjson, check with plain code, serialize once.

Invariants:
- A request id is a ``str`` or an ``int`` (never ``bool``, ``float`` or ``None``), and an
  ``int`` only in the 64-bit range orjson reads and writes (-2**63 to 2**64 - 1): orjson
  reads a longer integer in JSON text as a float, and cannot write a longer one back, so
  an id outside it (handed to ``receive_message`` by another decoder) is unreadable too.
- A response has exactly one of ``result`` / ``error``; MCP requires ``result`` and
  ``params`` to be JSON objects.
- A message that cannot be read produces a ``ProtocolError`` that knows the id to answer
  with when one could be read (``BadMessage.id``), else ``None``.
"""

from __future__ import annotations

import gc
from typing import Any, Final

import orjson

from .errors import InvalidRequest, ParseError, ProtocolError
from .record import Record

RequestId = str | int
JSONObject = dict[str, Any]


class Request(Record):
    __slots__ = ("id", "method", "params")

    def __init__(self, id: RequestId, method: str, params: JSONObject | None) -> None:
        self.id = id
        self.method = method
        self.params = params


class Notification(Record):
    __slots__ = ("method", "params")

    def __init__(self, method: str, params: JSONObject | None) -> None:
        self.method = method
        self.params = params


class Response(Record):
    __slots__ = ("id", "result")

    def __init__(self, id: RequestId, result: JSONObject) -> None:
        self.id = id
        self.result = result


class ErrorResponse(Record):
    __slots__ = ("code", "data", "id", "message")

    def __init__(self, id: RequestId | None, code: int, message: str, data: Any = None) -> None:
        self.id = id
        self.code = code
        self.message = message
        self.data = data


Message = Request | Notification | Response | ErrorResponse


class BadMessage(Exception):
    """A message that failed envelope checks: ``error`` is what to answer, ``id`` whom."""

    def __init__(self, error: ProtocolError, id: RequestId | None) -> None:
        super().__init__(error.message)
        self.error = error
        self.id = id


_INT_MIN: Final = -(2**63)
_INT_END: Final = 2**64


def is_valid_id(value: object) -> bool:
    """True for a JSON-RPC id MCP allows: a string or an integer (not bool/float/null),
    the integer one orjson can write back in the answer (64-bit)."""
    if type(value) is int:
        return _INT_MIN <= value < _INT_END
    return type(value) is str


DEFAULT_MAX_BATCH: Final = 100
"""Messages a JSON-RPC batch may hold (``Server(max_batch=...)``); more: -32600."""


def batch_too_large(size: int, limit: int) -> InvalidRequest:
    """The refusal of a batch of ``size`` messages, over ``limit``: before any of them is
    handled, so one body cannot hold the event loop for every other client."""
    return InvalidRequest(f"Invalid Request: a batch may hold at most {limit} messages; "
                          f"this one has {size}. Send them in smaller batches.")


def id_in_use(rid: RequestId) -> InvalidRequest:
    """The refusal of a request whose id is that of a request still in progress: made by
    the connection, and by a transport that routes answers by id (Streamable HTTP keys a
    POST's response stream by it, so it refuses before feeding), in the same words."""
    return InvalidRequest(f"Invalid Request: request id {rid!r} is already in use by a "
                          "request that is still in progress; use a new id for every "
                          "request.")


BIG_DOCUMENT: Final = 64 * 1024
"""Bytes from which ``loads`` pauses the cyclic garbage collector while parsing."""


def loads(data: bytes | str) -> Any:
    """``orjson.loads``; a document of ``BIG_DOCUMENT`` bytes or more is parsed with the
    cyclic garbage collector paused. Every array orjson builds is a new tracked object,
    and the collector's passes over the growing heap made a 4 MiB body of small arrays
    cost 5-6 times its parse (~600 ms instead of ~110 on the reference machine, see
    docs/performance.md). orjson holds the GIL throughout, so no other thread allocates
    meanwhile; a collector the application turned off stays off. The first collection
    after it still visits everything parsed (~100 ms for that shape) unless the document
    is freed first: a caller refusing it drops it before allocating its refusal."""
    if len(data) < BIG_DOCUMENT or not gc.isenabled():
        return orjson.loads(data)
    gc.disable()
    try:
        return orjson.loads(data)
    finally:
        gc.enable()


def unreadable(exc: orjson.JSONDecodeError) -> str:
    """Why orjson refused a document, in a few words for a ``ParseError``."""
    text = str(exc).lower()
    if "depth" in text:
        return ("it nests arrays and objects more than 1024 levels deep, past what this "
                "implementation reads (RFC 8259 §9); nest values at most 128 levels")
    return "invalid UTF-8" if "utf-8" in text else "invalid JSON"


def decode(data: bytes | str) -> Any:
    """Parse JSON text; invalid JSON or invalid UTF-8 raises ``ParseError``."""
    try:
        return orjson.loads(data) if len(data) < BIG_DOCUMENT else loads(data)
    except orjson.JSONDecodeError as exc:
        raise ParseError(
            f"Parse error: the message is not valid JSON ({unreadable(exc)}). Send one UTF-8 "
            "JSON-RPC 2.0 object per message (per line on stdio)."
        ) from None


def encode(message: JSONObject | list[JSONObject]) -> bytes:
    """Serialize a message (or batch) to compact UTF-8 JSON without newlines."""
    return orjson.dumps(message)


def compact(data: bytes) -> bytes:
    """An exact-size copy of ``data``, for bytes kept beyond the request that made them.

    ``orjson.dumps`` (3.13) hands back its whole write buffer: a 150-byte message holds
    about 4 KB (more for bigger ones), harmless for a message written and dropped at
    once, ~27 times its size for one kept in an event store or a backlog. The copy costs
    ~0.1 µs, so it is made where bytes are kept, never on the path of every message."""
    return b"".join((data, b""))


def parse_message(obj: Any) -> Message:
    """Classify a decoded JSON value as one MCP message; raise ``BadMessage`` if it is not."""
    if type(obj) is not dict:
        raise BadMessage(
            InvalidRequest("Invalid Request: a JSON-RPC message must be a JSON object."), None
        )
    raw_id = obj.get("id")
    has_id = "id" in obj
    good_id: RequestId | None = raw_id if is_valid_id(raw_id) else None
    if obj.get("jsonrpc") != "2.0":
        raise BadMessage(
            InvalidRequest('Invalid Request: the "jsonrpc" member must be exactly "2.0".'),
            good_id,
        )
    method = obj.get("method")
    if method is not None:
        if type(method) is not str or not method:
            raise BadMessage(
                InvalidRequest('Invalid Request: "method" must be a non-empty string.'), good_id
            )
        params = obj.get("params")
        if params is not None and type(params) is not dict:
            raise BadMessage(
                InvalidRequest('Invalid Request: "params" must be a JSON object when present.'),
                good_id,
            )
        if not has_id:
            return Notification(method, params)
        if good_id is None:
            raise BadMessage(
                InvalidRequest(
                    'Invalid Request: "id" must be a string or an integer (not null, '
                    "fractional, boolean, array or object)."
                ),
                None,
            )
        return Request(good_id, method, params)
    if "result" in obj:
        if "error" in obj:
            raise BadMessage(
                InvalidRequest('Invalid Request: a response has "result" or "error", not both.'),
                None,
            )
        result = obj["result"]
        if good_id is None or type(result) is not dict:
            raise BadMessage(
                InvalidRequest(
                    'Invalid Request: a result response needs a string/integer "id" and an '
                    'object "result".'
                ),
                None,
            )
        return Response(good_id, result)
    if "error" in obj:
        error = obj["error"]
        if (
            type(error) is not dict
            or type(error.get("code")) is not int
            or type(error.get("message")) is not str
        ):
            raise BadMessage(
                InvalidRequest(
                    'Invalid Request: "error" must be an object with an integer "code" and a '
                    'string "message".'
                ),
                None,
            )
        if raw_id is not None and good_id is None:
            raise BadMessage(InvalidRequest('Invalid Request: bad "id" in error response.'), None)
        return ErrorResponse(good_id, error["code"], error["message"], error.get("data"))
    raise BadMessage(
        InvalidRequest(
            'Invalid Request: a message needs "method" (request/notification) or '
            '"result"/"error" (response).'
        ),
        good_id,
    )


def request(id: RequestId, method: str, params: JSONObject | None) -> JSONObject:
    msg: JSONObject = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: JSONObject | None) -> JSONObject:
    msg: JSONObject = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def result(id: RequestId, value: JSONObject) -> JSONObject:
    return {"jsonrpc": "2.0", "id": id, "result": value}


def error(id: RequestId | None, err: JSONObject) -> JSONObject:
    """An error response; ``id`` is ``None`` (sent as null) when the request id was unreadable."""
    return {"jsonrpc": "2.0", "id": id, "error": err}


def without_meta_key(obj: JSONObject, key: str) -> JSONObject:
    """``obj`` without ``_meta[key]`` (and without ``_meta`` when nothing else is left in
    it); ``obj`` itself, not a copy, when it has no such key. Used where a layer strips
    its own bookkeeping before passing a message on: the related-task key of an inlined
    result, the subscription id a listen stream tagged a notification with."""
    meta = obj.get("_meta")
    if not isinstance(meta, dict) or key not in meta:
        return obj
    out = {k: v for k, v in obj.items() if k != "_meta"}
    rest = {k: v for k, v in meta.items() if k != key}
    if rest:
        out["_meta"] = rest
    return out
