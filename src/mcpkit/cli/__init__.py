"""The ``mcpkit`` command: run a server, or talk to one from a shell.

    mcpkit run FILE[:OBJECT]                       serve a Server object over stdio
    mcpkit run --http [--host H] [--port N] [--path P] FILE[:OBJECT]
                                                   ... or over Streamable HTTP
    mcpkit list tools|resources|templates|prompts TARGET
    mcpkit call TARGET TOOL [--args JSON | key=value ...] [--task [--ttl MS]]
    mcpkit tasks list|get|cancel|result TARGET [TASK_ID]
    mcpkit read TARGET URI
    mcpkit prompt TARGET NAME [--args JSON | key=value ...]
    mcpkit check TARGET [--era stateful|stateless|both] [--format text|json|markdown|html|csv
                        |sarif|junit] [--baseline FILE] [--pin FILE]
                        [--config FILE|auto] [--jobs N]
                        [--out FILE] [--call-tools none|readonly|all]
                        [--fail-on must|should|lint|never]
                        [--token TOKEN] [--wrong-audience-token TOKEN]
    mcpkit login URL [--scope S ...] [--client-id ID [--client-secret S]] [--port N]
                     [--no-browser]                log in (OAuth) and keep the tokens
    mcpkit logout URL                              forget them

TARGET is ``--stdio "COMMAND"`` or an ``http(s)://`` URL. Output is for people by default
(tables; colour on a terminal); ``--json`` prints the raw results. Exit status: 0 on
success, 1 when the server answered with an error or a tool result has ``isError``, 2 for
usage errors (bad target, bad JSON, unknown tool) and for a server that cannot be reached
or started (nothing listening at the URL, a command that exits before answering).
``check`` exits 1 when a finding at the ``--fail-on`` level failed, so it drops into CI.
A URL target uses the login ``mcpkit login`` stored for it (``login``), unless a token is
given (``--token``, ``$MCPKIT_TOKEN`` or an ``Authorization`` header).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from ..protocol.scopes import B64TOKEN
from . import checking, dev, install, login, tasks
from .loading import LoadError, load_server

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A mistake in how mcpkit was called; printed as one line, exit status 2."""


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    sys.stderr.write(f"mcpkit: error: {message}\n")
    raise SystemExit(code)


# ---------------------------------------------------------------------- run


def _load_server_or_usage(spec: str) -> Any:
    try:
        return load_server(spec)
    except LoadError as exc:
        raise UsageError(str(exc)) from None


def cmd_run(args: argparse.Namespace) -> int:
    if not args.http and (args.host or args.port or args.path):
        raise UsageError("--host, --port and --path are for --http; stdio needs none of them")
    server = _load_server_or_usage(args.file)
    if args.http:
        if args.path is not None and not args.path.startswith("/"):
            raise UsageError(f"--path must start with '/', e.g. /mcp (got {args.path!r})")
        if args.port is not None and not 0 <= args.port <= 65535:
            raise UsageError(f"--port must be between 0 and 65535 (got {args.port})")
        server.run("http", host=args.host or "127.0.0.1", port=8000 if args.port is None
                   else args.port, path=args.path or "/mcp")
    else:
        server.run()
    return EXIT_OK


# ---------------------------------------------------------------------- client commands


def _target(args: argparse.Namespace, rest: list[str]) -> tuple[Any, list[str]]:
    if args.stdio:
        import shlex

        command = shlex.split(args.stdio)
        if not command:
            raise UsageError("--stdio needs a command, e.g. --stdio \"python server.py\"")
        return command, rest
    if rest and rest[0].startswith(("http://", "https://")):
        return rest[0], rest[1:]
    raise UsageError('give a server: --stdio "COMMAND" or an http(s):// URL')


