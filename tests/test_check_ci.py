"""``mcpkit check`` for CI: SARIF 2.1.0 (validated against the OASIS schema vendored in
``tests/data/sarif``), JUnit XML (parsed, counts checked, hostile text made XML-safe), and
``--baseline FILE`` (fail only on failures that are not in an earlier report).

The servers are the family's broken variants (``tests/servers/check_family.py``), so each
report holds known failures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest

from mcpkit.check.model import Finding, Report
from mcpkit.check.report.ci import junit, sarif

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RELAY = ROOT / "tests" / "servers" / "check_family.py"
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())


def mcpkit(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([PY, "-m", "mcpkit.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def check_variant(rule: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return mcpkit("check", "--stdio", f"{PY} {RELAY} {rule}", "--era", "stateful",
                  "--call-tools", "none", *extra)


def validate_sarif(doc: object) -> None:
    jsonschema.Draft4Validator(SCHEMA).validate(doc)


def test_sarif_is_valid_and_maps_failures_to_rules_with_help(tmp_path: Path) -> None:
    out = tmp_path / "r.sarif"
    res = check_variant("SEC.model-directives", "--format", "sarif", "--out", str(out))
    assert res.returncode == 1, res.stderr
    doc = json.loads(out.read_text())
    validate_sarif(doc)
    [run] = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids)) and "SEC.model-directives" in ids and "M001" in ids
    [result] = run["results"]
    assert result["ruleId"] == "SEC.model-directives"
    assert ids[result["ruleIndex"]] == "SEC.model-directives"
    assert result["level"] == "error"
    assert "IMPORTANT" in result["properties"]["evidence"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "check_family.py")
    rule = rules[result["ruleIndex"]]
    assert "Invariant Labs" in rule["help"]["text"] and rule["helpUri"].endswith("check.md")
    assert result["partialFingerprints"]["mcpkitFinding/v1"]


def test_sarif_of_hostile_text_and_many_servers_is_valid() -> None:
    reports = []
    for name in ("a", "b\x00\u202e"):
        r = Report(f"--stdio {name}", "stdio", "none", server=name)
        r.findings = [Finding("M001", "MUST", "fail", "bad \x1b[31m\u200b", "\x00" * 3,
                              "Compliance matrix", "JSON-RPC", "stateful", "2.1"),
                      Finding("LINT.tool-count", "LINT", "fail", "many", "", "Design lint",
                              "At most 15 tools", "stateless")]
        reports.append(r)
    doc = json.loads(sarif(reports, version="1.0", known={"a\x1fstateful\x1fM001"}))
    validate_sarif(doc)
    states = [res["baselineState"] for res in doc["runs"][0]["results"]]
    assert states == ["unchanged", "new", "new", "new"]
    assert [res["level"] for res in doc["runs"][0]["results"]] == ["error", "note"] * 2


def test_junit_one_case_per_rule_and_era_parses(tmp_path: Path) -> None:
    out = tmp_path / "r.xml"
    res = check_variant("LINT.description", "--format", "junit", "--out", str(out),
                        "--fail-on", "never")
    assert res.returncode == 0, res.stderr
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert int(suite.get("tests", "-1")) == len(cases) > 150
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["LINT.description [stateful]"]
    assert int(suite.get("failures", "-1")) == 1 == int(root.get("failures", "-1"))
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert int(suite.get("skipped", "-1")) == len(skipped) > 0
    assert len({c.get("name") for c in cases}) == len(cases)


def test_junit_strips_what_xml_cannot_hold() -> None:
    r = Report("--stdio x", "stdio", "none")
    r.findings = [Finding("M001", "MUST", "fail", "bell \x07 nul \x00 \ufffe",
                          "esc \x1b[2J", "Compliance matrix", "t", "stateful")]
    root = ET.fromstring(junit([r]).encode())
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None and "\\x07" in failure.get("message", "")
    assert "\\x1b" in (failure.text or "")


def test_baseline_fails_only_on_new_failures(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    res = check_variant("LINT.annotations", "--format", "json", "--out", str(base),
                        "--fail-on", "lint")
    assert res.returncode == 1, res.stderr
    # the same failures again: all known, exit 0
    res = check_variant("LINT.annotations", "--fail-on", "lint", "--baseline", str(base))
    assert res.returncode == 0, res.stderr
    assert "0 new failure(s), 1 already in the baseline" in res.stderr
    # the baseline was another server: its failures are new
    other = mcpkit("check", "--stdio", f"{PY} {RELAY} LINT.output-schema", "--era", "stateful",
                   "--call-tools", "none", "--fail-on", "lint", "--baseline", str(base))
    assert other.returncode == 1
    assert "1 new failure(s)" in other.stderr and "LINT.output-schema" in other.stderr


def test_baseline_from_sarif(tmp_path: Path) -> None:
    base = tmp_path / "base.sarif"
    check_variant("SEC.homoglyphs", "--format", "sarif", "--out", str(base))
    res = check_variant("SEC.homoglyphs", "--fail-on", "should", "--baseline", str(base),
                        "--format", "json")
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize(("content", "words"), [
    (None, "cannot read the baseline"), ("{not json", "is not JSON"),
    ('{"a": 1}', "not a report written by mcpkit check"),
])
def test_bad_baseline_is_a_usage_error_before_any_check(
        tmp_path: Path, content: str | None, words: str) -> None:
    path = tmp_path / "b.json"
    if content is not None:
        path.write_text(content)
    res = mcpkit("check", "--stdio", f"{PY} -c 'import time; time.sleep(60)'",
                 "--baseline", str(path), timeout=20)
    assert res.returncode == 2
    assert words in res.stderr
