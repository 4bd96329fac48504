"""``Auth``: how a server's HTTP endpoint is protected, given to ``Server.asgi_app``.

What: the verifier that judges tokens, the server's Protected Resource Metadata, and the
scopes every request needs. ``Server.asgi_app(auth=Auth(...))`` (and
``server.run("http", auth=...)``) wraps its app in :class:`BearerAuth` built from it,
closes the verifier when the app's lifespan ends, and answers a call lacking the scopes
its tool, resource or prompt declares with :meth:`Auth.insufficient`'s challenge.

Why a value of its own: the server framework takes one typed option instead of the
middleware's arguments, and everything the server needs to say about authorization
(the 401 and 403 challenges, the metadata URL) comes from the same object.

Failure modes: ``ValueError`` at construction for a required scope that is not an RFC 6750
scope-token. :meth:`aclose` propagates what the verifier's ``aclose`` raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ...protocol.scopes import check_scopes
from .access_token import AccessToken
from .challenge import insufficient_scope
from .dpop import DPoPChecker
from .metadata import ProtectedResource
from .middleware import ASGIApp, BearerAuth
from .verifier import TokenVerifier


class Auth:
    """Protects a server's HTTP endpoint (see the module docstring).

    ``verifier``: judges each request's bearer token (a :class:`JWTVerifier`, an
    :class:`IntrospectionVerifier` or your own; one with an ``aclose()`` coroutine method
    is closed when the app's lifespan ends). ``resource``: this server's metadata (its
    canonical URI, authorization servers, ``scopes_supported``). ``required_scopes``:
    scopes every request needs (per-tool, per-resource and per-prompt ones come on top).
    ``reuse_seconds``: how long a verified ``Authorization`` value is taken again without
    the verifier (:class:`BearerAuth`; 0: verify every request). ``dpop``: also accept
    DPoP-bound tokens presented with their proofs (RFC 9449): ``True`` for a
    :class:`~mcpkit.auth.server.dpop.DPoPChecker` with its defaults, or one configured
    (algorithms, time window, server nonces); by default such tokens are refused.
    """

    __slots__ = ("dpop", "required_scopes", "resource", "reuse_seconds", "verifier")

    def __init__(self, verifier: TokenVerifier, *, resource: ProtectedResource,
                 required_scopes: Iterable[str] = (), reuse_seconds: float = 1.0,
                 dpop: bool | DPoPChecker = False) -> None:
        if reuse_seconds < 0:
            raise ValueError("reuse_seconds must be >= 0")
        self.dpop: DPoPChecker | None = DPoPChecker() if dpop is True else dpop or None
        self.verifier = verifier
        self.resource = resource
        self.required_scopes = check_scopes(required_scopes)
        self.reuse_seconds = reuse_seconds

    def __repr__(self) -> str:
        return (f"Auth({self.verifier!r}, resource={self.resource!r}, "
                f"required_scopes={list(self.required_scopes)!r})")

    def protect(self, app: ASGIApp, public: Callable[[str], bool] | None = None
                ) -> BearerAuth:
        """``app`` behind a :class:`BearerAuth` of these settings; a path ``public``
        accepts is served without a token (the server's public routes)."""
        return BearerAuth(app, resource=self.resource, verifier=self.verifier,
                          required_scopes=self.required_scopes,
                          reuse_seconds=self.reuse_seconds, dpop=self.dpop,
                          public=public)

    def insufficient(self, scopes: Iterable[str], description: str | None = None,
                     access: AccessToken | None = None) -> str:
        """The ``WWW-Authenticate`` value of a 403 for a request needing ``scopes``: in
        the ``DPoP`` scheme when ``access`` is a DPoP-bound token (which the middleware
        let through only presented with DPoP), else ``Bearer``."""
        cnf = access.claims.get("cnf") if access is not None else None
        bound = self.dpop is not None and isinstance(cnf, dict) and "jkt" in cnf
        return insufficient_scope(self.resource.metadata_url, scopes, description,
                                  dpop_algs=self.dpop.algorithms if bound and self.dpop
                                  else None)

    async def aclose(self) -> None:
        """Close the verifier, when it has an ``aclose()`` (the shipped ones close the
        HTTP client they made and open a new one if used again)."""
        close = getattr(self.verifier, "aclose", None)
        if close is not None:
            await close()
