"""``BearerAuth``: an ASGI middleware that makes an app an OAuth 2.1 resource server.

What it does with each HTTP request:

- ``GET``/``HEAD`` of a well-known metadata path (path-inserted and root, RFC 9728)
  -> the Protected Resource Metadata JSON, public and cacheable, readable cross-origin
  (``Access-Control-Allow-Origin: *``; ``OPTIONS`` there answers the CORS preflight);
- any other path -> the bearer token is taken from the one ``Authorization`` header
  (:func:`~mcpkit.auth.server.bearer.parse_authorization`) and verified by the
  :class:`~mcpkit.auth.server.verifier.TokenVerifier`; the request reaches the app only with a
  valid token that holds every ``required_scopes``, and the app finds the
  :class:`~mcpkit.auth.server.access_token.AccessToken` at ``scope["state"][state_key]``
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
- with ``dpop`` (a :class:`~mcpkit.auth.server.dpop.DPoPChecker`, RFC 9449): a token bound to
  a key (``cnf.jkt``, in the JWT or the introspection answer) is accepted only as
  ``Authorization: DPoP <token>`` with exactly one valid ``DPoP`` proof for this method
  and URL (the URL is the resource's public origin and the request's path, so a proxy
  in front changes nothing); refused with 401 ``invalid_token`` under ``Bearer``,
  ``invalid_dpop_proof`` for a bad proof, ``use_dpop_nonce`` (and ``DPoP-Nonce``) when
  server nonces are on; an unbound token is refused under ``DPoP``. Every 401 then
  carries a second challenge, ``DPoP algs="..."``, the error in the challenge of the
  scheme the request used. Without ``dpop`` a bound token is refused under any scheme;
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
from urllib.parse import parse_qsl, urlsplit

import orjson

from ...protocol.errors import (
    AuthError,
    InvalidDPoPProof,
    InvalidToken,
    MalformedAuthorization,
    UseDPoPNonce,
    VerifierUnavailable,
)
from ...protocol.scopes import check_scopes
from .access_token import AccessToken
from .bearer import parse_credentials
from .cache import TokenCache, token_key, within_expiry
from .challenge import bearer_challenge, dpop_challenge, insufficient_scope, invalid_request
from .dpop import DPoPChecker
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
    the verifier would see is seen this much later at most. ``dpop``: accept DPoP-bound
    tokens with their proofs (see the module docstring); ``None``: bearer tokens only."""

    def __init__(self, app: ASGIApp, *, resource: ProtectedResource, verifier: TokenVerifier,
                 required_scopes: Iterable[str] = (), state_key: str = AUTH_STATE_KEY,
                 reuse_seconds: float = 1.0, dpop: DPoPChecker | None = None,
                 public: Callable[[str], bool] | None = None) -> None:
        if reuse_seconds < 0:
            raise ValueError("reuse_seconds must be >= 0")
        own = getattr(verifier, "cache_ttl", None)  # the verifier's own policy bounds it
        if isinstance(own, int | float) and own >= 0:
            reuse_seconds = min(reuse_seconds, float(own))
        self.reuse_seconds = reuse_seconds
        # verified header values (by their SHA-256: no token is kept) -> their principal
        self._recent: TokenCache[AccessToken] = TokenCache(REUSE_ENTRIES)
        self.app = app
        #: Whether a path is passed through without a token (the server's public
        #: routes, such as /health); None: none is.
        self.public = public
        self.resource = resource
        self.verifier = verifier
        self.required_scopes = check_scopes(required_scopes)
        self.challenge_scopes = self.required_scopes or resource.scopes_supported
        self.state_key = state_key
        self._document = orjson.dumps(resource.document())
        self.dpop = dpop
        self._schemes = ("bearer", "dpop") if dpop is not None else ("bearer",)
        outside = urlsplit(resource.resource)
        self._origin = f"{outside.scheme}://{outside.netloc}"  # what clients see, not Host

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
        if self.public is not None and self.public(scope["path"]):
            await self.app(scope, receive, send)
            return
        try:
            raw = _authorization(scope)
            presented = parse_credentials(None if raw is None else raw.decode("latin-1"),
                                          self._schemes)
        except MalformedAuthorization as exc:
            await self._refused(send, exc)
            return
        if presented is None:
            await self._refuse(send, 401, "unauthorized", "this server requires a bearer token",
                               self._challenges())
            return
        scheme, token = presented
        assert raw is not None
        key = token_key(raw) if self.reuse_seconds else None
        seen = self._recent.get(key) if key is not None else None
        if seen is not None:
            access = seen
        else:
            verified = await self._verify(send, scheme, token, key)
            if verified is None:
                return
            access = verified
        try:
            self._check_binding(scope, scheme, token, access)
        except AuthError as exc:
            await self._refused(send, exc, scheme)
            return
        if self.required_scopes and access.missing_scopes(self.required_scopes):
            needed = f"this request needs the scopes: {' '.join(self.required_scopes)}"
            algs = self.dpop.algorithms if self.dpop is not None and scheme == "dpop" else None
            await self._refuse(send, 403, "insufficient_scope", needed, [insufficient_scope(
                self.resource.metadata_url, self.required_scopes, needed, dpop_algs=algs)])
            return
        state = scope.get("state")
        if isinstance(state, dict):  # the server's per-request copy: ours to add to
            state[self.state_key] = access
        else:
            scope = {**scope, "state": {self.state_key: access}}
        await self.app(scope, receive, send)

    async def _verify(self, send: Send, scheme: str, token: str,
                      key: bytes | None) -> AccessToken | None:
        """The principal of ``token`` from the verifier (remembered under ``key`` when
        given), or None once the refusal was sent."""
        try:
            access = await self.verifier.verify(token)
        except (AuthError, VerifierUnavailable) as exc:
            await self._refused(send, exc, scheme)
            return None
        if key is not None:
            self._recent.put(key, access, within_expiry(self.reuse_seconds, access.expires_at))
        return access

    def _check_binding(self, scope: Scope, scheme: str, token: str,
                       access: AccessToken) -> None:
        """Raise unless the token is presented as its binding requires: an unbound one
        as ``Bearer``, a DPoP-bound one (``cnf.jkt``) as ``DPoP`` with a valid proof."""
        cnf = access.claims.get("cnf")
        if cnf is None:
            if scheme == "dpop":
                raise InvalidToken("the token is not bound to a DPoP key; present it with "
                                   "the Bearer scheme")
            return
        jkt = cnf.get("jkt") if isinstance(cnf, dict) else None
        if self.dpop is None:
            raise InvalidToken("the token is bound to a key (cnf) and this server accepts "
                               "bearer tokens only")
        if not isinstance(jkt, str):
            raise InvalidToken("the token is bound to a key in a way this server cannot "
                               "check (only DPoP's cnf.jkt)")
        if scheme != "dpop":
            raise InvalidToken("the token is bound to a DPoP key; present it as "
                               "'Authorization: DPoP <token>' with a DPoP proof")
        proofs = [value for name, value in scope["headers"] if name == b"dpop"]
        if len(proofs) != 1:
            raise InvalidDPoPProof("send exactly one DPoP header with a proof for this "
                                   "request" if proofs else "send a DPoP proof in the DPoP "
                                   "header")
        self.dpop.check(proofs[0].decode("latin-1"), method=scope["method"],
                        url=self._origin + scope["path"], access_token=token, jkt=jkt)

    def _challenges(self, scheme: str = "bearer", error: str | None = None,
                    description: str | None = None) -> list[str]:
        """The 401 challenges: ``Bearer``, and ``DPoP`` with its ``algs`` when DPoP is
        accepted (RFC 9449 §7.1); ``error`` goes to the scheme the request used."""
        bearer = bearer_challenge(
            error=error if scheme == "bearer" else None,
            error_description=description if scheme == "bearer" else None,
            scopes=self.challenge_scopes, resource_metadata=self.resource.metadata_url)
        if self.dpop is None:
            return [bearer]
        return [bearer, dpop_challenge(
            self.dpop.algorithms, error=error if scheme == "dpop" else None,
            error_description=description if scheme == "dpop" else None,
            resource_metadata=self.resource.metadata_url)]

    async def _refused(self, send: Send, exc: AuthError | VerifierUnavailable,
                       scheme: str = "bearer") -> None:
        """The answer to a request whose credentials failed (see the module docstring)."""
        metadata_url = self.resource.metadata_url
        if isinstance(exc, MalformedAuthorization):
            await self._refuse(send, 400, exc.error, exc.description,
                               [invalid_request(metadata_url, exc.description)])
        elif isinstance(exc, UseDPoPNonce):
            await self._refuse(send, 401, exc.error, exc.description,
                               self._challenges("dpop", exc.error, exc.description),
                               [(b"dpop-nonce", exc.nonce.encode("ascii"))])
        elif isinstance(exc, AuthError):
            log.debug("refused a %s token: %s", scheme, exc.description)
            await self._refuse(send, 401, exc.error, exc.description,
                               self._challenges(scheme, exc.error, exc.description))
        else:
            log.warning("could not verify a bearer token: %s", exc)
            await _respond(send, 503, {
                "error": "temporarily_unavailable",
                "error_description": "the authorization server could not be consulted; "
                                     "try again later"},
                [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())])

    async def _refuse(self, send: Send, status: int, error: str, description: str,
                      challenges: list[str],
                      extra: list[tuple[bytes, bytes]] | None = None) -> None:
        await _respond(send, status, {"error": error, "error_description": description},
                       [*((b"www-authenticate", c.encode("ascii")) for c in challenges),
                        *(extra or ())])

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
