"""``mcpkit check``'s default text report is one screen (issue #26, item 11): what failed,
grouped by level, and a tally per section, at most 60 lines for a typical server; every
finding and the evidence of each failure with ``--verbose``. Through the real command on
the shipped example servers over stdio, and on hand-built reports for the shape."""

from __future__ import annotations

import dataclasses
import json
import re

from mcpkit.check.report import render
from mcpkit.check.rules import SECTIONS

from .test_check_report import ESC, sample_report
from .test_cli import EVERYTHING, NOTES, mcpkit

SCREEN = 60


def _check(*args: str) -> str:
    res = mcpkit("check", *args, timeout=120)
    assert res.returncode in (0, 1), res.stderr
    return res.stdout


def test_the_default_report_of_a_typical_server_fits_one_screen() -> None:
    for target in (EVERYTHING, NOTES):
        brief = _check("--stdio", target)
        findings = json.loads(_check("--stdio", target, "--format", "json"))["findings"]
        failed = [f for f in findings if f["verdict"] == "fail"]
        lines = brief.splitlines()
        assert len(lines) <= SCREEN, brief
        assert len(findings) > SCREEN  # the whole report would not fit
        assert all(len(line) <= 100 for line in lines), max(lines, key=len)
        # Every failed rule is named, under its level; no pass, n/a or untestable row.
        for f in failed:
            assert re.search(rf"^  {re.escape(f['rule'])}\s", brief, re.M), f["rule"]
        for level in {f["level"] for f in failed}:
            count = sum(f["level"] == level for f in failed)
            assert f"\n{level} ({count} failed)\n" in brief
        assert not re.search(r"^  \S+\s+(both|stateful|stateless)\s+(pass|n/a|untestable)\s",
                             brief, re.M)
        assert "--verbose" in brief.splitlines()[-1]


def test_verbose_shows_every_finding_and_the_evidence() -> None:
    full = _check("--stdio", EVERYTHING, "--verbose")
    report = json.loads(_check("--stdio", EVERYTHING, "--format", "json"))
    rows = re.findall(r"^  (\S+)\s+(both|stateful|stateless|-)\s+(fail|pass|n/a|untestable)",
                      full, re.M)
    shown = {(rule, verdict) for rule, _, verdict in rows}
    assert {(f["rule"], f["verdict"]) for f in report["findings"]} <= shown
    assert "Failures, worst first" in full and "      | " in full  # evidence excerpts
    assert len(full.splitlines()) > 3 * SCREEN


def test_brief_groups_failures_by_level_and_tallies_sections() -> None:
    out = render(sample_report(), "text")
    assert out == render(sample_report(), "text", verbose=False)
    assert ESC not in out
    lines = out.splitlines()
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    assert "Failed: 2 MUST, 1 SHOULD (and 0 MAY, 1 LINT)." in out
    groups = re.findall(r"^(MUST|SHOULD|MAY|LINT) \((\d+) failed\)$", out, re.M)
    assert groups == [("MUST", "2"), ("SHOULD", "1"), ("LINT", "1")]
    must = out.split("MUST (2 failed)\n", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^  (\S+)\s+(stateful|stateless|both)\s", must, re.M) == [
        ("M011", "stateful"), ("TOOLS.unknown-tool", "stateful")]
    # A message in at most two lines, the rest cut; no evidence.
    lint = out.split("LINT (1 failed)\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(lint) == 2 and lint[1].endswith("...")
    assert "      | " not in out and "\\x1b" not in out  # evidence only with --verbose
    sections = out.split("Sections\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [s.split("  ")[1] for s in sections] == [s for s in SECTIONS if any(
        line.startswith(f"  {s}  ") for line in sections)]
    assert len(sections) == 5 and "Compliance matrix" in out
    assert any(re.match(r"^  Compliance matrix\s+1 fail, 3 pass, 2 n/a, 4 untestable$", line)
               for line in sections), sections
    colored = render(sample_report(), "text", color=True)
    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == out


def test_brief_of_a_clean_report_says_so() -> None:
    report = sample_report()
    report.findings[:] = [f for f in report.findings if f.verdict != "fail"]
    out = render(report, "text")
    assert "\nNo failures.\n" in out and "failed)" not in out


def test_many_failures_get_one_line_each() -> None:
    report = sample_report()
    base = next(f for f in report.findings if f.rule == "M011" and f.verdict == "fail")
    report.findings[:] = [dataclasses.replace(base, rule=f"M{100 + i}") for i in range(30)]
    out = render(report, "text")
    must = out.split("MUST (30 failed)\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(must) == 30
