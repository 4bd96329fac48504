"""Client registration and token endpoint requests (sub-flows, see ``steps``).

What: :func:`register` obtains client credentials in the MCP order: credentials given
for this issuer (or for any issuer) -> ones stored for this issuer -> a Client ID
Metadata Document URL when the server supports them -> RFC 7591 Dynamic Client
Registration (``application_type: native``; the result stored per issuer).
:func:`exchange_code` and :func:`refresh` make the token requests (``resource``
always sent) with the client authentication the credentials or the server's
``token_endpoint_auth_methods_supported`` call for: ``none`` (``client_id`` in the
form), ``client_secret_basic`` (RFC 6749 §2.3.1 encoding), ``client_secret_post``,
``private_key_jwt`` (a fresh assertion per request, ``jwt``) or
``client_secret_jwt`` (an HMAC assertion over the secret, only when asked for with
``auth_method`` and listed by the server), and with a DPoP proof when given a
:class:`~mcpkit.auth.client.dpop.Prover` (RFC 9449 §5; retried once with the server's
nonce after ``use_dpop_nonce``; a ``token_type: DPoP`` answer keeps the key with the
tokens, a ``Bearer`` one is a bearer token). :func:`post_form` is that authenticated
POST, shared with the other grants (``grants``) and revocation
(``revoke``).
:func:`client_credentials` makes the machine-to-machine token request (RFC 6749 §4.4,
``grant_type=client_credentials``, the MCP client credentials extension).

Why: an MCP client meets authorization servers it has never seen; the registration order
and the per-issuer keying come from the specification (2026-07-28: credentials of one
authorization server are never sent to another).

Failure modes: :class:`~mcpkit.protocol.errors.AuthorizationFailed` when no way to
register is left (the message asks for credentials), registration is refused, or a
token request is refused or answered without a usable ``access_token`` (the message
carries the server's ``error`` code, never a secret). :func:`refresh` returns ``None``
instead when the refresh token is refused, so the caller can authorize anew.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Generator, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from ...protocol.errors import AuthorizationFailed
from .discovery import Discovery
from .dpop import Prover, check_server_algs
from .jwt import ASSERTION_TYPE, HMAC_ALGS, secret_assertion
from .steps import Fetched, Step, exchange_json
from .store import ClientCredentials, Tokens, TokenStore

SECRET_METHODS = ("client_secret_basic", "client_secret_post")


def _supported_methods(discovery: Discovery) -> list[str]:
    methods = discovery.metadata.get("token_endpoint_auth_methods_supported")
    if not isinstance(methods, list):
        return ["client_secret_basic"]  # RFC 8414 §2: the default when absent
    return [m for m in methods if isinstance(m, str)]


def auth_method(client: ClientCredentials, discovery: Discovery) -> str:
    """The token endpoint authentication to use for ``client`` at this server."""
    if client.auth_method:
        return client.auth_method
    if client.private_key is not None:
        return "private_key_jwt"
    if not client.client_secret:
        return "none"
    supported = _supported_methods(discovery)
    return next((m for m in SECRET_METHODS if m in supported), "client_secret_basic")


def register(discovery: Discovery, store: TokenStore,
             given: ClientCredentials | Mapping[str, ClientCredentials] | None, *,
             redirect_uri: str, client_name: str, client_metadata_url: str | None,
             ) -> Generator[Step, Any, ClientCredentials]:
    """Client credentials for ``discovery.issuer`` (see the module docstring)."""
    issuer = discovery.issuer
    if isinstance(given, ClientCredentials):
        return given
    if given is not None and issuer in given:
        return given[issuer]
    stored = store.get_client(issuer)
    if stored is not None and (not stored.redirect_uris or redirect_uri in stored.redirect_uris):
        return stored
    if client_metadata_url and discovery.metadata.get(
            "client_id_metadata_document_supported") is True:
        return ClientCredentials(client_metadata_url, auth_method="none")
    endpoint = discovery.endpoint("registration_endpoint")
    if endpoint is None:
        raise AuthorizationFailed(
            f"the authorization server {issuer!r} offers neither client ID metadata "
            "documents nor dynamic registration: give this client a client_id (and "
            "secret) registered there")
    supported = _supported_methods(discovery)
    method = next((m for m in ("none", *SECRET_METHODS) if m in supported), "none")
    request = {"client_name": client_name, "redirect_uris": [redirect_uri],
               "grant_types": ["authorization_code", "refresh_token"],
               "response_types": ["code"], "token_endpoint_auth_method": method,
               "application_type": "native"}
    fetched: Fetched = yield from exchange_json("POST", endpoint, json=request)
    answer = fetched.document
    status = fetched.status
    if answer is None or status not in (200, 201) or not isinstance(
            answer.get("client_id"), str) or not answer["client_id"]:
        reason = fetched.problem or error_of(answer) or f"HTTP {status}"
        raise AuthorizationFailed(f"dynamic client registration at {issuer!r} failed: "
                                  f"{reason}")
    secret = answer.get("client_secret")
    chosen = answer.get("token_endpoint_auth_method")
    client = ClientCredentials(
        answer["client_id"], secret if isinstance(secret, str) and secret else None,
        chosen if isinstance(chosen, str) and chosen else None, (redirect_uri,))
    store.set_client(issuer, client)
    return client


def error_of(answer: dict[str, Any] | None) -> str | None:
    """An OAuth error answer's ``error`` code and description (RFC 6749 §5.2), cut
    short; ``None`` when ``answer`` is not one."""
    if answer is None or not isinstance(answer.get("error"), str):
        return None
    error: str = answer["error"]
    description = answer.get("error_description")
    return error[:100] + (f": {str(description)[:300]}" if description else "")


def _hmac_alg(discovery: Discovery) -> str:
    """The ``client_secret_jwt`` MAC algorithm: HS256 unless the server lists others."""
    listed = discovery.metadata.get("token_endpoint_auth_signing_alg_values_supported")
    if not isinstance(listed, list):
        return "HS256"
    alg = next((a for a in HMAC_ALGS if a in listed), None)
    if alg is None:
        raise AuthorizationFailed(
            f"the authorization server {discovery.issuer!r} lists no HMAC algorithm in "
            "token_endpoint_auth_signing_alg_values_supported: client_secret_jwt cannot "
            "be used there; use client_secret_basic or client_secret_post")
    return alg


def _assertion(client: ClientCredentials, method: str, discovery: Discovery) -> str:
    """The client assertion of ``private_key_jwt`` or ``client_secret_jwt``."""
    name = client.client_id[:100]
    if method == "private_key_jwt":
        if client.private_key is None:
            raise AuthorizationFailed(f"client {name!r} authenticates with "
                                      "private_key_jwt but has no private_key")
        return client.private_key.assertion(client.client_id, discovery.issuer)
    if not client.client_secret:
        raise AuthorizationFailed(f"client {name!r} authenticates with client_secret_jwt "
                                  "but has no client_secret")
    if method not in _supported_methods(discovery):
        raise AuthorizationFailed(
            f"the authorization server {discovery.issuer!r} does not list client_secret_jwt "
            "in token_endpoint_auth_methods_supported; use client_secret_basic or "
            "client_secret_post")
    return secret_assertion(client.client_id, client.client_secret, discovery.issuer,
                            _hmac_alg(discovery))


def client_auth(form: dict[str, str], client: ClientCredentials | None,
                discovery: Discovery) -> dict[str, str]:
    """The headers for ``client``'s authentication at ``discovery``'s token (or
    revocation) endpoint; ``form`` gains the fields it needs. ``None``: no client (a
    workload whose assertion is its only credential): nothing is added."""
    if client is None:
        return {}
    method = auth_method(client, discovery)
    if method == "client_secret_basic" and client.client_secret:
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        return {"authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
    form["client_id"] = client.client_id
    if method in ("private_key_jwt", "client_secret_jwt"):
        form["client_assertion_type"] = ASSERTION_TYPE
        form["client_assertion"] = _assertion(client, method, discovery)
    elif method == "client_secret_post" and client.client_secret:
        form["client_secret"] = client.client_secret
    return {}


def post_form(discovery: Discovery, client: ClientCredentials | None, form: dict[str, str],
              endpoint_name: str = "token_endpoint", prover: Prover | None = None,
              ) -> Generator[Step, Any, tuple[dict[str, Any] | None, str]]:
    """POST ``form`` with ``client``'s authentication to ``discovery``'s
    ``endpoint_name``: (the JSON answer of a 200, "") or (None, why: the server's
    ``error`` code and description, the HTTP status, or what was wrong with the body).
    ``prover``: send a DPoP proof (RFC 9449 §5), once more with the server's nonce after
    a 400 ``use_dpop_nonce`` (§8). ``form`` itself is not changed (each attempt
    authenticates a copy, with a fresh assertion)."""
    endpoint = discovery.endpoint(endpoint_name)
    if endpoint is None:
        return None, f"{discovery.issuer!r} has no {endpoint_name}"
    if prover is not None:
        check_server_algs(discovery.metadata, prover.key, discovery.issuer)
    for attempt in range(2 if prover is not None else 1):
        sent = dict(form)
        headers = client_auth(sent, client, discovery)
        if prover is not None:
            headers["dpop"] = prover.proof("POST", endpoint)
        fetched: Fetched = yield from exchange_json("POST", endpoint, form=sent,
                                                    headers=headers)
        answer = fetched.document
        fresh_nonce = (prover is not None and fetched.response is not None
                       and prover.nonces.learn(endpoint, fetched.response))
        if (fetched.status == 400 and answer is not None
                and answer.get("error") == "use_dpop_nonce" and fresh_nonce and attempt == 0):
            continue
        break
    if answer is None or fetched.status != 200:
        return None, fetched.problem or error_of(answer) or f"HTTP {fetched.status}"
    return answer, ""


def _token_request(discovery: Discovery, client: ClientCredentials | None,
                   form: dict[str, str], granted: tuple[str, ...],
                   prover: Prover | None = None,
                   ) -> Generator[Step, Any, tuple[Tokens | None, str]]:
    """POST ``form`` to the token endpoint (see :func:`post_form`): (tokens, "") or
    (None, why). ``granted``: the scopes to assume when the answer names none (RFC 6749
    §5.1: as requested)."""
    answer, problem = yield from post_form(discovery, client, form, prover=prover)
    if answer is None:
        return None, problem
    token, kind = answer.get("access_token"), answer.get("token_type", "Bearer")
    if not isinstance(token, str) or not token or not isinstance(kind, str):
        return None, "the answer has no access_token"
    if kind.lower() == "dpop" and prover is None:
        return None, f"token type {kind[:40]!r} is not supported without a DPoP proof"
    if kind.lower() not in ("bearer", "dpop"):
        return None, f"token type {kind[:40]!r} is not supported (only Bearer and DPoP)"
    bound = kind.lower() == "dpop"  # a Bearer answer to a DPoP request: a bearer token
    expires_in = answer.get("expires_in")
    refresh_token = answer.get("refresh_token")
    scope = answer.get("scope")
    return Tokens(
        access_token=token, token_type="DPoP" if bound else "Bearer",
        expires_at=time.time() + expires_in if isinstance(expires_in, int | float)
        and not isinstance(expires_in, bool) else None,
        refresh_token=refresh_token if isinstance(refresh_token, str) and refresh_token
        else form.get("refresh_token"),
        scopes=tuple(scope.split()) if isinstance(scope, str) else granted,
        dpop_jwk=prover.key.private_jwk if bound and prover is not None else None), ""


def require_grant(discovery: Discovery, grant: str,
                  server: str = "authorization server") -> None:
    """``AuthorizationFailed`` when the server's ``grant_types_supported`` is given and
    lacks ``grant`` (RFC 8414 §2), so nothing is sent to a server that said no."""
    grants = discovery.metadata.get("grant_types_supported")
    if isinstance(grants, list) and grant not in grants:
        raise AuthorizationFailed(
            f"the {server} {discovery.issuer!r} does not list the {grant} grant in "
            "grant_types_supported; not asking it")


def request_tokens(discovery: Discovery, client: ClientCredentials | None,
                   form: dict[str, str], scopes: tuple[str, ...], what: str,
                   prover: Prover | None = None) -> Generator[Step, Any, Tokens]:
    """Tokens for the grant in ``form`` (``scope`` added from ``scopes`` when there are
    any), without a refresh token (the grant is made again instead), after checking the
    server's ``grant_types_supported`` lists the grant (else nothing is sent).
    ``AuthorizationFailed`` naming ``what`` was refused, and why."""
    require_grant(discovery, form["grant_type"])
    if scopes:
        form["scope"] = " ".join(scopes)
    tokens, problem = yield from _token_request(discovery, client, form, scopes, prover)
    if tokens is None:
        raise AuthorizationFailed(f"the token endpoint of {discovery.issuer!r} refused "
                                  f"{what}: {problem}")
    return replace(tokens, refresh_token=None)


def exchange_code(discovery: Discovery, client: ClientCredentials, *, code: str,
                  code_verifier: str, redirect_uri: str, scopes: tuple[str, ...],
                  prover: Prover | None = None) -> Generator[Step, Any, Tokens]:
    """Trade an authorization code for tokens (``scopes``: those asked for).
    ``AuthorizationFailed`` when refused."""
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
            "code_verifier": code_verifier, "resource": discovery.resource}
    tokens, problem = yield from _token_request(discovery, client, form, scopes, prover)
    if tokens is None:
        raise AuthorizationFailed(f"the token endpoint of {discovery.issuer!r} refused the "
                                  f"authorization code: {problem}")
    return tokens


def refresh(discovery: Discovery, client: ClientCredentials, tokens: Tokens,
            prover: Prover | None = None) -> Generator[Step, Any, Tokens | None]:
    """New tokens from ``tokens.refresh_token`` (a rotated one replaces it, else it is
    kept), or ``None`` when the server refused. ``prover``: DPoP, with the key the
    refresh token is bound to (RFC 9449 §5)."""
    assert tokens.refresh_token is not None
    form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token,
            "resource": discovery.resource}
    fresh, _ = yield from _token_request(discovery, client, form, tokens.scopes, prover)
    return fresh


def client_credentials(discovery: Discovery, client: ClientCredentials,
                       scopes: tuple[str, ...], prover: Prover | None = None,
                       ) -> Generator[Step, Any, Tokens]:
    """A token for the client itself (RFC 6749 §4.4): ``grant_type=client_credentials``,
    ``resource`` and ``scopes`` (none sent when empty). No refresh token is kept (a new
    token is asked for instead). ``AuthorizationFailed`` when refused, or when the
    server's ``grant_types_supported`` is given and lacks ``client_credentials`` (the
    credentials are then not sent at all)."""
    form = {"grant_type": "client_credentials", "resource": discovery.resource}
    return (yield from request_tokens(
        discovery, client, form, scopes,
        f"the client credentials of {client.client_id[:100]!r}", prover))
