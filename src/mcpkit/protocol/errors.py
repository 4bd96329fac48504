"""Every exception mcpkit raises, and the JSON-RPC error codes they map to.

Hierarchy::

    MCPError                      base of everything mcpkit raises
    ├── ProtocolError             a local protocol error; carries its JSON-RPC ``code``
    │   ├── ParseError            -32700  bytes that are not JSON / not UTF-8
    │   ├── InvalidRequest        -32600  not a valid JSON-RPC / MCP message
    │   ├── MethodNotFound        -32601  unknown method, or one the revision/capabilities lack
    │   ├── InvalidParams         -32602  params that fail the method's shape
    │   ├── InternalError         -32603  a fault of ours (never carries internals)
    │   ├── ResourceNotFound      -32002  resources/read of an unknown URI (stateful revisions)
    │   ├── URLElicitationRequired -32042 (2025-11-25)
    │   ├── HeaderMismatch        -32020  (2026-07-28)
    │   ├── MissingClientCapability -32021 (2026-07-28)
    │   └── UnsupportedProtocolVersion -32022 (2026-07-28)
    ├── LocalProtocolError        (also a ValueError) the caller of a ``Connection`` asked
    │                             for what the protocol state forbids: a request before the
    │                             handshake allows it, answering a request that is not in
    │                             flight (or twice), a reused progress token, an unknown log
    │                             level, restoring a session of a revision it does not speak
    ├── RemoteError               the peer answered a request of ours with an error
    ├── ConnectionClosed          the peer went away (EOF, process exit, transport broke)
    ├── RequestTimeout            a request of ours got no answer in time (it was cancelled)
    │   └── TaskTimeout           (client) a task did not end in the time allowed; it goes on
    ├── TransportError            the transport could not carry one request of ours or its
    │   │                         answer (HTTP: unreachable, an HTTP error without a JSON-RPC
    │   │                         answer, a cut stream it could not resume); code -32000
    │   └── AnswerLost            a 2026-07-28 answer stream ended early; send the request again
    ├── CapabilityNotSupported    we were asked to use a feature the peer did not declare
    ├── ToolError                 raised by tool code: becomes an ``isError`` result whose
    │                             text is the exception's message, shown to the model
    │   (raised by the client, ``mcpkit.client``:)
    ├── HandshakeError            the server refused ``initialize``, chose a revision the
    │   │                         client does not speak, or did not answer it
    │   └── ServerUnreachable     nothing answered at all (no listener, the process exited)
    ├── InvalidResult             a server's result lacks the shape the protocol requires
    ├── OutputSchemaError         ``structuredContent`` does not match the tool's outputSchema
    ├── PaginationError           a server's cursors went round in circles (or never ended)
    ├── TaskCancelled             the result of a task that was cancelled: there is none
    │   (raised by the resource server, ``mcpkit.auth``:)
    ├── AuthError                 a request's authorization was refused; carries the HTTP
    │   │                         ``status`` and OAuth ``error`` code of the answer
    │   ├── MalformedAuthorization 400 ``invalid_request``: the ``Authorization`` header
    │   │                         breaks RFC 6750, or a token came another way
    │   ├── InvalidToken          401 ``invalid_token``: not a token valid for this server
    │   ├── InvalidDPoPProof      401 ``invalid_dpop_proof``: a DPoP-bound token without a
    │   │                         valid proof of its key (RFC 9449)
    │   └── UseDPoPNonce          401 ``use_dpop_nonce``: the proof lacks the server's nonce
    ├── VerifierUnavailable       503: the authorization server or its keys could not be
    │                             consulted, so no token can be judged (not the caller's fault)
    │   (raised by the OAuth client, ``mcpkit.auth.OAuth``:)
    └── AuthorizationFailed       no token could be obtained for an MCP server (discovery,
                                  registration, the authorization response or the token
                                  endpoint failed); the message says which

Local errors are raised where they are detected; the one place that receives from the
peer (``protocol.connection``) turns a ``ProtocolError`` into the error response sent back.
``ProtocolError`` is about the peer's message and is answered on the wire;
``LocalProtocolError`` is about our own caller and is never sent (h11's
``LocalProtocolError`` is the model). It subclasses ``ValueError`` because these misuses
raised ``ValueError`` before it existed and callers catch that (``Connection.restore``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

# JSON-RPC 2.0 (its reserved range)
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
# The implementation-defined range (-32000 to -32099), as MCP and mcpkit use it
TRANSPORT_ERROR: Final = -32000
"""The code of ``TransportError``: the HTTP client transport could not carry a request
(the server is unreachable, or answered with an HTTP error and no JSON-RPC body). It is
never sent; the waiting request fails with it instead of hanging."""
SESSION_NOT_FOUND: Final = -32001
"""Streamable HTTP: the ``Mcp-Session-Id`` names no live session (HTTP 404)."""
RESOURCE_NOT_FOUND: Final = -32002
HEADER_MISMATCH: Final = -32020
MISSING_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
URL_ELICITATION_REQUIRED: Final = -32042


class MCPError(Exception):
    """Base class of every exception raised by mcpkit."""


class ProtocolError(MCPError):
    """A protocol error detected locally; ``code`` is the JSON-RPC error code it maps to.

    ``message`` is sent to the peer as is, so it must say what was wrong and what to do,
    and must never contain secrets or tracebacks. ``data`` is optional structured detail.
    """

    code: ClassVar[int] = INTERNAL_ERROR

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object for this exception."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(ProtocolError):
    """The bytes are not JSON (or not UTF-8): -32700."""

    code = PARSE_ERROR


class InvalidRequest(ProtocolError):
    """Not a valid JSON-RPC/MCP message, or not allowed in this session state: -32600."""

    code = INVALID_REQUEST


class MethodNotFound(ProtocolError):
    """Unknown method, or one the revision or declared capabilities lack: -32601."""

    code = METHOD_NOT_FOUND


class InvalidParams(ProtocolError):
    """Parameters that fail the method's shape (unknown tool, bad cursor, …): -32602."""

    code = INVALID_PARAMS


