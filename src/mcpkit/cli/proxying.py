"""``mcpkit proxy``: serve a remote MCP server through mcpkit (docs/proxy.md).

    mcpkit proxy --stdio "python server.py" --http [--host H] [--port N] [--path P] [--drain S]
        a stdio server served over Streamable HTTP
    mcpkit proxy https://example.com/mcp [--token T | --header "Name: value" ...]
        a remote HTTP server served on stdio, for hosts that only start commands
    mcpkit proxy --config FILE [--http ...]
        every server of a host configuration (mcpServers) as one server, namespaced

``--token``/``--header`` (and a login stored by ``mcpkit login``) are for the remote; the
proxy's own HTTP endpoint has no authorization from the command line (use
``proxy(...).asgi_app(auth=...)`` in Python).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..transports import http_defaults
from . import login


def add_parser(sub: Any, auth_args: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``proxy`` subcommand's arguments."""
    p = sub.add_parser("proxy", help="serve a remote server through mcpkit: a stdio "
                       "server over HTTP, or an HTTP server on stdio")
    p.add_argument("--stdio", metavar="COMMAND", help="the remote: launch it with COMMAND")
    p.add_argument("--config", metavar="FILE", help="serve every server of this host "
                   "configuration (mcpServers) as one: <server>_<tool>, <server>+<uri>")
    p.add_argument("--http", action="store_true",
                   help="serve Streamable HTTP (default: serve stdio)")
    p.add_argument("--host", help="with --http: address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="with --http: port (default 8000)")
    p.add_argument("--path", help=f"with --http: endpoint path (default {http_defaults.PATH})")
    p.add_argument("--drain", type=float, metavar="SECONDS", help="with --http: seconds "
                   "requests in flight get to be answered on SIGTERM or SIGINT before they "
                   f"are cut (default {http_defaults.DRAIN:g})")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds one forwarded request may take (default 300)")
    p.add_argument("--mode", choices=["auto", "stateful", "stateless"], default="auto",
                   help="the era to speak to the remote (default: its newest)")
    p.add_argument("--max-connections", type=int, default=64, metavar="N",
                   help="stateful sessions connected to the remote at once (for a "
                   "command: processes; default 64)")
    p.add_argument("--name", help="present the proxy under this name (default: the "
                   "remote's)")
    auth_args(p)
    p.add_argument("rest", nargs="*", metavar="URL")


def run(args: argparse.Namespace, target_of: Callable[..., tuple[Any, list[str]]],
        headers_of: Callable[..., dict[str, str]], usage: type[Exception]) -> int:
    """Serve until stopped; 2 for a usage error or a remote that cannot be reached."""
    from ..bridge import proxy
    from ..protocol.errors import MCPError

    _check_serving(args, usage)
    if args.config is not None:
        return _config(args, usage)
    target, rest = target_of(args, list(args.rest))
    if rest:
        raise usage(f"unexpected arguments: {' '.join(rest)}")
    headers = headers_of(args, target)
    sent_token = any(n.lower() == "authorization" for n in headers)
    auth = None if isinstance(target, list) or sent_token else login.stored_auth(target)
    server = proxy(target, headers=headers or None, auth=auth, timeout=args.timeout,
                   mode=args.mode, name=args.name, max_connections=args.max_connections)
    try:
        _serve(server, args)
    except MCPError as exc:
        import sys

        sys.stderr.write(f"mcpkit: error: cannot proxy {server.upstream.describe()}: {exc}\n")
        return 2
    return 0


def _check_serving(args: argparse.Namespace, usage: type[Exception]) -> None:
    """The options of how the proxy serves, whatever it fronts."""
    if not args.http and (args.host or args.port is not None or args.path):
        raise usage("--host, --port and --path are for --http; stdio needs none of them")
    if not args.http and args.drain is not None:
        raise usage("--drain is for --http (seconds requests in flight get on SIGTERM)")
    if args.drain is not None and not args.drain >= 0:
        raise usage(f"--drain must be a number of seconds >= 0 (got {args.drain})")
    if args.path is not None and not args.path.startswith("/"):
        raise usage(f"--path must start with '/', e.g. /mcp (got {args.path!r})")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise usage(f"--port must be between 0 and 65535 (got {args.port})")
    if args.max_connections < 1:
        raise usage(f"--max-connections must be at least 1 (got {args.max_connections})")
    if not args.timeout > 0:
        raise usage(f"--timeout must be a positive number of seconds (got {args.timeout})")


def _serve(server: Any, args: argparse.Namespace) -> None:
    """Run ``server`` on stdio, or on HTTP with ``--host``/``--port``/``--path``/``--drain``."""
    if args.http:
        server.run("http", host=args.host or "127.0.0.1",
                   port=8000 if args.port is None else args.port,
                   path=args.path or http_defaults.PATH,
                   **({} if args.drain is None else {"drain": args.drain}))
    else:
        server.run()


def _config(args: argparse.Namespace, usage: type[Exception]) -> int:
    """``--config FILE``: the configuration's servers as one ``Server``."""
    from ..bridge import Clients
    from ..check.hosts import HostConfigError

    if args.stdio or args.rest:
        raise usage("--config serves a configuration's servers; give no other remote")
    try:
        clients = Clients.from_config(args.config, timeout=args.timeout)
    except HostConfigError as exc:
        raise usage(str(exc)) from None
    _serve(clients.as_server(args.name or "mcpkit-config"), args)
    return 0
