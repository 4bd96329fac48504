"""Token revocation on logout (RFC 7009), client side.

What: :func:`revoke_tokens` ends a stored login: it reads the authorization server's
metadata (the issuer the tokens are stored under), and when it has a
``revocation_endpoint`` POSTs the refresh token (``token_type_hint=refresh_token``)
then the access token (``token_type_hint=access_token``) to it, authenticated as the
token endpoint is (the stored or given client credentials: ``client_secret_basic``,
``client_secret_post``, ``client_secret_jwt``, ``private_key_jwt``, or ``client_id``
alone for a public client); then it deletes the tokens from the store whatever the
answers. The outcome, a :class:`Revocation`, says which tokens were revoked and why
others were not. The requests are pumped here (no MCP request is involved) through the
same bounded, address-checked fetches as the OAuth flow, within ``timeout`` seconds in
all.

Why: deleting a token locally leaves it valid at the server until it expires (a
refresh token may live for months); revoking the refresh token also ends the access
tokens issued from it at most servers, hence that order (RFC 7009 §2.1).

Failure modes: none raised for what a server answers or for a network failure: a
server without a ``revocation_endpoint``, an error answer (RFC 7009 §2.2.1: 200 means
revoked or already invalid), junk, a transport error or the time running out are
reported in :attr:`Revocation.problems`, and the tokens are deleted anyway. A
``PermissionError`` or ``OSError`` of the store itself propagates.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx

from ...protocol.errors import AuthorizationFailed
from ..urls import canonical_resource_uri
from .discovery import Discovery, authorization_server
from .steps import AddressGuard, Call, Fetch, Fetched, Step, bound, exchange_json
from .store import ClientCredentials, TokenStore
from .tokens import client_auth, error_of


@dataclass
class Revocation:
    """What :func:`revoke_tokens` did: the kinds of token revoked (``refresh_token``,
    ``access_token``), and a line per problem (nothing secret in either)."""

    revoked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    deleted: bool = False


def _revocation(issuer: str, resource: str, client: ClientCredentials | None,
                tokens: list[tuple[str, str]], outcome: Revocation,
                ) -> Generator[Step, Any, None]:
    """The revocation requests, as a sub-flow (see the module docstring)."""
    metadata = yield from authorization_server(issuer, interactive=False)
    discovery = Discovery(resource, issuer, metadata)
    endpoint = discovery.endpoint("revocation_endpoint")
    if endpoint is None:
        outcome.problems.append(f"{issuer!r} has no revocation_endpoint: the tokens stay "
                                "valid there until they expire")
        return
    canonical_resource_uri(endpoint)  # https, or http on loopback (ValueError otherwise)
    for hint, token in tokens:
        form = {"token": token, "token_type_hint": hint}
        headers = client_auth(form, client, discovery)
        fetched: Fetched = yield from exchange_json("POST", endpoint, form=form,
                                                    headers=headers)
        if fetched.status == 200:  # RFC 7009 §2.2: revoked or already invalid; any body
            outcome.revoked.append(hint)
        else:
            why = (error_of(fetched.document) or fetched.problem
                   or f"HTTP {fetched.status}")
            outcome.problems.append(f"revoking the {hint} at {issuer!r} failed: {why}")


async def _pump(flow: Generator[Step, Any, None], http: httpx.AsyncClient,
                guard: AddressGuard) -> None:
    """Run ``flow``'s fetches with ``http`` (the same limits as the OAuth pumps)."""
    try:
        step = next(flow)
        while True:
            reply: Any = None
            if isinstance(step, Fetch):
                reply = await http.send(guard.guard(step.request, asynchronous=True),
                                        stream=True)
                guard.check(step.request, reply)
                bound(reply, step)
                try:
                    await reply.aread()
                finally:
                    await reply.aclose()
            elif isinstance(step, Call):
                reply = await step.run_async()
            step = flow.send(reply)
    except StopIteration:
        return
    finally:
        flow.close()


async def revoke_tokens(store: TokenStore, issuer: str, resource: str, *,
                        client: ClientCredentials | None = None,
                        http: httpx.AsyncClient | None = None, timeout: float = 15.0,
                        allow_private_networks: bool = False) -> Revocation:
    """Revoke then delete the tokens ``store`` keeps for (``issuer``, ``resource``) (see
    the module docstring). ``client``: the credentials to authenticate with (default:
    the ones stored for ``issuer``); ``http``: the client to send with (default: a new
    one); ``allow_private_networks``: as for :class:`OAuth` (the address rule is that
    of a server at ``resource``)."""
    outcome = Revocation()
    tokens = store.get_tokens(issuer, resource)
    if tokens is None:
        return outcome
    pairs = [(hint, token) for hint, token in (("refresh_token", tokens.refresh_token),
                                               ("access_token", tokens.access_token))
             if token]
    credentials = client if client is not None else store.get_client(issuer)
    try:
        guard = AddressGuard.for_server(httpx.URL(resource),
                                        allow_private_networks=allow_private_networks)
        with anyio.fail_after(timeout):
            if http is None:
                async with httpx.AsyncClient(follow_redirects=False) as own:
                    await _pump(_revocation(issuer, resource, credentials, pairs, outcome),
                                own, guard)
            else:
                await _pump(_revocation(issuer, resource, credentials, pairs, outcome),
                            http, guard)
    except TimeoutError:
        outcome.problems.append(f"revocation at {issuer!r} took more than {timeout} s")
    except (AuthorizationFailed, httpx.HTTPError, ValueError) as exc:
        outcome.problems.append(f"revocation at {issuer!r} failed: {str(exc)[:300]}")
    store.set_tokens(issuer, resource, None)
    outcome.deleted = True
    return outcome