class InternalError(ProtocolError):
    """A fault of ours; the message never carries internals: -32603."""

    code = INTERNAL_ERROR


class ResourceNotFound(ProtocolError):
    """``resources/read`` of a URI the server does not have: -32002 (``data.uri``)."""

    code = RESOURCE_NOT_FOUND


class URLElicitationRequired(ProtocolError):
    """The request needs the user to finish a URL-mode elicitation: -32042."""

    code = URL_ELICITATION_REQUIRED


class HeaderMismatch(ProtocolError):
    """An HTTP header disagrees with the message body (2026-07-28): -32020."""

    code = HEADER_MISMATCH


class MissingClientCapability(ProtocolError):
    """The request needs a client capability it did not declare: -32021."""

    code = MISSING_CLIENT_CAPABILITY


class UnsupportedProtocolVersion(ProtocolError):
    """The request's protocol version is not supported: -32022."""

    code = UNSUPPORTED_PROTOCOL_VERSION


class LocalProtocolError(MCPError, ValueError):
    """The caller of a sans-I/O ``Connection`` did something the protocol state forbids.

    Nothing was queued: the connection is unchanged and stays usable. This is a bug in the
    calling code (a transport, a session), never something the peer caused; the peer's
    mistakes are ``ProtocolError``s, answered on the wire. Also a ``ValueError``, which
    these misuses raised before.
    """


