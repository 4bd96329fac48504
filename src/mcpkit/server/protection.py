"""A server's HTTP endpoint as an OAuth 2.1 resource server: what ``asgi_app(auth=...)``
adds to the plain app.

- :class:`ScopeGuard`: the HTTP app's ``call_guard``. Before a request reaches its
  session it looks up the scopes the named tool (``tools/call``), prompt
  (``prompts/get``), resource or resource template (``resources/read``) declares — for
  ``completion/complete`` those of the prompt or template being completed — and refuses
  a token without every one of them with a ``Denial``: HTTP 403 and
  ``WWW-Authenticate: Bearer error="insufficient_scope", scope="<all the scopes the
  call needs>", resource_metadata="…"``. Naming all of them (not only the missing ones)
  lets a client that does not accumulate scopes still ask for a sufficient token in one
  step (MCP 2026-07-28: one challenge per operation, never one scope at a time). A
  DPoP-bound token gets the same challenge in the ``DPoP`` scheme (RFC 9449 §7.1).
- :func:`closing_lifespan`: the server's lifespan, then the verifier closed.

Declared scopes have no effect where there is no token: over stdio (MCP: credentials
come from the environment there) and over an HTTP app built without ``auth=``.

Failure modes: none for what a client sends. A request for something that does not exist
(or a URI no template can match) needs no scope here and is answered by its handler.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

from ..protocol.errors import ProtocolError
from ..session import Principal
from ..transports.http_auth import Denial
from .registry import Registry

if TYPE_CHECKING:
    from ..auth.server.access_token import AccessToken
    from ..auth.server.config import Auth


class ScopeGuard:
    """The per-call scope check of a protected endpoint (see the module docstring)."""

    def __init__(self, registry: Registry, auth: Auth) -> None:
        self._registry = registry
        self._auth = auth

    def __call__(self, principal: Principal | None, method: str,
                 params: dict[str, Any]) -> Denial | None:
        if not self._registry.scoped:  # the usual case: nothing declares scopes
            return None
        found = self.required(method, params)
        if found is None:
            return None
        what, needed = found
        access = cast("AccessToken | None", principal)
        missing = frozenset(needed) if access is None else access.missing_scopes(needed)
        if not missing:
            return None
        description = f"{what} needs the scopes: {' '.join(needed)}"
        message = (f"Forbidden: {description} (the token lacks "
                   f"{' '.join(sorted(missing))}). Obtain a token with these scopes from "
                   "the authorization server and retry.")
        return Denial(self._auth.insufficient(needed, description, access), message, needed)

    def required(self, method: str, params: dict[str, Any]
                 ) -> tuple[str, tuple[str, ...]] | None:
        """What a request names (for messages) and the scopes it needs, or None when it
        needs none."""
        registry = self._registry
        name = params.get("name")
        if method == "tools/call" and isinstance(name, str) and name in registry.tools:
            return _named(f"tool '{name}'", registry.tools[name].scopes)
        if method == "prompts/get" and isinstance(name, str) and name in registry.prompts:
            return _named(f"prompt '{name}'", registry.prompts[name].scopes)
        if method == "resources/read":
            return self._resource(params.get("uri"))
        if method == "completion/complete":
            ref = params.get("ref")
            return self._completion(ref if isinstance(ref, dict) else {})
        return None

    def _resource(self, uri: Any) -> tuple[str, tuple[str, ...]] | None:
        """The scopes of the resource at ``uri``, else of the first template matching it
        (the order ``resources/read`` reads in)."""
        if not isinstance(uri, str):
            return None
        registry = self._registry
        if uri in registry.resources:
            return _named(f"resource '{uri[:200]}'", registry.resources[uri].scopes)
        for template in registry.templates.values():
            try:
                matched = template.match(uri) is not None
            except ProtocolError:  # an unsafe URI: its read is refused by the handler
                return None
            if matched:
                return _named(f"resource '{uri[:200]}'", template.scopes)
        return None

    def _completion(self, ref: dict[str, Any]) -> tuple[str, tuple[str, ...]] | None:
        registry = self._registry
        kind, name, uri = ref.get("type"), ref.get("name"), ref.get("uri")
        if kind == "ref/prompt" and isinstance(name, str) and name in registry.prompts:
            return _named(f"completing prompt '{name}'", registry.prompts[name].scopes)
        if kind == "ref/resource" and isinstance(uri, str):
            readable = registry.templates.get(uri) or registry.resources.get(uri)
            if readable is not None:
                return _named(f"completing resource '{uri[:200]}'", readable.scopes)
        return None


def _named(what: str, scopes: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    return (what, scopes) if scopes else None


@asynccontextmanager
async def closing_lifespan(lifespan: Callable[[], AbstractAsyncContextManager[Any]],
                           auth: Auth) -> AsyncIterator[Any]:
    """``lifespan()``; when it ends (or fails to start), ``auth``'s verifier is closed."""
    try:
        async with lifespan() as state:
            yield state
    finally:
        await auth.aclose()
