"""``mcpkit check --config FILE|auto``: every server of a host configuration, the
cross-server rules, and servers that cannot start reported as findings, not crashes.

The four hosts' formats are read from files written here; the fleet test checks ten real
servers (mcpkit examples, the official SDK fixture, family variants, a server that does not
exist, an entry with neither command nor url) in under 30 s, and then looks through
``/proc`` for any process still carrying the run's marker: every server must have ended.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from mcpkit.check.hosts import HostConfigError, auto_paths, config_path, read_config

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SERVERS = ROOT / "tests" / "servers"


def mcpkit(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([PY, "-m", "mcpkit.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


# ------------------------------------------------------------------------- formats


def test_claude_desktop_and_cursor_format(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", {"mcpServers": {
        "a": {"command": "python", "args": ["s.py", "--x"], "env": {"K": "v", "N": 3}},
        "b": {"url": "https://mcp.example.com/mcp", "headers": {"X-Key": "k"}},
        "c": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}, "globalShortcut": ""})
    a, b, c = read_config(path)
    assert (a.name, a.command, a.env, a.url) == ("a", ["python", "s.py", "--x"],
                                                 {"K": "v", "N": "3"}, None)
    assert (b.url, b.headers, b.transport) == ("https://mcp.example.com/mcp",
                                               {"X-Key": "k"}, "http")
    assert c.transport == "sse"


def test_claude_code_reads_project_servers_too(tmp_path: Path) -> None:
    path = write(tmp_path / ".claude.json", {
        "numStartups": 4, "mcpServers": {"top": {"type": "stdio", "command": "x"}},
        "projects": {"/w/p": {"mcpServers": {"local": {"command": "y"}}, "history": []},
                     "/w/q": {"history": []}}})
    assert [e.name for e in read_config(path)] == ["top", "local (/w/p)"]


def test_vscode_jsonc_with_comments_and_trailing_commas(tmp_path: Path) -> None:
    path = write(tmp_path / "mcp.json", """{
      // my servers
      "inputs": [],
      "servers": {
        "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", /* inline */ },
        "cli": {"command": "node", "args": ["a // not a comment", "b"],},
      },
    }""")
    web, cli = read_config(path)
    assert web.url == "http://127.0.0.1:1/mcp"
    assert cli.command == ["node", "a // not a comment", "b"]


@pytest.mark.parametrize(("content", "words"), [
    (None, "cannot read"), ("[1]", "not a JSON object"), ("{nope", "is not JSON"),
    ('{"other": {}}', "has no servers"), (b"\xff\xfe", "not UTF-8"),
])
def test_unreadable_configurations(tmp_path: Path, content: Any, words: str) -> None:
    path = tmp_path / "c.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(HostConfigError, match=words):
        read_config(path)


def test_check_config_says_a_goose_yaml_is_not_read(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("extensions:\n  notes:\n    cmd: python\n")
    with pytest.raises(HostConfigError, match=r"is YAML \(Goose's config.yaml\?\)"):
        read_config(config)
    config.write_text('{"mcpServers": {"a": {"command": "x"}}}')  # JSON is YAML too: read
    assert [e.name for e in read_config(config)] == ["a"]
    other = tmp_path / "c.json"
    other.write_text("extensions:\n")
    with pytest.raises(HostConfigError, match="is not JSON"):
        read_config(other)


def test_unusable_entries_are_kept_with_their_problem(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", {"mcpServers": {
        "none": {"env": {}}, "list": [1], "args": {"command": "x", "args": "y"}}})
    assert [e.problem for e in read_config(path)] == [
        "the entry has neither a command nor a url", "the entry is list, not an object",
        "args is not a list"]


def test_auto_finds_every_hosts_files(tmp_path: Path) -> None:
    home, cwd = tmp_path / "h", tmp_path / "p"
    where: dict[str, Any] = {"home": home, "cwd": cwd, "platform": "linux", "environ": {}}
    made = [write(config_path(h, s, **where), {"mcpServers": {}})
            for h, s in (("claude-desktop", "user"), ("cursor", "user"),
                         ("vscode", "project"), ("claude-code", "project"))]
    assert sorted(auto_paths(**where)) == sorted(made)


def test_cli_usage_errors(tmp_path: Path) -> None:
    res = mcpkit("check", "--config", str(tmp_path / "missing.json"))
    assert res.returncode == 2 and "cannot read" in res.stderr
    path = write(tmp_path / "c.json", {"mcpServers": {}})
    res = mcpkit("check", "--config", str(path), "http://127.0.0.1:9/mcp")
    assert res.returncode == 2 and "give no TARGET" in res.stderr


# ------------------------------------------------------------------------- a fleet


def _alive(marker: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker.encode() in (proc / "environ").read_bytes():
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_ten_servers_in_under_30_s_every_process_ended(tmp_path: Path) -> None:
    marker = f"MCPKIT_FLEET_{uuid.uuid4().hex}"
    env = {marker: "1"}

    def py(*args: str) -> dict[str, Any]:
        return {"command": PY, "args": list(args), "env": env}

    relay = str(SERVERS / "check_family.py")
    config = write(tmp_path / "claude_desktop_config.json", {"mcpServers": {
        "everything": py(str(ROOT / "examples" / "everything.py")),
        "notes": {**py(str(ROOT / "examples" / "notes.py")), "cwd": str(tmp_path)},
        "official": py(str(SERVERS / "official_everything.py")),
        "good": py(str(SERVERS / "check_good.py")),
        "benign": py(str(SERVERS / "check_benign.py")),
        "mail": py(str(SERVERS / "check_mail.py")),
        "poisoned": py(relay, "SEC.model-directives"),
        "leaky": py(relay, "SEC.secrets"),
        "missing": {"command": str(tmp_path / "no-such-server"), "env": env},
        "broken": {"args": ["x"]},
    }})
    out = tmp_path / "report.json"
    started = time.monotonic()
    res = mcpkit("check", "--config", str(config), "--format", "json", "--out", str(out),
                 "--call-tools", "none", "--timeout", "3")
    elapsed = time.monotonic() - started
    print(f"10 servers checked in {elapsed:.1f} s")
    assert res.returncode == 1, res.stderr
    assert elapsed < 30, elapsed
    servers = {r["server"]: r for r in json.loads(out.read_text())["servers"]}
    assert len(servers) == 11  # ten servers and the cross-server findings

    def failed(name: str) -> set[str]:
        return {f["rule"] for f in servers[name]["findings"] if f["verdict"] == "fail"}

    assert failed("poisoned") == {"SEC.model-directives"}
    assert failed("leaky") == {"SEC.secrets"}
    assert failed("good") == set()
    assert {r for r in failed("mail") if not r.startswith("LINT.")} == set()
    assert not {r for r in failed("benign") if r.startswith("SEC.")}
    assert "M042" in failed("missing")  # cannot start: a finding, not a crash
    assert failed("broken") == {"CONFIG.entry"}
    cross = servers["(across servers)"]
    by_rule = {f["rule"]: f for f in cross["findings"]}
    assert by_rule["CROSS.shadowing"]["verdict"] == "fail"
    assert "notes_add (" in by_rule["CROSS.shadowing"]["message"]
    assert by_rule["CROSS.reference"]["verdict"] == "fail"
    assert "mail: mail_send names notes_add of" in by_rule["CROSS.reference"]["message"]
    deadline = time.monotonic() + 5
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(marker) == []


def test_cross_reference_ignores_common_words_and_own_tools(tmp_path: Path) -> None:
    from mcpkit.check.fleet import cross_server
    from mcpkit.check.model import Report

    def report(server: str, *tools: tuple[str, str]) -> Report:
        r = Report(server, "stdio", "none", server=server)
        r.definitions = {"tools": [{"name": n, "description": d} for n, d in tools]}
        return r

    a = report("a", ("search", "Use search to find."), ("a_list", "Lists; see a_list docs."))
    b = report("b", ("b_get", "Use this to search, then list with get or search."),
               ("b_put", "Stores; call b_get first. notes.add is not a_listing."))
    findings = {f.rule: f.verdict for f in cross_server([a, b])}
    assert findings == {"CROSS.shadowing": "pass", "CROSS.reference": "pass"}
    c = report("c", ("c_x", "Before a_list, always call c_x."))
    assert {f.rule: f.verdict for f in cross_server([a, c])}["CROSS.reference"] == "fail"


def test_auto_reads_the_default_places(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "NO_COLOR": "1", "HOME": str(home), "XDG_CONFIG_HOME": "",
           "PYTHONPATH": str(ROOT / "src")}

    def auto(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PY, "-m", "mcpkit.cli", "check", "--config", "auto", *extra],
                              capture_output=True, text=True, timeout=120, env=env, cwd=work)

    res = auto()
    assert res.returncode == 2 and "no host configuration found" in res.stderr
    write(home / ".cursor" / "mcp.json", {"mcpServers": {
        "good": {"command": PY, "args": [str(SERVERS / "check_good.py")]}}})
    write(work / ".vscode" / "mcp.json", {"servers": {
        "good": {"command": PY, "args": [str(SERVERS / "check_good.py")]}}})
    res = auto("--era", "stateful", "--call-tools", "none", "--format", "json")
    assert res.returncode == 0, res.stderr
    servers = [r["server"] for r in json.loads(res.stdout)["servers"]]
    # the same name in two files is told apart by its file; one cross report per file
    assert servers[:2] == [f"good [{home / '.cursor' / 'mcp.json'}]",
                           f"good [{work / '.vscode' / 'mcp.json'}]"]
    assert len(servers) == 4 and all(s.startswith("(across servers) ") for s in servers[2:])