class RemoteError(MCPError):
    """The peer answered one of our requests with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class ConnectionClosed(MCPError):
    """The connection to the peer is gone; pending requests fail with this."""


class RequestTimeout(MCPError):
    """A request got no answer within its timeout; it was cancelled on the peer."""


class TransportError(MCPError):
    """The transport could not carry one request of ours, or lost its answer: the HTTP
    server could not be reached, answered with an HTTP error and no JSON-RPC answer
    (``status``), or cut the answer stream and it could not be resumed.

    Only that request failed; the session and the other requests in flight go on.
    Whether the server acted on the request is unknown. ``code`` is ``TRANSPORT_ERROR``.
    """

    code: ClassVar[int] = TRANSPORT_ERROR

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class AnswerLost(TransportError):
    """The answer stream of a 2026-07-28 request ended before its answer. That revision has
    no resumption, and a closed stream cancels the request on the server, so the request
    may be sent again as a new request (``Client.request`` does so, twice)."""


class CapabilityNotSupported(MCPError):
    """The peer did not declare the capability (or revision) this operation needs."""


class ToolError(MCPError):
    """Raise inside a tool to return ``isError: true`` with this message to the model.

    Use it for failures the model can act on ("city not found: try a nearby larger city").
    Any other exception raised by a tool is reported with a generic, safe message.

    On the client, ``call_tool(..., raise_on_error=True)`` raises it for a result with
    ``isError``: the message is the result's text, ``result`` the whole result.
    """

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result  # the client's CallToolResult (None when a tool raises it)


# ---------------------------------------------------------------------- client side


class HandshakeError(MCPError):
    """The server refused ``initialize`` or chose a revision this client does not speak."""


class ServerUnreachable(HandshakeError):
    """The server could not be reached at all: nothing listens at the URL, the host name
    does not resolve, or the server process exited before it answered. Nothing was refused:
    check the address, or start the server (its stderr says why it stopped)."""


class OutputSchemaError(MCPError):
    """A tool's ``structuredContent`` does not match the ``outputSchema`` it advertised."""


class PaginationError(MCPError):
    """A server's cursors went round in circles (or never ended)."""


class InvalidResult(MCPError):
    """The server answered with a result that does not have the shape the protocol requires."""


class TaskTimeout(RequestTimeout):
    """A task did not end within the time the caller chose to wait. The task goes on on the
    server: wait again, or cancel it."""


class TaskCancelled(MCPError):
    """The task was cancelled, so it has no result."""


# ------------------------------------------------------------------- resource server


class AuthError(MCPError):
    """A request's authorization was refused.

    ``description`` becomes the ``error_description`` of the ``WWW-Authenticate``
    challenge and the JSON body, so it says what was wrong in words safe to show: never
    the token, never a value copied from it. ``status`` and ``error`` are the HTTP status
    and the RFC 6750 error code of the answer.
    """

    status: ClassVar[int] = 401
    error: ClassVar[str] = "invalid_token"

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class MalformedAuthorization(AuthError):
    """The ``Authorization`` header is not ``Bearer <token>`` as RFC 6750 spells it, or a
    token was sent another way (the query string): HTTP 400 ``invalid_request``."""

    status = 400
    error = "invalid_request"


class InvalidToken(AuthError):
    """The token is not valid for this server (bad signature, expired, another issuer or
    audience, unknown key, inactive): HTTP 401 ``invalid_token``."""


class InvalidDPoPProof(AuthError):
    """A request presenting a token with the ``DPoP`` scheme carries no valid DPoP proof
    (RFC 9449 §4.3: missing, several, malformed, wrong signature, type, method, URL,
    time, token hash, key, or a replay): HTTP 401 ``invalid_dpop_proof``."""

    error = "invalid_dpop_proof"


class UseDPoPNonce(AuthError):
    """The DPoP proof lacks the server's current nonce (RFC 9449 §9): HTTP 401
    ``use_dpop_nonce``, with the nonce to use in ``DPoP-Nonce``."""

    error = "use_dpop_nonce"

    def __init__(self, description: str, nonce: str) -> None:
        super().__init__(description)
        self.nonce = nonce


class AuthorizationFailed(MCPError):
    """The client side of OAuth could not obtain a token for an MCP server: discovery
    found no usable metadata, the authorization server does not support PKCE S256, no
    way to register a client, the authorization response was refused (``state`` or
    ``iss`` mismatch, an error from the server), the token endpoint refused, or step-up
    gave up after its retry limit. The message says which, and never contains a token,
    a code or a client secret."""


class VerifierUnavailable(MCPError):
    """The authorization server, its metadata or its keys could not be consulted (no
    answer in time, an HTTP error, junk, a body over the size limit), so the token could
    be neither accepted nor refused: HTTP 503, never 401 (the caller did nothing wrong).
    The message is for the server's log (it may name internal URLs) and is not shown to
    the caller."""
