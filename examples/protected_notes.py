"""The notes server (examples/notes.py) as a protected remote server: OAuth 2.1 bearer
tokens, scopes ``notes:read`` and ``notes:write``, and a development issuer to try it
without an identity provider.

    python examples/protected_notes.py --http --port 8765          # serve it
    python examples/protected_notes.py --token --port 8765         # print a token for it
    python examples/protected_notes.py --token --scope notes:read  # a read-only one

Then, with curl or mcpkit:

    TOKEN=$(python examples/protected_notes.py --token --port 8765)
    mcpkit list tools http://127.0.0.1:8765/mcp                    # 401: no token
    mcpkit call --token "$TOKEN" http://127.0.0.1:8765/mcp notes_search query=milk
    curl -s http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp

Every request needs ``notes:read``; adding and deleting notes need ``notes:write`` as well
(a read-only token gets HTTP 403 ``insufficient_scope`` naming both). ``--token`` options:
``--scope S`` (repeatable; default both scopes), ``--audience URL`` (default this server's
URL, the only audience it accepts: try another to see it refused), ``--expires-in
SECONDS`` (default 3600; the server allows 60 s of clock skew, so -61 or less makes an
expired one), ``--subject NAME``.

The development issuer is ``mcpkit.auth.dev.DevIssuer``: a key pair made on first use in the
state directory (``--state-dir``, else ``$MCPKIT_STATE_DIR``, else
``$XDG_STATE_HOME/mcpkit``, else ``~/.local/state/mcpkit``; the private key kept 0600), the
one ``mcpkit token --audience URL --scope S`` signs with too. It only signs tokens on the
command line: it has no authorization endpoint, so an OAuth client that tries to log in
(rather than being given a token) finds the issuer unreachable. With a real identity
provider, replace ``DevIssuer(...).auth(...)`` by ``Auth(JWTVerifier(issuer=...,
audience=...), ...)``: see docs/auth.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcpkit.auth.dev import LEEWAY, DevIssuer

SCOPES = ["notes:read", "notes:write"]


def resource_url(host: str, port: int) -> str:
    return f"http://{host}:{port}/mcp"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP")
    parser.add_argument("--token", action="store_true", help="print a token and exit")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--state-dir", help="where the development issuer's key is kept")
    parser.add_argument("--scope", action="append", help="with --token: a scope to grant")
    parser.add_argument("--audience", help="with --token: the server the token is for")
    parser.add_argument("--expires-in", type=int, default=3600, help=(
        f"with --token: seconds until it expires (default 3600); the server allows {LEEWAY} s "
        f"of clock skew, so {-LEEWAY - 1} or less makes an expired one"))
    parser.add_argument("--subject", default="dev-user", help="with --token: the user")
    opts = parser.parse_args()
    issuer = DevIssuer(opts.state_dir)
    resource = resource_url(opts.host, opts.port)
    if opts.token:
        print(issuer.issue(audience=opts.audience or resource, scopes=opts.scope or SCOPES,
                           expires_in=opts.expires_in, subject=opts.subject))
        return 0
    if not opts.http:
        parser.error("give --http to serve (this server is for remote use) or --token")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from notes import server

    # Tokens of the development issuer, for this server only, with notes:read.
    auth = issuer.auth(resource, scopes=SCOPES, required_scopes=["notes:read"],
                       name="Notes (development issuer)")
    server.run("http", host=opts.host, port=opts.port, auth=auth)
    return 0


if __name__ == "__main__":
    sys.exit(main())
