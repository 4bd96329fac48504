"""``mcpkit login`` / ``mcpkit logout``, and the stored login the other commands use.

What: ``login URL`` runs the OAuth authorization code flow with PKCE against the MCP
server at URL (``OAuth`` with a ``LoopbackRedirect``: the URL is printed, a browser
opened when there is one, the redirect caught on a 127.0.0.1 port) and keeps the tokens
in the token file (:func:`token_path`); ``logout URL`` revokes them at the authorization
server (RFC 7009, when it has a revocation endpoint) and removes them. ``list``, ``call``,
``read``, ``prompt`` and ``check`` use a stored login for their URL when there is one
(:func:`stored_auth`, :func:`stored_access_token`): through ``OAuth`` over the same file,
so an expired token is refreshed, but never by starting a login: a login that no longer
works says to run ``mcpkit login URL``.

The token file: ``$MCPKIT_STATE_DIR/tokens.json``, else
``$XDG_STATE_HOME/mcpkit/tokens.json``, else ``~/.local/state/mcpkit/tokens.json``;
mode 0600 (``FileTokenStore``). Tokens are kept per (authorization server, resource);
a stored login covers its resource and the URLs below it on the same origin.

Nothing here is imported until a command needs it (the CLI's start-up stays lean), and
the auth modules only when an http(s) URL is used.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..storage.local import state_dir
from .usage import EXIT_ERROR, EXIT_OK, EXIT_USAGE, UsageError

if TYPE_CHECKING:
    from ..auth import FileTokenStore, Tokens


def token_path() -> Path:
    """The token file of ``mcpkit login``."""
    return state_dir() / "tokens.json"


def covers(resource: str, url: str) -> bool:
    """Whether tokens for ``resource`` are for the MCP server at ``url``: the same
    resource, or ``url`` below it on the same origin (the metadata may name a parent)."""
    from ..auth.urls import canonical_resource_uri

    try:
        here = canonical_resource_uri(url.split("?", 1)[0])
        there = canonical_resource_uri(resource)
    except ValueError:
        return False
    return here == there or here.startswith(there.rstrip("/") + "/")


def _store() -> FileTokenStore:
    from ..auth import FileTokenStore

    return FileTokenStore(token_path())


def _stored(store: FileTokenStore, url: str) -> list[tuple[str, str, Tokens]]:
    """The stored (issuer, resource, tokens) for ``url``."""

    try:
        return [entry for entry in store.all_tokens() if covers(entry[1], url)]
    except PermissionError as exc:
        raise UsageError(str(exc)) from None


class _NoLogin:
    """A redirect handler that refuses to start a login: the CLI's commands use a stored
    login and refresh it, nothing more. ``redirect_uri``: the one the stored client
    registration has (so the stored registration, and its refresh tokens, are used)."""

    def __init__(self, redirect_uri: str, url: str) -> None:
        self._redirect_uri, self.url = redirect_uri, url

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, url: str) -> str:
        from ..auth import AuthorizationFailed

        raise AuthorizationFailed(
            f"the stored login for {self.url} no longer works (expired and not "
            f"refreshable, or more scopes are needed): run: mcpkit login {self.url}")


def stored_auth(url: str) -> Any:
    """An ``httpx.Auth`` using the stored login for ``url`` (refreshing it, never
    starting one), or None when there is none."""
    if not token_path().exists():
        return None
    from ..auth import OAuth

    store = _store()
    found = _stored(store, url)
    if not found:
        return None
    client = store.get_client(found[0][0])
    redirect = (client.redirect_uris[0] if client is not None and client.redirect_uris
                else "http://127.0.0.1/callback")
    return OAuth(_NoLogin(redirect, url), store=store)


async def stored_access_token(url: str, timeout: float) -> str | None:
    """The access token of the stored login for ``url`` (refreshed first when it has
    expired, by connecting once), or None when there is none."""
    auth = stored_auth(url)
    if auth is None:
        return None
    store = auth.store
    tokens = _stored(store, url)[0][2]
    if tokens.expired():
        from ..client import Client, Http

        async with Client(Http(url, auth=auth), timeout=timeout):
            pass
        tokens = _stored(store, url)[0][2]
    return tokens.access_token


# ---------------------------------------------------------------------- login


class _FreshLogin:
    """A token store over the file that hides the tokens stored before, so ``login``
    authorizes again (the old tokens stay until the new ones replace them); it records
    what was stored."""

    def __init__(self, inner: FileTokenStore) -> None:
        self.inner = inner
        self.written: list[tuple[str, str, Tokens]] = []

    def get_tokens(self, issuer: str, resource: str) -> Tokens | None:
        for i, r, tokens in reversed(self.written):
            if (i, r) == (issuer, resource):
                return tokens
        return None

    def set_tokens(self, issuer: str, resource: str, tokens: Tokens | None) -> None:
        self.inner.set_tokens(issuer, resource, tokens)
        if tokens is not None:
            self.written.append((issuer, resource, tokens))

    def get_client(self, issuer: str) -> Any:
        return self.inner.get_client(issuer)

    def set_client(self, issuer: str, client: Any) -> None:
        self.inner.set_client(issuer, client)


def _url_of(args: argparse.Namespace) -> str:

    url: str = args.url
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"give the MCP server's http(s):// URL (got {url!r})")
    return url


def _expiry(tokens: Tokens) -> str:
    if tokens.expires_at is None:
        return "not said by the authorization server"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(tokens.expires_at))
    minutes = round((tokens.expires_at - time.time()) / 60)
    refresh = "; refreshed when needed" if tokens.refresh_token else "; no refresh token"
    return f"{stamp} (in {minutes} min){refresh}"


async def cmd_login(args: argparse.Namespace) -> int:
    import httpx

    from ..auth import AuthorizationFailed, ClientCredentials, LoopbackRedirect, OAuth
    from ..client import Client, Http, ServerUnreachable
    from ..protocol.errors import MCPError

    url = _url_of(args)
    secret = args.client_secret or os.environ.get("MCPKIT_CLIENT_SECRET") or None
    if secret and not args.client_id:
        raise UsageError("--client-secret goes with --client-id")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535 (got {args.port})")
    if args.wait <= 0:
        raise UsageError("--wait must be > 0 seconds")
    store = _FreshLogin(_store())
    try:
        handler = LoopbackRedirect(args.port or 0, open_browser=not args.no_browser,
                                   timeout=args.wait)
    except AuthorizationFailed as exc:
        raise UsageError(str(exc)) from None
    client = ClientCredentials(args.client_id, secret) if args.client_id else None
    oauth = OAuth(handler, store=store, client=client, client_name="mcpkit CLI",
                  scopes=args.scope or None)
    name, failure = "", ""
    try:
        async with (
            httpx.AsyncClient(timeout=httpx.Timeout(args.timeout, read=None)) as http,
            Client(Http(url, auth=oauth, http_client=http),
                   timeout=args.wait + args.timeout) as session,
        ):
            name = str(session.server_info.get("name") or "")
    except ServerUnreachable as exc:
        sys.stderr.write(f"mcpkit: error: {exc}\n")
        return EXIT_USAGE
    except (MCPError, OSError) as exc:
        if not store.written:
            sys.stderr.write(f"mcpkit: error: login failed: {exc}\n")
            return EXIT_ERROR
        failure = str(exc)  # authorized, then the server failed: say both
    finally:
        handler.close()
    if not store.written:
        print(f"{url} did not ask for authorization (no HTTP 401): nothing to store.")
        return EXIT_OK
    issuer, resource, tokens = store.written[-1]
    if client is not None:  # kept with the tokens, so later commands can refresh them
        store.set_client(issuer, ClientCredentials(
            client.client_id, client.client_secret, redirect_uris=(handler.redirect_uri,)))
    print(f"Logged in to {url}" + (f" ({name})" if name else "") + ".")
    rows = [("authorization server", issuer), ("resource", resource),
            ("scopes", " ".join(tokens.scopes) or "(none named)"),
            ("expires", _expiry(tokens)), ("stored in", str(token_path()))]
    for label, value in rows:
        print(f"  {label:<21} {value}")
    if failure:
        sys.stderr.write(f"mcpkit: error: the tokens are stored, but then the server "
                         f"failed: {failure}\n")
        return EXIT_ERROR
    return EXIT_OK


async def cmd_logout(args: argparse.Namespace) -> int:
    """Revoke (RFC 7009) then delete the stored tokens for the URL; a revocation that
    fails is reported on stderr, the tokens are deleted anyway."""
    url = _url_of(args)
    if not token_path().exists():
        print(f"No stored login for {url} (no token file at {token_path()}).")
        return EXIT_OK
    from ..auth import revoke_tokens

    store = _store()
    found = _stored(store, url)
    if not found:
        print(f"No stored login for {url} (in {token_path()}).")
    for issuer, resource, _ in found:
        if args.no_revoke:
            store.set_tokens(issuer, resource, None)
        else:
            outcome = await revoke_tokens(store, issuer, resource, timeout=args.timeout)
            for problem in outcome.problems:
                sys.stderr.write(f"mcpkit: warning: {problem}\n")
            if outcome.revoked:
                print(f"Revoked at {issuer}: {' and '.join(outcome.revoked)}.")
        print(f"Logged out: removed the tokens from {issuer} for {resource}.")
    return EXIT_OK


def add_parsers(sub: Any) -> None:
    """The ``login`` and ``logout`` subcommands."""
    login = sub.add_parser("login", help="log in to an MCP server (OAuth, in a browser)",
                           description="Authorize this CLI at the MCP server's authorization "
                           "server (authorization code + PKCE, redirect to a 127.0.0.1 "
                           f"port) and keep the tokens in {token_path()} (mode 0600).")
    login.add_argument("url", metavar="URL")
    login.add_argument("--scope", action="append", metavar="SCOPE",
                       help="a scope to ask for, repeatable (default: the ones the server "
                       "names)")
    login.add_argument("--client-id", metavar="ID",
                       help="a client registered at the authorization server (default: "
                       "dynamic registration)")
    login.add_argument("--client-secret", metavar="SECRET",
                       help="its secret, if any (default: $MCPKIT_CLIENT_SECRET)")
    login.add_argument("--port", type=int, help="the loopback port of the redirect URI "
                       "(default: any free port; give the registered one with --client-id)")
    login.add_argument("--no-browser", action="store_true",
                       help="only print the URL to open")
    login.add_argument("--wait", type=float, default=300.0,
                       help="seconds to wait for the browser to come back (default 300)")
    login.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    logout = sub.add_parser("logout", help="revoke and forget the stored login for an MCP "
                            "server", description="Revoke the stored refresh and access "
                            "tokens at the authorization server's revocation endpoint "
                            "(RFC 7009, when it has one), then delete them from "
                            f"{token_path()} whatever it answered.")
    logout.add_argument("url", metavar="URL")
    logout.add_argument("--no-revoke", action="store_true",
                        help="only delete the tokens locally (they stay valid until they "
                        "expire)")
    logout.add_argument("--timeout", type=float, default=15.0,
                        help="seconds for the whole revocation (default 15)")
