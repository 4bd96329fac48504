"""MCP host configurations: where each host keeps its servers, and reading them.

=============== ============================================== ============
host            file (user scope; project scope in the cwd)      servers key
=============== ============================================== ============
claude-desktop  Claude/claude_desktop_config.json (per OS)       mcpServers
claude-code     ~/.claude.json; project: .mcp.json               mcpServers
cursor          ~/.cursor/mcp.json; project: .cursor/mcp.json    mcpServers
vscode          Code/User/mcp.json (per OS); project: .vscode/   servers
gemini-cli      ~/.gemini/settings.json; project: .gemini/       mcpServers
windsurf        ~/.codeium/windsurf/mcp_config.json              mcpServers
=============== ============================================== ============

:func:`config_path` is the path table and :data:`SERVERS_KEY` the key of each host's servers
(``mcpkit install`` writes there, ``mcpkit check --config auto`` reads there);
:func:`read_config` turns one file into :class:`ServerEntry` items. Claude Code's
``~/.claude.json`` also keeps servers per project (``projects.<dir>.mcpServers``); those are
read too, named ``name (dir)``. VS Code allows comments and trailing commas in its JSON;
they are read. An entry that names neither a command nor a URL is kept with its ``problem``
said, so the check reports it instead of skipping it silently. Gemini CLI names a
Streamable HTTP server's address ``httpUrl`` and keeps ``url`` for the 2024-11-05 HTTP+SSE
transport (in its ``settings.json``, beside its other settings). Goose keeps its extensions
in YAML, which is not read (mcpkit has no YAML parser): a ``.yaml`` file that is not JSON
is refused saying so.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

HOSTS = ("claude-desktop", "claude-code", "cursor", "vscode", "gemini-cli", "windsurf")
SERVERS_KEY = {"claude-desktop": "mcpServers", "claude-code": "mcpServers",
               "cursor": "mcpServers", "vscode": "servers", "gemini-cli": "mcpServers",
               "windsurf": "mcpServers"}
"""The object of each host's configuration that holds its servers, by name."""
MAX_CONFIG_BYTES = 8 * 1024 * 1024
"""A configuration larger than this is refused (``~/.claude.json`` keeps history too)."""


class HostConfigError(ValueError):
    """A configuration that cannot be found or read; the message says which and why."""


