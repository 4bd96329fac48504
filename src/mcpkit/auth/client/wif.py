"""``JWTBearerAuth``: workload identity federation for MCP servers (the JWT bearer grant).

What: an ``httpx.Auth`` for a workload (a Kubernetes pod, a CI job, a cloud function)
that holds a JWT its platform issued (a projected service account token, a GitHub
Actions OIDC token, a SPIFFE JWT-SVID, a cloud metadata identity token) and trades it
for an access token at the MCP server's authorization server with the JWT bearer grant
(RFC 7523 §2.1; the MCP extension ``io.modelcontextprotocol/auth/wif``, SEP-1933): on a
401 it discovers the authorization server as ``OAuth`` does, then POSTs
``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer``, ``assertion`` (the
workload's JWT), ``resource`` and ``scope`` (``scopes=``, else the challenge's, else
the resource's ``scopes_supported``; none sent when there are none) to the token
endpoint. No client registration and no client authentication: the JWT is the
credential (a ``client_id`` is sent only when one is given). The token is kept in the
token store until it expires or is refused; then the workload token is read again (a
function gives a fresh one: :func:`~mcpkit.auth.client.grant_auth.token_file` reads a
file the platform rotates) and the grant made again.

Why: workloads already have a short-lived, verifiable identity; asking them to hold a
client secret as well adds a long-lived credential to steal and rotate.

Failure modes: :class:`~mcpkit.protocol.errors.AuthorizationFailed` when discovery fails,
``issuer=`` is given and the server names another authorization server, the server's
``grant_types_supported`` lacks the JWT bearer grant, the token provider fails or
returns nothing, or the token endpoint refuses (``invalid_grant``: an expired JWT or a
wrong audience; ``invalid_scope``; ``unauthorized_client``: the message has the
server's code and description, never the JWT). A refused grant is not retried within
the request and never replaced by another grant; the next request tries again with a
fresh workload token.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import Any

from .discovery import Discovery
from .dpop import DPoPKey
from .grant_auth import GrantAuth, SubjectToken, subject_token
from .grants import jwt_bearer
from .steps import Step
from .store import ClientCredentials, Tokens, TokenStore


class JWTBearerAuth(GrantAuth):
    """Workload identity federation, as an ``httpx.Auth`` (see the module docstring).

    ``token``: the workload's JWT, or a function (sync or async) returning the current
    one, called each time a grant is made (e.g. ``token_file(path)``). ``client_id``:
    sent (with no secret) only for an authorization server that wants one. ``issuer``:
    the authorization server that trusts this workload's issuer; when given, a server
    naming another one is refused before the JWT is sent. ``scopes``, ``store``,
    ``max_step_ups``, ``allow_private_networks``, ``dpop``: as for :class:`OAuth`.
    """

    def __init__(self, token: SubjectToken, *, client_id: str | None = None,
                 issuer: str | None = None, scopes: Iterable[str] | None = None,
                 store: TokenStore | None = None, max_step_ups: int = 2,
                 allow_private_networks: bool = False, dpop: bool | DPoPKey = False
                 ) -> None:
        if not callable(token) and not (isinstance(token, str) and token.strip()):
            raise ValueError("token must be a JWT or a function returning one")
        super().__init__(client=ClientCredentials(client_id, auth_method="none")
                         if client_id else None,
                         issuer=issuer, scopes=scopes, store=store, max_step_ups=max_step_ups,
                         allow_private_networks=allow_private_networks, dpop=dpop)
        self.token = token

    def __repr__(self) -> str:  # never show the token
        return f"JWTBearerAuth(issuer={self.issuer!r})"

    def _obtain(self, discovery: Discovery, scopes: tuple[str, ...]
                ) -> Generator[Step, Any, Tokens]:
        assertion = yield from subject_token(self.token, "the workload token provider")
        return (yield from jwt_bearer(discovery, self.client if isinstance(
            self.client, ClientCredentials) else None, assertion, scopes,
            "the workload's JWT", self._prover()))
