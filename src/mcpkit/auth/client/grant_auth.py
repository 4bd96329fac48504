"""``GrantAuth``: the shared part of the ``httpx.Auth`` classes that get tokens without a user.

What: :class:`GrantAuth` is :class:`~mcpkit.auth.client.oauth.OAuth` for a grant that
needs no browser (client credentials, the JWT bearer grant of workload identity
federation, enterprise-managed authorization): on a 401 it discovers the authorization
server as ``OAuth`` does (``interactive=False``: no PKCE or authorization endpoint
needed), returns a stored token other than the refused one while it has not expired,
and otherwise asks a subclass's :meth:`GrantAuth._obtain` for new tokens, which are kept
in the :class:`~mcpkit.auth.client.store.TokenStore` under (issuer, resource). There is
no refresh: the grant is made again, before a request when the stored token has
expired (so an expired token is not sent), or after a 401. A 403
``insufficient_scope`` asks for the union of the scopes, as ``OAuth``.
:func:`credentials` checks and builds the client credentials these classes take;
:func:`subject_token` gets a token (a workload's JWT, a user's ID token) from a string
or a caller's function, fresh each time; :func:`token_file` is such a function for a
file a platform rotates.

Why: the grants differ only in the token request; discovery, the issuer pin, caching
and the no-user redirect handler are one piece of code, not three.

Failure modes: :class:`~mcpkit.protocol.errors.AuthorizationFailed` when ``issuer=`` is
given and the server names another authorization server (nothing is sent there), when
a subject token provider raises, overruns its time or returns no string, and from the
grant itself (see ``tokens``, ``grants``). ``ValueError`` at
construction for missing or conflicting credentials.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx

from ...protocol.errors import AuthorizationFailed
from .challenge import BearerChallenge
from .discovery import Discovery
from .dpop import DPoPKey
from .jwt import PrivateKeyJWT
from .oauth import OAuth, _Server
from .steps import Call, Exclusive, Step
from .store import ClientCredentials, Tokens, TokenStore
from .tokens import SECRET_METHODS

METHODS = (*SECRET_METHODS, "client_secret_jwt", "private_key_jwt")

SubjectToken = str | Callable[[], str | Awaitable[str]]
"""A token, or a function (sync or async) returning a fresh one on every call."""


class _NoUser:
    """The redirect handler of a flow that never sends a user anywhere."""

    @property
    def redirect_uri(self) -> str:
        raise AuthorizationFailed("a grant without a user has no redirect URI")

    async def authorize(self, url: str) -> str:
        raise AuthorizationFailed("a grant without a user has no user to send to an "
                                  "authorization URL")


def credentials(client_id: str, client_secret: str | None,
                private_key: PrivateKeyJWT | str | bytes | Mapping[str, Any] | None,
                signing_alg: str | None, auth_method: str | None, *,
                public: bool = False) -> ClientCredentials:
    """Checked credentials: ``client_secret`` (``client_secret_basic`` unless the
    server offers only ``client_secret_post``, or ``auth_method`` says, e.g.
    ``client_secret_jwt``) or ``private_key`` (``private_key_jwt``); with ``public``
    neither is also allowed (the ``client_id`` is then sent alone)."""
    if not client_id:
        raise ValueError("client_id is required")
    if client_secret is not None and private_key is not None:
        raise ValueError("give client_secret or private_key, not both" if public
                         else "give exactly one of client_secret and private_key")
    if not public and client_secret is None and private_key is None:
        raise ValueError("give exactly one of client_secret and private_key")
    if auth_method is not None and auth_method not in METHODS:
        raise ValueError(f"auth_method must be one of {', '.join(METHODS)}")
    signer: PrivateKeyJWT | None = None
    if private_key is not None:
        if auth_method not in (None, "private_key_jwt"):
            raise ValueError(f"a private_key authenticates with private_key_jwt, "
                             f"not {auth_method}")
        signer = (private_key if isinstance(private_key, PrivateKeyJWT)
                  else PrivateKeyJWT(private_key, alg=signing_alg))
    elif auth_method == "private_key_jwt":
        raise ValueError("private_key_jwt needs a private_key")
    elif auth_method is not None and client_secret is None:
        raise ValueError(f"{auth_method} needs a client_secret")
    return ClientCredentials(client_id, client_secret, auth_method, private_key=signer)


def subject_token(source: SubjectToken, what: str) -> Generator[Step, Any, str]:
    """The token ``source`` gives now (called in the pump when it is a function)."""
    value: Any = source
    if callable(source):
        value = yield Call(source, what)
    if not isinstance(value, str) or not value.strip():
        raise AuthorizationFailed(f"{what} returned no token (an empty or non-string "
                                  "value)")
    return value.strip()


def token_file(path: str | Path) -> Callable[[], str]:
    """A subject token provider reading ``path`` on every call: a Kubernetes projected
    service account token, a SPIFFE JWT-SVID or a CI system's OIDC token file, which
    the platform rewrites before the token expires."""
    file = Path(path)

    def read() -> str:
        return file.read_text(encoding="utf-8").strip()

    return read


class GrantAuth(OAuth):
    """Tokens from a grant without a user, as an ``httpx.Auth`` (see the module
    docstring). ``issuer``: the authorization server the credentials belong to; when
    given, a server naming another one is refused before anything is sent.
    ``allow_private_networks``: as for :class:`OAuth` (an IdP or authorization server
    on a private network the MCP server is not on); ``dpop``: as for :class:`OAuth`
    (DPoP-bound tokens: the grant's token request carries a proof)."""

    _interactive = False

    def __init__(self, *, client: ClientCredentials | None, issuer: str | None,
                 scopes: Iterable[str] | None, store: TokenStore | None,
                 max_step_ups: int, allow_private_networks: bool = False,
                 dpop: bool | DPoPKey = False) -> None:
        super().__init__(_NoUser(), store=store, max_step_ups=max_step_ups,
                         offline_access=False, scopes=scopes, client=client,
                         allow_private_networks=allow_private_networks, dpop=dpop)
        self.issuer = issuer

    def _obtain(self, discovery: Discovery, scopes: tuple[str, ...]
                ) -> Generator[Step, Any, Tokens]:
        """New tokens for ``discovery``'s resource and ``scopes`` (the grant)."""
        raise NotImplementedError

    def _prepare(self, request: httpx.Request, known: _Server
                 ) -> Generator[Step, Any, Tokens | None]:
        """The stored token, after a new grant when it has expired (for the server and
        scopes of the last one; one grant at a time)."""
        discovery = known.discovery
        if discovery is not None:
            held = self.store.get_tokens(discovery.issuer, discovery.resource)
            if held is not None and held.expired():
                yield Exclusive()
                held = self.store.get_tokens(discovery.issuer, discovery.resource)
                if held is None or held.expired():  # not renewed by another request
                    yield from self._authorize(discovery, known, known.requested)
        return self._attach(request, known)

    def _renew(self, server: str, known: _Server, challenge: BearerChallenge,
               sent: Tokens | None) -> Generator[Step, Any, Tokens]:
        """A stored token other than the refused one, else a new one (no refresh)."""
        discovery = yield from self._discover(server, known, challenge)
        held = self.store.get_tokens(discovery.issuer, discovery.resource)
        if self._another(held, sent):
            assert held is not None
            return held
        wanted = (self.scopes if self.scopes is not None
                  else challenge.scopes or discovery.scopes_supported)
        return (yield from self._authorize(discovery, known, wanted))

    def _authorize(self, discovery: Discovery, known: _Server,
                   wanted: Iterable[str]) -> Generator[Step, Any, Tokens]:
        if self.issuer is not None and discovery.issuer != self.issuer:
            raise AuthorizationFailed(
                f"the server names the authorization server {discovery.issuer!r}, not "
                f"{self.issuer!r} these credentials belong to; refused")
        scopes = tuple(dict.fromkeys(wanted))
        known.requested = scopes
        tokens = yield from self._obtain(discovery, scopes)
        self.store.set_tokens(discovery.issuer, discovery.resource, tokens)
        return tokens
