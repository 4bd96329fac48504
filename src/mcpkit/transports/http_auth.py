"""What the HTTP endpoints do with an authenticated request, without knowing OAuth.

An authentication middleware in front of the app (``mcpkit.auth.BearerAuth``) puts the
request's principal in the ASGI scope at ``scope["state"][key]``; the key is given by
the layer that assembled both (``StreamableHTTPApp(principal_key=...)``), so this package
never imports the auth package. Here:

- :func:`principal_of`: that principal (``None`` when the app is not configured for one);
- :func:`identity_of`: the string state is bound to (an HTTP session, an MRTR state);
- :class:`Denial` and :data:`CallGuard`: the server's judgement of one call (a tool
  needing scopes the token lacks), and :func:`refused_call`, which finds the first
  refused request of a POST body;
- :func:`respond_denied`: the HTTP 403 of such a call. Its ``WWW-Authenticate`` value
  comes from the guard; its body is one JSON-RPC error with the refused request's id
  (``null`` when it had none), code -32600 (``Invalid Request``, the code of this
  transport's other HTTP refusals: MCP defines none for authorization and forbids
  inventing ones in the reserved range), a message naming the scopes, and
  ``data.requiredScopes``.

Failure modes: none; a principal of the wrong shape is the assembling layer's bug, not
input (only the middleware writes that key).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ..protocol.errors import InvalidRequest
from ..protocol.jsonrpc import is_valid_id
from ..protocol.record import Record
from ..session import Principal
from .asgi import Scope, Send, respond


class Denial(Record):
    """Why a call is refused: the ``WWW-Authenticate`` ``challenge`` of the 403, the
    ``message`` of its JSON-RPC error, and the ``scopes`` the call needs."""

    __slots__ = ("challenge", "message", "scopes")

    def __init__(self, challenge: str, message: str, scopes: tuple[str, ...]) -> None:
        self.challenge = challenge
        self.message = message
        self.scopes = scopes


CallGuard = Callable[[Principal | None, str, dict[str, Any]], Denial | None]
"""``guard(principal, method, params)``: a ``Denial`` for a request the principal may not
make, else None. Called for every request of a POST body before it reaches a session."""


def principal_of(scope: Scope, key: str | None) -> Principal | None:
    """The principal an authentication middleware left at ``scope["state"][key]``;
    None without a ``key`` or when none is there."""
    if key is None:
        return None
    state = scope.get("state")
    principal: Principal | None = state.get(key) if isinstance(state, dict) else None
    return principal


def identity_of(principal: Principal | None) -> str | None:
    """The identity state is bound to; None for an unauthenticated request."""
    return None if principal is None else principal.identity


def refused_call(guard: CallGuard | None, principal: Principal | None,
                 messages: list[Any]) -> tuple[Any, Denial] | None:
    """The id and ``Denial`` of the first request in ``messages`` (one POST body) that
    ``guard`` refuses; None when every one may go ahead."""
    if guard is None:
        return None
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            continue
        params = message.get("params")
        denial = guard(principal, message["method"], params if isinstance(params, dict) else {})
        if denial is not None:
            return message.get("id"), denial
    return None


async def respond_denied(send: Send, rid: Any, denial: Denial) -> None:
    """The 403 of a refused call (see the module docstring)."""
    error = InvalidRequest(denial.message, {"requiredScopes": list(denial.scopes)})
    body = orjson.dumps({"jsonrpc": "2.0", "id": rid if is_valid_id(rid) else None,
                         "error": error.to_error()})
    await respond(send, 403, body, [(b"www-authenticate", denial.challenge.encode("ascii")),
                                    (b"cache-control", b"no-store")])
