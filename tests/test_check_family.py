"""``mcpkit check`` against a family of servers that each break exactly one rule.

The family is one good server (``tests/servers/check_good.py``, which must pass every rule)
behind a relay that applies a single defect chosen by rule id: ``check_family.py`` over
stdio (envelopes, framing, lifecycle, errors, schemas, the stateless revision, design
lint) and ``check_family_http.py`` over Streamable HTTP (status codes, headers, Origin,
session ids). Each test runs the checker on one variant and asserts that the set of
failed rules is exactly ``{that rule}``: the checker notices the defect, and blames it on
the right rule and on no other.

Each variant is checked in the narrowest era that exercises its rule, with
``--call-tools readonly`` unless the defect is in successful calls, to keep the file fast.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from mcpkit.check import Report, Target, run_check
from tests.servers.check_family import DEFECTS as STDIO_DEFECTS
from tests.servers.check_family_http import DEFECTS as HTTP_DEFECTS
from tests.support.http import free_port

SERVERS = Path(__file__).resolve().parent / "servers"
PY = sys.executable
GOOD = SERVERS / "check_good.py"
RELAY = SERVERS / "check_family.py"
RELAY_HTTP = SERVERS / "check_family_http.py"

NEEDS_CALLS = {"M068", "TOOLS.structured-content", "LINT.response-size"}
"""Defects in successful tool results: only ``--call-tools all`` makes successful calls."""

HTTP_BOTH_ERAS = {"STATELESS.header-method", "STATELESS.header-name",
                  "STATELESS.header-version"}
"""Checked in both eras: with the stateless era alone the checker does not know that the
server also serves the handshake era, and would expect 405 to GET and DELETE."""


def era_of(rule: str) -> str:
    return "stateless" if rule.startswith("STATELESS.") else "stateful"


def check(target: Target, era: str, call_tools: str) -> Report:
    return anyio.run(run_check, target, era, call_tools)  # type: ignore[arg-type]


def failures(report: Report) -> set[str]:
    return {f.rule for f in report.findings if f.verdict == "fail"}


def explain(report: Report) -> str:
    return "\n".join(f"{f.era} {f.rule}: {f.message}\n    {f.evidence[:600]}"
                     for f in report.failures())


@contextmanager
def http_server(*args: str) -> Iterator[str]:
    """Start ``args`` (a script and its options) on a free loopback port, given as the
    argument ``{port}`` if there is one, else appended as ``--port N``; yield the MCP URL once
    it accepts connections; stop it afterwards."""
    port = free_port()
    argv = ([str(port) if a == "{port}" else a for a in args] if "{port}" in args
            else [*args, "--port", str(port)])
    proc = subprocess.Popen([PY, *argv])
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1, trust_env=False)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{args[0]} did not start listening on {port}") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# ------------------------------------------------------------------------- the good server


def test_good_server_passes_every_rule_over_stdio() -> None:
    report = check(Target(command=[PY, str(GOOD)]), "both", "all")
    assert [e.served for e in report.eras] == [True, True]
    assert failures(report) == set(), explain(report)


def test_good_server_passes_every_rule_over_http() -> None:
    with http_server(str(GOOD), "--http") as url:
        report = check(Target(url=url), "both", "all")
    assert [e.served for e in report.eras] == [True, True]
    assert failures(report) == set(), explain(report)


# ------------------------------------------------------------------------- one defect each


@pytest.mark.parametrize("rule", list(STDIO_DEFECTS))
def test_stdio_variant_fails_exactly_its_rule(rule: str) -> None:
    call_tools = "all" if rule in NEEDS_CALLS else "readonly"
    report = check(Target(command=[PY, str(RELAY), rule]), era_of(rule), call_tools)
    assert failures(report) == {rule}, explain(report)


@pytest.mark.parametrize("rule", list(HTTP_DEFECTS))
def test_http_variant_fails_exactly_its_rule(rule: str) -> None:
    era = "both" if rule in HTTP_BOTH_ERAS else era_of(rule)
    with http_server(str(RELAY_HTTP), rule) as url:
        report = check(Target(url=url), era, "readonly")
    assert failures(report) == {rule}, explain(report)


def test_the_family_covers_the_issue_areas() -> None:
    """At least 25 variants, across lifecycle, envelopes, errors, schemas, HTTP status codes,
    Origin and design lint."""
    rules = set(STDIO_DEFECTS) | set(HTTP_DEFECTS)
    assert len(rules) >= 25
    for area in ("LIFE.", "M001", "RPC.", "TOOLS.input-schema", "WIRE.schema", "HTTP.",
                 "HTTP.origin", "LINT."):
        assert any(r.startswith(area) for r in rules), area
