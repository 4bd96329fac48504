"""``mcpkit check --pin FILE``: definitions pinned on the first run, added, removed and
changed ones (with the fields) reported later, ``--fail-on should`` failing on them, and
pin files that cannot be used refused before any check runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RUGPULL = ROOT / "tests" / "servers" / "check_rugpull.py"


def mcpkit(*args: str, mode: str = "", timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "MCPKIT_RUGPULL": mode}
    return subprocess.run([PY, "-m", "mcpkit.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def pin_finding(out: Path) -> dict[str, Any]:
    [f] = [f for f in json.loads(out.read_text())["findings"] if f["rule"] == "PIN.definitions"]
    return f  # type: ignore[no-any-return]


def run(tmp_path: Path, pins: Path, mode: str, *extra: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / f"report-{mode or 'honest'}.json"
    res = mcpkit("check", "--stdio", f"{PY} {RUGPULL}", "--era", "stateful", "--call-tools",
                 "none", "--pin", str(pins), "--format", "json", "--out", str(out), *extra,
                 mode=mode)
    assert res.returncode in (0, 1), res.stderr
    return res.returncode, pin_finding(out)


def test_pin_then_detect_the_rug_pull(tmp_path: Path) -> None:
    pins = tmp_path / "pins.json"
    code, first = run(tmp_path, pins, "", "--fail-on", "should")
    assert (code, first["verdict"]) == (0, "pass") and "First run: 1 definitions" in first[
        "message"]
    doc = json.loads(pins.read_text())
    [server] = doc["servers"].values()
    assert list(server["definitions"]) == ["tool weather_get"]
    assert len(server["definitions"]["tool weather_get"]["sha256"]) == 64
    # the same server again: unchanged
    code, same = run(tmp_path, pins, "", "--fail-on", "should")
    assert (code, same["verdict"]) == (0, "pass") and "match the pin" in same["message"]
    # the rug pull: a changed description and pattern, an added tool
    code, pulled = run(tmp_path, pins, "swap", "--fail-on", "should")
    assert (code, pulled["verdict"]) == (1, "fail")
    assert pulled["level"] == "SHOULD"
    message = pulled["message"]
    assert "changed: tool weather_get (description, inputSchema.properties.city.pattern)" in (
        message)
    assert "added: tool weather_upload" in message
    evidence = json.loads(pulled["evidence"])
    assert "address book" in evidence["tool weather_get"]["now"]["description"]
    assert "address book" not in evidence["tool weather_get"]["pinned"]["description"]
    # the default --fail-on must does not fail on a pin change; the pin is not rewritten
    code, again = run(tmp_path, pins, "swap")
    assert (code, again["verdict"]) == (0, "fail")
    assert next(iter(json.loads(pins.read_text())["servers"].values())) == server
    # and going back reports the removal
    pins2 = tmp_path / "pins2.json"
    run(tmp_path, pins2, "swap")
    code, back = run(tmp_path, pins2, "", "--fail-on", "should")
    assert code == 1 and "removed: tool weather_upload" in back["message"]


@pytest.mark.parametrize(("content", "words"), [
    ("{bad", "is not JSON"), ('{"servers": {}}', "is not a pin file"),
])
def test_unusable_pin_file_is_a_usage_error(tmp_path: Path, content: str, words: str) -> None:
    pins = tmp_path / "pins.json"
    pins.write_text(content)
    res = mcpkit("check", "--stdio", f"{PY} -c 'import time; time.sleep(60)'", "--pin",
                 str(pins), timeout=20)
    assert res.returncode == 2 and words in res.stderr


def test_pins_per_server_of_a_configuration(tmp_path: Path) -> None:
    pins = tmp_path / "pins.json"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": {
        "weather": {"command": PY, "args": [str(RUGPULL)]},
        "absent": {"command": str(tmp_path / "nothing")}}}))
    out = tmp_path / "r.json"
    res = mcpkit("check", "--config", str(config), "--era", "stateful", "--call-tools", "none",
                 "--pin", str(pins), "--format", "json", "--out", str(out))
    assert res.returncode == 1, res.stderr  # the absent server fails M042
    assert list(json.loads(pins.read_text())["servers"]) == ["weather"]
    servers = {r["server"]: r for r in json.loads(out.read_text())["servers"]}
    verdicts = {name: [f["verdict"] for f in r["findings"] if f["rule"] == "PIN.definitions"]
                for name, r in servers.items()}
    assert verdicts == {"weather": ["pass"], "absent": ["untestable"], "(across servers)": []}
