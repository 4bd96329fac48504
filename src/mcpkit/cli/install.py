"""``mcpkit install HOST FILE[:OBJECT]``: register a server with an MCP host.

Writes one entry in the host's MCP configuration so the host starts the server over
stdio with this interpreter: ``PYTHON -m mcpkit run --cwd DIR /abs/FILE[:OBJECT]``, plus
the environment given with ``--env KEY=VALUE`` / ``--env-file``. A host starts its
servers wherever it likes (often ``/``), so the entry names the directory the server
runs in: ``--cwd``, by default the current one — where ``mcpkit call --stdio "python
FILE"`` ran it while it was written — so a server that keeps its data by a relative path
(the quickstart's ``notes.json``, ``examples/notes.py``'s ``notes.db``) finds it there.
Of the six JSON hosts' formats only Gemini CLI's documents a working-directory field, so
it is an argument of ``mcpkit run`` for all of them. The command says where that is,
``--print`` included.

The hosts and their files (the paths and keys of the six JSON hosts are
:mod:`mcpkit.check.hosts`'s, shared with ``mcpkit check --config``):

=============== ================================================ =========== ==========
host            file (user scope; project scope in the cwd)       key         entry type
=============== ================================================ =========== ==========
claude-desktop  Claude/claude_desktop_config.json (per OS)        mcpServers  -
claude-code     ~/.claude.json; project: .mcp.json                mcpServers  "stdio"
cursor          ~/.cursor/mcp.json; project: .cursor/mcp.json     mcpServers  -
vscode          Code/User/mcp.json (per OS); project: .vscode/    servers     "stdio"
gemini-cli      ~/.gemini/settings.json; project: .gemini/        mcpServers  -
windsurf        ~/.codeium/windsurf/mcp_config.json               mcpServers  -
mcp-json        the file ``--config`` names; printed without one  mcpServers  -
goose           printed, never written (goose/config.yaml, YAML)  extensions  stdio
stdio           printed: the command line a host runs             -           -
=============== ================================================ =========== ==========

The file is read, the entry added, and the result written atomically (a temporary file
in the same directory, then a rename) after the old file is copied to ``FILE.bak``.
Nothing else in the file changes; an entry of the same name is replaced only with
``--force``. A file that is not plain JSON (VS Code allows comments) is never rewritten:
the entry is printed for adding by hand. ``--print`` shows the resulting file instead.
The server file is imported first, as ``mcpkit run`` will, so a typo fails now, not in
the host; the entry is named after the server unless ``--name`` says otherwise.

``mcp-json`` is any host that reads an ``mcpServers`` object (the targets FastMCP's
``fastmcp install`` has beyond these are it, ``goose`` and ``stdio``): without
``--config`` the whole document ``{"mcpServers": {NAME: ENTRY}}`` is printed, ready for
``mcpkit check --config`` or ``mcpkit proxy --config``; with it, that file is edited with
the same care as a host's. ``goose`` and ``stdio`` write nothing (the reasons are
:mod:`mcpkit.cli.install_printed`'s).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..check import hosts

HOSTS = (*hosts.HOSTS, "goose", "mcp-json", "stdio")
"""The JSON hosts ``mcpkit check --config`` reads too, then the three printed targets."""
PRINTED = ("goose", "stdio")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class InstallError(Exception):
    """Why the entry could not be written; printed as one line."""


def config_path(host: str, scope: str, **where: Any) -> Path:
    """The configuration file of ``host`` for ``scope`` (``user`` or ``project``); the table
    is :func:`mcpkit.check.hosts.config_path`, shared with ``mcpkit check --config auto``."""
    try:
        return hosts.config_path(host, scope, **where)
    except hosts.HostConfigError as exc:
        raise InstallError(str(exc)) from exc


def read_env_file(path: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (``#`` comments, blank lines, ``export`` and quotes allowed)."""
    out: dict[str, str] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InstallError(f"cannot read --env-file {path}: {exc.strerror or exc}") from exc
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        if not sep or not key.strip().isidentifier():
            raise InstallError(f"{path}:{number}: expected KEY=VALUE, got {raw.strip()!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def parse_env(pairs: list[str], files: list[str]) -> dict[str, str]:
    """The environment for the entry: files first, then ``--env`` pairs over them."""
    env: dict[str, str] = {}
    for path in files:
        env.update(read_env_file(path))
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise InstallError(f"--env takes KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def entry_for(host: str, spec: str, env: dict[str, str], python: str,
              cwd: Path | None = None) -> dict[str, Any]:
    """The host's entry that starts ``spec`` (FILE[:OBJECT]) with ``python``, in the
    directory ``cwd`` (absolute; None: wherever the host starts it)."""
    path, sep, obj = spec.partition(":")
    target = str(Path(path).resolve()) + (f":{obj}" if sep else "")
    where = ["--cwd", str(cwd)] if cwd is not None else []
    entry: dict[str, Any] = {"command": python,
                             "args": ["-m", "mcpkit", "run", *where, target]}
    if host in ("claude-code", "vscode"):
        entry = {"type": "stdio", **entry}
    if env:
        entry["env"] = dict(env)
    return entry


def merged(document: dict[str, Any], host: str, name: str, entry: dict[str, Any],
           force: bool) -> dict[str, Any]:
    """``document`` with ``entry`` under the host's key; ``InstallError`` when another
    entry of that name is there (unless ``force``) or the key is not an object."""
    key = hosts.SERVERS_KEY.get(host, "mcpServers")
    servers = document.get(key, {})
    if not isinstance(servers, dict):
        raise InstallError(f"the configuration's {key!r} is not an object; fix it first")
    if name in servers and servers[name] != entry and not force:
        raise InstallError(f"a server named {name!r} is already configured; use --force "
                           "to replace it or --name to add another")
    return {**document, key: {**servers, name: entry}}


def write_atomically(path: Path, text: str) -> Path | None:
    """Write ``text`` to ``path`` through a temporary file and a rename, after copying
    the old file to ``path.bak`` (returned; None when there was none). The file keeps
    its permissions (a new one gets 0600: it may hold secrets in ``env``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o600
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
        mode = path.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup


def install(args: argparse.Namespace, load_server: Callable[[str], Any],
            out: Any = None) -> int:
    """Run ``mcpkit install`` (see the module docstring); the exit status."""
    out = out or sys.stdout
    server = load_server(args.file)
    name = args.name or server.name
    if not NAME.match(name):
        raise InstallError(f"{name!r} cannot name a server entry; give --name with "
                           "letters, digits, '_', '.' or '-'")
    env = parse_env(args.env, args.env_file)
    cwd = Path(args.cwd or ".").resolve()
    if not cwd.is_dir():
        raise InstallError(f"--cwd {args.cwd}: no such directory")
    entry = entry_for(args.host, args.file, env, args.python or sys.executable, cwd)
    runs_in = (f"it runs in {cwd}: the files it opens by a relative path (its data) are "
               "there (--cwd DIR to choose another)")
    if args.host in (*PRINTED, "mcp-json") and args.scope == "project":
        raise InstallError(f"{args.host} has no project configuration; leave out --scope")
    if args.host in PRINTED:
        from . import install_printed

        try:
            return install_printed.show(args.host, name, entry, entry["args"][-1],
                                        args.config, runs_in, out)
        except install_printed.PrintError as exc:
            raise InstallError(str(exc)) from None
    if args.host == "mcp-json" and not args.config:
        out.write(json.dumps({"mcpServers": {name: entry}}, indent=2) + "\n")
        sys.stderr.write(f"mcpkit: {name!r} for any host that reads \"mcpServers\" (--config "
                         f"FILE adds it to that file); {runs_in}\n")
        return 0
    path = Path(args.config) if args.config else config_path(args.host, args.scope)
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        document = json.loads(text) if text.strip() else {}
    except ValueError:
        snippet = json.dumps({name: entry}, indent=2)
        raise InstallError(f"{path} is not plain JSON (comments?), so it is left as it is; "
                           f"add this under its servers by hand:\n{snippet}") from None
    if not isinstance(document, dict):
        raise InstallError(f"{path} does not hold a JSON object; fix it first")
    result = json.dumps(merged(document, args.host, name, entry, args.force), indent=2) + "\n"
    if args.print:
        out.write(result)
        sys.stderr.write(f"mcpkit: {name!r} would be added to {path}; {runs_in}\n")
        return 0
    backup = write_atomically(path, result)
    kept = f" (the old one is in {backup})" if backup else ""
    host = "the host that reads it" if args.host == "mcp-json" else args.host
    out.write(f"mcpkit: {name!r} added to {path}{kept}; {runs_in}; restart {host} to use "
              "it\n")
    return 0


def add_parser(sub: Any) -> None:
    """The ``install`` subcommand."""
    p = sub.add_parser(
        "install", help="register a server with an MCP host (Claude, Cursor, VS Code, "
        "Gemini CLI, Windsurf, Goose, any mcpServers file)",
        description="Add FILE[:OBJECT] to a host's MCP configuration, started with this "
        "Python. Other entries are kept; the old file is copied to FILE.bak. goose prints "
        "the YAML entry for Goose's config.yaml and stdio the command line, writing "
        "nothing; mcp-json prints an mcpServers document, or adds the entry to the file "
        "--config names.",
        epilog="examples:\n  mcpkit install claude-desktop notes.py\n"
        "  mcpkit install vscode --scope project server.py:app --env API_KEY=...\n"
        "  mcpkit install cursor notes.py --print\n"
        "  mcpkit install goose notes.py\n"
        "  mcpkit install mcp-json notes.py > servers.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("host", choices=HOSTS)
    p.add_argument("file", metavar="FILE[:OBJECT]")
    p.add_argument("--name", help="the entry's name (default: the server's name)")
    p.add_argument("--scope", choices=["user", "project"], default="user",
                   help="user-wide configuration (default) or the project's, in the "
                   "current directory (claude-code, cursor, vscode, gemini-cli)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="an environment variable for the server, repeatable")
    p.add_argument("--env-file", action="append", default=[], metavar="FILE",
                   help="KEY=VALUE lines to add to the environment, repeatable")
    p.add_argument("--config", metavar="PATH", help="the configuration file to edit "
                   "(default: the host's own, per OS; for mcp-json, the file to add to)")
    p.add_argument("--cwd", metavar="DIR", help="the directory the server runs in, where "
                   "relative paths (its data files) resolve (default: the current one)")
    p.add_argument("--python", metavar="PATH", help="the interpreter the host starts "
                   "(default: this one, which has mcpkit installed)")
    p.add_argument("--force", action="store_true",
                   help="replace an entry of the same name")
    p.add_argument("--print", action="store_true",
                   help="print the resulting configuration instead of writing it "
                   "(goose, stdio and mcp-json without --config only print)")
