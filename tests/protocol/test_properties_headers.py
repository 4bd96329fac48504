"""The 2026-07-28 routing header values, property-based (``tests/test_header_values.py``
has the hand-picked cases, end to end through the ASGI app).

A client puts ``Mcp-Name`` and each ``x-mcp-header`` argument's ``Mcp-Param-*`` into a
header (``transports.http_routing.header_value`` / ``param_header_value``): as is when the
value is printable ASCII without surrounding whitespace and does not look like the
sentinel, else ``=?base64?<standard base64 of the UTF-8>?=``. The server reads the
headers (``transports.asgi.headers_of`` drops the optional whitespace around a value),
decodes them (``transports.http_stateless.decode_header``) and compares them with the
body (``header_mismatch`` / ``param_mismatch``): None when they agree, else the reason
(answered -32020, HTTP 400). Those functions never raise, whatever the headers say.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from mcpkit.protocol.stateless import CLIENT_CAPABILITIES, PROTOCOL_VERSION
from mcpkit.transports.asgi import headers_of
from mcpkit.transports.http_routing import header_value, param_header_value
from mcpkit.transports.http_stateless import decode_header, header_mismatch, param_mismatch

MODERN = "2026-07-28"
META = {PROTOCOL_VERSION: MODERN, CLIENT_CAPABILITIES: {}}
NAME_KEY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

# Text of every kind, weighted towards what the encoding rule turns on: the edges of
# printable ASCII, whitespace (ASCII and not), the sentinel's pieces, non-ASCII.
_EDGY = st.sampled_from(
    [" ", "\t", "\n", "\x00", "\x1f", "\x7f", "~", "=?base64?", "?=", "=", "?", "é", "\u00a0",
     "\u2028", "\U0001f600", "ZXU=", "/+"]
)
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _with_junk(encoded: str, at: int, junk: str) -> str:
    """Valid base64 with one character that is not base64 slipped in."""
    at %= len(encoded) + 1
    return encoded[:at] + junk + encoded[at:]


_PAYLOADS = st.one_of(  # what may sit between the sentinel's markers
    st.text(max_size=6).map(lambda t: base64.b64encode(t.encode()).decode()),
    st.binary(max_size=6).map(lambda b: base64.b64encode(b).decode()),
    st.text(st.sampled_from(_B64 + "=-_ .!\u00e9"), max_size=10),
    st.tuples(st.text(min_size=1, max_size=6), st.integers(0, 8), st.sampled_from("-_ .!\n*"))
    .map(lambda t: _with_junk(base64.b64encode(t[0].encode()).decode(), t[1], t[2])),
)
sentinels = _PAYLOADS.map(lambda p: f"=?base64?{p}?=")
texts = st.lists(st.text(max_size=6) | _EDGY, max_size=5).map("".join) | sentinels
# What an ASGI server hands over (latin-1 text, whatever the client sent), and beyond.
raw_headers = st.lists(st.text(st.characters(max_codepoint=0xFF), max_size=8) | _EDGY,
                       max_size=4).map("".join) | sentinels
# JSON values as orjson reads them from a body (64-bit integers, finite floats).
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
ows = st.sampled_from(["", " ", "\t", "  ", " \t"])


def _is_plain(value: str) -> bool:
    return (all(" " <= c <= "~" for c in value) and value.strip() == value
            and not (value.startswith("=?base64?") and value.endswith("?=")))


@given(texts)
def test_a_header_value_decodes_back_to_the_value(value: str) -> None:
    assert decode_header(header_value(value)) == value


@given(texts, ows, ows)
def test_a_header_value_is_header_safe_and_plain_only_when_the_rule_allows(
    value: str, before: str, after: str
) -> None:
    """Printable ASCII without surrounding whitespace, so it survives any HTTP stack and
    the trimming of optional whitespace; as is exactly when the value needs no encoding."""
    sent = header_value(value)
    assert all(" " <= c <= "~" for c in sent) and sent.strip() == sent
    assert (sent == value) == _is_plain(value)
    scope = {"headers": [(b"mcp-name", (before + sent + after).encode("latin-1"))]}
    assert headers_of(scope)["mcp-name"] == sent


@given(st.one_of(raw_headers, texts))
@example("=?base64?A000=?=")  # a stray '=' after a whole quantum: refused (CI found it)
def test_any_header_decodes_without_raising(value: str) -> None:
    decoded = decode_header(value)
    if not (value.startswith("=?base64?") and value.endswith("?=")):
        assert decoded == value  # only the sentinel form is decoded
    else:  # decoded strictly, or None (refused): never a stand-in text
        assert decoded == _strict_decode(value[9:-2])


_STRICT_B64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _strict_decode(payload: str) -> str | None:
    """RFC 4648 standard base64 of UTF-8, padded, nothing else; None if it is not."""
    if not _STRICT_B64.fullmatch(payload):
        return None
    try:
        return base64.b64decode(payload).decode()
    except UnicodeDecodeError:
        return None


def _loose_decode(payload: str) -> str:
    """What a forgiving decoder would make of ``payload`` (junk skipped, padding added):
    the name a lax server would wrongly accept it for."""
    try:
        return base64.b64decode(payload + "==").decode()
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return ""


@given(st.sampled_from(sorted(NAME_KEY)), _PAYLOADS, st.data())
def test_a_sentinel_header_agrees_only_with_what_it_encodes(
    method: str, payload: str, data: st.DataObject
) -> None:
    """The sentinel form is decoded strictly: standard base64 of UTF-8 agrees with exactly
    the text it encodes, and anything else between the markers agrees with no name."""
    # (names with NUL included: a malformed form once decoded to a "\x00invalid" text)
    name = data.draw(st.sampled_from([_loose_decode(payload), str(_strict_decode(payload)),
                                      "\x00invalid"]) | texts)
    params = {NAME_KEY[method]: name, "_meta": META}
    sent = {"mcp-protocol-version": MODERN, "mcp-method": method,
            "mcp-name": f"=?base64?{payload}?="}
    agree = header_mismatch({"method": method}, params, sent) is None
    assert agree == (_strict_decode(payload) == name)


@given(st.sampled_from(sorted(NAME_KEY)), texts, ows, ows)
def test_headers_a_client_builds_agree_with_their_body(
    method: str, name: str, before: str, after: str
) -> None:
    params = {NAME_KEY[method]: name, "_meta": META}
    sent = {"mcp-protocol-version": MODERN, "mcp-method": method,
            "mcp-name": header_value(name)}
    scope = {"headers": [(k.encode(), (before + v + after).encode("latin-1"))
                         for k, v in sent.items()]}
    assert header_mismatch({"method": method}, params, headers_of(scope)) is None


@given(st.sampled_from(sorted(NAME_KEY)), texts, texts)
def test_a_name_header_for_another_value_is_refused(method: str, name: str, other: str) -> None:
    params = {NAME_KEY[method]: name, "_meta": META}
    sent = {"mcp-protocol-version": MODERN, "mcp-method": method,
            "mcp-name": header_value(other)}
    agree = header_mismatch({"method": method}, params, sent) is None
    assert agree == (name == other)


@given(st.dictionaries(st.sampled_from(["mcp-protocol-version", "mcp-method", "mcp-name",
                                        "mcp-param-region", "mcp-param-n"]),
                       raw_headers | st.sampled_from([MODERN, "tools/call"])),
       st.dictionaries(st.sampled_from(["method", "id", "jsonrpc"]), json_values),
       st.dictionaries(st.sampled_from(["name", "uri", "arguments"]), json_values),
       json_values)
def test_any_headers_and_body_give_agreement_or_a_reason(
    headers: dict[str, str], obj: dict[str, Any], params: dict[str, Any], version: Any
) -> None:
    params = {**params, "_meta": {PROTOCOL_VERSION: version}}
    declared = {"region": "Region", "n": "N"}
    why = header_mismatch(obj, params, headers, lambda _name: declared)
    assert why is None or (isinstance(why, str) and why)
    why = param_mismatch(declared, params.get("arguments"), headers)
    assert why is None or (isinstance(why, str) and why)


_SAFE_INT = st.integers(-(2**53) + 1, 2**53 - 1)  # the integers a header may carry
primitives = st.one_of(st.booleans(), _SAFE_INT, texts,
                       st.sampled_from(["1", "01", "1.0", " 1", "1e0", "true", "false"]))


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@given(primitives, primitives, ows)
def test_a_param_header_agrees_with_its_argument_and_no_other(
    value: Any, other: Any, space: str
) -> None:
    """A string or boolean argument agrees with exactly its own text; a number with any
    text of the same number (the comparison is numeric: '1.0', '01' or ' 1' agree with 1)."""
    header = param_header_value(other)
    assert header is not None
    scope = {"headers": [(b"mcp-param-region", (space + header + space).encode("latin-1"))]}
    why = param_mismatch({"region": "Region"}, {"region": value}, headers_of(scope))
    text = decode_header(header)
    if isinstance(value, bool):
        same = text == ("true" if value else "false")
    elif isinstance(value, int):
        same = _as_number(text) == value
    else:
        same = text == value
    assert (why is None) == same, why


@given(st.dictionaries(st.sampled_from(["region", "n"]), json_values))
def test_arguments_a_client_mirrors_agree_with_their_body(arguments: dict[str, Any]) -> None:
    declared = {"region": "Region", "n": "N"}
    headers = {}
    for param, name in declared.items():
        text = param_header_value(arguments.get(param))
        if text is not None:
            headers[f"mcp-param-{name.lower()}"] = text
    assert param_mismatch(declared, arguments, headers) is None
