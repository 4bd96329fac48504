"""JSON-RPC 2.0 envelopes: decode, classify (parse_message), encode."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcpkit.protocol import jsonrpc
from mcpkit.protocol.errors import (
    INVALID_REQUEST,
    PARSE_ERROR,
    InvalidRequest,
    ParseError,
)
from mcpkit.protocol.jsonrpc import (
    BadMessage,
    ErrorResponse,
    Notification,
    Request,
    Response,
    decode,
    encode,
    is_valid_id,
    parse_message,
    without_meta_key,
)


def bad(obj: Any) -> BadMessage:
    with pytest.raises(BadMessage) as info:
        parse_message(obj)
    return info.value


# ------------------------------------------------------------------ valid messages


def test_request_with_params() -> None:
    msg = parse_message(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}
    )
    assert msg == Request(1, "tools/call", {"name": "x"})


def test_request_without_params() -> None:
    assert parse_message({"jsonrpc": "2.0", "id": "abc", "method": "ping"}) == Request(
        "abc", "ping", None
    )


@pytest.mark.parametrize("rid", [0, -1, 7, 2**53, "", "x", "uuid-1234"])
def test_request_id_string_or_int(rid: str | int) -> None:
    msg = parse_message({"jsonrpc": "2.0", "id": rid, "method": "ping"})
    assert type(msg) is Request
    assert msg.id == rid
    assert type(msg.id) is type(rid)


def test_notification() -> None:
    assert parse_message({"jsonrpc": "2.0", "method": "notifications/initialized"}) == Notification(
        "notifications/initialized", None
    )
    assert parse_message(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
    ) == Notification("notifications/cancelled", {"requestId": 3})


def test_response() -> None:
    assert parse_message({"jsonrpc": "2.0", "id": 4, "result": {}}) == Response(4, {})
    assert parse_message({"jsonrpc": "2.0", "id": "s", "result": {"a": [1]}}) == Response(
        "s", {"a": [1]}
    )


def test_error_response() -> None:
    msg = parse_message(
        {"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "nope", "data": [1]}}
    )
    assert msg == ErrorResponse(5, -32601, "nope", [1])


def test_error_response_without_data() -> None:
    msg = parse_message({"jsonrpc": "2.0", "id": 5, "error": {"code": 1, "message": "m"}})
    assert msg == ErrorResponse(5, 1, "m", None)


@pytest.mark.parametrize("extra", [{"id": None}, {}])
def test_error_response_with_null_or_missing_id(extra: dict[str, Any]) -> None:
    # An answer to a message whose id could not be read (JSON-RPC 2.0 §5; 2025-11-25 omits it).
    msg = parse_message({"jsonrpc": "2.0", "error": {"code": -32700, "message": "m"}, **extra})
    assert msg == ErrorResponse(None, -32700, "m", None)


# ------------------------------------------------------------------ refused ids


@pytest.mark.parametrize(
    "rid",
    [None, 1.5, 1.0, True, False, {}, {"a": 1}, [], [1]],
    ids=["null", "float", "integral-float", "true", "false", "obj", "obj2", "arr", "arr2"],
)
def test_request_bad_id_refused_with_null_reply_id(rid: Any) -> None:
    err = bad({"jsonrpc": "2.0", "id": rid, "method": "ping"})
    assert type(err.error) is InvalidRequest
    assert err.error.code == INVALID_REQUEST == -32600
    assert err.id is None
    assert '"id" must be a string or an integer' in err.error.message


def test_integral_float_id_from_wire_is_refused() -> None:
    # orjson keeps 1.0 a float: it must not be confused with the integer 1.
    obj = decode(b'{"jsonrpc":"2.0","id":1.0,"method":"ping"}')
    assert type(obj["id"]) is float
    assert bad(obj).id is None


@pytest.mark.parametrize("rid", [None, 1.5, True, {}, []])
def test_is_valid_id_refuses(rid: Any) -> None:
    assert is_valid_id(rid) is False


@pytest.mark.parametrize("rid", [0, 1, -5, "", "a", 2**64 - 1, -(2**63)])
def test_is_valid_id_accepts(rid: Any) -> None:
    assert is_valid_id(rid) is True


@pytest.mark.parametrize("rid", [2**64, -(2**63) - 1, 10**30])
def test_is_valid_id_refuses_integers_orjson_cannot_write_back(rid: int) -> None:
    """orjson reads such an integer in JSON text as a float (refused as an id), and cannot
    serialize it in the answer: decoded by another library, it is unreadable too."""
    assert is_valid_id(rid) is False
    with pytest.raises(TypeError):
        orjson.dumps(rid)


@pytest.mark.parametrize("rid", [None, 1.5, True, [1]])
def test_result_response_bad_id_refused(rid: Any) -> None:
    err = bad({"jsonrpc": "2.0", "id": rid, "result": {}})
    assert err.error.code == -32600
    assert err.id is None


def test_result_response_missing_id_refused() -> None:
    err = bad({"jsonrpc": "2.0", "result": {}})
    assert err.error.code == -32600
    assert err.id is None


@pytest.mark.parametrize("rid", [1.5, True, {"x": 1}])
def test_error_response_bad_id_refused(rid: Any) -> None:
    err = bad({"jsonrpc": "2.0", "id": rid, "error": {"code": 1, "message": "m"}})
    assert err.error.code == -32600
    assert err.id is None


# ------------------------------------------------------------------ refused envelopes


@pytest.mark.parametrize("version", ["1.0", "2", 2.0, None])
def test_wrong_jsonrpc_version_refused_keeping_readable_id(version: Any) -> None:
    err = bad({"jsonrpc": version, "id": 9, "method": "ping"})
    assert err.error.code == -32600
    assert err.error.message == 'Invalid Request: the "jsonrpc" member must be exactly "2.0".'
    assert err.id == 9


def test_missing_jsonrpc_member_refused() -> None:
    err = bad({"id": "k", "method": "ping"})
    assert err.error.code == -32600
    assert err.id == "k"


def test_wrong_jsonrpc_with_bad_id_replies_null() -> None:
    assert bad({"jsonrpc": "1.0", "id": 1.5, "method": "ping"}).id is None


def test_result_and_error_both_refused() -> None:
    err = bad({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}})
    assert err.error.code == -32600
    assert err.error.message == 'Invalid Request: a response has "result" or "error", not both.'


@pytest.mark.parametrize("params", [[1, 2], [], "x", 3, True])
def test_params_not_object_refused(params: Any) -> None:
    err = bad({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": params})
    assert err.error.code == -32600
    assert err.error.message == 'Invalid Request: "params" must be a JSON object when present.'
    assert err.id == 2


def test_notification_params_array_refused() -> None:
    err = bad({"jsonrpc": "2.0", "method": "notifications/progress", "params": [1]})
    assert err.error.code == -32600
    assert err.id is None


@pytest.mark.parametrize("method", ["", 5, ["ping"], {"m": 1}])
def test_method_not_non_empty_string_refused(method: Any) -> None:
    err = bad({"jsonrpc": "2.0", "id": 3, "method": method})
    assert err.error.code == -32600
    assert err.error.message == 'Invalid Request: "method" must be a non-empty string.'
    assert err.id == 3


@pytest.mark.parametrize("result", [[], "ok", 1, None])
def test_result_not_object_refused(result: Any) -> None:
    err = bad({"jsonrpc": "2.0", "id": 1, "result": result})
    assert err.error.code == -32600
    assert err.id is None


@pytest.mark.parametrize(
    "error",
    [
        "boom",
        {"message": "m"},
        {"code": "1", "message": "m"},
        {"code": 1.5, "message": "m"},
        {"code": True, "message": "m"},
        {"code": 1},
        {"code": 1, "message": 2},
    ],
)
def test_malformed_error_object_refused(error: Any) -> None:
    err = bad({"jsonrpc": "2.0", "id": 1, "error": error})
    assert err.error.code == -32600
    assert err.id is None


def test_message_with_neither_method_nor_result_refused() -> None:
    err = bad({"jsonrpc": "2.0", "id": 6})
    assert err.error.code == -32600
    assert err.id == 6


@pytest.mark.parametrize("obj", [[], [{"jsonrpc": "2.0"}], "x", 1, None, True])
def test_non_object_refused(obj: Any) -> None:
    err = bad(obj)
    assert err.error.code == -32600
    assert err.error.message == "Invalid Request: a JSON-RPC message must be a JSON object."
    assert err.id is None


def test_bad_message_carries_message_text() -> None:
    err = bad({"jsonrpc": "2.0", "id": 1, "method": ""})
    assert str(err) == err.error.message


# ------------------------------------------------------------------ decode / encode


def test_decode_bytes_and_str() -> None:
    assert decode(b'{"a":[1,2.5,"x",null,true]}') == {"a": [1, 2.5, "x", None, True]}
    assert decode('{"a":"é"}') == {"a": "é"}


@pytest.mark.parametrize("data", [b"not json", b"{", b'{"a":1,}', b"", b"{'a':1}", b'{"a":1} x'])
def test_decode_invalid_json_is_parse_error(data: bytes) -> None:
    with pytest.raises(ParseError) as info:
        decode(data)
    assert info.value.code == PARSE_ERROR == -32700
    assert "(invalid JSON)" in info.value.message
    assert info.value.to_error() == {"code": -32700, "message": info.value.message}


@pytest.mark.parametrize("data", [b"\xff\xfe", b'{"a":"\xff"}', b'"\xc3\x28"'])
def test_decode_invalid_utf8_is_parse_error(data: bytes) -> None:
    with pytest.raises(ParseError) as info:
        decode(data)
    assert info.value.code == -32700
    assert "(invalid UTF-8)" in info.value.message


def test_encode_is_compact_single_line() -> None:
    out = encode({"jsonrpc": "2.0", "id": 1, "result": {"text": "a\nb"}})
    assert out == b'{"jsonrpc":"2.0","id":1,"result":{"text":"a\\nb"}}'
    assert b"\n" not in out


def test_encode_batch() -> None:
    assert encode([{"a": 1}, {"b": 2}]) == b'[{"a":1},{"b":2}]'


def test_builders() -> None:
    assert jsonrpc.request(1, "ping", None) == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert jsonrpc.request("a", "x", {"k": 1}) == {
        "jsonrpc": "2.0",
        "id": "a",
        "method": "x",
        "params": {"k": 1},
    }
    assert jsonrpc.notification("n", None) == {"jsonrpc": "2.0", "method": "n"}
    assert jsonrpc.notification("n", {}) == {"jsonrpc": "2.0", "method": "n", "params": {}}
    assert jsonrpc.result(2, {}) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert jsonrpc.error(None, {"code": 1, "message": "m"}) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": 1, "message": "m"},
    }


@pytest.mark.parametrize(
    "msg",
    [
        jsonrpc.request(1, "tools/call", {"name": "t", "arguments": {}}),
        jsonrpc.request("r", "ping", None),
        jsonrpc.notification("notifications/initialized", None),
        jsonrpc.result(3, {"tools": []}),
        jsonrpc.error(4, {"code": -32601, "message": "m", "data": {"x": 1}}),
    ],
)
def test_round_trip(msg: dict[str, Any]) -> None:
    parsed = parse_message(decode(encode(msg)))
    rebuilt: dict[str, Any]
    if type(parsed) is Request:
        rebuilt = jsonrpc.request(parsed.id, parsed.method, parsed.params)
    elif type(parsed) is Notification:
        rebuilt = jsonrpc.notification(parsed.method, parsed.params)
    elif type(parsed) is Response:
        rebuilt = jsonrpc.result(parsed.id, parsed.result)
    else:
        assert type(parsed) is ErrorResponse
        error = {"code": parsed.code, "message": parsed.message}
        if parsed.data is not None:
            error["data"] = parsed.data
        rebuilt = jsonrpc.error(parsed.id, error)
    assert rebuilt == msg


def test_without_meta_key_drops_one_key_and_an_emptied_meta() -> None:
    tagged = {"uri": "x", "_meta": {"sub": "s1", "keep": 1}}
    assert without_meta_key(tagged, "sub") == {"uri": "x", "_meta": {"keep": 1}}
    assert tagged == {"uri": "x", "_meta": {"sub": "s1", "keep": 1}}  # not edited in place
    assert without_meta_key({"uri": "x", "_meta": {"sub": "s1"}}, "sub") == {"uri": "x"}
    untouched = {"uri": "x", "_meta": {"other": 2}}
    assert without_meta_key(untouched, "sub") is untouched  # nothing to drop: no copy
    odd = {"_meta": "not an object"}
    assert without_meta_key(odd, "sub") is odd
