"""2026-07-28 over HTTP: stateless requests on the Streamable HTTP endpoint.

No session: each POST is one self-describing request with its own connection, answered
as JSON or SSE; closing the response stream cancels the handler. The routing headers a
stateless request carries are checked against its body, and errors get their HTTP status.

``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` must repeat the body's values,
and each ``x-mcp-header`` parameter of a tool its argument in ``Mcp-Param-<Name>``
(non-ASCII values travel as ``=?base64?…?=``). A mismatch is -32020 (HTTP 400).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from ..protocol.errors import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    HeaderMismatch,
    InvalidRequest,
    ProtocolError,
)
from ..protocol.jsonrpc import is_valid_id
from ..protocol.stateless import PROTOCOL_VERSION, read_meta
from ..session import ENDLESS_METHODS, Principal
from .asgi import SSE_HEADERS, Receive, Send, respond, respond_withdrawn, watch_disconnect
from .http_drain import RESTART_HEADERS
from .http_routing import NAMED_BY
from .http_streams import ResponseStream, relay

if TYPE_CHECKING:
    from .http_server import StreamableHTTPApp

_BAD_REQUEST_CODES = frozenset({INVALID_REQUEST, HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY,
                                UNSUPPORTED_PROTOCOL_VERSION, PARSE_ERROR})
"""Errors of a stateless request answered with HTTP 400 (-32601 is 404, others 200)."""


_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
"""RFC 4648 standard base64, padded: what ``=?base64?…?=`` may hold (binascii, even in
strict mode, takes a stray ``=`` after a whole quantum: ``A000=``)."""
"""A header's text for an integer / any number argument: JSON's number grammar, ASCII
digits only (no spaces, underscores, ``+`` or other scripts' digits that ``int()`` takes),
so a gateway that routes on the header sees the value the server checks."""


def decode_header(value: str) -> str | None:
    """A header value, with the ``=?base64?…?=`` form for non-ASCII values decoded; None
    when that form is malformed (not strict base64 of UTF-8)."""
    if value.startswith("=?base64?") and value.endswith("?="):
        import base64

        payload = value[9:-2]
        if _BASE64.fullmatch(payload) is None:
            return None
        try:
            return base64.b64decode(payload, validate=True).decode()
        except (ValueError, UnicodeDecodeError):
            return None
    return value


def _same_number(text: str, value: int | float) -> bool:
    """Whether header ``text`` spells the number ``value``: integers exactly (no float
    rounding: 2**53 + 1 is not 2**53), other numbers by value."""
    try:
        if isinstance(value, int):
            return _INTEGER.fullmatch(text) is not None and int(text) == value
        return _NUMBER.fullmatch(text) is not None and float(text) == value
    except ValueError:  # more digits than int() converts
        return False


def param_mismatch(declared: dict[str, str], arguments: Any,
                   headers: dict[str, str]) -> str | None:
    """Mcp-Param-* headers against the arguments of ``x-mcp-header`` parameters."""
    args = arguments if isinstance(arguments, dict) else {}
    for param, header in declared.items():
        got = headers.get(f"mcp-param-{header.lower()}")
        value = args.get(param)
        if value is None:
            if got is not None:
                return f"Mcp-Param-{header} is sent but argument {param!r} is absent"
            continue
        if not isinstance(value, str | int | float):  # bool is an int
            # An object or array cannot travel in a header, so no client sends one: the
            # argument breaks the tool's schema, and the isError result says how.
            if got is not None:
                return f"Mcp-Param-{header} is sent but argument {param!r} is not a primitive"
            continue
        if got is None:
            return f"the Mcp-Param-{header} header is missing (argument {param!r})"
        text = decode_header(got)
        if text is None:
            return f"Mcp-Param-{header} {got[:60]!r} is not valid =?base64?…?= of UTF-8"
        if isinstance(value, bool):
            ok = text == ("true" if value else "false")
        elif isinstance(value, int | float):
            ok = _same_number(text, value)
        else:
            ok = text == value
        if not ok:
            return f"Mcp-Param-{header} {got[:60]!r} differs from argument {param!r}"
    return None


def header_mismatch(obj: dict[str, Any], params: dict[str, Any],
                    headers: dict[str, str],
                    param_headers: Callable[[str], dict[str, str]] | None = None,
                    ) -> str | None:
    """Why the routing headers disagree with the body, or None."""
    version = params["_meta"].get(PROTOCOL_VERSION)
    got = headers.get("mcp-protocol-version")
    if got is None:
        return "the MCP-Protocol-Version header is missing"
    if got != version:
        return f"MCP-Protocol-Version {got[:40]!r} differs from the body's {str(version)[:40]!r}"
    method = obj.get("method")
    got = headers.get("mcp-method")
    if got is None:
        return "the Mcp-Method header is missing"
    if got != method:
        return f"Mcp-Method {got[:60]!r} differs from the body's {str(method)[:60]!r}"
    name_key = NAMED_BY.get(str(method))
    if name_key is not None:
        got = headers.get("mcp-name")
        if got is None:
            return "the Mcp-Name header is missing"
        name = decode_header(got)
        if name is None:
            return f"Mcp-Name {got[:60]!r} is not valid =?base64?…?= of UTF-8"
        if name != params.get(name_key):
            return f"Mcp-Name {got[:60]!r} differs from the body's {name_key}"
        if method == "tools/call" and param_headers is not None:
            declared = param_headers(str(params.get("name")))
            if declared:
                return param_mismatch(declared, params.get("arguments"), headers)
    return None


def error_with_id(rid: Any, exc: ProtocolError) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "error": exc.to_error()}
    if is_valid_id(rid):
        body["id"] = rid
    return orjson.dumps(body)


def stateless_status(data: bytes) -> int:
    """The HTTP status of a stateless answer: 404 for -32601, 400 for request errors."""
    if b'"error"' not in data:
        return 200
    try:
        code = orjson.loads(data)["error"]["code"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return 200
    if code == METHOD_NOT_FOUND:
        return 404
    return 400 if code in _BAD_REQUEST_CODES else 200


async def serve_stateless(app: StreamableHTTPApp, obj: dict[str, Any], headers: dict[str, str],
                          send: Send, receive: Receive, principal: Principal | None,
                          peer: str | None = None) -> None:
    """A stateless request from ``principal`` at address ``peer``: no session; headers
    must match the body;
    errors get their HTTP status; closing the response stream cancels the handler."""
    params = obj.get("params")
    if not isinstance(params, dict):
        params = {}
    rid = obj.get("id")
    if not isinstance(obj.get("method"), str):
        await respond(send, 400, error_with_id(rid, InvalidRequest(
            "Invalid Request: a request needs a string 'method' (a client sends only "
            "requests and notifications to this endpoint).")))
        return
    try:
        read_meta(params, None)  # missing/partial _meta: -32602 (HTTP 400)
    except ProtocolError as exc:
        await respond(send, 400, error_with_id(rid, exc))
        return
    mismatch = header_mismatch(obj, params, headers, app.param_headers)
    if mismatch:
        await respond(send, 400, error_with_id(rid, HeaderMismatch(
            f"Header mismatch: {mismatch}. Send the MCP-Protocol-Version, Mcp-Method and "
            "Mcp-Name headers with the same values as the body.")))
        return
    # From here the connection judges the request (an unsupported version is its -32022,
    # which stateless_status answers with 400); a notification is only checked here.
    if not is_valid_id(rid):
        try:
            read_meta(params)
        except ProtocolError as exc:
            await respond(send, 400, error_with_id(rid, exc))
            return
    session = app.open_session("")
    if not is_valid_id(rid):
        direct = session.feed(obj, principal, peer)
        await respond(send, 400 if direct else 202, direct[0] if direct else b"")
        return
    assert isinstance(rid, str | int)
    stream = ResponseStream(session, "m", limit=app.config.max_stream_buffer)
    session.streams[rid] = stream
    session.feed(obj, principal, peer)
    app.in_flight += 1
    stateless = app.drain.stateless  # the drain ends this exchange when the server stops
    stateless[session] = rid if obj["method"] in ENDLESS_METHODS else None
    try:
        first = await stream.first_unless_gone(receive)
        if first is None:
            return  # the client went away before the answer began: cancelled below
        data, final = first
        if not data:
            await respond_withdrawn(send)
            return
        if final and app.config.response_mode != "sse":
            if stream.cut_off:  # the drain's deadline passed before an answer came
                await respond(send, 503, data, RESTART_HEADERS)
            else:
                await respond(send, stateless_status(data), data)
            return
        sender = app.stalls.guard(send, receive)
        try:
            await _relay_sse(stream, sender, receive)
        finally:
            app.stalls.release(sender)
    finally:
        app.in_flight -= 1
        del stateless[session]
        session.close()  # ends the handler if the client went away first


async def _relay_sse(stream: ResponseStream, send: Send, receive: Receive) -> None:
    """The answer as SSE events until the final one; a reader too slow for the stream's
    bound gets a complete response without the rest (a listen stream: listen again)."""
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
    gone = False

    def went() -> None:
        nonlocal gone
        gone = True
        stream.wakeup.set()

    watcher = watch_disconnect(receive, went)
    try:
        await relay(stream, send, lambda: gone)
        if not gone:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    except OSError:
        pass
    finally:
        watcher.cancel()
