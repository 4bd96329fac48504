"""The ``mcpkit`` command's parser and the commands it runs (``mcpkit.cli.main`` builds it
for every command but ``--version``). The parser is the documentation: each command's
``--help`` (with the argument syntax and examples) is rendered into docs/cli.md by a docs
hook."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Sequence
from typing import Any, NoReturn

from ..protocol.scopes import B64TOKEN
from ..transports import http_defaults
from . import calls, checking, completion, dev, install, login, proxying, tokens, waiting
from .loading import LoadError, load_server
from .usage import EXIT_ERROR, EXIT_OK, EXIT_USAGE, UsageError
from .version import write_version


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
    if not args.http and args.drain is not None:
        raise UsageError(DRAIN_STDIO)
    spec = args.file
    if args.cwd is not None:  # (mcpkit install writes it: a host starts servers anywhere)
        path, sep, obj = spec.partition(":")
        spec = os.path.abspath(path) + sep + obj
        try:
            os.chdir(args.cwd)
        except OSError as exc:
            raise UsageError(f"--cwd {args.cwd}: {exc.strerror or exc}") from None
    server = _load_server_or_usage(spec)
    if args.http:
        if args.path is not None and not args.path.startswith("/"):
            raise UsageError(f"--path must start with '/', e.g. /mcp (got {args.path!r})")
        if args.port is not None and not 0 <= args.port <= 65535:
            raise UsageError(f"--port must be between 0 and 65535 (got {args.port})")
        server.run("http", host=args.host or "127.0.0.1", port=8000 if args.port is None
                   else args.port, path=args.path or http_defaults.PATH, **drain_option(args))
    else:
        if sys.stdin.isatty():
            sys.stderr.write(_on_a_terminal(args.file, server.name))
            sys.stderr.flush()
        server.run()
    return EXIT_OK


DRAIN_HELP = ("with --http: seconds requests in flight get to be answered on SIGTERM or "
              f"SIGINT before they are cut (default {http_defaults.DRAIN:g})")
PATH_HELP = f"with --http: endpoint path (default {http_defaults.PATH})"
DRAIN_STDIO = ("--drain is for --http; over stdio the server's drain_timeout applies "
               "(Server(drain_timeout=...), 1 s by default)")


def drain_option(args: argparse.Namespace) -> dict[str, float]:
    """``{"drain": seconds}`` for ``Server.run`` from ``--drain`` (none when not given)."""
    if args.drain is None:
        return {}
    if not args.drain >= 0:
        raise UsageError(f"--drain must be a number of seconds >= 0 (got {args.drain})")
    return {"drain": args.drain}


def _on_a_terminal(spec: str, name: str) -> str:
    """What ``mcpkit run FILE`` says when stdin is a terminal: a person started it, not a
    host, and a stdio server waiting for MCP messages on stdin otherwise looks hung."""
    import shlex

    started = shlex.quote(f"mcpkit run {spec}")
    rows = [(f"mcpkit dev {shlex.quote(spec)}", "serve it over HTTP, reloaded on change"),
            (f"mcpkit list tools --stdio {started}", "start it for one command"),
            (f"mcpkit call --stdio {started} TOOL key=value", "")]
    width = max(len(command) for command, _ in rows)
    tries = "".join(f"  {command.ljust(width)}  {what}".rstrip() + "\n"
                    for command, what in rows)
    return (f"mcpkit: serving {name!r} over stdio, for an MCP host that starts it: it reads "
            "MCP messages (JSON-RPC) on stdin, so typing here does nothing useful. To try it "
            f"from a shell:\n{tries}Ctrl-C stops it.\n")


# ---------------------------------------------------------------------- main


TARGET = "(--stdio COMMAND | URL)"
ARGUMENTS = """\
arguments:
  key=value        a string when the schema takes a string for key; otherwise JSON
                   when it parses as JSON (5, true, null, [1,2]), else a string
  key:=JSON        always JSON: limit:=5  tags:='["a","b"]'  note:=null
  --args JSON      the whole object at once; pairs given with it override its keys
"""
QUESTIONS = """\
questions from the server (elicitation, in any era, tasks too):
  on a terminal they are asked there: a form field by field, or a URL to open yourself;
  otherwise they are declined with a message, unless --elicit answers them:
  --elicit decline | cancel       answer every question so
  --elicit accept                 accept each form with its defaults (a URL: accept)
  --elicit '{"confirm": true}'    accept with these values (each form takes its keys)
  --elicit @answers.json          the same object, from a file
