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
- ``sarif`` and ``junit``: for CI (:mod:`mcpkit.check.report_ci`).

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
import textwrap
from collections.abc import Callable, Iterable, Sequence

import orjson

from ..protocol.text import visible as _safe
from . import report_ci
from .model import LEVELS, VERDICTS, EraSummary, Finding, Report
from .rules import SECTIONS, matrix

FORMATS = ("text", "json", "markdown", "html", "csv", "sarif", "junit")

WIDTH = 100
"""Columns of the text report."""

EVIDENCE_LINES = 6
"""Lines of evidence the text report shows per failure."""

NOTES_LIMIT = 300
"""Characters of the CSV ``Notes`` column."""

_ERA_ORDER = {"stateful": 0, "stateless": 1, None: 2}
_SEVERITY = {v: i for i, v in enumerate(VERDICTS)}  # fail, pass, n/a, untestable: worst first


def render(report: Report, fmt: str, *, color: bool = False, verbose: bool = False) -> str:
    """``report`` as ``fmt`` (one of :data:`FORMATS`); ``color`` and ``verbose`` (every
    row, the evidence of every failure) only affect ``text``."""
    if fmt == "text":
        return _text(report, color) if verbose else _brief(report, color)
    if fmt == "json":
        return _json(report)
    if fmt == "markdown":
        return _markdown(report)
    if fmt == "html":
        return _html(report)
    if fmt == "csv":
        return _csv(report)
    if fmt == "sarif":
        return report_ci.sarif([report], version=report.checker_version)
    if fmt == "junit":
        return report_ci.junit([report])
    raise ValueError(f"unknown report format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _json(report: Report) -> str:
    data = orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    return data.decode("utf-8") + "\n"


# ---------------------------------------------------------------------------- shared


def _sections(report: Report) -> list[tuple[str, list[Finding]]]:
    """Non-empty sections in report order, findings grouped by rule (in order of first
    appearance) and, within a rule, by era. Unknown sections follow the known ones."""
    first: dict[str, int] = {}
    for i, f in enumerate(report.findings):
        first.setdefault(f.rule, i)
    ordered = sorted(report.findings, key=lambda f: (first[f.rule], _ERA_ORDER.get(f.era, 3)))
    names = list(SECTIONS)
    for f in ordered:
        if f.section not in names:
            names.append(f.section)
    out = []
    for name in names:
        found = [f for f in ordered if f.section == name]
        if found:
            out.append((name or "Other", found))
    return out


def _tally(findings: Iterable[Finding]) -> dict[str, int]:
    tally: dict[str, int] = dict.fromkeys(VERDICTS, 0)
    for f in findings:
        tally[f.verdict] += 1
    return tally


def _tally_text(tally: dict[str, int]) -> str:
    return ", ".join(f"{n} {v}" for v, n in tally.items() if n)


def _era_label(era: str | None) -> str:
    return era or "-"


def _server_name(e: EraSummary) -> str:
    info = e.server_info or {}
    parts = [str(info[k]) for k in ("name", "version") if info.get(k) not in (None, "")]
    return " ".join(parts)


def _era_line(e: EraSummary) -> str:
    """``served, revision 2025-11-25, name 1.0, 25 messages checked - note``."""
    parts = ["served" if e.served else "not served"]
    if e.revision:
        parts.append(f"revision {e.revision}")
    if name := _server_name(e):
        parts.append(name)
    if e.messages_checked:
        parts.append(f"{e.messages_checked} messages checked")
    line = ", ".join(parts)
    return f"{line} - {e.note}" if e.note else line


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def _cut(text: str, limit: int, marker: str = "…") -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(marker))] + marker


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _tally_levels(report: Report) -> dict[str, int]:
    counts = report.counts()
    return {lv: counts[lv]["fail"] for lv in LEVELS}


# ---------------------------------------------------------------------------- text

_ANSI = {"fail": "31", "pass": "32", "n/a": "2", "untestable": "2", "bold": "1",
         "MUST": "1;31", "SHOULD": "33", "MAY": "36", "LINT": "36"}


def _painter(color: bool) -> Callable[[str, str], str]:
    def paint(text: str, key: str) -> str:
        return f"\x1b[{_ANSI[key]}m{text}\x1b[0m" if color and key in _ANSI else text
    return paint


