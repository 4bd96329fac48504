"""``OAuth``: an ``httpx.Auth`` that gets and keeps tokens for MCP servers.

What: on a 401 it reads the ``Bearer`` challenge, discovers the authorization server
(``discovery``), uses a stored token or refreshes it, and otherwise registers
(``tokens.register``), sends the user through the authorization URL (the
:class:`~mcpkit.auth.client.callback.RedirectHandler`), checks the response
(``authorize``) and trades the code for tokens; then it retries the request with
``Authorization: Bearer`` (or, with ``dpop=``, a DPoP-bound token as ``Authorization:
DPoP`` with a fresh proof per request, retried once with the server's nonce after a 401
``use_dpop_nonce``; see ``dpop``). On a 403 ``insufficient_scope`` it authorizes
again for the union of the scopes it asked for before and the challenged ones, at most
``max_step_ups`` times per request, then lets the 403 through. Tokens go to a
:class:`~mcpkit.auth.client.store.TokenStore` under (issuer, resource).
:meth:`OAuth.logout` revokes (RFC 7009, ``revoke``) and deletes what it got.

Scopes asked for: ``scopes=`` when given, else the challenge's ``scope``, else the
resource's ``scopes_supported``, else none; ``offline_access`` is added when the
authorization server lists it (a refresh token is wanted) and ``offline_access=True``.

How: the flow is a pure generator of steps (``steps``) pumped by
:meth:`OAuth.sync_auth_flow` (``httpx.Client``) and :meth:`OAuth.async_auth_flow`
(``httpx.AsyncClient``). The async pump awaits the redirect handler (and a ``Call``'s
function); the sync pump runs them with ``anyio.run`` (so it must not be called from a
thread running an event loop).
One authorization at a time per ``OAuth`` object: a request that meets a 401 while
another one is authorizing waits, then uses the token that one got.

Failure modes: :class:`~mcpkit.protocol.errors.AuthorizationFailed` from every part
(see their modules) ends the request with that exception; httpx transport errors on the
way to an authorization server surface as httpx raises them. A 401 that persists with a
fresh token is returned to the caller, not retried again.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import orjson

from ...protocol.errors import AuthorizationFailed
from ..urls import canonical_resource_uri
from .authorize import AuthorizationAttempt
from .callback import RedirectHandler
from .challenge import BearerChallenge, parse_bearer_challenge
from .discovery import Discovery, discover
from .dpop import DPoPKey, DPoPNonces, Prover, dpop_from_store, nonce_challenge
from .steps import AddressGuard, Call, Exclusive, Fetch, Flow, Interact, Step, bound
from .store import ClientCredentials, MemoryTokenStore, Tokens, TokenStore
from .tokens import exchange_code, refresh, register

if TYPE_CHECKING:
    from .revoke import Revocation


@dataclass
class _Server:
    """What this auth object knows about one MCP server."""

    discovery: Discovery | None = None
    requested: tuple[str, ...] = ()  # the scopes asked for last
    version: str | None = None  # the MCP revision of the last request refused


class OAuth(httpx.Auth):
    """OAuth 2.1 authorization code + PKCE for MCP servers, as an ``httpx.Auth``.

    ``handler``: the user-facing part (see ``callback``). ``store``: where
    tokens and registrations live (memory by default). ``client``: pre-registered
    credentials, for every authorization server or a mapping issuer -> credentials.
    ``client_metadata_url``: this client's Client ID Metadata Document (an https URL),
    used as ``client_id`` where supported. ``client_name``: for dynamic registration.
    ``max_step_ups``: re-authorizations per request on 403 ``insufficient_scope``.
    ``scopes``: the scopes to ask for instead of the challenged (or advertised) ones; a
    403 ``insufficient_scope`` still adds the ones the server names.
    ``allow_private_networks``: also fetch from private and loopback addresses that the
    MCP server is not on (see ``addresses``; link-local ones stay refused).
    ``dpop``: ask for DPoP-bound tokens (RFC 9449): ``True`` for a new EC P-256 key, or
    a :class:`~mcpkit.auth.client.dpop.DPoPKey`; see ``dpop``.
    """

    requires_request_body = True  # a request is sent again after authorizing
    _interactive = True  # discovery checks the parts a user's authorization needs

    def __init__(self, handler: RedirectHandler, *, store: TokenStore | None = None,
                 client: ClientCredentials | Mapping[str, ClientCredentials] | None = None,
                 client_metadata_url: str | None = None, client_name: str = "mcpkit",
                 max_step_ups: int = 2, offline_access: bool = True,
                 scopes: Iterable[str] | None = None,
                 allow_private_networks: bool = False,
                 dpop: bool | DPoPKey = False) -> None:
        if max_step_ups < 0:
            raise ValueError("max_step_ups must be >= 0")
        self.handler = handler
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.client = client
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.max_step_ups = max_step_ups
        self.offline_access = offline_access
        self.scopes = tuple(scopes) if scopes is not None else None
        self.allow_private_networks = allow_private_networks
        self.dpop: DPoPKey | None = DPoPKey() if dpop is True else dpop or None
        self.dpop_nonces = DPoPNonces()
        self._own_jwk = self.dpop.private_jwk if self.dpop is not None else None
        self._stored_key: tuple[dict[str, Any], DPoPKey] | None = None  # the last one read
        self._servers: dict[str, _Server] = {}
        self._thread_lock = threading.Lock()
        self._task_lock: anyio.Lock | None = None

    # ------------------------------------------------------------------------ the flow

    def _flow(self, request: httpx.Request) -> Flow:
        try:
            server = canonical_resource_uri(str(request.url.copy_with(query=None)))
        except ValueError as exc:
            raise AuthorizationFailed(f"cannot authorize for {request.url}: {exc}") from None
        known = self._servers.setdefault(server, _Server())
        sent = yield from self._prepare(request, known)
        response: httpx.Response = yield request
        renewed, step_ups, nonce_retry = False, 0, True
        while True:
            if (sent is not None and sent.dpop_bound and nonce_retry
                    and nonce_challenge(response)
                    and self.dpop_nonces.learn(request.url, response)):
                nonce_retry = False  # once per token: RFC 9449 §9
                self._present(request, sent)
                response = yield request
                continue
            header = response.headers.get("www-authenticate", "")
            challenge = (parse_bearer_challenge(header)
                         or parse_bearer_challenge(header, scheme="dpop"))
            if response.status_code in (401, 403):
                known.version = _mcp_version(request)
            if response.status_code == 401 and not renewed:
                renewed = True
                yield Exclusive()
                tokens = yield from self._renew(server, known, challenge or BearerChallenge(),
                                                sent)
            elif (response.status_code == 403 and challenge is not None
                  and challenge.insufficient_scope and step_ups < self.max_step_ups):
                step_ups += 1
                yield Exclusive()
                discovery = yield from self._discover(server, known, challenge)
                held = self.store.get_tokens(discovery.issuer, discovery.resource)
                wanted = [*known.requested, *(held.scopes if held else ()), *challenge.scopes]
                tokens = yield from self._authorize(discovery, known, wanted)
            else:
                if sent is not None and sent.dpop_bound:
                    self.dpop_nonces.learn(request.url, response)  # a nonce for next time
                return
            self._present(request, tokens)
            sent, nonce_retry = tokens, True
            response = yield request

    def _prepare(self, request: httpx.Request, known: _Server
                 ) -> Generator[Step, Any, Tokens | None]:
        """Before the first send: the stored token on ``request`` (see :meth:`_attach`);
        a subclass may renew it first."""
        return self._attach(request, known)
        yield  # a generator, so that subclasses can yield steps here

    def _attach(self, request: httpx.Request, known: _Server) -> Tokens | None:
        """Put the stored token for this server on ``request``; the token, if any."""
        if known.discovery is None:
            return None
        tokens = self.store.get_tokens(known.discovery.issuer, known.discovery.resource)
        if tokens is None or not self._usable(tokens):
            return None
        self._present(request, tokens)
        return tokens

    def _present(self, request: httpx.Request, tokens: Tokens) -> None:
        """``Authorization: Bearer <token>``, or for a DPoP-bound token ``Authorization:
        DPoP <token>`` and a fresh proof in ``DPoP`` (RFC 9449 §7.1)."""
        key = self._key_of(tokens)
        if key is None:
            request.headers["authorization"] = f"Bearer {tokens.access_token}"
            request.headers.pop("dpop", None)
            return
        request.headers["authorization"] = f"DPoP {tokens.access_token}"
        request.headers["dpop"] = Prover(key, self.dpop_nonces).proof(
            request.method, request.url, tokens.access_token)

    def _prover(self, held: Tokens | None = None) -> Prover | None:
        """What proves possession at the token endpoint: the key ``held`` is bound to
        (its refresh token is bound to it too), else this client's key, else nothing."""
        key = (self._key_of(held) if held is not None else None) or self.dpop
        return None if key is None else Prover(key, self.dpop_nonces)

    def _key_of(self, tokens: Tokens) -> DPoPKey | None:
        """The key a DPoP-bound token is bound to (None for a bearer token or an unusable
        key): this client's own, else the one kept with it (read once, then reused)."""
        if not tokens.dpop_bound or tokens.dpop_jwk is None:
            return None
        if tokens.dpop_jwk == self._own_jwk:
            return self.dpop
        if self._stored_key is not None and self._stored_key[0] == tokens.dpop_jwk:
            return self._stored_key[1]
        key = dpop_from_store(tokens.dpop_jwk)
        if key is not None:
            self._stored_key = (tokens.dpop_jwk, key)
        return key

    def _usable(self, tokens: Tokens) -> bool:
        """Whether ``tokens`` can be presented (a DPoP-bound one needs its key, read once
        by :meth:`_key_of`, not on every request)."""
        return not tokens.dpop_bound or self._key_of(tokens) is not None

    def _another(self, held: Tokens | None, sent: Tokens | None) -> bool:
        """Whether ``held`` is a usable, unexpired token other than the refused ``sent``."""
        return (held is not None and self._usable(held) and not held.expired()
                and (sent is None or held.access_token != sent.access_token))

    def _discover(self, server: str, known: _Server,
                  challenge: BearerChallenge) -> Generator[Step, Any, Discovery]:
        """Discovery, done again on every challenge (the resource may have moved to
        another authorization server since)."""
        known.discovery = yield from discover(server, challenge.resource_metadata,
                                              known.version, interactive=self._interactive)
        return known.discovery

    def _renew(self, server: str, known: _Server, challenge: BearerChallenge,
               sent: Tokens | None) -> Generator[Step, Any, Tokens]:
        """Tokens after a 401: a stored one other than the refused one, a refreshed one,
        or a new authorization."""
        discovery = yield from self._discover(server, known, challenge)
        held = self.store.get_tokens(discovery.issuer, discovery.resource)
        if self._another(held, sent):
            assert held is not None
            return held  # another request renewed it meanwhile, or an earlier run did
        if held is not None and held.refresh_token:
            client = yield from self._register(discovery)
            fresh = yield from refresh(discovery, client, held, self._prover(held))
            if fresh is not None:
                self.store.set_tokens(discovery.issuer, discovery.resource, fresh)
                return fresh
        wanted = (self.scopes if self.scopes is not None
                  else challenge.scopes or discovery.scopes_supported)
        return (yield from self._authorize(discovery, known, wanted))

    def _register(self, discovery: Discovery) -> Generator[Step, Any, ClientCredentials]:
        return (yield from register(
            discovery, self.store, self.client, redirect_uri=self.handler.redirect_uri,
            client_name=self.client_name, client_metadata_url=self.client_metadata_url))

    def _authorize(self, discovery: Discovery, known: _Server,
                   wanted: Iterable[str]) -> Generator[Step, Any, Tokens]:
        scopes = list(dict.fromkeys(wanted))
        offered = discovery.metadata.get("scopes_supported")
        if (self.offline_access and isinstance(offered, list) and "offline_access" in offered
                and "offline_access" not in scopes):
            scopes.append("offline_access")
        client = yield from self._register(discovery)
        attempt = AuthorizationAttempt.start(
            endpoint=discovery.endpoint("authorization_endpoint") or "",
            issuer=discovery.issuer, client_id=client.client_id,
            redirect_uri=self.handler.redirect_uri, resource=discovery.resource,
            scopes=scopes, iss_supported=discovery.iss_supported)
        known.requested = tuple(scopes)
        redirected: str = yield Interact(attempt.url)
        code = attempt.code_from(redirected)
        tokens = yield from exchange_code(
            discovery, client, code=code, code_verifier=attempt.code_verifier,
            redirect_uri=attempt.redirect_uri, scopes=tuple(scopes), prover=self._prover())
        self.store.set_tokens(discovery.issuer, discovery.resource, tokens)
        return tokens

    async def logout(self, url: str, *, timeout: float = 15.0) -> Revocation:
        """Revoke (RFC 7009) then delete the tokens this object got for the MCP server
        at ``url`` (see ``revoke``: problems are reported in the result, not
        raised). ``ValueError`` when it has not authorized for ``url``: use
        :func:`~mcpkit.auth.client.revoke.revoke_tokens` with the store's (issuer,
        resource) then."""
        from .revoke import revoke_tokens

        known = self._servers.get(canonical_resource_uri(url.split("?", 1)[0]))
        if known is None or known.discovery is None:
            raise ValueError(f"no authorization for {url} in this OAuth object")
        issuer = known.discovery.issuer
        client = self.client.get(issuer) if isinstance(self.client, Mapping) else self.client
        return await revoke_tokens(self.store, issuer, known.discovery.resource,
                                   client=client, timeout=timeout,
                                   allow_private_networks=self.allow_private_networks)

    # ----------------------------------------------------------------------- the pumps

    def sync_auth_flow(
            self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        """The flow for ``httpx.Client``."""
        request.read()
        flow = self._flow(request)
        guard = AddressGuard.for_server(request.url,
                                        allow_private_networks=self.allow_private_networks)
        held = False
        try:
            step = next(flow)
            while True:
                reply: Any
                if isinstance(step, Exclusive):
                    if not held:
                        self._thread_lock.acquire()
                        held = True
                    reply = None
                elif isinstance(step, Interact):
                    reply = anyio.run(self.handler.authorize, step.url)
                elif isinstance(step, Call):
                    reply = step.run_sync()
                elif isinstance(step, Fetch):
                    reply = yield guard.guard(step.request)
                    guard.check(step.request, reply)
                    bound(reply, step)
                    reply.read()
                else:
                    reply = yield step
                    guard.learn(reply)
                step = flow.send(reply)
        except StopIteration:
            return
        finally:
            flow.close()
            if held:
                self._thread_lock.release()

    async def async_auth_flow(
            self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """The flow for ``httpx.AsyncClient``."""
        await request.aread()
        if self._task_lock is None:
            self._task_lock = anyio.Lock()
        flow = self._flow(request)
        guard = AddressGuard.for_server(request.url,
                                        allow_private_networks=self.allow_private_networks)
        held = False
        try:
            step = next(flow)
            while True:
                reply: Any
                if isinstance(step, Exclusive):
                    if not held:
                        await self._task_lock.acquire()
                        held = True
                    reply = None
                elif isinstance(step, Interact):
                    reply = await self.handler.authorize(step.url)
                elif isinstance(step, Call):
                    reply = await step.run_async()
                elif isinstance(step, Fetch):
                    reply = yield guard.guard(step.request, asynchronous=True)
                    guard.check(step.request, reply)
                    bound(reply, step)
                    await reply.aread()
                else:
                    reply = yield step
                    guard.learn(reply)
                step = flow.send(reply)
        except StopIteration:
            return
        finally:
            flow.close()
            if held:
                self._task_lock.release()


def _mcp_version(request: httpx.Request) -> str | None:
    """The MCP revision ``request`` speaks: its ``MCP-Protocol-Version`` header, else the
    revision an ``initialize`` body offers; None when neither says."""
    version: str | None = request.headers.get("mcp-protocol-version")
    if version:
        return version
    try:
        body = orjson.loads(request.content)
    except (orjson.JSONDecodeError, httpx.RequestNotRead):
        return None
    params = body.get("params") if isinstance(body, dict) else None
    offered = params.get("protocolVersion") if isinstance(params, dict) else None
    if isinstance(offered, str) and body.get("method") == "initialize":
        return offered
    return None
