"""The JWT bearer grant and the ID-JAG token exchange (sub-flows, see ``steps``).

What: :func:`jwt_bearer` trades a JWT for tokens at an authorization server (RFC 7523
§2.1): ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer``, ``assertion``,
``resource`` (RFC 8707, as every MCP token request) and ``scope`` when scopes are asked
for; with the client's authentication when there is a client (enterprise-managed
authorization: the client as registered there), none for a workload whose JWT is its
only credential (the MCP workload identity federation extension, SEP-1933).
:func:`request_id_jag` makes the token exchange (RFC 8693) of the enterprise-managed
authorization extension at the enterprise IdP: the user's ID token (or SAML assertion)
as ``subject_token``, ``requested_token_type``
``urn:ietf:params:oauth:token-type:id-jag``, ``audience`` = the MCP server's
authorization server's issuer, ``resource`` = the MCP server, and ``scope``; the answer
must say ``issued_token_type`` id-jag and carry the grant in ``access_token``.

Why: both extensions end in the same RFC 7523 grant; only where the JWT comes from
differs (a platform, or the IdP's exchange), so one function serves both.

Failure modes: :class:`~mcpkit.protocol.errors.AuthorizationFailed` when the server's
``grant_types_supported`` is given and lacks the grant (nothing is sent), when a token
endpoint refuses (its ``error`` code and description are in the message, never a
token or an assertion), answers junk, a non-Bearer token, or, for the exchange, a token
of another ``issued_token_type``. The caller does not retry a refused grant: the
extension asks clients to surface the error rather than retry or switch grants.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ...protocol.errors import AuthorizationFailed
from .discovery import Discovery
from .dpop import Prover
from .steps import Step
from .store import ClientCredentials, Tokens
from .tokens import post_form, request_tokens, require_grant

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
SAML2 = "urn:ietf:params:oauth:token-type:saml2"


def jwt_bearer(discovery: Discovery, client: ClientCredentials | None, assertion: str,
               scopes: tuple[str, ...], what: str, prover: Prover | None = None,
               ) -> Generator[Step, Any, Tokens]:
    """Tokens for ``assertion`` (see the module docstring); ``what`` names the
    assertion in errors; ``prover``: a DPoP proof with the request (RFC 9449 §5)."""
    form = {"grant_type": JWT_BEARER, "assertion": assertion,
            "resource": discovery.resource}
    return (yield from request_tokens(discovery, client, form, scopes, what, prover))


def request_id_jag(idp: Discovery, client: ClientCredentials | None, *,
                   subject_token: str, subject_token_type: str, audience: str,
                   resource: str, scopes: tuple[str, ...]) -> Generator[Step, Any, str]:
    """The ID-JAG the IdP ``idp`` issues for ``subject_token`` (see the module
    docstring). ``client``: this client as registered at the IdP."""
    require_grant(idp, TOKEN_EXCHANGE, "identity provider")
    form = {"grant_type": TOKEN_EXCHANGE, "requested_token_type": ID_JAG,
            "audience": audience, "resource": resource, "subject_token": subject_token,
            "subject_token_type": subject_token_type}
    if scopes:
        form["scope"] = " ".join(scopes)
    answer, problem = yield from post_form(idp, client, form)
    if answer is not None:
        issued, grant = answer.get("issued_token_type"), answer.get("access_token")
        if issued != ID_JAG:
            problem = (f"it issued a token of type {str(issued)[:80]!r}, not an ID-JAG "
                       f"({ID_JAG})")
        elif not isinstance(grant, str) or not grant:
            problem = "the answer has no access_token (the ID-JAG)"
        else:
            return grant
    raise AuthorizationFailed(f"the identity provider {idp.issuer!r} refused to exchange "
                              f"the ID token for an ID-JAG for {resource!r}: {problem}")