def _head(report: Report, paint: Callable[[str, str], str]) -> list[str]:
    """The checker and target, the run's facts, one line per era, the counts."""
    out: list[str] = []
    checker = f"mcpkit check {report.checker_version}".rstrip()
    title = _wrap(f"{checker}: {_safe(_one_line(report.target))}", "", "    ")
    out += [paint(line, "bold") for line in title.split("\n")]
    rows = [("transport", report.transport), ("call tools", report.call_tools),
            ("duration", _duration(report.duration_s))]
    rows += [(e.era, _era_line(e)) for e in report.eras]
    for key, value in rows:
        out.append(_wrap(_safe(_one_line(value)), f"  {key:<11} ", " " * 14))

    # Summary.
    counts = report.counts()
    failed = {lv: counts[lv]["fail"] for lv in LEVELS}
    total = _tally(report.findings)
    verdict = (paint(f"{failed['MUST']} MUST", "MUST" if failed["MUST"] else "pass") + ", "
               + paint(f"{failed['SHOULD']} SHOULD", "SHOULD" if failed["SHOULD"] else "pass"))
    others = ", ".join(f"{failed[lv]} {lv}" for lv in ("MAY", "LINT"))
    out += ["", f"Failed: {verdict} (and {others}).",
            f"Verdicts: {_tally_text(total) or 'none'} ({len(report.findings)} findings)."]
    return out


def _text(report: Report, color: bool) -> str:
    paint = _painter(color)
    out = _head(report, paint)
    failures = report.failures()
    if failures:
        out += ["", paint("Failures, worst first", "bold")]
        for f in failures:
            head = f"  {paint(f'{f.level:<6}', f.level)} {_safe(f.rule)}"
            out.append(f"{head} [{_era_label(f.era)}]" if f.era else head)
            out.append(_wrap(_safe(_cut(_one_line(f.message), 1000, "...")), "      ", "      "))
            out += _evidence_excerpt(f.evidence)
    else:
        out += ["", paint("No failures.", "pass")]

    for name, found in _sections(report):
        out += ["", paint(f"== {name} ({_tally_text(_tally(found))})", "bold")]
        out += _text_table(found, paint)
    return "\n".join(out) + "\n"


BRIEF_MESSAGE_LINES = 2
"""Lines of a failure's message in the default text report."""

BRIEF_WRAP_UNDER = 20
"""Past this many failures the default text report gives each one line, not two."""


def _brief(report: Report, color: bool) -> str:
    """The default text report: one screen for a typical server. What failed, grouped by
    level, each failure's message in at most two lines without evidence; one tally line
    per section; the way to the rest (``--verbose``)."""
    paint = _painter(color)
    out = _head(report, paint)
    failures = report.failures()
    by_level: dict[str, list[Finding]] = {}
    for f in failures:
        by_level.setdefault(f.level, []).append(f)
    rows = {lv: _merged(sorted(found, key=lambda f: (f.rule, _ERA_ORDER.get(f.era, 3))))
            for lv, found in by_level.items()}
    lines = BRIEF_MESSAGE_LINES if sum(map(len, rows.values())) <= BRIEF_WRAP_UNDER else 1
    if not failures:
        out += ["", paint("No failures.", "pass")]
    for level in LEVELS:
        if level not in rows:
            continue
        out += ["", paint(f"{level} ({len(by_level[level])} failed)", level)]
        rule_w = min(32, max(len(f.rule) for f, _ in rows[level]))
        for f, era in rows[level]:
            left = f"  {_safe(_cut(f.rule, rule_w, '...')):<{rule_w}}  {era:<9}  "
            out += _clipped(_safe(_one_line(f.message)), left, lines)
    sections = _sections(report)
    if sections:
        out += ["", paint("Sections", "bold")]
        name_w = max(len(name) for name, _ in sections)
        for name, found in sections:
            out.append(f"  {_safe(name):<{name_w}}  {_tally_text(_tally(found))}")
    out += ["", "--verbose: every finding (passes, n/a and untestable too) and the evidence "
            "of each failure."]
    return "\n".join(out) + "\n"


def _clipped(text: str, first: str, lines: int) -> list[str]:
    """``text`` wrapped after ``first`` (continued under its end) in at most ``lines``
    lines, the last cut with ``...`` when more would follow."""
    rest = " " * len(first)
    wrapped = textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest,
                            break_long_words=True, break_on_hyphens=False) or [first.rstrip()]
    if len(wrapped) <= lines:
        return wrapped
    kept = wrapped[:lines]
    kept[-1] = _cut(kept[-1], WIDTH - 3, "") + "..."
    return kept


def _wrap(text: str, first: str, rest: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=first, subsequent_indent=rest,
                         break_long_words=True, break_on_hyphens=False) or first.rstrip()


