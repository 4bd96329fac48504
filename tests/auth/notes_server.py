"""The protected notes server the end-to-end authorization tests serve, and a way to serve
an app whose OAuth resource is its own loopback URL.

``adding_server()``: one tool, ``add``. ``notes_server(fields)``: a ``Server`` with
``whoami`` (the verified token's ``fields``, as ``ctx.auth`` gives them) and
``write_note`` (needs ``notes:write``).
``served_at_own_url(build)``: a ``LiveServer`` whose app is ``build(url)``, made once the
port is known (a resource URI must be the URL the server is reached at).
``verified_at_own_url(issuer, build)``: the same with a ``JWTVerifier`` for ``issuer``'s
tokens whose audience is that URL, the app being ``build(url, verifier)``; the verifier
is closed on the server's loop when the block ends without an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from mcpkit import Context, Server
from mcpkit.auth import JWTVerifier
from tests.support.http import LateApp, LiveServer


def notes_server(fields: Sequence[str]) -> Server:
    server = Server("notes")

    @server.tool
    async def whoami(ctx: Context) -> dict[str, Any]:
        """Who is calling, as the verified token says."""
        access = ctx.auth
        assert access is not None
        seen = {"subject": access.subject, "client_id": access.client_id,
                "scopes": sorted(access.scopes), "issuer": access.issuer,
                "audience": list(access.audience), "expires_at": access.expires_at,
                "claims": sorted(access.claims)}
        return {name: seen[name] for name in fields}

    @server.tool(scopes=["notes:write"])
    async def write_note(text: str, ctx: Context) -> str:
        """Needs notes:write."""
        return f"saved {text} for {ctx.auth.subject if ctx.auth else None}"

    return server


def adding_server() -> Server:
    """A server with one tool, ``add``, for the tests that only need a protected call."""
    server = Server("notes")

    @server.tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server


@contextmanager
def served_at_own_url(build: Callable[[str], Any]) -> Iterator[LiveServer]:
    late = LateApp()
    live = LiveServer(late)
    late.app = build(live.url)
    with live:
        yield live


@contextmanager
def verified_at_own_url(issuer: str, build: Callable[[str, JWTVerifier], Any], *,
                        jwks_uri: str | None = None) -> Iterator[LiveServer]:
    verifiers: list[JWTVerifier] = []

    def app(url: str) -> Any:
        verifiers.append(JWTVerifier(issuer=issuer, audience=url, jwks_uri=jwks_uri))
        return build(url, verifiers[0])

    with served_at_own_url(app) as live:
        yield live
        if live.loop is not None:
            asyncio.run_coroutine_threadsafe(verifiers[0].aclose(), live.loop).result(5)
