"""Render a check :class:`~mcpkit.check.model.Report` for people and for machines.

One report, five shapes, each for where it will be read:

- ``text``: a terminal, cut to 100 columns, optional ANSI colour. By default one screen:
  the header, the counts, what failed grouped by level (MUST, SHOULD, MAY, LINT; a
  rule that fails alike in both eras on one row, its message in at most two lines) and one
  tally line per section. ``verbose`` shows the whole report instead: every failure
  with an evidence excerpt, then one line per finding (passes, n/a and untestable too),
  section by section.
- ``json``: the report's own JSON (:meth:`Report.to_json`), for tools and CI.
- ``markdown``: a pull-request comment. Counts, the failures with their evidence folded in
  ``<details>``, a table per section (sections without failures folded).
- ``html``: one self-contained file to open or attach: inline CSS, no scripts, no fonts,
  images or other network assets; it wraps long evidence rather than scroll sideways.
- ``csv``: the compliance matrix written back in its own columns, ``Tested`` filled in.
- ``sarif`` and ``junit``: for CI (:mod:`mcpkit.check.report.ci`).

Evidence and messages quote what the server sent, so they are untrusted: HTML escapes every
string, Markdown escapes table and HTML syntax and fences evidence so it cannot close the
fence, and the text format shows control characters (ANSI escapes, bidi overrides) as
visible ``\\xNN`` sequences instead of letting them act on the terminal.
"""

from __future__ import annotations

import csv
import html
import io
import re

import orjson

from ...protocol.text import visible as _safe
from ..model import LEVELS, VERDICTS, Finding, Report
from ..rules import matrix
from . import ci
from .common import (
    ERA_ORDER,
    cut,
    duration,
    era_label,
    merged,
    one_line,
    sections,
    server_name,
    tally,
    tally_levels,
    tally_text,
)
from .text import brief, full

FORMATS = ("text", "json", "markdown", "html", "csv", "sarif", "junit")

NOTES_LIMIT = 300
"""Characters of the CSV ``Notes`` column."""

_SEVERITY = {v: i for i, v in enumerate(VERDICTS)}  # fail, pass, n/a, untestable: worst first


