"""``mcpkit check``'s CI options and output: formats for one server or many, baselines.

``cmd_check`` (in :mod:`mcpkit.cli`) builds the target(s) and runs the checks; this module
adds the options that concern what happens to the reports (``--baseline``, ``--pin``, and
``--config``/``--jobs`` for sets of servers) and writes them: one report in any
format, several (a host configuration) as one JSON document (``{"servers": [...]}``), one
SARIF log, one JUnit file, or the human formats one after the other. The exit status is 1
when a failure at the ``--fail-on`` level is not in the baseline (every failure counts
without one).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from ..check.model import Report


class CheckUsageError(Exception):
    """A baseline that cannot be read, or a format that cannot hold several servers."""


def add_args(chk: argparse.ArgumentParser) -> None:
    """The CI and multi-server options of ``mcpkit check``."""
    chk.add_argument("--baseline", metavar="FILE",
                     help="an earlier --format json (or sarif) report: fail only on failures "
                     "not in it")
    chk.add_argument("--config", metavar="FILE|auto",
                     help="check every server of a host configuration (Claude Desktop, Claude "
                     "Code, Cursor, VS Code); 'auto' reads every one found at its default place")
    chk.add_argument("--pin", metavar="FILE",
                     help="record a hash of every tool, prompt and template definition in FILE; "
                     "later runs report what was added, removed or changed")
    chk.add_argument("--jobs", type=int, default=4, metavar="N",
                     help="with --config: servers checked at once (default 4)")
    chk.add_argument("-v", "--verbose", action="store_true",
                     help="--format text: every finding (passes, n/a, untestable) and the "
                     "evidence of each failure, not only what failed")


def _join(reports: Sequence[Report], fmt: str, color: bool, verbose: bool) -> str:
    """``reports`` as one document of ``fmt``; not ``sarif``, which :func:`output` writes."""
    from ..check.report import ci as report_ci
    from ..check.report import render

    if len(reports) == 1 and not reports[0].server:
        return render(reports[0], fmt, color=color, verbose=verbose)
    if fmt == "json":
        doc = {"servers": [r.to_json() for r in reports]}
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    if fmt == "junit":
        return report_ci.junit(reports)
    if fmt == "csv":
        raise CheckUsageError("--format csv writes one server's compliance matrix; use json, "
                         "sarif or junit with --config")
    parts = [render(r, fmt, color=color, verbose=verbose) for r in reports]
    sep = {"html": "\n<hr>\n", "markdown": "\n---\n\n"}.get(fmt, "\n" + "=" * 100 + "\n\n")
    return sep.join(parts)


@dataclass(slots=True)
class Prepared:
    """What ``--baseline`` and ``--pin`` hold, read before the checks run (so that a wrong
    path fails at once, not after minutes of probing)."""

    known: set[str] | None = None  # failure identities of the baseline
    pins: dict[str, Any] | None = None  # the pin file's servers


def prepare(args: argparse.Namespace) -> Prepared:
    from ..check import pinning
    from ..check.report import ci as report_ci

    try:
        known = report_ci.baseline_keys(args.baseline) if args.baseline else None
        pins = pinning.load(args.pin) if args.pin else None
    except (report_ci.BaselineError, pinning.PinError) as exc:
        raise CheckUsageError(str(exc)) from exc
    return Prepared(known, pins)


def output(args: argparse.Namespace, reports: Sequence[Report], prep: Prepared,
           config: str | None = None) -> int:
    """Judge the pins, write ``reports`` as ``--format`` to ``--out`` or stdout; the exit
    status (failures at ``--fail-on`` not in the baseline)."""
    from ..check import pinning
    from ..check.model import fail_levels
    from ..check.report import ci as report_ci

    known = prep.known
    if prep.pins is not None:
        try:
            pinning.apply(reports, args.pin, prep.pins)
        except pinning.PinError as exc:
            raise CheckUsageError(str(exc)) from exc
    color = args.out is None and args.format == "text" and sys.stdout.isatty() and (
        "NO_COLOR" not in os.environ)
    if args.format == "sarif":
        text = report_ci.sarif(reports, version=reports[0].checker_version if reports else "",
                               config=config, known=known)
    else:
        text = _join(reports, args.format, color, args.verbose)
    failed = [f for r in reports for f in r.failures()]
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            out.write(text)
        sys.stderr.write(
            f"mcpkit check: report written to {args.out} ({len(failed)} failed finding(s), "
            f"{sum(len(r.findings) for r in reports)} in all)\n")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    levels = fail_levels(args.fail_on)
    if known is None:
        return 1 if any(r.failures(levels) for r in reports) else 0
    new = report_ci.new_failures(reports, known, levels)
    old = sum(len(r.failures(levels)) for r in reports) - len(new)
    sys.stderr.write(f"mcpkit check: {len(new)} new failure(s), {old} already in the baseline "
                     f"{args.baseline}\n")
    for r, finding in new[:20]:
        sys.stderr.write(f"  new: {report_ci.server_of(r)} {finding.era or ''} "
                         f"{finding.rule}\n")
    return 1 if new else 0


def run_config(args: argparse.Namespace, prep: Prepared) -> int:
    """``mcpkit check --config FILE|auto``: check every server of the configuration(s)."""
    import anyio

    from ..check.fleet import check_entries
    from ..check.hosts import HostConfigError, ServerEntry, auto_paths, read_config

    if args.rest or args.stdio:
        raise CheckUsageError("--config checks the servers of a configuration; give no "
                              "TARGET or --stdio with it")
    if args.jobs < 1:
        raise CheckUsageError("--jobs must be at least 1")
    paths = auto_paths() if args.config == "auto" else [Path(args.config)]
    if not paths:
        raise CheckUsageError("no host configuration found at the default places (Claude "
                              "Desktop, Claude Code, Cursor, VS Code; user and project)")
    entries: list[ServerEntry] = []
    try:
        for path in paths:
            entries += read_config(path)
    except HostConfigError as exc:
        raise CheckUsageError(str(exc)) from exc
    names = [e.name for e in entries]
    for e in entries:  # the same name in two files: say which file
        if names.count(e.name) > 1:
            e.name = f"{e.name} [{e.source}]"
    sys.stderr.write(f"mcpkit check: {len(entries)} server(s) in "
                     f"{', '.join(str(p) for p in paths)}\n")
    reports = anyio.run(lambda: check_entries(entries, args.era, args.call_tools,
                                              jobs=args.jobs, timeout=args.timeout))
    return output(args, reports, prep, config=str(paths[0]) if len(paths) == 1 else None)
