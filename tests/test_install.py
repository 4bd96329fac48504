"""``mcpkit install HOST FILE[:OBJECT]`` (issue #15, item 3).

Against temporary configuration files: each host's path per OS and scope, the entry's
shape per host, other entries and unrelated keys kept, the old file backed up, atomic
replacement keeping permissions, ``--force``/``--name``/``--print``, ``--env`` and
``--env-file``, files that are not plain JSON left alone. The entry written is then
started exactly as a host would (its command, args and env) and called with mcpkit's
client over stdio; and the real CLI runs in a subprocess with a temporary HOME.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit.cli import main
from mcpkit.cli.install import InstallError, config_path, parse_env
from mcpkit.client import Client, Stdio

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "examples" / "notes.py"


@pytest.mark.parametrize(("host", "platform", "expected"), [
    ("claude-desktop", "darwin", "H/Library/Application Support/Claude/"
                                 "claude_desktop_config.json"),
    ("claude-desktop", "win32", "A/Claude/claude_desktop_config.json"),
    ("claude-desktop", "linux", "X/Claude/claude_desktop_config.json"),
    ("vscode", "darwin", "H/Library/Application Support/Code/User/mcp.json"),
    ("vscode", "linux", "X/Code/User/mcp.json"),
    ("vscode", "win32", "A/Code/User/mcp.json"),
    ("claude-code", "linux", "H/.claude.json"),
    ("cursor", "win32", "H/.cursor/mcp.json"),
    ("gemini-cli", "linux", "H/.gemini/settings.json"),
    ("gemini-cli", "darwin", "H/.gemini/settings.json"),
    ("windsurf", "linux", "H/.codeium/windsurf/mcp_config.json"),
    ("windsurf", "win32", "H/.codeium/windsurf/mcp_config.json"),
])
def test_user_config_paths(host: str, platform: str, expected: str) -> None:
    got = config_path(host, "user", home=Path("H"), platform=platform,
                      environ={"APPDATA": "A", "XDG_CONFIG_HOME": "X"}, cwd=Path("P"))
    assert got == Path(expected)


def test_project_config_paths() -> None:
    paths = {h: config_path(h, "project", cwd=Path("P"))
             for h in ("claude-code", "cursor", "vscode", "gemini-cli")}
    assert paths == {"claude-code": Path("P/.mcp.json"), "cursor": Path("P/.cursor/mcp.json"),
                     "vscode": Path("P/.vscode/mcp.json"),
                     "gemini-cli": Path("P/.gemini/settings.json")}
    with pytest.raises(InstallError, match="no project configuration"):
        config_path("claude-desktop", "project")
    with pytest.raises(InstallError, match="no project configuration"):
        config_path("windsurf", "project")
    # Linux without XDG_CONFIG_HOME: ~/.config
    assert config_path("vscode", "user", home=Path("H"), platform="linux",
                       environ={}) == Path("H/.config/Code/User/mcp.json")


def run_cli(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_entry_is_added_beside_everything_else(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / ".claude.json"
    before = {"numStartups": 7, "projects": {"/x": {"allowedTools": []}},
              "mcpServers": {"other": {"type": "stdio", "command": "other-server"}}}
    config.write_text(json.dumps(before))
    config.chmod(0o640)
    code, out, _ = run_cli("install", "claude-code", str(NOTES), "--config", str(config),
                           "--env", "NOTES_DB=/tmp/n.db", capsys=capsys)
    assert code == 0 and "'notes' added to" in out and ".bak" in out
    after = json.loads(config.read_text())
    assert after["numStartups"] == 7 and after["projects"] == before["projects"]
    assert after["mcpServers"]["other"] == before["mcpServers"]["other"]
    assert after["mcpServers"]["notes"] == {
        "type": "stdio", "command": sys.executable,
        "args": ["-m", "mcpkit", "run", "--cwd", os.getcwd(), str(NOTES)],
        "env": {"NOTES_DB": "/tmp/n.db"}}
    assert json.loads((tmp_path / ".claude.json.bak").read_text()) == before
    assert stat.S_IMODE(config.stat().st_mode) == 0o640  # permissions kept
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".claude.json.")] == [
        ".claude.json.bak"]  # no temporary file left


def test_same_name_needs_force_and_reinstall_is_idempotent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mcp.json"
    assert run_cli("install", "cursor", str(NOTES), "--config", str(config),
                   capsys=capsys)[0] == 0
    assert stat.S_IMODE(config.stat().st_mode) == 0o600  # a new file may hold secrets
    assert run_cli("install", "cursor", str(NOTES), "--config", str(config),
                   capsys=capsys)[0] == 0  # the same entry again: fine
    code, _, err = run_cli("install", "cursor", str(NOTES), "--config", str(config),
                           "--env", "A=1", capsys=capsys)
    assert code == 1 and "already configured; use --force" in err
    assert "env" not in json.loads(config.read_text())["mcpServers"]["notes"]
    assert run_cli("install", "cursor", str(NOTES), "--config", str(config), "--env", "A=1",
                   "--force", capsys=capsys)[0] == 0
    assert json.loads(config.read_text())["mcpServers"]["notes"]["env"] == {"A": "1"}
    assert run_cli("install", "cursor", f"{NOTES}:server", "--config", str(config),
                   "--name", "notes-2", capsys=capsys)[0] == 0
    servers = json.loads(config.read_text())["mcpServers"]
    assert set(servers) == {"notes", "notes-2"}
    assert servers["notes-2"]["args"][-1] == f"{NOTES}:server"


def test_vscode_uses_servers_and_print_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mcp.json"
    code, out, err = run_cli("install", "vscode", str(NOTES), "--config", str(config),
                             "--print", "--cwd", str(tmp_path), capsys=capsys)
    assert code == 0 and not config.exists()
    assert json.loads(out)["servers"]["notes"]["type"] == "stdio"
    assert err == (f"mcpkit: 'notes' would be added to {config}; it runs in {tmp_path}: the "
                   "files it opens by a relative path (its data) are there (--cwd DIR to "
                   "choose another)\n")  # (issue #26 item 9: where data goes)


def test_gemini_cli_keeps_its_other_settings_and_reads_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Gemini CLI keeps its servers in settings.json beside its other settings: those are
    kept; the entry written is read back by ``mcpkit check --config`` as the host reads
    it (``httpUrl`` is Streamable HTTP there, ``url`` the HTTP+SSE transport)."""
    from mcpkit.check.hosts import read_config

    config = tmp_path / ".gemini" / "settings.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"theme": "Dracula", "mcpServers": {
        "remote": {"httpUrl": "https://example.com/mcp"},
        "legacy": {"url": "https://example.com/sse"}}}))
    code, _, err = run_cli("install", "gemini-cli", str(NOTES), "--config", str(config),
                           "--cwd", str(tmp_path), capsys=capsys)
    assert code == 0, err
    written = json.loads(config.read_text())
    assert written["theme"] == "Dracula"
    assert "type" not in written["mcpServers"]["notes"]
    entries = {e.name: e for e in read_config(config)}
    assert entries["notes"].command is not None and entries["notes"].command[1:4] == [
        "-m", "mcpkit", "run"]
    assert (entries["remote"].url, entries["remote"].transport) == (
        "https://example.com/mcp", "http")
    assert entries["legacy"].transport == "sse"


