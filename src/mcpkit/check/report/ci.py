"""Reports for CI: SARIF 2.1.0 for code scanning, JUnit XML for test dashboards, baselines.

* :func:`sarif`: one run of the tool ``mcpkit check``; every rule judged becomes a
  ``reportingDescriptor`` (id, title, help text with the spec reference and the docs link,
  a default level: MUST ``error``, SHOULD ``warning``, MAY and LINT ``note``), every
  *failed* finding a ``result`` with its message, its evidence (in ``properties``), a
  stable ``partialFingerprints`` entry (so code scanning tracks it across runs) and, with
  a baseline, ``baselineState`` ``new`` or ``unchanged``. The location is the host
  configuration file when the servers came from one, else the server's script or URL.
* :func:`junit`: one ``testsuite`` per server, one ``testcase`` per rule and era:
  ``failure`` for a failed finding, ``skipped`` for n/a and untestable. Text the server
  sent is stripped of characters XML 1.0 cannot hold.
* :func:`baseline_keys` / :func:`new_failures`: ``--baseline FILE`` reads an earlier JSON
  (or SARIF) report and keeps only the failures that are not in it, so CI fails on what a
  change introduced, not on what was already known.

A finding's identity (:func:`key`) is the server, the era and the rule: messages hold
counts and names that change from run to run, so they are not part of it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import orjson

from ..model import Finding, Report

DOCS_URL = "https://github.com/mcpkit/mcpkit/blob/main/docs/check.md"
"""Where the rules are explained (``helpUri`` of every SARIF rule)."""

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"MUST": "error", "SHOULD": "warning", "MAY": "note", "LINT": "note"}
_FINGERPRINT = "mcpkitFinding/v1"


def server_of(report: Report) -> str:
    """The name a report's findings are filed under: the configuration's server name when
    the report came from a host configuration, else the target."""
    return report.server or report.target


def key(server: str, finding: Finding) -> str:
    """The identity of a finding across runs: server, era and rule."""
    return _identity(server, finding.era, finding.rule)


def _identity(server: str, era: Any, rule: Any) -> str:
    return f"{server}\x1f{era or '-'}\x1f{rule}"


def _fingerprint(server: str, finding: Finding) -> str:
    return hashlib.sha256(key(server, finding).encode()).hexdigest()[:32]


# ---------------------------------------------------------------------------- baselines


class BaselineError(ValueError):
    """The baseline file cannot be read or is not a report of ``mcpkit check``."""


def baseline_keys(path: str) -> set[str]:
    """The identities of the failed findings of the report at ``path``: a JSON report of
    ``mcpkit check`` (one server, or ``{"servers": [...]}`` for a configuration) or a SARIF
    file it wrote."""
    try:
        data = orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise BaselineError(f"cannot read the baseline {path}: {exc.strerror or exc}") from exc
    except orjson.JSONDecodeError as exc:
        raise BaselineError(f"the baseline {path} is not JSON: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("runs"), list):
        return _sarif_keys(data["runs"])
    reports = data.get("servers") if isinstance(data, dict) and "servers" in data else [data]
    if not isinstance(reports, list) or not all(isinstance(r, dict) and isinstance(
            r.get("findings"), list) for r in reports):
        raise BaselineError(f"the baseline {path} is not a report written by mcpkit check "
                            "--format json or sarif")
    out = set()
    for r in reports:
        server = r.get("server") or r.get("target") or ""
        for f in r["findings"]:
            if isinstance(f, dict) and f.get("verdict") == "fail":
                out.add(_identity(server, f.get("era"), f.get("rule")))
    return out


def _sarif_keys(runs: list[Any]) -> set[str]:
    out = set()
    for run in runs:
        for result in (run.get("results") or []) if isinstance(run, dict) else []:
            props = result.get("properties") if isinstance(result, dict) else None
            if isinstance(props, dict) and isinstance(props.get("mcpkitKey"), str):
                out.add(props["mcpkitKey"])
    return out


def new_failures(reports: Sequence[Report], known: set[str],
                 levels: frozenset[str] | None = None) -> list[tuple[Report, Finding]]:
    """Failed findings (at ``levels``, all when None) whose identity is not in ``known``."""
    return [(r, f) for r in reports for f in r.failures(levels)
            if key(server_of(r), f) not in known]


# ---------------------------------------------------------------------------- SARIF


def _location(report: Report, config: str | None) -> dict[str, Any]:
    if config is not None:
        uri = Path(config).as_posix()
    elif report.transport == "http":
        uri = report.target
    else:
        words = report.target.removeprefix("--stdio ").split()
        uri = next((w for w in words if w.endswith((".py", ".js", ".ts", ".mjs"))), "")
        uri = uri or "mcp-server"
    return {"physicalLocation": {"artifactLocation": {"uri": uri}},
            "logicalLocations": [{"name": server_of(report), "kind": "module"}]}


def _rule(finding: Finding) -> dict[str, Any]:
    help_text = (f"{finding.title}. Level {finding.level}"
                 + (f"; rests on {finding.spec}" if finding.spec else "") + ".")
    return {
        "id": finding.rule,
        "name": re.sub(r"[^A-Za-z0-9]+", "", finding.rule.title()) or finding.rule,
        "shortDescription": {"text": finding.title or finding.rule},
        "fullDescription": {"text": help_text},
        "help": {"text": help_text + f" See {DOCS_URL}.",
                 "markdown": f"**{finding.title}** ({finding.level}). "
                             + (f"Rests on: {finding.spec}. " if finding.spec else "")
                             + f"[What the rule checks]({DOCS_URL})"},
        "helpUri": DOCS_URL,
        "defaultConfiguration": {"level": _SARIF_LEVEL[finding.level]},
        "properties": {"level": finding.level, "section": finding.section,
                       "tags": ["mcp", finding.section.lower().replace(" ", "-")]},
    }


def sarif(reports: Sequence[Report], *, version: str = "", config: str | None = None,
          known: set[str] | None = None) -> str:
    """The failures of ``reports`` as one SARIF 2.1.0 log (see the module docstring)."""
    rules: dict[str, dict[str, Any]] = {}
    for r in reports:
        for f in r.findings:
            rules.setdefault(f.rule, _rule(f))
    index = {rid: i for i, rid in enumerate(rules)}
    results = []
    for r in reports:
        server = server_of(r)
        for f in r.failures():
            result: dict[str, Any] = {
                "ruleId": f.rule, "ruleIndex": index[f.rule],
                "level": _SARIF_LEVEL[f.level],
                "message": {"text": f"{server}: {f.message}" if len(reports) > 1
                            else f.message},
                "locations": [_location(r, config)],
                "partialFingerprints": {_FINGERPRINT: _fingerprint(server, f)},
                "properties": {"era": f.era, "server": server, "evidence": f.evidence,
                               "mcpkitKey": key(server, f)},
            }
            if known is not None:
                result["baselineState"] = "unchanged" if key(server, f) in known else "new"
            results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "mcpkit check", "informationUri": DOCS_URL,
                **({"version": version} if version else {}),
                "rules": list(rules.values())}},
            "invocations": [{"executionSuccessful": True}],
            "results": results,
        }],
    }
    return orjson.dumps(log, option=orjson.OPT_INDENT_2).decode() + "\n"


# ---------------------------------------------------------------------------- JUnit

_XML_BAD = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: object) -> str:
    """``text`` without the characters XML 1.0 cannot hold (shown as ``\\xNN``)."""
    return _XML_BAD.sub(lambda m: f"\\x{ord(m.group(0)):02x}", str(text))


def junit(reports: Iterable[Report]) -> str:
    """One ``testsuite`` per report, one ``testcase`` per finding (rule and era)."""
    root = ET.Element("testsuites", name="mcpkit check")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for r in reports:
        server = server_of(r)
        suite = ET.SubElement(root, "testsuite", name=_x(server), time=f"{r.duration_s:.3f}")
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        for f in r.findings:
            case = ET.SubElement(suite, "testcase", name=_x(f"{f.rule} [{f.era or 'any'}]"),
                                 classname=_x(f"{server}.{f.section}"))
            counts["tests"] += 1
            if f.verdict == "fail":
                counts["failures"] += 1
                fail = ET.SubElement(case, "failure", message=_x(f.message), type=f.level)
                fail.text = _x(f"{f.title}\n{f.spec}\n\n{f.evidence}".strip())
            elif f.verdict in ("n/a", "untestable"):
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=_x(f"{f.verdict}: {f.message}"))
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
        suite.set("errors", "0")
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