def _parse_args(args_json: str | None, pairs: Sequence[str], schema: dict[str, Any] | None
                ) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if args_json is not None:
        try:
            parsed = json.loads(args_json)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--args is not valid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(parsed, dict):
            raise UsageError("--args must be a JSON object, e.g. '{\"a\": 1}'")
        values.update(parsed)
    props = (schema or {}).get("properties") or {}
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        if not eq or not key:
            raise UsageError(f"expected key=value, got {pair!r}")
        kind = (props.get(key) or {}).get("type")
        if kind == "string":
            values[key] = raw
            continue
        try:
            values[key] = json.loads(raw)
        except json.JSONDecodeError:
            values[key] = raw
    return values


class _Style:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text


def _table(rows: list[tuple[str, str]], style: _Style) -> str:
    if not rows:
        return "(none)"
    width = max(len(r[0]) for r in rows)
    cols = shutil.get_terminal_size((100, 20)).columns
    lines = []
    for name, desc in rows:
        desc = " ".join(desc.split())
        room = max(20, cols - width - 3)
        if len(desc) > room:
            desc = desc[: room - 1] + "…"
        lines.append(f"{style(name.ljust(width), '1;36')}  {desc}")
    return "\n".join(lines)


def _print_content(blocks: list[Any], style: _Style) -> None:
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            print(block.get("text", ""))
        elif kind in ("image", "audio"):
            size = len(block.get("data", "")) * 3 // 4
            print(style(f"[{kind} {block.get('mimeType')} ~{size} bytes]", "2"))
        elif kind == "resource":
            res = block.get("resource", {})
            print(style(f"[resource {res.get('uri')}]", "2"))
            if "text" in res:
                print(res["text"])
        elif kind == "resource_link":
            print(style(f"[link {block.get('uri')}] {block.get('name', '')}", "2"))
        else:
            print(json.dumps(block))




def _http_headers(args: argparse.Namespace, target: Any) -> dict[str, str]:
    """The extra HTTP headers of a command: each ``--header``, and ``Authorization:
    Bearer`` from ``--token`` (else ``$MCPKIT_TOKEN``) for an http(s) target. A stdio
    server takes its credentials from its environment, so ``--token`` is refused there."""
    headers: dict[str, str] = {}
    for item in args.header:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header wants 'Name: value', got {item!r}")
        headers[name.strip()] = value.strip()
    if isinstance(target, list):
        if args.token or headers:
            raise UsageError("--token and --header are for http(s) servers; a stdio server "
                             "takes its credentials from its environment")
        return headers
    token = args.token or os.environ.get("MCPKIT_TOKEN")
    if token:
        if not B64TOKEN.fullmatch(token):
            raise UsageError("the token is not a bearer token (RFC 6750: letters, digits "
                             "and -._~+/ then optional '='); check what was pasted")
        if any(name.lower() == "authorization" for name in headers):
            raise UsageError("give the token with --token or an Authorization --header, "
                             "not both")
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _http_refusal(exc: BaseException, sent_token: bool, url: str = "URL",
                  stored: bool = False) -> str | None:
    """What to tell the user when the server refused us with HTTP 401 or 403 (found in
    ``exc`` or what caused it), else None. ``stored``: the token was a stored login's."""
    from ..protocol.errors import TransportError

    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, TransportError):
        seen = seen.__cause__
    if seen is None or seen.status not in (401, 403):
        return None
    if seen.status == 401 and stored:
        return ("the server refused the stored login's access token (HTTP 401): log in "
                f"again: mcpkit login {url} ({seen})")
    if seen.status == 401 and sent_token:
        return ("the server refused the access token (HTTP 401): it is invalid, expired or "
                f"for another server; get a new one for this server ({seen})")
    if seen.status == 401:
        return ("the server requires authorization (HTTP 401): log in with: mcpkit login "
                f"{url}, or give an access token with --token TOKEN or $MCPKIT_TOKEN ({seen})")
    return ("the server refused this token (HTTP 403): it lacks a scope this needs; get a "
            f"token with the scopes the server names ({seen})")