def test_windsurf_entry_and_its_server_url(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Windsurf keeps one user file; a remote server there is named by ``serverUrl``."""
    from mcpkit.check.hosts import read_config

    config = tmp_path / "mcp_config.json"
    config.write_text(json.dumps({"mcpServers": {
        "remote": {"serverUrl": "https://example.com/mcp", "headers": {"X-Key": "k"}}}}))
    code, _, err = run_cli("install", "windsurf", str(NOTES), "--config", str(config),
                           "--cwd", str(tmp_path), capsys=capsys)
    assert code == 0, err
    entries = {e.name: e for e in read_config(config)}
    assert "type" not in json.loads(config.read_text())["mcpServers"]["notes"]
    assert entries["notes"].command is not None
    assert (entries["remote"].url, entries["remote"].transport,
            entries["remote"].headers) == ("https://example.com/mcp", "http", {"X-Key": "k"})
    code, _, err = run_cli("install", "windsurf", "--scope", "project", str(NOTES),
                           capsys=capsys)
    assert code != 0 and "no project configuration" in err


def test_files_that_are_not_plain_json_are_left_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mcp.json"
    text = '{\n  // my servers\n  "servers": {}\n}\n'
    config.write_text(text)
    code, _, err = run_cli("install", "vscode", str(NOTES), "--config", str(config),
                           capsys=capsys)
    assert code == 1 and "not plain JSON" in err and '"notes"' in err
    assert config.read_text() == text and not (tmp_path / "mcp.json.bak").exists()
    config.write_text('{"servers": []}')
    code, _, err = run_cli("install", "vscode", str(NOTES), "--config", str(config),
                           capsys=capsys)
    assert code == 1 and "'servers' is not an object" in err
    config.write_text("[1, 2]")
    assert "does not hold a JSON object" in run_cli(
        "install", "vscode", str(NOTES), "--config", str(config), capsys=capsys)[2]


def test_bad_server_file_or_name_fails_before_writing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.json"
    code, _, err = run_cli("install", "cursor", str(tmp_path / "missing.py"), "--config",
                           str(config), capsys=capsys)
    assert code == 2 and "no such file" in err
    code, _, err = run_cli("install", "cursor", f"{NOTES}:nothing", "--config", str(config),
                           capsys=capsys)
    assert code == 2 and "has no Server named 'nothing'" in err
    code, _, err = run_cli("install", "cursor", str(NOTES), "--name", "a b/c", "--config",
                           str(config), capsys=capsys)
    assert code == 1 and "cannot name a server entry" in err
    assert not config.exists()


def test_env_files_and_pairs(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# comment\n\nexport A=1\nB='two words'\nC=\"x=y\"\n")
    assert parse_env(["C=override", "D="], [str(env_file)]) == {
        "A": "1", "B": "two words", "C": "override", "D": ""}
    env_file.write_text("A=1\nnot a pair\n")
    with pytest.raises(InstallError, match=r"\.env:2: expected KEY=VALUE"):
        parse_env([], [str(env_file)])
    with pytest.raises(InstallError, match="--env takes KEY=VALUE"):
        parse_env(["novalue"], [])
    with pytest.raises(InstallError, match="cannot read --env-file"):
        parse_env([], [str(tmp_path / "none")])


@pytest.mark.anyio
async def test_the_written_entry_starts_the_server_as_a_host_would(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "claude_desktop_config.json"
    db = tmp_path / "notes.db"
    assert run_cli("install", "claude-desktop", str(NOTES), "--config", str(config),
                   "--env", f"MCPKIT_NOTES_DB={db}", capsys=capsys)[0] == 0
    entry: dict[str, Any] = json.loads(config.read_text())["mcpServers"]["notes"]
    env = {**os.environ, **entry["env"]}
    with anyio.fail_after(20):
        async with Client(Stdio([entry["command"], *entry["args"]], env=env, cwd="/"),
                          timeout=15) as client:
            assert client.server_info["name"] == "notes"
            added = await client.call_tool("notes_add", {"title": "t", "body": "b"})
            assert not added.is_error
    assert db.exists()  # the entry's env reached the server


def test_cli_with_a_temporary_home(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    proc = subprocess.run([sys.executable, "-m", "mcpkit", "install", "vscode", str(NOTES)],
                          env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = json.loads((tmp_path / "cfg" / "Code" / "User" / "mcp.json").read_text())
    assert written["servers"]["notes"]["args"] == ["-m", "mcpkit", "run", "--cwd",
                                                   str(tmp_path.resolve()), str(NOTES)]
    proc = subprocess.run([sys.executable, "-m", "mcpkit", "install", "--help"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert "mcpkit install claude-desktop notes.py" in proc.stdout


QUICKSTART_NOTES = '''
import json
from pathlib import Path

from mcpkit import Server

server = Server("notes")
STORE = Path("notes.json")  # as the quickstart keeps it: relative to where it runs


@server.tool
def notes_add(title: str) -> int:
    """Save a note."""
    notes = json.loads(STORE.read_text()) if STORE.exists() else []
    STORE.write_text(json.dumps([*notes, title]))
    return len(notes) + 1


@server.tool
def notes_list() -> list[str]:
    """Every note."""
    return json.loads(STORE.read_text()) if STORE.exists() else []
'''


@pytest.mark.anyio
async def test_data_kept_by_a_relative_path_is_found_wherever_the_host_starts_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #26 item 9: installed from its folder, the quickstart's server kept
    ``notes.json`` wherever the host started it (a host started from ``/`` listed no
    notes). The entry runs it in the folder it was installed from, whatever the host's
    working directory; ``--cwd`` chooses another."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "notes.py").write_text(QUICKSTART_NOTES)
    config = tmp_path / "claude_desktop_config.json"
    monkeypatch.chdir(project)
    code, out, _ = run_cli("install", "claude-desktop", "notes.py", "--config", str(config),
                           capsys=capsys)
    assert code == 0 and f"it runs in {project}: the files it opens" in out
    entry: dict[str, Any] = json.loads(config.read_text())["mcpServers"]["notes"]
    command = [entry["command"], *entry["args"]]
    with anyio.fail_after(30):
        async with Client(Stdio(command, cwd=str(elsewhere)), timeout=15) as client:
            assert (await client.call_tool("notes_add", {"title": "milk"})).text == "1"
        async with Client(Stdio(command, cwd="/"), timeout=15) as client:  # another start
            assert (await client.call_tool("notes_list")).structured_content == {
                "result": ["milk"]}
    assert json.loads((project / "notes.json").read_text()) == ["milk"]
    assert list(elsewhere.iterdir()) == []
    code, _, err = run_cli("install", "claude-desktop", "notes.py", "--config", str(config),
                           "--cwd", str(tmp_path / "none"), "--force", capsys=capsys)
    assert code == 1 and "--cwd" in err and "no such directory" in err
