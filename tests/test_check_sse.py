"""``mcpkit check`` reaches 2024-11-05 servers at their SSE URL (the legacy HTTP+SSE
transport): the handshake era is probed over the event stream and POSTs, against mcpkit's
own legacy endpoint and the official SDK's ``sse_app``; a stream that names a foreign
endpoint, names none, or is not a legacy stream is reported as not served, never followed
and never a hang."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from mcpkit.check import Report, Target, run_check
from tests.test_check_family import http_server

SERVERS = Path(__file__).resolve().parent / "servers"


def check(url: str, call_tools: str = "readonly", timeout: float = 5.0) -> Report:
    return anyio.run(run_check, Target(url=url, timeout=timeout), "both", call_tools)


def test_mcpkit_legacy_endpoint_is_probed_and_passes() -> None:
    with http_server(str(SERVERS / "check_good.py"), "--http") as url:
        report = check(url.replace("/mcp", "/sse"), "all")
    stateful, stateless = report.eras
    assert stateful.served and "legacy HTTP+SSE transport (2024-11-05)" in stateful.note
    assert "/messages" in stateful.note
    assert not stateless.served and "no stateless revision" in stateless.note
    assert report.failures() == [], [(f.rule, f.message) for f in report.failures()]
    verdicts = {f.rule: f.verdict for f in report.findings if f.era == "stateful"}
    assert verdicts["TOOLS.unknown-tool"] == "pass" and verdicts["M045"] == "pass"
    assert verdicts["SEC.model-directives"] == "pass"
    assert sum(1 for f in report.findings if f.era == "stateful") > 150


def test_official_sdk_sse_server_is_probed() -> None:
    with http_server(str(SERVERS / "official_http.py"), "{port}", "--sse") as url:
        report = check(url.replace("/mcp", "/sse"))
    assert report.eras[0].served and report.eras[0].revision == "2025-11-25"
    failed = {f.rule for f in report.failures(frozenset({"MUST"}))}
    # the official SDK's known defects, now seen over its legacy transport too
    assert {"TOOLS.unknown-tool", "M011"} <= failed
    assert "M042" not in failed


@pytest.mark.parametrize(("mode", "words"), [
    ("foreign", "another origin"), ("silent", "named no endpoint"), ("message", "")])
def test_hostile_streams_are_not_followed(mode: str, words: str) -> None:
    with http_server(str(SERVERS / "check_sse_hostile.py"), mode) as url:
        started = time.monotonic()
        report = check(url.replace("/mcp", "/sse"), timeout=2.0)
        elapsed = time.monotonic() - started
    assert not any(e.served for e in report.eras)
    assert elapsed < 20
    assert "legacy HTTP+SSE" not in report.eras[0].note
    assert words in report.eras[0].note
    assert {f.rule for f in report.failures()} == {"M042", "STATELESS.discover"}