def _evidence_excerpt(evidence: str) -> list[str]:
    """At most :data:`EVIDENCE_LINES` lines of evidence, long lines folded at the width."""
    if not evidence.strip():
        return []
    prefix = "      | "
    room = WIDTH - len(prefix)
    lines: list[str] = []
    for raw in _safe(evidence.strip("\n")).split("\n"):
        raw = raw.rstrip()
        lines += [raw[i:i + room] for i in range(0, len(raw), room)] or [""]
    if len(lines) > EVIDENCE_LINES:
        more = len(lines) - (EVIDENCE_LINES - 1)
        lines = [*lines[: EVIDENCE_LINES - 1], f"... ({more} more lines)"]
    return [prefix + line for line in lines]


def _merged(found: Sequence[Finding]) -> list[tuple[Finding, str]]:
    """``(finding, era label)`` rows where the two eras of a rule that agree on verdict and
    message share one row, era ``both`` (for the tables that show no evidence)."""
    rows: list[tuple[Finding, str]] = []
    i = 0
    while i < len(found):
        f = found[i]
        nxt = found[i + 1] if i + 1 < len(found) else None
        same = nxt is not None and (nxt.rule, nxt.verdict, nxt.level, nxt.message) == (
            f.rule, f.verdict, f.level, f.message)
        if nxt is not None and same and {f.era, nxt.era} == {"stateful", "stateless"}:
            rows.append((f, "both"))
            i += 2
        else:
            rows.append((f, _era_label(f.era)))
            i += 1
    return rows


def _text_table(found: Sequence[Finding], paint: Callable[[str, str], str]) -> list[str]:
    """One line per finding: rule, era, verdict, message."""
    rows = _merged(found)
    rule_w = min(32, max(len(f.rule) for f, _ in rows))
    out = []
    for f, era in rows:
        left = f"  {_safe(_cut(f.rule, rule_w, '...')):<{rule_w}}  {era:<9}  "
        room = max(20, WIDTH - len(left) - 12)
        msg = _safe(_cut(_one_line(f.message), room, "..."))
        verdict = f"{f.verdict:<10}  " if msg else f.verdict
        out.append(f"{left}{paint(verdict, f.verdict)}{msg}")
    return out


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
    text = _safe(_one_line(text))
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
               f"**duration** {_duration(report.duration_s)} · {_md(checker)}")
    if report.eras:
        out += ["", "| Era | Served | Revision | Server | Messages checked | Note |",
                "|---|---|---|---|---:|---|"]
        for e in report.eras:
            cells = [_md(e.era), "yes" if e.served else "**no**", _md(e.revision or "-"),
                     _md(_server_name(e) or "-"), str(e.messages_checked), _md(e.note)]
            out.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")

    counts = report.counts()
    failed = _tally_levels(report)
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

    for name, found in _sections(report):
        tally = _tally(found)
        out += ["", f"## {_md(name)}", "", _tally_text(tally) + ".", ""]
        folded = not tally["fail"]
        if folded:
            out += [f"<details><summary>{len(found)} findings, none failed</summary>", ""]
        out += ["| Rule | Era | Level | Verdict | Message |", "|---|---|---|---|---|"]
        for f, era in _merged(found):
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
        f"<title>{_e(checker)}: {_e(_one_line(report.target))}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        "<h1>mcpkit check report</h1>",
        f'<p class="target"><code>{_e(report.target)}</code></p>',
        '<section class="card"><dl class="meta">',
    ]
    meta = [("Transport", report.transport), ("Call tools", report.call_tools),
            ("Duration", _duration(report.duration_s)), ("Checker", checker)]
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
                f"<td>{_e(_server_name(e) or '-')}</td>"
                f'<td class="num">{e.messages_checked}</td><td>{_e(e.note)}</td></tr>')
        out.append("</tbody></table>")
    out.append("</section>")

    # Summary counts.
    counts = report.counts()
    failed = _tally_levels(report)
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

    for name, found in _sections(report):
        tally = _tally(found)
        chips = " ".join(
            _badge(v, f"{n} {v}") for v, n in tally.items() if n)
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
                f"<td>{_e(_era_label(f.era))}</td><td>{_badge(f.verdict)}</td>"
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
    for f in sorted(found, key=lambda f: (_ERA_ORDER.get(f.era, 3), _SEVERITY[f.verdict])):
        per_era.setdefault(f.era, f)
    if len({(f.verdict, _one_line(f.message)) for f in per_era.values()}) == 1:
        return worst.verdict, _cut(_one_line(worst.message), NOTES_LIMIT)
    same_verdict = len({f.verdict for f in per_era.values()}) == 1
    room = max(60, (NOTES_LIMIT - 25 * len(per_era)) // len(per_era))
    parts = []
    for era, f in per_era.items():
        part = f"{era or 'all'}: {f.verdict}"
        if f.verdict != "pass" or same_verdict:
            part += f" - {_cut(_one_line(f.message), room)}"
        parts.append(part)
    return worst.verdict, _cut("; ".join(parts), NOTES_LIMIT)