"""


def _output(command: str) -> str:
    shape = textwrap.fill(f"--json prints one JSON document: {calls.JSON_SHAPES[command]}.",
                          86, initial_indent="  ", subsequent_indent="    ")
    return ("output:\n  stdout carries only the result; progress, questions and errors go "
            f"to stderr.\n{shape}\n  exit status: 0 done; 1 the server answered with an "
            "error (or isError);\n  2 a usage error, or the server cannot be reached or "
            "started.\n")


EXAMPLES = {
    "list": """\
  mcpkit list tools --stdio "python server.py"
  mcpkit list resources http://127.0.0.1:8000/mcp --json
""",
    "call": """\
  mcpkit call --stdio "python server.py" add a=1 b=2
  mcpkit call http://127.0.0.1:8000/mcp search query=milk limit:=5
  mcpkit call URL add --args '{"a": 1, "b": 2}' --json | jq .structuredContent
  mcpkit call URL delete_file name=old.txt --elicit '{"confirm": true}'
  mcpkit call URL slow_job seconds:=60 --task
""",
    "read": """\
  mcpkit read --stdio "python server.py" notes://1
  mcpkit read http://127.0.0.1:8000/mcp 'file:///tmp/report.txt' --json
""",
    "prompt": """\
  mcpkit prompt --stdio "python server.py" summarize topic=MCP
  mcpkit prompt URL review --args '{"code": "print(1)"}' --json
""",
    "tasks": """\
  mcpkit tasks list --stdio "python server.py"
  mcpkit tasks get http://127.0.0.1:8000/mcp 786512e2-...
  mcpkit tasks result URL 786512e2-... --json