async def _client_command(args: argparse.Namespace) -> int:
    from ..client import Client, Http, ServerUnreachable, Stdio
    from ..protocol.errors import MCPError, RemoteError

    target, rest = _target(args, list(args.rest))
    headers = _http_headers(args, target)
    sent_token = any(n.lower() == "authorization" for n in headers)
    auth = None if isinstance(target, list) or sent_token else login.stored_auth(target)
    style = _Style(sys.stdout.isatty() and not args.json and "NO_COLOR" not in os.environ)
    import tempfile

    # the server may write any bytes to stderr: decode leniently when showing its tail
    stderr = None if args.verbose else tempfile.TemporaryFile(
        "w+", encoding="utf-8", errors="replace")
    try:
        # tasks over HTTP: the stateless revision where the server speaks it (its tasks
        # outlive this process's session; a 2025-11-25 task is bound to the session)
        tasks_too = (args.command == "tasks" or getattr(args, "task", False)
                     ) and not isinstance(target, list)
        transport = Stdio(target, stderr=stderr) if isinstance(target, list) else Http(
            target, headers=headers or None, auth=auth)
        async with Client(transport, timeout=args.timeout,
                          mode="auto" if tasks_too else "stateful") as client:
            return await _dispatch(client, args, rest, style)
    except RemoteError as exc:
        sys.stderr.write(f"mcpkit: server error {exc.code}: {exc.message}\n")
        return EXIT_ERROR
    except FileNotFoundError as exc:
        raise UsageError(f"cannot start the server: {exc.strerror}: {exc.filename}") from None
    except ServerUnreachable as exc:
        sys.stderr.write(f"mcpkit: error: {exc}\n")
        _show_stderr_tail(stderr)
        return EXIT_USAGE
    except (MCPError, OSError) as exc:
        refusal = _http_refusal(exc, sent_token or auth is not None, str(target),
                                auth is not None)
        sys.stderr.write(f"mcpkit: error: {refusal or exc}\n")
        _show_stderr_tail(stderr)
        return EXIT_ERROR
    finally:
        if stderr is not None:
            stderr.close()


def _show_stderr_tail(stderr: Any) -> None:
    """The last lines a launched server wrote to stderr: usually why it failed."""
    if stderr is None:
        return
    stderr.seek(0)
    tail = stderr.read().strip().splitlines()[-5:]
    if tail:
        sys.stderr.write("mcpkit: the server's last stderr lines:\n")
        sys.stderr.write("".join(f"  {line}\n" for line in tail))


async def _dispatch(client: Any, args: argparse.Namespace, rest: list[str], style: _Style
                    ) -> int:
    out = sys.stdout
    if args.command == "list":
        kind = args.kind
        if kind == "tools":
            items = await client.list_tools()
            rows = [(i.name, i.description or "") for i in items]
        elif kind == "resources":
            items = await client.list_resources()
            rows = [(i.uri, i.description or i.name) for i in items]
        elif kind == "templates":
            items = await client.list_resource_templates()
            rows = [(i.uri_template, i.description or i.name) for i in items]
        else:
            items = await client.list_prompts()
            rows = [(i.name, i.description or "") for i in items]
        if args.json:
            json.dump([i.model_dump(by_alias=True, exclude_none=True) for i in items], out,
                      indent=2)
            out.write("\n")
        else:
            print(_table(rows, style))
        return EXIT_OK
    if args.command == "call":
        if not rest:
            raise UsageError("name the tool to call: mcpkit call TARGET TOOL [key=value ...]")
        name, pairs = rest[0], rest[1:]
        tools = {t.name: t for t in await client.list_tools()}
        if name not in tools:
            known = ", ".join(sorted(tools)) or "none"
            raise UsageError(f"unknown tool {name!r}; the server has: {known}")
        arguments = _parse_args(args.args, pairs, tools[name].input_schema)
        if args.task:
            result = await tasks.call_as_task(client, name, arguments, args.ttl)
        else:
            result = await client.call_tool(name, arguments)
        return _print_result(result, args, style)
    if args.command == "tasks":
        try:
            status, result = await tasks.tasks_command(
                client, args.action, rest, args.json, lambda rows: _table(rows, style))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return status if result is None else _print_result(result, args, style)
    if args.command == "read":
        if len(rest) != 1:
            raise UsageError("give one URI: mcpkit read TARGET URI")
        res = await client.read_resource(rest[0])
        data = res.model_dump(by_alias=True, exclude_none=True)
        if args.json:
            json.dump(data, out, indent=2)
            out.write("\n")
        else:
            for item in data["contents"]:
                if "text" in item:
                    print(item["text"])
                else:
                    print(style(f"[blob {item.get('mimeType')} {item['uri']}]", "2"))
        return EXIT_OK
    # prompt
    if not rest:
        raise UsageError("name the prompt: mcpkit prompt TARGET NAME [key=value ...]")
    arguments = _parse_args(args.args, rest[1:], None)
    bad = [k for k, v in arguments.items() if not isinstance(v, str)]
    for k in bad:
        arguments[k] = json.dumps(arguments[k])
    res = await client.get_prompt(rest[0], arguments)
    data = res.model_dump(by_alias=True, exclude_none=True)
    if args.json:
        json.dump(data, out, indent=2)
        out.write("\n")
    else:
        for msg in data["messages"]:
            print(style(f"{msg['role']}:", "1;35"))
            _print_content([msg["content"]], style)
    return EXIT_OK


