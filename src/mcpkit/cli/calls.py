"""The client commands: ``list``, ``call``, ``read``, ``prompt`` and ``tasks``.

Each connects to its target (``--stdio "COMMAND"`` or an ``http(s)://`` URL, with
``--header``/``--token`` for a URL: :func:`target`, :func:`http_headers`), sends its
request, prints the answer and returns the exit status. What they share:

- **Arguments** (:func:`parse_arguments`): ``key=value`` is a string when the schema of
  ``key`` takes a string, else JSON when it parses as JSON, else a string; ``key:=JSON``
  is always JSON; ``--args JSON`` gives the whole object (pairs override it).
- **Output**: stdout carries only the result — for people by default; with ``--json``
  exactly one JSON document, the result as the protocol has it (:data:`JSON_SHAPES`).
  Progress, questions and errors go to stderr. A plain ``call`` whose tool reports
  progress shows it live (``tasks.Live``: a line redrawn on a terminal, plain lines
  otherwise).
- **Questions** from the server (elicitation, any era, tasks too) are answered by
  ``elicit.Asker``; ``--timeout`` does not count the time a person takes to answer.
- **Errors** say what to do next: close names for an unknown tool or prompt, ``mcpkit
  list`` for the rest, ``mcpkit login`` for a 401, ``--timeout`` for a slow answer.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import shlex
import shutil
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..protocol.scopes import B64TOKEN
from . import elicit, login, tasks
from .hints import after_redirect, explain_http, show_stderr_tail
from .usage import EXIT_ERROR, EXIT_OK, EXIT_USAGE, UsageError
from .waiting import Waiting, refused

JSON_SHAPES = {
    "list": "an array of the items as the server listed them (Tool, Resource, "
            "ResourceTemplate or Prompt objects)",
    "call": "the CallToolResult object: content, structuredContent (when the tool has "
            "it), isError (always)",
    "read": "the ReadResourceResult object: contents",
    "prompt": "the GetPromptResult object: description (if any), messages",
    "tasks": "list: an array of Task objects; get, cancel: the Task object ({\"taskId\", "
             "\"cancelRequested\": true} when the server only acknowledges a cancel); "
             "result: the CallToolResult object",
}
"""What ``--json`` prints on stdout per command (also in each command's ``--help``)."""


UNBOUNDED = 7 * 86400.0
"""The request timeout given to the client where :class:`Clock` bounds the wait instead
(finite: a task the server chose to create is polled within it)."""


# ---------------------------------------------------------------------- target


def target(args: argparse.Namespace, rest: list[str]) -> tuple[Any, list[str]]:
    """The server to talk to (a command's argv, or a URL) and the other positionals."""
    url = rest[0] if rest and rest[0].startswith(("http://", "https://")) else None
    if args.stdio is not None:
        if url is not None:
            raise UsageError(f"give one server: --stdio \"COMMAND\" or the URL {url}, not both")
        try:
            command = shlex.split(args.stdio)
        except ValueError as exc:
            raise UsageError(f"--stdio {args.stdio!r}: {exc}; quote the command as a shell "
                             "would") from None
        if not command:
            raise UsageError("--stdio needs a command, e.g. --stdio \"python server.py\"")
        return command, rest
    if url is not None:
        return url, rest[1:]
    hint = ""
    if rest and rest[0].endswith(".py"):
        hint = f" (to start {rest[0]}: --stdio \"python {rest[0]}\")"
    elif rest and (":" in rest[0] or "/" in rest[0]):
        hint = f" ({rest[0]!r} is not one: a URL starts with http:// or https://)"
    raise UsageError(f'give a server: --stdio "COMMAND" or an http(s):// URL{hint}')


def target_words(args: argparse.Namespace, where: Any) -> str:
    """The target as it would be typed again, for hints (``mcpkit list tools ...``)."""
    return f"--stdio {shlex.quote(args.stdio)}" if isinstance(where, list) else str(where)


def http_headers(args: argparse.Namespace, where: Any) -> dict[str, str]:
    """The extra HTTP headers of a command: each ``--header``, and ``Authorization:
    Bearer`` from ``--token`` (else ``$MCPKIT_TOKEN``) for an http(s) target. A stdio
    server takes its credentials from its environment, so ``--token`` is refused there."""
    headers: dict[str, str] = {}
    for item in args.header:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header wants 'Name: value', got {item!r}")
        headers[name.strip()] = value.strip()
    if isinstance(where, list):
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


# ---------------------------------------------------------------------- arguments


def _takes_string(schema: Any) -> bool:
    """Whether a property's JSON schema admits a string."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    if isinstance(schema.get("enum"), list) and all(
            isinstance(v, str) for v in schema["enum"]) and kind is None:
        return True
    return any(_takes_string(s) for key in ("anyOf", "oneOf")
               for s in (schema.get(key) or []))


def parse_arguments(args_json: str | None, pairs: Sequence[str], schema: dict[str, Any] | None,
                    strings: bool = False) -> dict[str, Any]:
    """The arguments object of ``--args`` and ``key=value`` / ``key:=JSON`` pairs (see
    the module docstring); ``strings``: every value must be a string (prompt arguments),
    so a non-string is sent as its JSON text."""
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
        forced = key.endswith(":")
        key = key.removesuffix(":")
        if not eq or not key:
            raise UsageError(f"expected key=value or key:=JSON, got {pair!r} (see --help)")
        if forced:
            try:
                values[key] = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{key}:= takes JSON, and {raw!r} is not ({exc.msg}); "
                                 f"for a string write {key}={raw}") from None
        elif strings or _takes_string(props.get(key)):
            values[key] = raw
        else:
            try:
                values[key] = json.loads(raw)
            except json.JSONDecodeError:
                values[key] = raw
    if strings:
        values = {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}
    return values


# ---------------------------------------------------------------------- output


class Style:
    """ANSI styling, on only for a terminal without ``NO_COLOR``."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text


def table(rows: list[tuple[str, str]], style: Style) -> str:
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


def print_json(data: Any) -> None:
    """The one JSON document of ``--json`` on stdout."""
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def dumped(model: Any) -> Any:
    """A result model as the protocol has it (camelCase, no absent fields); the
    2026-07-28 envelope of a complete result (``resultType``, the server's info in
    ``_meta``) is left out, so both eras print the same shape."""
    from ..protocol.stateless import SERVER_INFO

    data = model.to_wire()
    if not isinstance(data, dict):
        return data
    if data.get("resultType") == "complete":
        del data["resultType"]
    meta = data.get("_meta")
    if isinstance(meta, dict) and SERVER_INFO in meta:
        meta = {k: v for k, v in meta.items() if k != SERVER_INFO}
        if meta:
            data["_meta"] = meta
        else:
            del data["_meta"]
    return data


def print_content(blocks: list[Any], style: Style) -> None:
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


def print_result(result: Any, args: argparse.Namespace, style: Style) -> int:
    """Print a tool's result (its content, or the JSON document); the exit status."""
    data = dumped(result)
    if args.json:
        print_json(data)
    elif result.is_error:
        sys.stderr.write(style("tool error: ", "1;31"))
        sys.stderr.write(result.text + "\n")
    else:
        print_content(data.get("content", []), style)
    return EXIT_ERROR if result.is_error else EXIT_OK


def unknown(kind: str, name: str, known: Sequence[str], listing: str) -> str:
    """The message for an unknown tool or prompt: the close names, else the known ones
    (a few), and the command that lists them all."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:
        said = "did you mean " + " or ".join(repr(c) for c in close) + "?"
    elif not known:
        said = f"the server has no {kind}s"
    elif len(known) <= 12:
        said = "the server has: " + ", ".join(sorted(known))
    else:
        said = f"the server has {len(known)} {kind}s"
    return f"unknown {kind} {name!r}: {said} (list them: mcpkit list {listing})"


class Clock:
    """``--timeout`` for a request that may wait on a person: a cancel scope whose
    deadline stands still while a question is open (``waiting``)."""

    def __init__(self, seconds: float) -> None:
        import anyio

        self.seconds = seconds
        self.scope = anyio.CancelScope(deadline=anyio.current_time() + seconds)
        self._open = 0
        self._left = seconds

    def waiting(self, on: bool) -> None:
        """A question opens (True) or closes (False): stop the clock, or start it again
        with the time that was left."""
        import anyio

        if on:
            self._open += 1
            if self._open == 1:
                self._left = self.scope.deadline - anyio.current_time()
                self.scope.deadline = math.inf
        elif self._open:
            self._open -= 1
            if self._open == 0:
                self.scope.deadline = anyio.current_time() + max(0.0, self._left)


# ---------------------------------------------------------------------- commands


async def run(args: argparse.Namespace) -> int:
    """Run a client command; its exit status (see the module docstring)."""
    from ..client import ServerUnreachable
    from ..protocol.errors import MCPError, RemoteError, RequestTimeout

    where, rest = target(args, list(args.rest))
    headers = http_headers(args, where)
    try:
        preset = elicit.parse_preset(args.elicit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    sent_token = any(n.lower() == "authorization" for n in headers)
    auth = None if isinstance(where, list) or sent_token else login.stored_auth(where)
    style = Style(sys.stdout.isatty() and not args.json and "NO_COLOR" not in os.environ)
    live = tasks.Live(sys.stderr)
    asker = elicit.Asker(preset, sys.stdin, sys.stderr, before=live.end)
    import tempfile

    # the server may write any bytes to stderr: decode leniently when showing its tail
    stderr = None if args.verbose else tempfile.TemporaryFile(
        "w+", encoding="utf-8", errors="replace")
    mode = args.era
    if mode is None:
        # tasks over HTTP: the stateless revision where the server speaks it (its tasks
        # outlive this process's session; a 2025-11-25 task is bound to the session)
        tasks_too = args.command == "tasks" or getattr(args, "task", False)
        mode = "auto" if tasks_too and not isinstance(where, list) else "stateful"
    waiting = None if isinstance(where, list) else Waiting(args.wait, where)
    try:
        return await _connected(args, where, headers, auth, stderr, mode, waiting, asker,
                                lambda client: _dispatch(client, args, rest, style, live,
                                                         asker, where))
    except RemoteError as exc:
        sys.stderr.write(f"mcpkit: server error {exc.code}: {exc.message}\n")
        return EXIT_ERROR
    except (FileNotFoundError, PermissionError) as exc:
        raise UsageError(f"cannot start the server: {exc.strerror}: {exc.filename}; check "
                         "the --stdio command (installed? on PATH? executable?)") from None
    except ServerUnreachable as exc:
        hint = "" if waiting is None else (
            f"{waiting.said()}; is the server running, and are the host, port and path "
            "right?")
        sys.stderr.write(f"mcpkit: error: {exc}{hint}\n")
        show_stderr_tail(stderr)
        return EXIT_USAGE
    except RequestTimeout as exc:
        sys.stderr.write(f"mcpkit: error: {exc}; give it longer with --timeout SECONDS\n")
        return EXIT_ERROR
    except (MCPError, OSError) as exc:
        said = explain_http(exc, sent_token or auth is not None, str(where),
                            auth is not None) or str(exc)
        if str(exc).startswith("the server did not answer initialize"):  # HandshakeError
            said += ("; is it an MCP server (run it alone, or add -v, to see what it does)? "
                     "A slow start needs a longer --timeout")
        if not isinstance(where, list):
            moved = await after_redirect(exc, where, headers, args.timeout, mode)
            said += f"; {moved}" if moved else ""
        sys.stderr.write(f"mcpkit: error: {said}\n")
        show_stderr_tail(stderr)
        return EXIT_ERROR
    finally:
        live.end()
        if stderr is not None:
            stderr.close()


async def _connected(args: argparse.Namespace, where: Any, headers: dict[str, str],
                     auth: Any, stderr: Any, mode: Any, waiting: Waiting | None,
                     asker: elicit.Asker, body: Callable[[Any], Awaitable[int]]) -> int:
    """Run ``body`` with a client connected to ``where``; a URL where nothing listens yet
    is tried again within ``--wait`` (cli/waiting.py)."""
    from ..client import Client, Http, ServerUnreachable, Stdio

    while True:
        transport = Stdio(where, stderr=stderr) if isinstance(where, list) else Http(
            where, headers=headers or None, auth=auth)
        entered = False
        try:
            async with Client(transport, timeout=args.timeout, mode=mode, elicitation=asker,
                              elicitation_modes=("form", "url")) as client:
                entered = True
                return await body(client)
        except ServerUnreachable as exc:
            if entered or waiting is None or not refused(exc) or not await waiting.again():
                raise


async def _dispatch(client: Any, args: argparse.Namespace, rest: list[str], style: Style,
                    live: tasks.Live, asker: elicit.Asker, where: Any) -> int:
    if args.command == "list":
        if rest:
            raise UsageError(f"unexpected arguments: {' '.join(rest)}")
        return await _list(client, args, style)
    if args.command == "call":
        return await _call(client, args, rest, style, live, asker, where)
    if args.command == "tasks":
        try:
            status, result = await tasks.tasks_command(
                client, args.action, rest, args.json, lambda rows: table(rows, style),
                target_words(args, where))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return status if result is None else print_result(result, args, style)
    if args.command == "read":
        return await _read(client, args, rest, style, where)
    return await _prompt(client, args, rest, style, where)


async def _list(client: Any, args: argparse.Namespace, style: Style) -> int:
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
        print_json([dumped(i) for i in items])
    else:
        print(table(rows, style))
    return EXIT_OK


async def _call(client: Any, args: argparse.Namespace, rest: list[str], style: Style,
                live: tasks.Live, asker: elicit.Asker, where: Any) -> int:
    from ..protocol.errors import CapabilityNotSupported, RequestTimeout

    if not rest:
        raise UsageError("name the tool to call: mcpkit call TARGET TOOL [key=value ...] "
                         f"(list them: mcpkit list tools {target_words(args, where)})")
    name, pairs = rest[0], rest[1:]
    tools = {t.name: t for t in await client.list_tools()}
    if name not in tools:
        raise UsageError(unknown("tool", name, list(tools),
                                 f"tools {target_words(args, where)}"))
    arguments = parse_arguments(args.args, pairs, tools[name].input_schema)
    if args.task:
        lasting = not isinstance(where, list) and client.stateless_version is not None
        try:
            result = await tasks.call_as_task(client, name, arguments, args.ttl, live,
                                              target_words(args, where) if lasting else None)
        except CapabilityNotSupported as exc:
            raise UsageError(tasks.not_a_task(exc)) from None
        return print_result(result, args, style)
    live.name = name
    clock = Clock(args.timeout)
    asker.waiting = clock.waiting
    with clock.scope:
        result = await client.call_tool(name, arguments, timeout=UNBOUNDED,
                                        on_progress=live.progress)
    live.end()
    if clock.scope.cancelled_caught:
        raise RequestTimeout(f"no answer to 'tools/call' within {clock.seconds:g} seconds")
    return print_result(result, args, style)


async def _read(client: Any, args: argparse.Namespace, rest: list[str], style: Style,
                where: Any) -> int:
    from ..protocol.errors import RemoteError

    if len(rest) != 1:
        raise UsageError("give one URI: mcpkit read TARGET URI (list them: mcpkit list "
                         f"resources|templates {target_words(args, where)})")
    try:
        res = await client.read_resource(rest[0])
    except RemoteError as exc:
        if exc.code in (-32002, -32602):
            raise RemoteError(exc.code, f"{exc.message} (list what there is: mcpkit list "
                              f"resources|templates {target_words(args, where)})") from None
        raise
    data = dumped(res)
    if args.json:
        print_json(data)
    for item in [] if args.json else data["contents"]:
        if "text" in item:
            print(item["text"])
        else:
            print(style(f"[blob {item.get('mimeType')} {item['uri']}]", "2"))
    return EXIT_OK


async def _prompt(client: Any, args: argparse.Namespace, rest: list[str], style: Style,
                  where: Any) -> int:
    from ..protocol.errors import RemoteError

    if not rest:
        raise UsageError("name the prompt: mcpkit prompt TARGET NAME [key=value ...] (list "
                         f"them: mcpkit list prompts {target_words(args, where)})")
    arguments = parse_arguments(args.args, rest[1:], None, strings=True)
    try:
        res = await client.get_prompt(rest[0], arguments)
    except RemoteError as exc:
        known = [p.name for p in await client.list_prompts()] if exc.code == -32602 else []
        if known and rest[0] not in known:
            raise UsageError(unknown("prompt", rest[0], known,
                                     f"prompts {target_words(args, where)}")) from None
        raise
    data = dumped(res)
    if args.json:
        print_json(data)
    for msg in [] if args.json else data["messages"]:
        print(style(f"{msg['role']}:", "1;35"))
        print_content([msg["content"]], style)
    return EXIT_OK