""",
}


class _Version(argparse.Action):
    """``--version``: the installed mcpkit's version and the protocol revisions it
    speaks, worked out only when asked (the parser is built on every start)."""

    def __init__(self, option_strings: list[str], dest: str, **_: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print mcpkit's version and "
                         "the MCP revisions it speaks, then exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        write_version()
        parser.exit()


def _client_parser(sub: Any, name: str, helptext: str, usage: str) -> argparse.ArgumentParser:
    """A client command's parser: the target, connection and output options, and a
    help epilog with the argument syntax, how questions are answered and examples."""
    sections = [ARGUMENTS] if name in ("call", "prompt") else []
    sections += [QUESTIONS, _output(name), "examples:\n" + EXAMPLES[name]]
    sp: argparse.ArgumentParser = sub.add_parser(
        name, help=helptext, usage=f"mcpkit {name} {usage}",
        description=textwrap.fill(
            f"{helptext[:1].upper()}{helptext[1:]}. The server is a command started for "
            "the duration (--stdio COMMAND) or Streamable HTTP at URL.", 88),
        epilog="\n".join(sections),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("--stdio", metavar="COMMAND",
                    help="launch the server with COMMAND (else give its http(s):// URL)")
    sp.add_argument("--json", action="store_true", help="print the result as one JSON "
                    "document (see output)")
    sp.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                    help="seconds per request, default 30 "
                    "(time spent answering the server's questions is not counted)")
    _wait_arg(sp)
    sp.add_argument("--era", choices=["auto", "stateful", "stateless"],
                    help="the protocol era: stateful (2025-11-25 and before, the default), "
                    "stateless (2026-07-28), or auto (the newest both speak; the default "
                    "for tasks over HTTP)")
    sp.add_argument("--elicit", default="ask", metavar="ANSWER",
                    help="how to answer the server's questions: ask (default), accept, "
                    "decline, cancel, a JSON object, @FILE (see below)")
    sp.add_argument("-v", "--verbose", action="store_true", help="show the server's stderr")
    _auth_args(sp)
    return sp


def _wait_arg(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--wait", type=float, default=waiting.DEFAULT, metavar="SECONDS",
                    help="http(s): while nothing listens at the URL (a server still "
                    f"starting), try again for up to SECONDS, default {waiting.DEFAULT:g}; "
                    "0: fail at once")


def _auth_args(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--token", help="http(s): an OAuth access token sent as "
                    "'Authorization: Bearer TOKEN' (default: $MCPKIT_TOKEN, then the "
                    "login kept by mcpkit login)")
    sp.add_argument("--header", action="append", default=[], metavar="NAME: VALUE",
                    help="http(s): an extra HTTP header, repeatable")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcpkit", description="Model Context Protocol toolkit: run, call, check and "
        "install MCP servers.", epilog="mcpkit COMMAND --help shows a command's options and "
        "examples; shell completion: mcpkit completion bash|zsh|fish.")
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help="run a server (stdio, or Streamable HTTP with --http)")
    run.add_argument("file", metavar="FILE[:OBJECT]")
    run.add_argument("--http", action="store_true", help="serve Streamable HTTP")
    run.add_argument("--host", help="with --http: address to bind (default 127.0.0.1)")
    run.add_argument("--port", type=int, help="with --http: port (default 8000)")
    run.add_argument("--path", help=PATH_HELP)
    run.add_argument("--drain", type=float, metavar="SECONDS", help=DRAIN_HELP)
    run.add_argument("--cwd", metavar="DIR", help="run in DIR, where the server's relative "
                     "paths (its data files) resolve (mcpkit install writes it)")

    lst = _client_parser(sub, "list", "list tools, resources, templates or prompts",
                         f"{{tools,resources,templates,prompts}} [options] {TARGET}")
    lst.add_argument("kind", choices=["tools", "resources", "templates", "prompts"])
    lst.add_argument("rest", nargs="*", metavar="URL", help="the server's URL")
    call = _client_parser(sub, "call", "call a tool",
                          f"[options] {TARGET} TOOL [key=value | key:=JSON ...]")
    call.add_argument("--args", metavar="JSON", help="the arguments as a JSON object")
    call.add_argument("--task", action="store_true",
                      help="run it as a task, showing its status and progress")
    call.add_argument("--ttl", type=int, metavar="MS",
                      help="with --task: how long the server keeps it (2025-11-25)")
    call.add_argument("rest", nargs="*", metavar="[URL] TOOL ARG",
                      help="the server's URL (unless --stdio), the tool, its arguments")
    read = _client_parser(sub, "read", "read a resource", f"[options] {TARGET} URI")
    read.add_argument("rest", nargs="*", metavar="[URL] URI",
                      help="the server's URL (unless --stdio), the resource's URI")
    prompt = _client_parser(sub, "prompt", "get a prompt",
                            f"[options] {TARGET} NAME [key=value ...]")
    prompt.add_argument("--args", metavar="JSON",
                        help="the arguments as a JSON object (values are strings)")
    prompt.add_argument("rest", nargs="*", metavar="[URL] NAME ARG",
                        help="the server's URL (unless --stdio), the prompt, its arguments")
    tsk = _client_parser(sub, "tasks", "list, inspect, cancel tasks or fetch their result",
                         f"{{list,get,cancel,result}} [options] {TARGET} [TASK_ID]")
    tsk.add_argument("action", choices=["list", "get", "cancel", "result"])
    tsk.add_argument("rest", nargs="*", metavar="[URL] TASK_ID",
                     help="the server's URL (unless --stdio), the task's id")
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
    _wait_arg(chk)
    _auth_args(chk)
    chk.add_argument("--wrong-audience-token", metavar="TOKEN",
                     help="http(s): a token issued for another server, which the server "
                     "must refuse with 401")
    checking.add_args(chk)
    chk.add_argument("rest", nargs="*", metavar="URL")
    login.add_parsers(sub)
    proxying.add_parser(sub, _auth_args)
    install.add_parser(sub)
    dev.add_parser(sub)
    completion.add_parser(sub)
    tokens.add_parser(sub)
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
    target_spec, rest = calls.target(args, args.rest)
    if rest:
        raise UsageError(f"unexpected arguments: {' '.join(rest)}")
    headers = calls.http_headers(args, target_spec)
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
        anyio.run(waiting.until_listening, target_spec, args.wait)
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
        if args.command == "completion":
            sys.stdout.write(completion.script(args.shell, _parser()))
            return EXIT_OK
        if args.command == "token":
            return tokens.run(args)
        if args.command == "proxy":
            return proxying.run(args, calls.target, calls.http_headers, UsageError)
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

        code: int = anyio.run(calls.run, args)
        return code
    except UsageError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        return 130

