"""``BearerAuth``: an ASGI middleware that makes an app an OAuth 2.1 resource server.

What it does with each HTTP request:

- ``GET``/``HEAD`` of a well-known metadata path (path-inserted and root, RFC 9728)
  -> the Protected Resource Metadata JSON, public and cacheable, readable cross-origin
  (``Access-Control-Allow-Origin: *``; ``OPTIONS`` there answers the CORS preflight);
- any other path -> the bearer token is taken from the one ``Authorization`` header
  (:func:`~mcpkit.auth.bearer.parse_authorization`) and verified by the
  :class:`~mcpkit.auth.verifier.TokenVerifier`; the request reaches the app only with a
  valid token that holds every ``required_scopes``, and the app finds the
  :class:`~mcpkit.auth.access_token.AccessToken` at ``scope["state"][state_key]``
  (``"mcpkit.auth"`` by default, :data:`AUTH_STATE_KEY`), so a transport can read it
  without importing this package. The ``state`` dict is a copy: the server's own is
  never changed.

Answers it gives instead (each with a ``WWW-Authenticate: Bearer`` challenge carrying
``resource_metadata``, ``Cache-Control: no-store`` and a small JSON body
``{"error": ..., "error_description": ...}``):

- 401: no token (``scope`` lists ``required_scopes``, else the metadata's
  ``scopes_supported``), or a refused one (``error="invalid_token"``);
- 400 ``invalid_request``: a malformed header, several ``Authorization`` headers, or a
  token in the query string (``access_token=...``; never accepted, RFC 6750 §2.3 is not
  supported and MCP forbids it);
- 403 ``insufficient_scope``: a valid token without every required scope; ``scope``
  names all of them;
- 503 (``Retry-After``): the verifier could not reach the authorization server or its
  keys; the reason is logged, the caller is told only to retry.

``lifespan`` messages pass through; a WebSocket connection is closed (1008) before it
is accepted, as nothing here can authorize one. Per-method scopes (a tool needing its
own) are not this layer's business: it does not read MCP messages.

Failure modes: none of its own for anything a client sends; the token is never logged.
An exception raised by the wrapped app propagates unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl

import orjson

from ..protocol.errors import (
    AuthError,
    InvalidToken,
    MalformedAuthorization,
    VerifierUnavailable,
)
from ..protocol.scopes import check_scopes
from .access_token import AccessToken
from .bearer import parse_authorization
from .cache import TokenCache, token_key, within_expiry
from .challenge import insufficient_scope, invalid_request, unauthorized
from .metadata import ProtectedResource
from .verifier import TokenVerifier

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

AUTH_STATE_KEY = "mcpkit.auth"
"""Where a verified :class:`AccessToken` is put: ``scope["state"]["mcpkit.auth"]``."""

RETRY_AFTER_SECONDS = 5
REUSE_ENTRIES = 4096  # verified header values remembered at most (see ``reuse_seconds``)
METADATA_MAX_AGE = 300

log = logging.getLogger("mcpkit.auth")


class BearerAuth:
    """Wraps ``app``; see the module docstring. ``resource``: this server's metadata;
    ``verifier``: judges tokens; ``required_scopes``: every request needs them all
    (``ValueError`` for a name that is not a scope-token); ``state_key``: where the
    principal goes in ``scope["state"]``; ``reuse_seconds``: how long a verified
    ``Authorization`` value is taken again without asking the verifier (never past the
    token's expiry, nor longer than the verifier's own ``cache_ttl`` when it has one; 0:
    ask on every request). A client sends the same header on every request, and even a
    verifier's own cache costs a parse, a hash and a coroutine per request; a revocation
    the verifier would see is seen this much later at most."""

    def __init__(self, app: ASGIApp, *, resource: ProtectedResource, verifier: TokenVerifier,
                 required_scopes: Iterable[str] = (), state_key: str = AUTH_STATE_KEY,
                 reuse_seconds: float = 1.0) -> None:
        if reuse_seconds < 0:
            raise ValueError("reuse_seconds must be >= 0")
        own = getattr(verifier, "cache_ttl", None)  # the verifier's own policy bounds it
        if isinstance(own, int | float) and own >= 0:
            reuse_seconds = min(reuse_seconds, float(own))
        self.reuse_seconds = reuse_seconds
        # verified header values (by their SHA-256: no token is kept) -> their principal
        self._recent: TokenCache[AccessToken] = TokenCache(REUSE_ENTRIES)
        self.app = app
        self.resource = resource
        self.verifier = verifier
        self.required_scopes = check_scopes(required_scopes)
        self.challenge_scopes = self.required_scopes or resource.scopes_supported
        self.state_key = state_key
        self._document = orjson.dumps(resource.document())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["path"] in self.resource.well_known_paths:
            await self._serve_metadata(scope, send)
            return
        try:
            raw = _authorization(scope)
        except MalformedAuthorization as exc:
            await self._refused(send, exc)
            return
        key = token_key(raw) if raw is not None and self.reuse_seconds else None
        seen = self._recent.get(key) if key is not None else None
        if seen is not None:
            access = seen
        else:
            verified = await self._verify(send, raw, key)
            if verified is None:
                return
            access = verified
        if self.required_scopes and access.missing_scopes(self.required_scopes):
            needed = f"this request needs the scopes: {' '.join(self.required_scopes)}"
            await self._refuse(send, 403, "insufficient_scope", needed, insufficient_scope(
                self.resource.metadata_url, self.required_scopes, needed))
            return
        state = scope.get("state")
        if isinstance(state, dict):  # the server's per-request copy: ours to add to
            state[self.state_key] = access
        else:
            scope = {**scope, "state": {self.state_key: access}}
        await self.app(scope, receive, send)

    async def _verify(self, send: Send, raw: bytes | None,
                      key: bytes | None) -> AccessToken | None:
        """The principal of the header value ``raw`` from the verifier (remembered under
        ``key`` when given), or None once the refusal was sent."""
        try:
            token = parse_authorization(None if raw is None else raw.decode("latin-1"))
            if token is None:
                await self._refuse(send, 401, "unauthorized",
                                   "this server requires a bearer token",
                                   unauthorized(self.resource.metadata_url,
                                                self.challenge_scopes))
                return None
            access = await self.verifier.verify(token)
        except (AuthError, VerifierUnavailable) as exc:
            await self._refused(send, exc)
            return None
        if key is not None:
            self._recent.put(key, access, within_expiry(self.reuse_seconds, access.expires_at))
        return access

    async def _refused(self, send: Send, exc: AuthError | VerifierUnavailable) -> None:
        """The answer to a request whose credentials failed (see the module docstring)."""
        metadata_url = self.resource.metadata_url
        if isinstance(exc, MalformedAuthorization):
            await self._refuse(send, 400, exc.error, exc.description,
                               invalid_request(metadata_url, exc.description))
        elif isinstance(exc, InvalidToken):
            log.debug("refused a bearer token: %s", exc.description)
            await self._refuse(send, 401, exc.error, exc.description,
                               unauthorized(metadata_url, self.challenge_scopes,
                                            exc.description))
        else:
            log.warning("could not verify a bearer token: %s", exc)
            await _respond(send, 503, {
                "error": "temporarily_unavailable",
                "error_description": "the authorization server could not be consulted; "
                                     "try again later"},
                [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())])

    async def _refuse(self, send: Send, status: int, error: str, description: str,
                      challenge: str) -> None:
        await _respond(send, status, {"error": error, "error_description": description},
                       [(b"www-authenticate", challenge.encode("ascii"))])

    async def _serve_metadata(self, scope: Scope, send: Send) -> None:
        cors = [(b"access-control-allow-origin", b"*")]
        method = scope["method"]
        if method == "OPTIONS":
            await _send(send, 204, b"", [
                *cors, (b"access-control-allow-methods", b"GET, HEAD, OPTIONS"),
                (b"access-control-allow-headers", b"mcp-protocol-version"),
                (b"access-control-max-age", b"86400")])
        elif method in ("GET", "HEAD"):
            await _send(send, 200, self._document, [
                *cors, (b"content-type", b"application/json"),
                (b"cache-control", f"public, max-age={METADATA_MAX_AGE}".encode())],
                head=method == "HEAD")
        else:
            await _send(send, 405, b"", [(b"allow", b"GET, HEAD, OPTIONS")])


def _authorization(scope: Scope) -> bytes | None:
    """The one ``Authorization`` header value (``None`` if absent). Raises
    ``MalformedAuthorization`` for several, or for a token in the query string."""
    raw_query: bytes = scope.get("query_string", b"")
    query = raw_query.decode("latin-1") if raw_query else ""
    if query and any(name == "access_token"
                     for name, _ in parse_qsl(query, keep_blank_values=True)):
        raise MalformedAuthorization(
            "send the token in the Authorization header, never in the query string")
    found: bytes | None = None
    for name, value in scope["headers"]:  # ASGI: header names are lowercased
        if name == b"authorization":
            if found is not None:
                raise MalformedAuthorization(
                    "a request may carry only one Authorization header")
            found = value
    return found


async def _respond(send: Send, status: int, body: dict[str, str],
                   headers: list[tuple[bytes, bytes]]) -> None:
    await _send(send, status, orjson.dumps(body), [
        *headers, (b"content-type", b"application/json"), (b"cache-control", b"no-store")])


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]],
                head: bool = False) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})
