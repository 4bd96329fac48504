"""``mcpkit token``: print a development access token (``mcpkit.auth.dev.DevIssuer``).

    mcpkit token --audience http://127.0.0.1:8765/mcp --scope notes:read
    mcpkit call --token "$(mcpkit token --audience URL --scope S)" URL TOOL ...

The token is signed with the local development key (made on first use in the state
directory, the one a server using ``DevIssuer().auth(...)`` verifies with), so it is
accepted by such a server at that audience, and by nothing else.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    """The ``token`` subcommand."""
    p = sub.add_parser(
        "token", help="print a development access token (mcpkit.auth.dev)",
        description="Print an access token signed by the local development issuer "
        "(mcpkit.auth.dev.DevIssuer; its key is made on first use in the state directory), "
        "for a server protected with DevIssuer().auth(URL, ...).",
        epilog="example:\n  mcpkit call --token \"$(mcpkit token --audience "
        "http://127.0.0.1:8765/mcp --scope notes:read)\" http://127.0.0.1:8765/mcp "
        "notes_search query=milk",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--audience", required=True, metavar="URL",
                   help="the URL of the server the token is for (its MCP endpoint)")
    p.add_argument("--scope", action="append", default=[], metavar="S",
                   help="a scope to grant (repeat for several)")
    p.add_argument("--expires-in", type=int, default=3600, metavar="SECONDS",
                   help="seconds until it expires (default 3600; the verifier allows 60 s "
                   "of clock skew, so -61 or less makes an expired one)")
    p.add_argument("--subject", default="dev-user", help="the user (default dev-user)")
    p.add_argument("--state-dir", metavar="DIR",
                   help="where the development key is kept (default $MCPKIT_STATE_DIR, "
                   "else ~/.local/state/mcpkit)")


def run(args: argparse.Namespace) -> int:
    from ..auth.dev import DevIssuer

    issuer = DevIssuer(args.state_dir)
    try:
        token = issuer.issue(audience=args.audience, scopes=args.scope,
                             expires_in=args.expires_in, subject=args.subject)
    except ValueError as exc:
        sys.stderr.write(f"mcpkit token: {exc}\n")
        return 2
    sys.stdout.write(token + "\n")
    return 0