def render(report: Report, fmt: str, *, color: bool = False, verbose: bool = False) -> str:
    """``report`` as ``fmt`` (one of :data:`FORMATS`); ``color`` and ``verbose`` (every
    row, the evidence of every failure) only affect ``text``."""
    if fmt == "text":
        return full(report, color) if verbose else brief(report, color)
    if fmt == "json":
        return _json(report)
    if fmt == "markdown":
        return _markdown(report)
    if fmt == "html":
        return _html(report)
    if fmt == "csv":
        return _csv(report)
    if fmt == "sarif":
        return ci.sarif([report], version=report.checker_version)
    if fmt == "junit":
        return ci.junit([report])
    raise ValueError(f"unknown report format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _json(report: Report) -> str:
    data = orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    return data.decode("utf-8") + "\n"



# ---------------------------------------------------------------------------- markdown

_MD_ESCAPE = re.compile(r"([\\`*_\[\]#~])")
_MD_VERDICT = {"fail": "❌ **fail**", "pass": "✅ pass", "n/a": "⚪ n/a",
               "untestable": "❔ untestable"}


def _md(text: str) -> str:
    """Inline Markdown text: HTML and Markdown syntax escaped, lines joined with ``<br>``."""
    text = html.escape(_safe(text.strip()), quote=False)
    text = _MD_ESCAPE.sub(r"\\\1", text)
    return "<br>".join(line.strip() for line in text.splitlines())


def _md_code(text: str) -> str:
    """An inline code span holding ``text`` (one line), whatever backticks it contains."""
    text = _safe(one_line(text))
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_cell(text: str) -> str:
    """``text`` fit for a table cell: GFM splits cells on ``|`` even inside code spans."""
    return text.replace("|", "\\|")


def _md_fence(text: str, indent: str = "") -> list[str]:
    text = _safe(text)
    runs = [len(m) for m in re.findall(r"`{3,}", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    body = [indent + line if line else "" for line in text.strip("\n").split("\n")]
    return [indent + fence, *body, indent + fence]


def _markdown(report: Report) -> str:
    out = ["# mcpkit check report", ""]
    checker = f"mcpkit check {report.checker_version}".rstrip()
    out.append(f"**Target** {_md_code(report.target)} ({_md(report.transport)}) · "
               f"**call tools** {_md(report.call_tools)} · "
               f"**duration** {duration(report.duration_s)} · {_md(checker)}")
    if report.eras:
        out += ["", "| Era | Served | Revision | Server | Messages checked | Note |",
                "|---|---|---|---|---:|---|"]
        for e in report.eras:
            cells = [_md(e.era), "yes" if e.served else "**no**", _md(e.revision or "-"),
                     _md(server_name(e) or "-"), str(e.messages_checked), _md(e.note)]
            out.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")

    counts = report.counts()
    failed = tally_levels(report)
    out += ["", "## Summary", ""]
    if failed["MUST"] or failed["SHOULD"]:
        out.append(f"**{failed['MUST']} MUST and {failed['SHOULD']} SHOULD failure(s)**, "
                   f"{failed['MAY']} MAY and {failed['LINT']} LINT.")
    else:
        out.append(f"No MUST or SHOULD failures; {failed['MAY']} MAY and "
                   f"{failed['LINT']} LINT.")
    out += ["", "| Level | " + " | ".join(VERDICTS) + " |",
            "|---|" + "---:|" * len(VERDICTS)]
    for lv in LEVELS:
        cells = [f"**{n}**" if v == "fail" and n else str(n) for v, n in counts[lv].items()]
        out.append(f"| {lv} | " + " | ".join(cells) + " |")

    failures = report.failures()
    out += ["", "## Failures", ""]
    if not failures:
        out.append("None.")
    for f in failures:
        era = f" ({_md(f.era)})" if f.era else ""
        out.append(f"- **{f.level}** {_md_code(f.rule)}{era}: {_md(f.message)}")
        if f.evidence.strip():
            out += ["", "  <details><summary>evidence</summary>", "",
                    *_md_fence(f.evidence, "  "), "", "  </details>", ""]

    for name, found in sections(report):
        counted = tally(found)
        out += ["", f"## {_md(name)}", "", tally_text(counted) + ".", ""]
        folded = not counted["fail"]
        if folded:
            out += [f"<details><summary>{len(found)} findings, none failed</summary>", ""]
        out += ["| Rule | Era | Level | Verdict | Message |", "|---|---|---|---|---|"]
        for f, era in merged(found):
            cells = [_md_code(f.rule), _md(era), f.level, _MD_VERDICT[f.verdict], _md(f.message)]
            out.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
        if folded:
            out += ["", "</details>"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- html

_CSS = """
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; background: #f5f6f8; color: #1f2328;
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
    "Liberation Sans", "DejaVu Sans", sans-serif;
  overflow-wrap: anywhere; word-break: break-word;
}
main { max-width: 1000px; margin: 0 auto; padding: 24px 16px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 0; }
code, pre, .mono {
  font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono",
    "DejaVu Sans Mono", monospace;
  font-size: 12.5px;
}
.target { font-size: 15px; margin: 0 0 14px; }
.card {
  background: #fff; border: 1px solid #d8dee4; border-radius: 8px;
  padding: 14px 16px; margin: 0 0 16px;
}
.card > header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 12px;
  margin: 0 0 10px; }
.muted { color: #59636e; }
.small { font-size: 12.5px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.meta dt { color: #59636e; }
dl.meta dd { margin: 0; min-width: 0; }
table { width: 100%; table-layout: fixed; border-collapse: collapse; }
th, td {
  text-align: left; vertical-align: top; padding: 6px 8px;
  border-top: 1px solid #e6e9ed; overflow-wrap: anywhere; word-break: break-word;
}
thead th { border-top: 0; font-size: 12px; font-weight: 600; color: #59636e;
  text-transform: uppercase; letter-spacing: .03em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.zero { color: #aeb5bd; }
tr:target td { background: #fff8c5; }
tr.fail td:first-child { box-shadow: inset 3px 0 0 #cf222e; }
.badge {
  display: inline-block; padding: 0 8px; border-radius: 999px; font-size: 12px;
  font-weight: 600; line-height: 20px; white-space: nowrap;
}
.v-fail { background: #ffebe9; color: #a40e26; border: 1px solid #ffcecb; }
.v-pass { background: #dafbe1; color: #116329; border: 1px solid #aceebb; }
.v-na { background: #eef1f4; color: #59636e; border: 1px solid #d8dee4; }
.v-untestable { background: #fff1c2; color: #7d4e00; border: 1px solid #f2d98a; }
.l-MUST { background: #cf222e; color: #fff; }
.l-SHOULD { background: #bc4c00; color: #fff; }
.l-MAY, .l-LINT { background: #57606a; color: #fff; }
.headline { font-size: 15px; margin: 0 0 10px; }
.headline.bad { color: #a40e26; }
.headline.good { color: #116329; }
ol.failures { margin: 0; padding: 0 0 0 22px; }
ol.failures li { margin: 0 0 8px; }
ol.failures a { color: inherit; text-decoration: none; border-bottom: 1px dotted #8c959f; }
.title { color: #59636e; font-size: 12.5px; margin: 0 0 2px; }
details { margin: 4px 0 0; }
summary { cursor: pointer; color: #0550ae; font-size: 12.5px; }
pre {
  margin: 4px 0 0; padding: 8px 10px; background: #f6f8fa; border: 1px solid #e6e9ed;
  border-radius: 6px; white-space: pre-wrap; overflow-wrap: anywhere; word-break: break-word;
  line-height: 1.4;
}
footer { color: #59636e; font-size: 12px; text-align: center; }
.level { color: #59636e; font-size: 11.5px; letter-spacing: .03em; margin-top: 2px; }
@media print {
  body { background: #fff; }
  .card { break-inside: avoid-page; }
}
"""

_VERDICT_CLASS = {"fail": "v-fail", "pass": "v-pass", "n/a": "v-na", "untestable": "v-untestable"}


def _e(text: object) -> str:
    return html.escape(_safe(str(text)), quote=True)


def _badge(verdict: str, label: object = None) -> str:
    text = verdict if label is None else label
    return f'<span class="badge {_VERDICT_CLASS[verdict]}">{_e(text)}</span>'


def _html(report: Report) -> str:
    ids = {id(f): i for i, f in enumerate(report.findings)}
    checker = f"mcpkit check {report.checker_version}".rstrip()
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(checker)}: {_e(one_line(report.target))}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        "<h1>mcpkit check report</h1>",
        f'<p class="target"><code>{_e(report.target)}</code></p>',
        '<section class="card"><dl class="meta">',
    ]
    meta = [("Transport", report.transport), ("Call tools", report.call_tools),
            ("Duration", duration(report.duration_s)), ("Checker", checker)]
    out += [f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in meta]
    out.append("</dl>")
    if report.eras:
        out += ['<table class="eras" style="margin-top:10px">',
                '<colgroup><col style="width:14%"><col style="width:12%">'
                '<col style="width:15%"><col style="width:25%"><col style="width:12%"><col>'
                "</colgroup>",
                "<thead><tr><th>Era</th><th>Served</th><th>Revision</th><th>Server</th>"
                '<th class="num">Messages</th><th>Note</th></tr></thead><tbody>']
        for e in report.eras:
            served = _badge("pass", "yes") if e.served else _badge("n/a", "no")
            out.append(
                f"<tr><td>{_e(e.era)}</td><td>{served}</td>"
                f'<td class="mono">{_e(e.revision or "-")}</td>'
                f"<td>{_e(server_name(e) or '-')}</td>"
                f'<td class="num">{e.messages_checked}</td><td>{_e(e.note)}</td></tr>')
        out.append("</tbody></table>")
    out.append("</section>")

    # Summary counts.
    counts = report.counts()
    failed = tally_levels(report)
    bad = failed["MUST"] or failed["SHOULD"]
    headline = (f"{failed['MUST']} MUST and {failed['SHOULD']} SHOULD failure(s); "
                f"{failed['MAY']} MAY and {failed['LINT']} LINT." if bad else
                f"No MUST or SHOULD failures; {failed['MAY']} MAY and {failed['LINT']} LINT.")
    out += ['<section class="card"><header><h2>Summary</h2>'
            f'<span class="muted">{len(report.findings)} findings</span></header>',
            f'<p class="headline {"bad" if bad else "good"}">{_e(headline)}</p>',
            '<table class="counts"><thead><tr><th>Level</th>'
            + "".join(f'<th class="num">{_e(v)}</th>' for v in VERDICTS)
            + "</tr></thead><tbody>"]
    for lv in LEVELS:
        cells = "".join(
            f'<td class="num{"" if n else " zero"}">'
            f"{_badge(v, n) if n and v == 'fail' else n}</td>"
            for v, n in counts[lv].items())
        out.append(f"<tr><th>{_e(lv)}</th>{cells}</tr>")
    out.append("</tbody></table></section>")

    failures = report.failures()
    if failures:
        out += ['<section class="card"><header><h2>Failures, worst first</h2>'
                f'<span class="muted">{len(failures)}</span></header><ol class="failures">']
        for f in failures:
            era = f' <span class="muted">({_e(f.era)})</span>' if f.era else ""
            out.append(
                f'<li><span class="badge l-{_e(f.level)}">{_e(f.level)}</span> '
                f'<a href="#f{ids[id(f)]}"><code>{_e(f.rule)}</code></a>{era} '
                f"{_e(f.message)}</li>")
        out.append("</ol></section>")

    for name, found in sections(report):
        counted = tally(found)
        chips = " ".join(
            _badge(v, f"{n} {v}") for v, n in counted.items() if n)
        out += [f'<section class="card"><header><h2>{_e(name)}</h2><span>{chips}</span>'
                "</header>",
                '<table class="findings"><colgroup>'
                '<col style="width:25%"><col style="width:10%"><col style="width:12%"><col>'
                "</colgroup>",
                "<thead><tr><th>Rule</th><th>Era</th><th>Verdict</th><th>Message</th></tr>"
                "</thead><tbody>"]
        for f in found:
            title = " — ".join(_e(t) for t in (f.title, f.spec) if t)
            cell = [f'<div class="title">{title}</div>' if title else "",
                    f"<div>{_e(f.message)}</div>"]
            if f.evidence.strip():
                # A failure's evidence is shown, the rest folded.
                opened = " open" if f.verdict == "fail" else ""
                cell.append(f"<details{opened}><summary>evidence</summary>"
                            f"<pre>{_e(f.evidence)}</pre></details>")
            out.append(
                f'<tr id="f{ids[id(f)]}" class="{_e(f.verdict.replace("/", ""))}">'
                f'<td><code>{_e(f.rule)}</code><div class="level">{_e(f.level)}</div></td>'
                f"<td>{_e(era_label(f.era))}</td><td>{_badge(f.verdict)}</td>"
                f"<td>{''.join(cell)}</td></tr>")
        out.append("</tbody></table></section>")
    out += [f"<footer>{_e(checker)}</footer>", "</main>", "</body>", "</html>"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- csv


def _csv(report: Report) -> str:
    by_rule: dict[str, list[Finding]] = {}
    for f in report.findings:
        by_rule.setdefault(f.rule, []).append(f)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["ID", "Type", "Section", "Requirement", "Tested", "Notes"])
    for row in matrix():
        tested, notes = _matrix_verdict(by_rule.get(row.id, []))
        w.writerow([row.id, row.level, row.section, row.requirement, tested, notes])
    return buf.getvalue()


def _matrix_verdict(found: list[Finding]) -> tuple[str, str]:
    """``(Tested, Notes)`` for one matrix row from its findings in every era."""
    if not found:
        return "", "not checked"
    worst = min(found, key=lambda f: _SEVERITY[f.verdict])
    per_era: dict[str | None, Finding] = {}
    for f in sorted(found, key=lambda f: (ERA_ORDER.get(f.era, 3), _SEVERITY[f.verdict])):
        per_era.setdefault(f.era, f)
    if len({(f.verdict, one_line(f.message)) for f in per_era.values()}) == 1:
        return worst.verdict, cut(one_line(worst.message), NOTES_LIMIT)
    same_verdict = len({f.verdict for f in per_era.values()}) == 1
    room = max(60, (NOTES_LIMIT - 25 * len(per_era)) // len(per_era))
    parts = []
    for era, f in per_era.items():
        part = f"{era or 'all'}: {f.verdict}"
        if f.verdict != "pass" or same_verdict:
            part += f" - {cut(one_line(f.message), room)}"
        parts.append(part)
    return worst.verdict, cut("; ".join(parts), NOTES_LIMIT)
