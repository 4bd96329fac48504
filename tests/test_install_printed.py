"""``mcpkit install goose|stdio|mcp-json`` (issue #29 item 10): the targets FastMCP's
``fastmcp install`` has beyond the JSON hosts.

Goose's entry is printed as YAML and never written: it is read back with a YAML parser
(PyYAML, a development dependency only) for hostile names, paths and values, and the
server is then started from it as Goose would and called. The stdio line is run by
``sh`` from a folder whose name has spaces, quotes and ``$``. ``mcp-json`` prints a
document ``mcpkit check --config`` reads, or edits the file ``--config`` names with the
same care as a host's file (backup, ``--force``, ``--print``, non-JSON left alone). That
``mcpkit check --config`` refuses Goose's YAML, saying so, is tests/test_check_config.py's.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit.check.hosts import read_config
from mcpkit.cli.install_printed import (
    PrintError,
    command_line,
    goose_config_path,
    goose_key,
    goose_yaml,
    yaml_string,
)
from mcpkit.client import Client, Stdio
from tests.test_install import run_cli

ECHO = '''
import json
import os

from mcpkit import Server

server = Server("echo.v2")


@server.tool
def where() -> str:
    """Where the server runs and the greeting it was given."""
    return json.dumps({"cwd": os.getcwd(), "greeting": os.environ.get("GREETING")})
'''
HOSTILE = "it's \"quoted\" \\ # : - {x} [y] & $HOME `id`\ttab\nline\x85nel\u2028ls\x7f\ufeff é 🦆"
"""A value meant to break quoting: YAML indicators, both quotes, a backslash, shell
metacharacters, a tab, line breaks (NEL and LS are line breaks in YAML), DEL, a BOM."""


@pytest.fixture
def echo(tmp_path: Path) -> Path:
    """The server file, in a folder whose name a careless quoting would break."""
    folder = tmp_path / "my dir 'single' \"double\" $HOME"
    folder.mkdir()
    server = folder / "echo.py"
    server.write_text(ECHO)
    return server


async def _where(command: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    with anyio.fail_after(30):
        async with Client(Stdio(command, env=env, cwd="/"), timeout=20) as client:
            result = await client.call_tool("where")
            assert not result.is_error, result.text
            found: dict[str, Any] = json.loads(result.text)
            return found


@pytest.mark.parametrize(("platform", "environ", "expected"), [
    ("linux", {}, "H/.config/goose/config.yaml"),
    ("linux", {"XDG_CONFIG_HOME": "/x"}, "/x/goose/config.yaml"),
    ("linux", {"XDG_CONFIG_HOME": "relative"}, "H/.config/goose/config.yaml"),
    ("darwin", {}, "H/.config/goose/config.yaml"),  # Goose uses the XDG layout on macOS
    ("win32", {"APPDATA": "A"}, "A/Block/goose/config/config.yaml"),
    ("win32", {}, "H/AppData/Roaming/Block/goose/config/config.yaml"),
    ("linux", {"GOOSE_PATH_ROOT": "/g"}, "/g/config/config.yaml"),
    ("linux", {"GOOSE_PATH_ROOT": "g"}, "H/.config/goose/config.yaml"),  # must be absolute
])
def test_goose_config_path(platform: str, environ: dict[str, str], expected: str) -> None:
    assert goose_config_path(home=Path("H"), platform=platform, environ=environ) == Path(
        expected)


def test_goose_key_is_the_one_goose_files_the_name_under() -> None:
    assert goose_key("echo.v2") == "echo_v2"
    assert goose_key("My Tool-2") == "mytool-2"
    assert goose_key("été") == "_t_"


def test_goose_yaml_reads_back_exactly_whatever_the_strings() -> None:
    """Every string is a double-quoted YAML scalar; keys that YAML 1.1 would read as
    booleans or null (``on``, ``y``, ``null``) stay strings."""
    yaml = pytest.importorskip("yaml")
    command = [f"/opt/{HOSTILE}/python", "-m", "mcpkit", "run", "--cwd", HOSTILE, "x.py"]
    env = {"on": HOSTILE, "y": "", "null": "1", "NUMBER": "0x1F"}
    text = goose_yaml("true", command, env, HOSTILE)
    assert yaml.safe_load(text) == {"extensions": {"true": {
        "enabled": True, "type": "stdio", "name": "true", "description": HOSTILE,
        "cmd": command[0], "args": command[1:], "envs": env, "env_keys": [],
        "timeout": 300}}}
    assert yaml.safe_load(goose_yaml("a", ["p"], {}, ""))["extensions"]["a"]["envs"] == {}
    for c in (*(chr(n) for n in range(0x20)), "\x7f", "\x85", "\u2028", "\u2029", "\ufeff",
              "\U0001f986", "\x00x"):
        assert yaml.safe_load(yaml_string(c)) == c
    with pytest.raises(PrintError, match="not valid Unicode"):
        yaml_string("bad\udcffname")  # a file name not valid in the file system's encoding


@pytest.mark.anyio
async def test_goose_prints_an_entry_goose_can_start_and_writes_nothing(
        echo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    yaml = pytest.importorskip("yaml")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("GOOSE_PATH_ROOT", raising=False)
    config = tmp_path / "cfg" / "goose" / "config.yaml"
    config.parent.mkdir(parents=True)
    before = "# mine\nGOOSE_MODE: auto\nextensions:\n  developer: {enabled: true}\n"
    config.write_text(before)
    code, out, err = run_cli("install", "goose", str(echo), "--cwd", str(echo.parent),
                             "--env", f"GREETING={HOSTILE}", capsys=capsys)
    assert code == 0, err
    assert config.read_text() == before and sorted(p.name for p in config.parent.iterdir()) == [
        "config.yaml"]  # nothing written, no backup: the user adds the entry
    assert err.startswith("mcpkit: nothing written.") and str(config) in err
    assert "'echo_v2' entry above under \"extensions:\"" in err and "uvx" in err
    assert "there is none yet" not in err
    extension = yaml.safe_load(out)["extensions"]["echo_v2"]
    assert (extension["name"], extension["type"], extension["cmd"]) == (
        "echo.v2", "stdio", sys.executable)
    assert extension["args"] == ["-m", "mcpkit", "run", "--cwd", str(echo.parent), str(echo)]
    where = await _where([extension["cmd"], *extension["args"]],
                         {**os.environ, **extension["envs"]})
    assert where == {"cwd": str(echo.parent), "greeting": HOSTILE}

    config.unlink()  # no config yet: the printed document can be the file
    assert "there is none yet" in run_cli("install", "goose", str(echo), capsys=capsys)[2]
    assert not config.exists()


def test_goose_refuses_what_it_cannot_do(echo: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli("install", "goose", "--scope", "project", str(echo),
                           capsys=capsys)
    assert code == 1 and "goose has no project configuration" in err
    code, out, err = run_cli("install", "goose", str(echo), "--config", "elsewhere.yaml",
                             capsys=capsys)
    assert code == 0 and "in elsewhere.yaml" in err and out.startswith("extensions:")


@pytest.mark.anyio
async def test_stdio_line_runs_in_a_shell_as_printed(
        echo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli("install", "stdio", str(echo), "--cwd", str(echo.parent),
                             "--env", f"GREETING={HOSTILE}", capsys=capsys)
    assert code == 0, err
    line = out.removesuffix("\n")
    assert line.startswith("GREETING=") and "over stdio" in err
    where = await _where(["sh", "-c", line])
    assert where == {"cwd": str(echo.parent), "greeting": HOSTILE}
    code, _, err = run_cli("install", "stdio", str(echo), "--config", "x.json",
                           capsys=capsys)
    assert code == 1 and "drop --config" in err


def test_stdio_line_on_windows() -> None:
    assert command_line(["C:\\Program Files\\py.exe", "-m", "mcpkit", "a b"], {},
                        windows=True) == '"C:\\Program Files\\py.exe" -m mcpkit "a b"'
    with pytest.raises(PrintError, match="cannot carry --env"):
        command_line(["py"], {"A": "1"}, windows=True)
    assert command_line(["/p y"], {"A": "x y"}, windows=False) == "A='x y' '/p y'"


def test_mcp_json_prints_a_document_check_reads(
        echo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli("install", "mcp-json", str(echo), "--env", "GREETING=hi",
                             capsys=capsys)
    assert code == 0 and "any host that reads \"mcpServers\"" in err
    document = json.loads(out)
    assert list(document) == ["mcpServers"]
    entry = document["mcpServers"]["echo.v2"]
    assert "type" not in entry and entry["env"] == {"GREETING": "hi"}
    saved = tmp_path / "servers.json"
    saved.write_text(out)
    (read,) = read_config(saved)
    assert read.name == "echo.v2" and read.command == [entry["command"], *entry["args"]]
    assert not list(tmp_path.glob("*.bak"))
    code, _, err = run_cli("install", "mcp-json", "--scope", "project", str(echo),
                           capsys=capsys)
    assert code == 1 and "no project configuration" in err


def test_mcp_json_edits_the_named_file_with_the_hosts_care(
        echo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "any host" / "mcp.json"
    config.parent.mkdir()
    before = {"theme": "dark", "mcpServers": {"other": {"command": "other-server"}}}
    config.write_text(json.dumps(before))
    code, out, err = run_cli("install", "mcp-json", str(echo), "--config", str(config),
                             "--print", capsys=capsys)
    assert code == 0 and json.loads(config.read_text()) == before  # --print: untouched
    assert set(json.loads(out)["mcpServers"]) == {"other", "echo.v2"}
    code, out, err = run_cli("install", "mcp-json", str(echo), "--config", str(config),
                             capsys=capsys)
    assert code == 0 and "restart the host that reads it" in out
    after = json.loads(config.read_text())
    assert after["theme"] == "dark" and set(after["mcpServers"]) == {"other", "echo.v2"}
    assert json.loads((config.parent / "mcp.json.bak").read_text()) == before
    code, _, err = run_cli("install", "mcp-json", str(echo), "--config", str(config),
                           "--env", "A=1", capsys=capsys)
    assert code == 1 and "already configured; use --force" in err
    assert run_cli("install", "mcp-json", str(echo), "--config", str(config), "--env", "A=1",
                   "--force", capsys=capsys)[0] == 0
    assert json.loads(config.read_text())["mcpServers"]["echo.v2"]["env"] == {"A": "1"}
    config.write_text("mcpServers: {}\n")  # not JSON (YAML): left as it is
    code, _, err = run_cli("install", "mcp-json", str(echo), "--config", str(config),
                           capsys=capsys)
    assert code == 1 and "not plain JSON" in err and '"echo.v2"' in err
    assert config.read_text() == "mcpServers: {}\n"


def test_help_names_every_target(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli("install", "--help", capsys=capsys)
    assert code == 0
    for host in ("claude-desktop", "claude-code", "cursor", "vscode", "gemini-cli",
                 "windsurf", "goose", "mcp-json", "stdio"):
        assert host in out
    assert "mcpkit install goose notes.py" in out
