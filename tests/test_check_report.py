"""The report renderers (``mcpkit.check.report``) on hand-built reports: every format's
shape, the failures worst first, escaping of hostile server text, and, in headless
Chromium, that the HTML report renders as a real picture with no sideways scrolling at a
1024-pixel-wide window."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import re
import shutil
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import pytest

from mcpkit.check.model import EraSummary, Report
from mcpkit.check.report import FORMATS, render
from mcpkit.check.rules import SECTIONS, finding, matrix
from tests.support.chromium import find_chromium, screenshot, widths

HOSTILE = "<script>alert(1)</script>"
LONG_TOKEN = "x" * 3000
ESC = "\x1b"

EVIDENCE_JSON = "→ " + json.dumps(
    {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
     "params": {"name": "mcpkit_check_no_such_tool", "arguments": {"a": [1, 2, 3]}}},
    indent=2) + "\n← " + json.dumps(
    {"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": "Unknown tool"}],
                                           "isError": True}}, indent=2)


def sample_report(target: str = "--stdio python server.py") -> Report:
    """Findings in several sections and both eras: a failure at MUST, SHOULD and LINT,
    multi-line JSON evidence, hostile markup, a pipe, a fence, control characters and a
    3000-character token with no break opportunity."""
    findings = [
        finding("TOOLS.unknown-tool", "fail",
                "Unknown tool answered with a result; an unknown tool is a protocol error "
                "(JSON-RPC error -32602), not a tool execution error.", EVIDENCE_JSON,
                "stateful"),
        finding("TOOLS.unknown-tool", "pass", "Unknown tool answered with -32602.",
                EVIDENCE_JSON, "stateless"),
        finding("LIFE.second-initialize", "fail",
                f"A second initialize was accepted; the server said {HOSTILE} | and more.",
                f"← {{\"result\": \"{HOSTILE}\"}}\n```\nnot a fence end\n{ESC}[2J cleared",
                "stateful"),
        finding("RPC.unknown-method", "pass", "Unknown method answered with -32601.", "",
                "stateful"),
        finding("RPC.unknown-method", "pass", "Unknown method answered with -32601.", "",
                "stateless"),
        finding("STATELESS.discover", "pass", "server/discover lists ['2026-07-28'].",
                '→ {"method": "server/discover"}', "stateless"),
        finding("WIRE.schema", "pass", "12 message(s) valid.", "", "stateful"),
        finding("WIRE.schema", "pass", "9 message(s) valid.", "", "stateless"),
        finding("M001", "pass", "12 messages checked.", "", "stateful"),
        finding("M001", "pass", "9 messages checked.", "", "stateless"),
        finding("M011", "fail", "A JSON-RPC batch of two pings was not answered with an array.",
                '→ [{"method":"ping"},{"method":"ping"}]', "stateful"),
        finding("M011", "n/a", "The 2026-07-28 revision has no batches.", "", "stateless"),
        finding("M012", "untestable", "A requirement on the client.", "", "stateful"),
        finding("M012", "untestable", "A requirement on the client.", "", "stateless"),
        finding("M013", "untestable", "Needs stdio.", "", "stateful"),
        finding("M013", "pass", "Read from stdin, answered on stdout.", "", "stateless"),
        finding("M014", "n/a", "Not applicable here.", "", "stateful"),
        finding("M014", "untestable", "Cannot be caused.", "", "stateless"),
        # The evidence limit of finding() would cut the long token; a renderer must cope with
        # whatever it is handed, so this one is built whole.
        dataclasses.replace(
            finding("LINT.description", "fail",
                    f"1 of 2 tool descriptions fall short: {LONG_TOKEN} (does not say when).",
                    "", "stateful"),
            evidence=f'[{{"name": "{LONG_TOKEN}"}}]'),
        finding("LINT.tool-count", "pass", "2 tools.", "", "stateless"),
    ]
    eras = [
        EraSummary("stateful", True, "2025-11-25", {"name": "demo", "version": "1.0"},
                   {"tools": {}}, "", 12),
        EraSummary("stateless", True, "2026-07-28", {"name": "demo", "version": "1.0"},
                   {"tools": {}}, "discover answered; no sessions", 9),
    ]
    return Report(target, "stdio", "readonly", eras, findings, 1.234, "0.1.0")


def source_matrix() -> list[list[str]]:
    text = (resources.files("mcpkit.check").joinpath("data/matrix.csv")
            .read_text("utf-8"))
    return list(csv.reader(io.StringIO(text)))


# ---------------------------------------------------------------------------- all formats


def test_every_format_renders_and_an_unknown_one_is_refused() -> None:
    assert FORMATS == ("text", "json", "markdown", "html", "csv", "sarif", "junit")
    empty = Report("--stdio true", "stdio", "none")
    for fmt in FORMATS:
        assert render(sample_report(), fmt).endswith("\n")
        assert render(empty, fmt).endswith("\n")
    with pytest.raises(ValueError, match="unknown report format"):
        render(sample_report(), "yaml")


# ---------------------------------------------------------------------------- json


def test_json_is_the_report_with_two_space_indent() -> None:
    out = render(sample_report(), "json")
    assert out.endswith("}\n") and out.splitlines()[1].startswith('  "')
    data = json.loads(out)
    assert data == json.loads(json.dumps(sample_report().to_json()))
    assert len(data["findings"]) == len(sample_report().findings)
    for f in data["findings"]:
        assert {"rule", "level", "verdict", "message", "evidence"} <= f.keys()
    assert data["findings"][0]["evidence"] == EVIDENCE_JSON


# ---------------------------------------------------------------------------- csv


def test_csv_is_the_matrix_with_tested_filled() -> None:
    out = render(sample_report(), "csv")
    assert "\r" not in out
    rows = list(csv.reader(io.StringIO(out)))
    source = source_matrix()
    assert rows[0] == source[0] == ["ID", "Type", "Section", "Requirement", "Tested", "Notes"]
    assert len(rows) == 146 and len(matrix()) == 145
    assert [r[:4] for r in rows[1:]] == [r[:4] for r in source[1:]]
    by_id = {r[0]: r for r in rows[1:]}
    assert by_id["M001"][4] == "pass" and by_id["M001"][5] == (
        "stateful: pass - 12 messages checked.; stateless: pass - 9 messages checked.")
    # Eras that disagree: the worst verdict, per-era detail in Notes.
    assert by_id["M011"][4] == "fail"
    assert by_id["M011"][5].startswith("stateful: fail - A JSON-RPC batch")
    assert "; stateless: n/a - The 2026-07-28 revision has no batches." in by_id["M011"][5]
    assert by_id["M013"][4] == "pass"
    assert by_id["M013"][5] == ("stateful: untestable - Needs stdio.; stateless: pass")
    assert by_id["M014"][4] == "n/a"
    # Eras that agree: one verdict, the message.
    assert by_id["M012"][4:] == ["untestable", "A requirement on the client."]
    # Rows the report does not cover.
    assert by_id["M002"][4:] == ["", "not checked"]
    assert sum(r[4] == "" for r in rows[1:]) == 145 - 5
    # Checker rules are not matrix rows.
    assert not any(r[0].startswith(("TOOLS.", "LINT.")) for r in rows)


def test_csv_notes_are_cut() -> None:
    report = Report("x", "stdio", "none", findings=[
        finding("M001", "fail", "y" * 1000, "", "stateful"),
        finding("M002", "fail", "z" * 1000, "", "stateful"),
        finding("M002", "pass", "fine", "", "stateless")])
    rows = {r[0]: r for r in csv.reader(io.StringIO(render(report, "csv")))}
    assert rows["M001"][4] == "fail" and 250 <= len(rows["M001"][5]) <= 300
    assert rows["M002"][5].startswith("stateful: fail - zzz")
    assert rows["M002"][5].endswith("; stateless: pass") and len(rows["M002"][5]) <= 300


# ---------------------------------------------------------------------------- markdown


def _md_cells(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line)) - 1


def test_markdown_has_summary_failures_and_a_table_per_section() -> None:
    report = sample_report()
    out = render(report, "markdown")
    sections = [s for s in SECTIONS if any(f.section == s for f in report.findings)]
    headings = re.findall(r"^## (.+)$", out, re.M)
    assert headings == ["Summary", "Failures", *sections]
    assert out.count("| Rule | Era | Level | Verdict | Message |") == len(sections)
    # Every table row has the header's number of cells: pipes in text are escaped.
    for block in re.findall(r"(?:^\|.*\n)+", out, re.M):
        lines = block.splitlines()
        assert {_md_cells(line) for line in lines} == {_md_cells(lines[0])}, block
    assert r"the server said &lt;script&gt;alert(1)&lt;/script&gt; \| and more." in out
    # Evidence is shown literally inside fences; outside them nothing is left unescaped.
    assert HOSTILE not in re.sub(r"^ *(`{3,})\n.*?^ *\1$", "", out, flags=re.M | re.S)
    assert ESC not in out and "\\x1b[2J cleared" in out
    must = report.counts()["MUST"]
    assert f"| MUST | **{must['fail']}** | {must['pass']} | {must['n/a']} | " in out
    # Failures, worst first, evidence folded and fenced (a longer fence than the evidence's).
    failures = re.findall(r"^- \*\*(\w+)\*\* `([^`]+)`", out, re.M)
    assert failures == [("MUST", "M011"), ("MUST", "TOOLS.unknown-tool"),
                        ("SHOULD", "LIFE.second-initialize"), ("LINT", "LINT.description")]
    assert out.count("<details><summary>evidence</summary>") == 4
    assert "  ````\n  ← {\"result\": \"<script>" in out
    assert '\n  ```\n  → {\n    "jsonrpc": "2.0",' in out
    # Sections without failures are folded.
    assert "<details><summary>2 findings, none failed</summary>" in out  # Wire validity


# ---------------------------------------------------------------------------- text


def test_verbose_text_lists_failures_worst_first_within_100_columns() -> None:
    out = render(sample_report(), "text", verbose=True)
    assert ESC not in out and "\\x1b[2J cleared" in out
    assert all(len(line) <= 100 for line in out.splitlines()), max(out.splitlines(), key=len)
    head = out.split("Failures, worst first\n", 1)[0]
    assert "--stdio python server.py" in head and "stdio" in head and "readonly" in head
    assert "2025-11-25" in head and "2026-07-28" in head and "1.2 s" in head
    assert "- discover answered; no\n              sessions" in head  # the note, wrapped
    assert "Failed: 2 MUST, 1 SHOULD (and 0 MAY, 1 LINT)." in head
    failures = out.split("Failures, worst first\n", 1)[1].split("\n\n", 1)[0]
    heads = re.findall(r"^  (MUST|SHOULD|MAY|LINT)\s+(\S+) \[(\w+)\]$", failures, re.M)
    assert heads == [("MUST", "M011", "stateful"), ("MUST", "TOOLS.unknown-tool", "stateful"),
                     ("SHOULD", "LIFE.second-initialize", "stateful"),
                     ("LINT", "LINT.description", "stateful")]
    # Evidence excerpts: at most six lines each.
    excerpts = re.split(r"^  \S.*$", failures, flags=re.M)[1:]
    for excerpt in excerpts:
        assert 1 <= len(re.findall(r"^      \| ", excerpt, re.M)) <= 6
    assert "... (" in failures and "more lines)" in failures
    # The long message wraps; the sections follow in report order, one line per finding.
    assert failures.count("x" * 90) >= 8
    titles = re.findall(r"^== (.+?) \(", out, re.M)
    assert titles == [s for s in SECTIONS if s in titles] and len(titles) == 5
    assert re.search(r"^  RPC\.unknown-method\s+both\s+pass\s+Unknown method", out, re.M)
    assert re.search(r"^  M011\s+stateless\s+n/a\s+The 2026", out, re.M)
    assert re.search(r"^  LINT\.description\s+stateful\s+fail\s+1 of 2 .*x\.\.\.$", out, re.M)


def test_text_color_is_optional() -> None:
    plain = render(sample_report(), "text", verbose=True)
    colored = render(sample_report(), "text", color=True, verbose=True)
    assert ESC not in plain
    assert "\x1b[31mfail" in colored and "\x1b[32mpass" in colored
    assert "\x1b[2mn/a" in colored and "\x1b[2muntestable" in colored
    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == plain


# ---------------------------------------------------------------------------- html


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: list[tuple[str, str]] = []
        self.ids: set[str] = set()
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self._in_style = tag == "style"
        for name, value in attrs:
            self.attrs.append((name, value or ""))
            if name == "id":
                self.ids.add(value or "")

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data


def test_html_is_self_contained_and_escapes_server_text() -> None:
    out = render(sample_report(), "html")
    for needle in ("http://", "https://", "src=", "<link", "<script", "url(", "@import"):
        assert needle not in out.lower(), needle
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert ESC not in out and "\\x1b[2J cleared" in out
    parsed = _Tags()
    parsed.feed(out)
    assert not parsed.tags & {"script", "link", "img", "iframe", "object", "embed", "base",
                              "form", "svg", "video", "audio", "source"}
    assert {"table", "details", "pre", "style"} <= parsed.tags
    for name, value in parsed.attrs:
        assert not name.startswith("on") and name not in ("src", "srcset", "action")
        if name == "href":
            assert value.startswith("#") and value[1:] in parsed.ids
    style = re.sub(r"\s+", " ", parsed.style)
    assert "table-layout: fixed" in style and "width: 100%" in style
    assert "white-space: pre-wrap" in style and "overflow-wrap: anywhere" in style
    sections = [s for s in SECTIONS if any(f.section == s for f in sample_report().findings)]
    assert re.findall(r"<h2>(.*?)</h2>", out)[2:] == sections
    # Evidence folded, a failure's unfolded.
    assert out.count("<details><summary>evidence</summary><pre>") == sum(
        1 for f in sample_report().findings if f.evidence and f.verdict != "fail")
    assert out.count("<details open><summary>evidence</summary><pre>") == sum(
        1 for f in sample_report().findings if f.evidence and f.verdict == "fail")


def test_html_target_url_is_text_not_a_link() -> None:
    out = render(sample_report("http://127.0.0.1:8000/mcp?a=<b>&c"), "html")
    parsed = _Tags()
    parsed.feed(out)
    assert not any("http" in value for _, value in parsed.attrs)
    assert "http://127.0.0.1:8000/mcp?a=&lt;b&gt;&amp;c" in out


# ---------------------------------------------------------------------------- chromium


def test_html_renders_in_chromium_without_sideways_scrolling(tmp_path: Path) -> None:
    exe = find_chromium()
    page = tmp_path / "report.html"
    page.write_text(render(sample_report(), "html"), encoding="utf-8")

    # (a) A real picture, 1024 pixels wide.
    png = tmp_path / "report.png"
    width, height, size = screenshot(exe, tmp_path / "profile-shot", page.as_uri(), png)
    assert width == 1024 and height > 0 and size > 10_000
    if target := os.environ.get("MCPKIT_SCREENSHOT"):
        shutil.copyfile(png, target)

    # (b) The document is no wider than the window, with every evidence block unfolded.
    scroll_width, client_width = widths(exe, tmp_path / "profile-dom", page)
    assert 900 <= client_width <= 1024
    assert scroll_width <= client_width, f"scrollWidth {scroll_width} > {client_width}"