def _print_result(result: Any, args: argparse.Namespace, style: _Style) -> int:
    """Print a tool's result (its content, or raw JSON with ``--json``); the exit status."""
    data = result.model_dump(by_alias=True, exclude_none=True)
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif result.is_error:
        sys.stderr.write(style("tool error: ", "1;31"))
        sys.stderr.write(result.text + "\n")
    else:
        _print_content(data.get("content", []), style)
    return EXIT_ERROR if result.is_error else EXIT_OK


# ---------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mcpkit", description="Model Context Protocol toolkit.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a server (stdio, or Streamable HTTP with --http)")
    run.add_argument("file", metavar="FILE[:OBJECT]")
    run.add_argument("--http", action="store_true", help="serve Streamable HTTP")
    run.add_argument("--host", help="with --http: address to bind (default 127.0.0.1)")
    run.add_argument("--port", type=int, help="with --http: port (default 8000)")
    run.add_argument("--path", help="with --http: endpoint path (default /mcp)")

    def client_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--stdio", metavar="COMMAND", help="launch the server with COMMAND")
        sp.add_argument("--json", action="store_true", help="print raw JSON results")
        sp.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
        sp.add_argument("-v", "--verbose", action="store_true", help="show the server's stderr")
        auth_args(sp)

    def auth_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--token", help="http(s): an OAuth access token sent as "
                        "'Authorization: Bearer TOKEN' (default: $MCPKIT_TOKEN)")
        sp.add_argument("--header", action="append", default=[], metavar="NAME: VALUE",
                        help="http(s): an extra HTTP header, repeatable")

    lst = sub.add_parser("list", help="list tools, resources, templates or prompts")
    lst.add_argument("kind", choices=["tools", "resources", "templates", "prompts"])
    client_args(lst)
    lst.add_argument("rest", nargs="*", metavar="URL")
    for name, helptext in (("call", "call a tool"), ("read", "read a resource"),
                           ("prompt", "get a prompt")):
        sp = sub.add_parser(name, help=helptext)
        client_args(sp)
        if name != "read":
            sp.add_argument("--args", metavar="JSON", help="arguments as a JSON object")
        if name == "call":
            sp.add_argument("--task", action="store_true",
                            help="run it as a task, showing its status and progress")
            sp.add_argument("--ttl", type=int, metavar="MS",
                            help="with --task: how long the server keeps it (2025-11-25)")
        sp.add_argument("rest", nargs="*", metavar="ARG")
    tsk = sub.add_parser("tasks", help="list, inspect, cancel tasks or fetch their result")
    tsk.add_argument("action", choices=["list", "get", "cancel", "result"])
    client_args(tsk)
    tsk.add_argument("rest", nargs="*", metavar="ARG")
    chk = sub.add_parser("check", help="judge a server against the protocol and design rules")
    chk.add_argument("--stdio", metavar="COMMAND", help="launch the server with COMMAND")
    chk.add_argument("--era", choices=["stateful", "stateless", "both"], default="both")
    chk.add_argument("--format", default="text", choices=[
        "text", "json", "markdown", "html", "csv", "sarif", "junit"])
    chk.add_argument("--out", metavar="FILE", help="write the report to FILE")
    chk.add_argument("--call-tools", choices=["none", "readonly", "all"], default="readonly",
                     help="which tools may be called: none; readonly (default: tools annotated "
                     "readOnlyHint, and only with arguments their schema rejects); all")
    chk.add_argument("--fail-on", choices=["must", "should", "lint", "never"], default="must",
                     help="exit 1 when a finding at this level (or worse) failed")
    chk.add_argument("--timeout", type=float, default=5.0, help="seconds per request")
    auth_args(chk)
    chk.add_argument("--wrong-audience-token", metavar="TOKEN",
                     help="http(s): a token issued for another server, which the server "
                     "must refuse with 401")
    checking.add_args(chk)
    chk.add_argument("rest", nargs="*", metavar="URL")
    login.add_parsers(sub)
    install.add_parser(sub)
    dev.add_parser(sub)
    return p


