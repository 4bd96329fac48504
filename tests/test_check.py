"""``mcpkit check`` end to end against real servers: mcpkit's own everything server (stdio
and HTTP, both eras), the official SDK's fixtures, the safety rules, and the CLI.

The family of deliberately broken servers (one defect each) is in test_check_family.py;
the renderers and the design lint have their own unit tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit.check import Report, Target, run_check
from mcpkit.check.rules import matrix
from tests.support.asgi_tap import AsgiTap
from tests.support.http import (
    LiveServer,
    everything_server,
    free_port,
    read_body,
    replaying,
)

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
EVERYTHING = [PY, str(ROOT / "examples" / "everything.py")]
OFFICIAL = [PY, str(ROOT / "tests" / "servers" / "official_everything.py")]
SAFETY = [PY, str(ROOT / "tests" / "servers" / "check_safety.py")]
MATRIX_IDS = {row.id for row in matrix()}

# What the checker finds in the official SDK's stdio fixture; docs/check.md explains each.
OFFICIAL_FAILURES = {
    ("stateful", "TOOLS.unknown-tool"), ("stateless", "TOOLS.unknown-tool"),
    ("stateful", "RPC.parse-error"), ("stateless", "RPC.parse-error"),
    ("stateful", "RPC.invalid-request"), ("stateless", "RPC.invalid-request"),
    ("stateful", "M011"), ("stateful", "LIFE.second-initialize"),
    ("stateful", "RES.unknown-resource"),
    ("stateful", "S030"), ("stateless", "S030"),
    *((era, f"LINT.{rule}") for era in ("stateful", "stateless") for rule in (
        "service-prefix", "description", "additional-properties", "output-schema",
        "annotations", "tool-count", "actionable-errors")),
}


def check(target: Target, era: str = "both", call_tools: str = "readonly") -> Report:
    return anyio.run(run_check, target, era, call_tools)  # type: ignore[arg-type]


def failed(report: Report, levels: tuple[str, ...] = ("MUST", "SHOULD", "MAY", "LINT")
           ) -> list[tuple[str | None, str, str]]:
    return [(f.era, f.rule, f.message) for f in report.findings
            if f.verdict == "fail" and f.level in levels]


def assert_complete(report: Report, eras: tuple[str, ...]) -> None:
    """Every matrix row has a verdict in every era probed, each exactly once."""
    for era in eras:
        ids = [f.rule for f in report.findings if f.era == era and f.rule in MATRIX_IDS]
        assert sorted(ids) == sorted(MATRIX_IDS), f"{era}: matrix rows missing or repeated"
        assert len(set(ids)) == len(ids)
    assert {e.era for e in report.eras if e.served} == set(eras)


@pytest.mark.parametrize("call_tools", ["readonly", "all"])
def test_everything_stdio_both_eras_has_no_must_failure(call_tools: str) -> None:
    report = check(Target(command=EVERYTHING), "both", call_tools)
    assert_complete(report, ("stateful", "stateless"))
    assert failed(report, ("MUST", "SHOULD")) == []
    assert {e.revision for e in report.eras} == {"2025-11-25", "2026-07-28"}
    for era in report.eras:
        assert era.messages_checked > 10
    wire = {f.era: f.verdict for f in report.findings if f.rule == "WIRE.schema"}
    assert wire == {"stateful": "pass", "stateless": "pass"}
    # The bound for a local stdio server (the report measures its own run). With
    # --call-tools all the checker also waits, in each era, for the tasks it starts:
    # everything.py's slow_compute and failing_job take a second each by design.
    bound = 10 if call_tools == "readonly" else 14
    assert report.duration_s < bound, f"full check took {report.duration_s:.1f} s"


def test_everything_http_both_eras_has_no_must_failure() -> None:
    with LiveServer(everything_server().asgi_app()) as live:
        report = check(Target(url=live.url), "both", "all")
    assert_complete(report, ("stateful", "stateless"))
    assert failed(report, ("MUST", "SHOULD")) == []
    rules = {(f.era, f.rule): f.verdict for f in report.findings}
    for probe in ("HTTP.origin", "HTTP.protocol-version-header", "HTTP.unknown-session"):
        assert rules[("stateful", probe)] == "pass", probe
    for probe in ("STATELESS.header-method", "STATELESS.header-name",
                  "STATELESS.header-version", "STATELESS.unknown-method-status"):
        assert rules[("stateless", probe)] == "pass", probe
    for row in ("M022", "M023", "M025", "M028", "S005", "S006"):
        assert rules[("stateful", row)] == "pass", row


def test_official_sdk_stdio_report_runs_to_completion() -> None:
    report = check(Target(command=OFFICIAL), "both", "readonly")
    assert_complete(report, ("stateful", "stateless"))
    assert {(era, rule) for era, rule, _ in failed(report)} == OFFICIAL_FAILURES
    docs = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    for _, rule in OFFICIAL_FAILURES:
        assert f"`{rule}`" in docs, f"docs/check.md does not explain {rule}"


def test_official_sdk_http_report_runs_to_completion(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([PY, str(ROOT / "tests" / "servers" / "official_http.py"), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        _wait_port(port)
        report = check(Target(url=url), "both", "readonly")
    finally:
        proc.terminate()
        proc.wait(10)
    served = {e.era for e in report.eras if e.served}
    assert "stateful" in served
    assert_complete(report, tuple(sorted(served, reverse=True)))


def _wait_port(port: int, timeout: float = 15.0) -> None:
    import socket
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


# ------------------------------------------------------------------------------ safety


def _safety_run(tmp_path: Path, call_tools: str) -> tuple[Report, list[str]]:
    log = tmp_path / f"ran-{call_tools}.log"
    target = Target(command=SAFETY, env={"MCPKIT_SAFETY_LOG": str(log)})
    report = check(target, "stateful", call_tools)
    ran = log.read_text().split() if log.exists() else []
    return report, ran


def test_default_calls_only_readonly_tools_with_invalid_arguments(tmp_path: Path) -> None:
    report, ran = _safety_run(tmp_path, "readonly")
    assert ran == [], "a tool handler ran during a default check"
    verdicts = {f.rule: f for f in report.findings}
    assert verdicts["TOOLS.invalid-arguments"].verdict == "pass"
    assert "vault_lookup" in verdicts["TOOLS.invalid-arguments"].message
    assert "vault_wipe" not in verdicts["TOOLS.invalid-arguments"].message


def test_call_tools_none_sends_no_tools_call(tmp_path: Path) -> None:
    with LiveServer(_tapped_safety_app()) as live:
        tap = live.app
        report = check(Target(url=live.url), "stateful", "none")
    called = [e for e in tap.entries if e.get("ev") == "c2s"
              and isinstance(e.get("msg"), dict) and e["msg"].get("method") == "tools/call"]
    assert called == []
    assert {f.rule: f.verdict for f in report.findings}["TOOLS.invalid-arguments"] == "n/a"


def test_readonly_mode_never_names_a_write_tool_over_http() -> None:
    with LiveServer(_tapped_safety_app()) as live:
        tap = live.app
        check(Target(url=live.url), "both", "readonly")
    names = {e["msg"]["params"]["name"] for e in tap.entries if e.get("ev") == "c2s"
             and isinstance(e.get("msg"), dict) and e["msg"].get("method") == "tools/call"
             and isinstance(e["msg"].get("params"), dict)}
    assert "vault_wipe" not in names
    assert "vault_lookup" in names


def test_call_tools_all_runs_every_tool(tmp_path: Path) -> None:
    _, ran = _safety_run(tmp_path, "all")
    assert sorted(set(ran)) == ["vault_lookup", "vault_wipe"]


def _tapped_safety_app() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_check_safety", SAFETY[1])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return AsgiTap(module.server.asgi_app())


def test_redirects_are_never_followed() -> None:
    hits: list[str] = []

    async def elsewhere(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        hits.append(scope["path"])
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    with LiveServer(elsewhere) as other:
        async def redirect(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                return
            await send({"type": "http.response.start", "status": 307,
                        "headers": [(b"location", other.url.encode())]})
            await send({"type": "http.response.body", "body": b""})

        with LiveServer(redirect) as live:
            report = check(Target(url=live.url, timeout=2.0), "both", "readonly")
    assert hits == []
    assert not any(e.served for e in report.eras)
    assert [f.rule for f in report.findings if f.verdict == "fail"] == [
        "M042", "STATELESS.discover"]


def test_a_command_that_does_not_start_is_reported_not_raised() -> None:
    report = check(Target(command=["/nonexistent/mcp-server"]), "both", "readonly")
    assert not any(e.served for e in report.eras)
    assert "cannot start" in report.eras[0].note


# --------------------------------------------------------------------------------- CLI


def mcpkit(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([PY, "-m", "mcpkit.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def test_cli_json_report_and_exit_status(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    res = mcpkit("check", "--stdio", f"{PY} examples/everything.py", "--format", "json",
                 "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "report written to" in res.stderr
    data = json.loads(out.read_text())
    assert data["target"].startswith("--stdio")
    for f in data["findings"]:
        assert set(f) >= {"rule", "level", "verdict", "message", "evidence"}
        assert f["verdict"] in ("pass", "fail", "n/a", "untestable")
        assert f["level"] in ("MUST", "SHOULD", "MAY", "LINT")


@pytest.mark.parametrize(("fail_on", "code"), [("must", 1), ("should", 1), ("never", 0)])
def test_cli_fail_on_follows_the_worst_failure(fail_on: str, code: int) -> None:
    res = mcpkit("check", "--stdio", f"{PY} tests/servers/official_everything.py",
                 "--era", "stateful", "--fail-on", fail_on)
    assert res.returncode == code, res.stdout[-2000:] + res.stderr
    assert "TOOLS.unknown-tool" in res.stdout


def test_cli_csv_writes_the_matrix_back(tmp_path: Path) -> None:
    import csv

    out = tmp_path / "matrix.csv"
    res = mcpkit("check", "--stdio", f"{PY} examples/everything.py", "--era", "stateful",
                 "--format", "csv", "--out", str(out))
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [r["ID"] for r in rows] == [row.id for row in matrix()]
    tested = {r["ID"]: r["Tested"] for r in rows}
    assert tested["M079"] == "pass"
    assert tested["M012"] == "untestable"


def test_cli_usage_errors_exit_2() -> None:
    res = mcpkit("check")
    assert res.returncode == 2
    assert "--stdio" in res.stderr
    res = mcpkit("check", "http://127.0.0.1:9/mcp", "--header", "no-colon")
    assert res.returncode == 2


def test_the_notes_example_passes_every_rule_including_lint(tmp_path: Path) -> None:
    """The README's example server is the model of a well-designed server: no failure at
    any level, in both eras, even with every tool called."""
    target = Target(command=[PY, str(ROOT / "examples" / "notes.py")],
                    env={"MCPKIT_NOTES_DB": str(tmp_path / "notes.db")})
    report = check(target, "both", "all")
    assert_complete(report, ("stateful", "stateless"))
    assert failed(report) == []


@pytest.mark.parametrize("mode", ["silent", "crash", "flood", "noline", "garbage"])
def test_hostile_stdio_servers_get_a_report_in_bounded_time(mode: str) -> None:
    """A server that never answers, dies, floods, writes an endless line or binary junk:
    the check ends (each request has its timeout) and reports instead of raising."""
    command = [PY, str(ROOT / "tests" / "servers" / "check_hostile.py"), mode]
    report = check(Target(command=command, timeout=1.0), "both", "readonly")
    assert report.duration_s < 45
    fails = {f.rule for f in report.findings if f.verdict == "fail"}
    if mode in ("silent", "noline", "garbage"):
        assert not any(e.served for e in report.eras)
        assert "M042" in fails
    if mode in ("crash", "flood"):
        assert report.eras[0].served
        assert "M079" in fails  # ping: the crashed server is gone, the flooder refuses it
    if mode == "flood":
        assert report.eras[0].messages_checked >= 1000


def _modern_only(app: Any, *, get_status: int = 405) -> Any:
    """``app`` as a server of 2026-07-28 alone: ``initialize`` is refused with -32022 naming
    the supported version (R26-07.VER.8), GET and DELETE get ``get_status``."""
    import orjson

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["method"] in ("GET", "DELETE"):
            await send({"type": "http.response.start", "status": get_status, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = await read_body(receive)
        try:
            msg = orjson.loads(body)
        except orjson.JSONDecodeError:
            msg = None
        if isinstance(msg, dict) and msg.get("method") == "initialize":
            error = {"jsonrpc": "2.0", "id": msg.get("id"), "error": {
                "code": -32022, "message": "Unsupported protocol version: use 2026-07-28",
                "data": {"supported": ["2026-07-28"], "requested": "initialize"}}}
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": orjson.dumps(error)})
            return
        await app(scope, replaying(body, receive), send)

    return wrapped


@pytest.mark.parametrize(("get_status", "verdict"), [(405, "pass"), (200, "fail")])
def test_modern_only_http_server(get_status: int, verdict: str) -> None:
    """A server of 2026-07-28 alone: the handshake era is not served (n/a, not a failure),
    GET and DELETE must be 405, Origin is probed in the stateless era."""
    app = _modern_only(everything_server().asgi_app(), get_status=get_status)
    with LiveServer(app) as live:
        report = check(Target(url=live.url), "both", "readonly")
    assert [(e.era, e.served) for e in report.eras] == [("stateful", False),
                                                        ("stateless", True)]
    assert "-32022" in report.eras[0].note or "initialize was refused" in report.eras[0].note
    rules = {(f.era, f.rule): f.verdict for f in report.findings}
    assert rules[("stateful", "M042")] == "n/a"
    assert rules[("stateless", "STATELESS.get-delete")] == verdict
    assert rules[("stateless", "HTTP.origin")] == "pass"
    expected = set() if verdict == "pass" else {"STATELESS.get-delete"}
    assert {r for e, r, _ in failed(report, ("MUST", "SHOULD"))} == expected