def config_path(host: str, scope: str, *, home: Path | None = None,
                platform: str | None = None, environ: dict[str, str] | None = None,
                cwd: Path | None = None) -> Path:
    """The configuration file of ``host`` for ``scope`` (``user`` or ``project``)."""
    home = home or Path.home()
    platform = platform or sys.platform
    env = os.environ if environ is None else environ
    cwd = cwd or Path.cwd()
    if scope == "project":
        project = {"claude-code": cwd / ".mcp.json", "cursor": cwd / ".cursor" / "mcp.json",
                   "vscode": cwd / ".vscode" / "mcp.json",
                   "gemini-cli": cwd / ".gemini" / "settings.json"}
        if host not in project:
            raise HostConfigError(f"{host} has no project configuration; use --scope user")
        return project[host]
    if host == "claude-code":
        return home / ".claude.json"
    if host == "cursor":
        return home / ".cursor" / "mcp.json"
    if host == "gemini-cli":
        return home / ".gemini" / "settings.json"
    if host == "windsurf":  # (Windows too: %USERPROFILE%\.codeium\windsurf)
        return home / ".codeium" / "windsurf" / "mcp_config.json"
    app = {"claude-desktop": ("Claude", "claude_desktop_config.json"),
           "vscode": ("Code/User", "mcp.json")}[host]
    if platform == "darwin":
        base = home / "Library" / "Application Support"
    elif platform.startswith("win"):
        base = Path(env.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        base = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    return base / app[0] / app[1]


def auto_paths(**where: Any) -> list[Path]:
    """Every host's user and project configuration that exists (``where``: the keyword
    arguments of :func:`config_path`), each once."""
    out: list[Path] = []
    for host in HOSTS:
        for scope in ("user", "project"):
            try:
                path = config_path(host, scope, **where)
            except HostConfigError:
                continue
            if path.is_file() and path not in out:
                out.append(path)
    return out


@dataclass(slots=True)
class ServerEntry:
    """One server of a host configuration, as the host would start or reach it."""

    name: str
    source: str  # the configuration file
    command: list[str] | None = None
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    transport: str = "stdio"  # stdio, http, or sse (the 2024-11-05 HTTP+SSE transport)
    problem: str = ""  # why the entry cannot be used, when it cannot

    def describe(self) -> str:
        if self.command is not None:
            return " ".join(self.command)
        return self.url or "(no command or url)"


_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
_TRAILING = re.compile(r'"(?:\\.|[^"\\])*"|,(?=\s*[}\]])')


def _strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (VS Code) as plain JSON; strings untouched:
    comments first, then the commas they may have stood between."""
    def keep_strings(m: re.Match[str]) -> str:
        return m.group(0) if m.group(0).startswith('"') else ""
    return _TRAILING.sub(keep_strings, _COMMENT.sub(keep_strings, text))


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, (str, int, float))}


def entry(name: str, raw: Any, source: str) -> ServerEntry:
    """One configuration entry; ``problem`` set when it names neither command nor URL."""
    out = ServerEntry(name, source)
    if not isinstance(raw, dict):
        out.problem = f"the entry is {type(raw).__name__}, not an object"
        return out
    kind = raw.get("type") or raw.get("transport")
    command = raw.get("command")
    url = raw.get("httpUrl") or raw.get("url") or raw.get("serverUrl")
    if "httpUrl" not in raw and "url" in raw and Path(source).parent.name == ".gemini":
        kind = kind or "sse"  # Gemini CLI: url is the HTTP+SSE transport, httpUrl the other
    if isinstance(command, str) and command.strip():
        args = raw.get("args", [])
        if not isinstance(args, list):
            out.problem = "args is not a list"
            return out
        out.command = [command, *(str(a) for a in args)]
        out.env = _strings(raw.get("env"))
        cwd = raw.get("cwd")
        out.cwd = cwd if isinstance(cwd, str) else None
    elif isinstance(url, str) and url.strip():
        out.url = url.strip()
        out.headers = _strings(raw.get("headers"))
        out.transport = "sse" if kind == "sse" else "http"
    else:
        out.problem = "the entry has neither a command nor a url"
    return out


def read_config(path: str | Path) -> list[ServerEntry]:
    """The servers of the configuration at ``path`` (any of the six hosts' formats)."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_CONFIG_BYTES:
            raise HostConfigError(f"{p} is larger than {MAX_CONFIG_BYTES >> 20} MiB")
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise HostConfigError(f"cannot read {p}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise HostConfigError(f"{p} is not UTF-8 text") from exc
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            doc = orjson.loads(_strip_jsonc(text))
        except orjson.JSONDecodeError as exc:
            if p.suffix.lower() in (".yaml", ".yml"):
                raise HostConfigError(
                    f"{p} is YAML (Goose's config.yaml?), which mcpkit does not read: "
                    "give the JSON configuration of a host that keeps its servers under "
                    "\"mcpServers\" or \"servers\"") from None
            raise HostConfigError(f"{p} is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise HostConfigError(f"{p} is not a JSON object")
    found = servers_in(doc, str(p))
    if found is None:
        raise HostConfigError(f"{p} has no servers: expected an object under \"mcpServers\" "
                              "(Claude Desktop, Claude Code, Cursor) or \"servers\" (VS Code)")
    return found


def servers_in(doc: dict[str, Any], source: str) -> list[ServerEntry] | None:
    """The servers of a host configuration already read (any host's keys, Claude Code's
    per-project ones too); None when it has none of those keys."""
    found: list[ServerEntry] = []
    seen = False
    for key in dict.fromkeys(SERVERS_KEY.values()):  # any host's file: every key
        servers = doc.get(key)
        if isinstance(servers, dict):
            seen = True
            found += [entry(str(n), raw, source) for n, raw in servers.items()]
    projects = doc.get("projects")
    if isinstance(projects, dict):  # Claude Code: servers per project directory
        for folder, conf in projects.items():
            servers = conf.get("mcpServers") if isinstance(conf, dict) else None
            if isinstance(servers, dict) and servers:
                seen = True
                found += [entry(f"{n} ({folder})", raw, source) for n, raw in servers.items()]
    return found if seen else None