def cmd_check(args: argparse.Namespace) -> int:
    import anyio

    from ..check import Target, run_check

    try:
        prep = checking.prepare(args)
        if args.config:
            return checking.run_config(args, prep)
    except checking.CheckUsageError as exc:
        raise UsageError(str(exc)) from exc
    target_spec, rest = _target(args, args.rest)
    if rest:
        raise UsageError(f"unexpected arguments: {' '.join(rest)}")
    headers = _http_headers(args, target_spec)
    if isinstance(target_spec, list):
        if args.wrong_audience_token:
            raise UsageError("--wrong-audience-token is for http(s) servers")
        target = Target(command=target_spec, timeout=args.timeout)
    else:
        token = args.token or os.environ.get("MCPKIT_TOKEN") or None
        if token is None and not any(k.lower() == "authorization" for k in headers):
            from ..protocol.errors import MCPError

            try:
                token = anyio.run(login.stored_access_token, target_spec, args.timeout)
            except (MCPError, OSError) as exc:
                _fail(f"the stored login for {target_spec} cannot be used: {exc}", EXIT_ERROR)
        wrong = args.wrong_audience_token
        if wrong is not None and not B64TOKEN.fullmatch(wrong):
            raise UsageError("--wrong-audience-token is not a bearer token (RFC 6750)")
        target = Target(url=target_spec, headers=headers, timeout=args.timeout,
                        token=token, wrong_audience_token=wrong)
    report = anyio.run(run_check, target, args.era, args.call_tools)
    try:
        return checking.output(args, [report], prep)
    except checking.CheckUsageError as exc:
        raise UsageError(str(exc)) from exc


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    # argparse gives a '*' positional nothing when an option comes between it and the
    # command's first positional ("list tools --json URL"): take such leftovers as its own
    if extra and hasattr(args, "rest") and not any(a.startswith("-") for a in extra):
        args.rest = [*args.rest, *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if not hasattr(args, "args"):
        args.args = None
    try:
        if args.command == "run":
            return cmd_run(args)
        if args.command == "check":
            return cmd_check(args)
        if args.command == "dev":
            return dev.run(args)
        if args.command == "install":
            try:
                return install.install(args, _load_server_or_usage)
            except install.InstallError as exc:
                _fail(str(exc), EXIT_ERROR)
        import anyio

        if args.command == "logout":
            logged_out: int = anyio.run(login.cmd_logout, args)
            return logged_out

        if args.command == "login":
            status: int = anyio.run(login.cmd_login, args)
            return status

        code: int = anyio.run(_client_command, args)
        return code
    except UsageError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
