"""2026-07-28 routing headers are compared without the optional whitespace around them.

RFC 9110 §5.5: a field value does not include leading or trailing whitespace (OWS). h11
strips it before the ASGI app sees the headers, httptools (the parser uvicorn prefers once
installed, as it is with mcpkit) leaves trailing whitespace in, and other ASGI servers may
leave both; so the server trims it itself before comparing Mcp-Method, Mcp-Name and
Mcp-Param-* with the body. Whitespace inside a value still counts, a value with surrounding
whitespace of its own travels in the ``=?base64?…?=`` form, and a real mismatch is still
-32020 with HTTP 400.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson
import pytest

from mcpkit import Server

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}


def make_app() -> Any:
    server = Server("headers")

    async def where(region: str) -> str:
        return f"region={region!r}"

    server.add_tool(where, description="Echo a region.", input_schema={
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    })
    return server.asgi_app()


async def post(app: Any, arguments: dict[str, Any], headers: dict[str, str]
               ) -> tuple[int, dict[str, Any]]:
    """One 2026-07-28 tools/call straight into the ASGI app, with raw header values."""
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "where", "arguments": arguments, "_meta": META}})
    raw = [(b"host", b"localhost"), (b"content-type", b"application/json"),
           (b"accept", b"application/json, text/event-stream")]
    raw += [(k.lower().encode(), v.encode("latin-1")) for k, v in headers.items()]
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": raw,
             "client": ("127.0.0.1", 1)}
    await asyncio.wait_for(app(scope, receive, send), 10)
    return sent[0]["status"], orjson.loads(sent[1]["body"])


def headers(method: str = "tools/call", name: str = "where", region: str | None = "eu",
            version: str = "2026-07-28") -> dict[str, str]:
    out = {"MCP-Protocol-Version": version, "Mcp-Method": method, "Mcp-Name": name}
    if region is not None:
        out["Mcp-Param-Region"] = region
    return out


def b64(text: str) -> str:
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


@pytest.mark.parametrize("sent", [
    headers(name="where  "),                      # trailing spaces: what httptools passes on
    headers(name="  where  "),
    headers(name="\twhere\t"),
    headers(method="tools/call "),
    headers(version=" 2026-07-28 "),
    headers(region="eu  "),
    headers(region="  eu"),
    headers(region=f" {b64('eu')} "),
])
def test_surrounding_whitespace_is_not_part_of_the_value(sent: dict[str, str]) -> None:
    status, answer = asyncio.run(post(make_app(), {"region": "eu"}, sent))
    assert status == 200, answer
    assert answer["result"]["content"][0]["text"] == "region='eu'"


def test_a_value_with_its_own_surrounding_whitespace_travels_base64() -> None:
    status, answer = asyncio.run(post(make_app(), {"region": " eu "},
                                      headers(region=b64(" eu "))))
    assert status == 200, answer
    assert answer["result"]["content"][0]["text"] == "region=' eu '"


@pytest.mark.parametrize("value", [{"a": 1}, ["eu"]])
def test_a_non_primitive_argument_is_a_schema_error_not_a_header_error(value: Any) -> None:
    """No header can mirror an object or array: the call reaches the tool's schema check,
    whose isError result tells the model what the argument should be."""
    status, answer = asyncio.run(post(make_app(), {"region": value}, headers(region=None)))
    assert status == 200, answer
    assert answer["result"]["isError"] is True
    assert "region" in answer["result"]["content"][0]["text"]
    status, answer = asyncio.run(post(make_app(), {"region": value}, headers(region="eu")))
    assert status == 400 and answer["error"]["code"] == -32020  # a header for it: refused


@pytest.mark.parametrize(("arguments", "sent"), [
    ({"region": "eu"}, headers(name="wh ere")),             # inner whitespace counts
    ({"region": "eu"}, headers(region="e u")),
    ({"region": " eu "}, headers(region=" eu ")),           # OWS is not the value's own
    ({"region": "eu"}, headers(region="us")),
    ({"region": "eu"}, headers(region=None)),
    ({"region": "eu"}, headers(region="=?base64?ZXU?=")),  # bad padding
])
def test_mismatches_are_still_refused(arguments: dict[str, Any], sent: dict[str, str]) -> None:
    status, answer = asyncio.run(post(make_app(), arguments, sent))
    assert status == 400, answer
    assert answer["error"]["code"] == -32020


@pytest.mark.parametrize("value, text, agree", [
    (1000, "1000", True),
    (-7, "-7", True),
    (0, "0", True),
    (1000, "1_000", False),  # int() would take these; a gateway routing on the text would not
    (1000, "1e3", False),
    (1000, "+1000", False),
    (1000, "01000", False),
    (1000, "1000.0", False),
    (1000, "\u0661\u0660\u0660\u0660", False),  # Arabic-Indic digits
    (2**53 + 1, "9007199254740992", False),  # 2**53: equal only after float rounding
    (2**53 + 1, "9007199254740993", True),
    (1.5, "1.5", True),
    (1.0, "1", True),
    (1e16, "1e+16", True),
    (1.5, "1.50x", False),
    (1.5, "nan", False),
    pytest.param(1, "1" + "0" * 5000, False, id="more-digits-than-int-converts"),
])
def test_number_arguments_match_only_their_json_spelling(value: Any, text: str,
                                                         agree: bool) -> None:
    from mcpkit.transports.http_stateless import param_mismatch

    why = param_mismatch({"n": "N"}, {"n": value}, {"mcp-param-n": text})
    assert (why is None) is agree, why


def test_a_malformed_base64_name_matches_no_name() -> None:
    from mcpkit.transports.http_stateless import header_mismatch

    params = {"name": "\x00invalid", "_meta": META}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
               "mcp-name": "=?base64?***?="}
    why = header_mismatch({"method": "tools/call"}, params, headers)
    assert why is not None and "not valid" in why
