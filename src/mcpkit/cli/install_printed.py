"""``mcpkit install goose|stdio``: the two targets mcpkit prints instead of writing.

**Goose** keeps its extensions in YAML, under ``extensions:`` in its ``config.yaml``
(``$XDG_CONFIG_HOME/goose`` or ``~/.config/goose`` on Linux and macOS,
``%APPDATA%\\Block\\goose\\config`` on Windows, ``$GOOSE_PATH_ROOT/config`` when set).
Adding an entry to that file means reading the user's YAML, which takes a YAML parser, a
dependency mcpkit does not have; and Goose replaces a file it cannot parse with an empty
configuration the next time it saves one, so a guessed edit could cost the user every
setting. The other route FastMCP takes, a ``goose://extension?cmd=...`` install link,
does not fit either: Goose Desktop accepts those links only for a fixed list of launchers
(``uvx``, ``npx``, ``docker``, ...), never an interpreter's path, and mcpkit starts the
server with this interpreter, where the server's own dependencies are installed. So the
entry is printed, a complete YAML document (``extensions:`` and the one extension) whose
every string is double-quoted and escaped, for the user to add under the file's
``extensions:``; nothing is written. The entry's key is Goose's own key for the name
(lower case, ``.`` as ``_``), so Goose finds it again when it toggles or edits it.

**stdio** prints the command line a host runs, quoted for a POSIX shell (``KEY=VALUE``
assignments first for ``--env``), or for Windows' ``cmd``/``CreateProcess`` on Windows,
where a command line cannot carry variables.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TextIO

GOOSE_TIMEOUT = 300
"""Seconds Goose waits on one of the extension's calls (Goose's own default)."""
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


class PrintError(Exception):
    """The entry cannot be printed for this host; ``install`` reports it as its own."""


def goose_config_path(*, home: Path | None = None, platform: str | None = None,
                      environ: dict[str, str] | None = None) -> Path:
    """Goose's ``config.yaml`` where Goose itself looks for it on ``platform``."""
    home = home or Path.home()
    platform = platform or sys.platform
    env = os.environ if environ is None else environ
    root = env.get("GOOSE_PATH_ROOT", "")
    if root and Path(root).is_absolute():
        return Path(root) / "config" / "config.yaml"
    if platform.startswith("win"):
        base = Path(env.get("APPDATA") or home / "AppData" / "Roaming")
        return base / "Block" / "goose" / "config" / "config.yaml"
    xdg = env.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"
    return base / "goose" / "config.yaml"


def goose_key(name: str) -> str:
    """The key Goose files an extension of this name under: letters, digits, ``_`` and
    ``-`` kept (lower case), white space dropped, anything else as ``_``."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_"
                   for c in name if not c.isspace()).lower()


def _plain(c: str) -> bool:
    """Whether ``c`` may stand as itself inside a YAML double-quoted scalar: printable
    in YAML 1.1 and 1.2 and not a line break (NEL, LS and PS are line breaks there)."""
    n = ord(c)
    return (0x20 <= n <= 0x7E or 0xA0 <= n <= 0xD7FF or 0xE000 <= n <= 0xFFFD
            or n >= 0x10000) and n not in (0x2028, 0x2029, 0xFEFF)


def yaml_string(value: str) -> str:
    """``value`` as a YAML double-quoted scalar that reads back as exactly ``value``:
    quotes, backslashes, control characters and line breaks escaped. A lone surrogate
    (a file name that is not valid in the file system's encoding) has no YAML form."""
    out = ['"']
    for c in value:
        n = ord(c)
        if 0xD800 <= n <= 0xDFFF:
            raise PrintError(f"{value!r} cannot be written in YAML (it is not valid "
                             "Unicode); rename it")
        if c in _NAMED:
            out.append(_NAMED[c])
        elif _plain(c):
            out.append(c)
        else:
            out.append(f"\\x{n:02x}" if n <= 0xFF else f"\\u{n:04x}" if n <= 0xFFFF
                       else f"\\U{n:08x}")
    out.append('"')
    return "".join(out)


def goose_yaml(name: str, command: list[str], env: dict[str, str], description: str) -> str:
    """A YAML document with one Goose stdio extension: ``extensions: {key: {...}}``."""
    lines = ["extensions:", f"  {yaml_string(goose_key(name))}:", "    enabled: true",
             "    type: stdio", f"    name: {yaml_string(name)}",
             f"    description: {yaml_string(description)}",
             f"    cmd: {yaml_string(command[0])}", "    args:"]
    lines += [f"      - {yaml_string(arg)}" for arg in command[1:]]
    if env:
        lines.append("    envs:")
        lines += [f"      {yaml_string(k)}: {yaml_string(v)}" for k, v in env.items()]
    else:
        lines.append("    envs: {}")
    lines += ["    env_keys: []", f"    timeout: {GOOSE_TIMEOUT}"]
    return "\n".join(lines) + "\n"


def command_line(command: list[str], env: dict[str, str], *, windows: bool | None = None) -> str:
    """``command`` as one line a shell runs unchanged: POSIX quoting with ``KEY=VALUE``
    assignments in front, or on Windows the ``CreateProcess`` convention (no variables)."""
    if windows is None:
        windows = sys.platform.startswith("win")
    if windows:
        import subprocess

        if env:
            raise PrintError("a Windows command line cannot carry --env variables; use "
                             "`mcpkit install mcp-json` for an entry that has them")
        return subprocess.list2cmdline(command)
    import shlex

    return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                     shlex.join(command)])


def show(host: str, name: str, entry: dict[str, Any], target: str, config: str | None,
         runs_in: str, out: TextIO) -> int:
    """Print ``host``'s form of ``entry`` on ``out`` and where it goes on stderr."""
    command = [entry["command"], *entry["args"]]
    env: dict[str, str] = entry.get("env", {})
    if host == "stdio":
        if config:
            raise PrintError("stdio prints a command line and edits no file: drop --config")
        out.write(command_line(command, env) + "\n")
        sys.stderr.write(f"mcpkit: the command a host runs to start {name!r} over stdio; "
                         f"{runs_in}\n")
        return 0
    path = Path(config) if config else goose_config_path()
    out.write(goose_yaml(name, command, env, f"mcpkit server {target}"))
    where = ("" if path.exists() else
             " (there is none yet: the text above can be that file)")
    sys.stderr.write(
        f"mcpkit: nothing written. Goose keeps its extensions in YAML, which mcpkit does "
        f"not edit, and its install links take only launchers such as uvx, not this "
        f"Python: add the {goose_key(name)!r} entry above under \"extensions:\" in "
        f"{path}{where}, then restart Goose; {runs_in}\n")
    return 0
