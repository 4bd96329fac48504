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
from dataclasses import dataclass
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
    UnsupportedProtocolVersion,
)
from ..protocol.jsonrpc import RequestId, is_valid_id
from ..protocol.stateless import PROTOCOL_VERSION, read_meta
from ..protocol.versions import STATELESS_VERSIONS
from ..session import ENDLESS_METHODS, Principal
from .asgi import SSE_HEADERS, Receive, Send, respond, respond_withdrawn
from .http_drain import RESTART_HEADERS, InFlight
from .http_routing import NAMED_BY
from .http_stalls import Stalls
from .http_streams import ResponseStream, relay_sse

if TYPE_CHECKING:
    from .http_session import HttpSession, OpenSession

_BAD_REQUEST_CODES = frozenset({INVALID_REQUEST, HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY,
                                UNSUPPORTED_PROTOCOL_VERSION, PARSE_ERROR})
"""Errors of a stateless request answered with HTTP 400 (-32601 is 404, others 200)."""


_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
"""A header's text for an integer / any number argument: JSON's number grammar, ASCII
digits only (no spaces, underscores, ``+`` or other scripts' digits that ``int()`` takes),
so a gateway that routes on the header sees the value the server checks."""
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
"""RFC 4648 standard base64, padded: what ``=?base64?…?=`` may hold (binascii, even in
strict mode, takes a stray ``=`` after a whole quantum: ``A000=``)."""


def decode_header(value: str) -> str | None:
    """A header value, with the ``=?base64?…?=`` form for non-ASCII values decoded; None
    when that form is malformed (not strict base64 of UTF-8)."""
    if value.startswith("=?base64?") and value.endswith("?="):
        import base64

        payload = value[9:-2]
        if _BASE64.fullmatch(payload) is None:
            return None
        try:  # the alphabet and padding are checked: only the UTF-8 can be wrong now
            return base64.b64decode(payload).decode()
        except UnicodeDecodeError:
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


def stateless_status(error: int | None) -> int:
    """The HTTP status of a stateless answer, from the code of the error it is (None: not
    an error): 404 for -32601, 400 for request errors, else 200."""
    if error is None:
        return 200
    if error == METHOD_NOT_FOUND:
        return 404
    return 400 if error in _BAD_REQUEST_CODES else 200


@dataclass(slots=True, kw_only=True)
class StatelessRequests:
    """The 2026-07-28 requests of one app, and exactly what they use of it:
    ``open_session`` (each request is a session of its own), ``in_flight`` (the app's
    count of requests being answered), ``exchanges`` (the drain's: each answered request's
    session -> its id when it is a listen stream), ``stalls`` (the watchdog of slow
    readers), ``param_headers`` (a tool's ``x-mcp-header`` parameters), ``limit`` (the
    bound of a response stream) and ``sse`` (answers always as SSE)."""

    open_session: OpenSession
    in_flight: InFlight
    exchanges: dict[HttpSession, RequestId | None]
    stalls: Stalls
    param_headers: Callable[[str], dict[str, str]] | None
    limit: int
    sse: bool

    async def serve(self, obj: dict[str, Any], headers: dict[str, str], send: Send,
                    receive: Receive, principal: Principal | None,
                    peer: str | None = None) -> None:
        """A stateless request from ``principal`` at address ``peer``: no session; headers
        must match the body; errors get their HTTP status; closing the response stream
        cancels the handler."""
        params = obj.get("params")
        if not isinstance(params, dict):
            params = {}
        rid = obj.get("id")
        if not isinstance(obj.get("method"), str):
            await respond(send, 400, error_with_id(rid, InvalidRequest(
                "Invalid Request: a request needs a string 'method' (a client sends only "
                "requests and notifications to this endpoint).")))
            return
        request = is_valid_id(rid)
        # _meta, read once here: missing or partial is -32602 (HTTP 400) before the
        # headers are looked at; the version is the connection's to judge for a request
        # (its -32022 is a 400 too), and checked here, after the headers, for a
        # notification (which nothing answers).
        unsupported: ProtocolError | None = None
        try:
            read_meta(params, None if request else STATELESS_VERSIONS)
        except UnsupportedProtocolVersion as exc:
            unsupported = exc
        except ProtocolError as exc:
            await respond(send, 400, error_with_id(rid, exc))
            return
        mismatch = header_mismatch(obj, params, headers, self.param_headers)
        if mismatch:
            await respond(send, 400, error_with_id(rid, HeaderMismatch(
                f"Header mismatch: {mismatch}. Send the MCP-Protocol-Version, Mcp-Method and "
                "Mcp-Name headers with the same values as the body.")))
            return
        if unsupported is not None:
            await respond(send, 400, error_with_id(rid, unsupported))
            return
        session = self.open_session("")
        if not request:
            direct = session.feed(obj, principal, peer)
            await respond(send, 400 if direct else 202, direct[0] if direct else b"")
            return
        assert isinstance(rid, str | int)
        stream = ResponseStream(session, "m", limit=self.limit)
        session.streams[rid] = stream
        session.feed(obj, principal, peer)
        exchanges = self.exchanges  # the drain ends this exchange when the server stops
        exchanges[session] = rid if obj["method"] in ENDLESS_METHODS else None
        try:
            with self.in_flight:
                await self._answer(stream, send, receive)
        finally:
            del exchanges[session]
            session.close()  # ends the handler if the client went away first

    async def _answer(self, stream: ResponseStream, send: Send, receive: Receive) -> None:
        first = await stream.first_unless_gone(receive)
        if first is None:
            return  # the client went away before the answer began: cancelled by the caller
        data, final = first
        if not data:
            await respond_withdrawn(send)
            return
        if final and not self.sse:
            if stream.cut_off:  # the drain's deadline passed before an answer came
                await respond(send, 503, data, RESTART_HEADERS)
            else:
                await respond(send, stateless_status(stream.error), data)
            return
        sender = self.stalls.guard(send, receive)  # SSE events until the final one
        try:
            await sender({"type": "http.response.start", "status": 200,
                          "headers": SSE_HEADERS})
            await relay_sse(stream, sender, receive)
        finally:
            self.stalls.release(sender)
