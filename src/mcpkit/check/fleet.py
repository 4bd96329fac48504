"""Check every server of a host configuration, and the rules that span servers.

:func:`check_entries` runs :func:`~mcpkit.check.runner.run_check` on each
:class:`~mcpkit.check.hosts.ServerEntry`, at most ``jobs`` at once, each within a
deadline; a server that cannot start is what its report says (``M042`` fails: the
handshake was not served), an entry that names no command or URL fails ``CONFIG.entry``,
and a check that outlives its deadline is cancelled (its processes are ended by the
channels' own cleanup) and fails ``CONFIG.entry`` too. Nothing a server does raises.

:func:`cross_server` then judges what no single server shows, on the definitions each
report kept (the host hands all of them to one model):

* ``CROSS.shadowing``: a tool name offered by two servers: the model cannot tell them
  apart, and a malicious server shadows a trusted one (Invariant Labs, cross-server tool
  shadowing, 2025-04).
* ``CROSS.reference``: a description of one server naming another server's tool (``when
  you call send_email, also ...``): one server steering the use of another's tools, the
  same advisory's attack. Only distinctive names count (with ``_``, ``-``, ``.`` or an
  inner capital, at least 5 characters), so ``search`` or ``get`` in prose does not.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

import anyio

from .hosts import ServerEntry
from .lint.common import name_list, shorten, to_json
from .model import Finding, Report
from .rules import finding
from .runner import CallTools, EraChoice, run_check
from .sec.common import excerpt
from .target import Target

DEADLINE = 120.0
"""Seconds one server's whole check may take in a configuration run."""

CROSS_SERVER = "(across servers)"
"""The ``server`` of the report holding the cross-server findings."""


def _target(e: ServerEntry, timeout: float) -> Target:
    if e.command is not None:
        return Target(command=e.command, timeout=timeout, cwd=e.cwd,
                      env=e.env or None)
    return Target(url=e.url, headers=dict(e.headers), timeout=timeout)


def _entry_report(e: ServerEntry, call_tools: str, message: str, evidence: str) -> Report:
    r = Report(e.describe(), "http" if e.url else "stdio", call_tools, server=e.name)
    r.findings.append(finding("CONFIG.entry", "fail", message, evidence))
    return r


async def _check_one(e: ServerEntry, era: EraChoice, call_tools: CallTools, timeout: float,
                     deadline: float) -> Report:
    if e.problem:
        return _entry_report(e, call_tools, f"Server {e.name!r} in {e.source} cannot be "
                             f"started: {e.problem}. Give it a \"command\" (stdio) or a "
                             "\"url\" (HTTP).", "")
    started = time.monotonic()
    report: Report | None = None
    with anyio.move_on_after(deadline):
        report = await run_check(_target(e, timeout), era, call_tools)
    if report is None:
        return _entry_report(e, call_tools, f"Checking server {e.name!r} took longer than "
                             f"{deadline:.0f} s and was stopped; a server should answer each "
                             "request promptly.", f"elapsed {time.monotonic() - started:.1f} s")
    report.server = e.name
    return report


async def check_entries(entries: Sequence[ServerEntry], era: EraChoice = "both",
                        call_tools: CallTools = "readonly", *, jobs: int = 4,
                        timeout: float = 5.0, deadline: float = DEADLINE) -> list[Report]:
    """One report per entry (in order), then, per configuration file, one with the
    cross-server findings of its servers."""
    reports: list[Report | None] = [None] * len(entries)
    limiter = anyio.CapacityLimiter(max(1, jobs))

    async def one(i: int, e: ServerEntry) -> None:
        async with limiter:
            reports[i] = await _check_one(e, era, call_tools, timeout, deadline)

    async with anyio.create_task_group() as tg:
        for i, e in enumerate(entries):
            tg.start_soon(one, i, e)
    done = [r for r in reports if r is not None]
    version = next((r.checker_version for r in done if r.checker_version), "")
    crosses = []
    sources = list(dict.fromkeys(e.source for e in entries))
    for source in sources:  # one model sees one configuration's servers together
        group = [r for r, e in zip(done, entries, strict=True) if e.source == source]
        name = CROSS_SERVER if len(sources) == 1 else f"{CROSS_SERVER} {source}"
        cross = Report(source, "stdio", call_tools, server=name, checker_version=version)
        cross.findings = cross_server(group)
        crosses.append(cross)
    return [*done, *crosses]


def _tools(report: Report) -> list[tuple[str, dict[str, Any]]]:
    return [(t["name"], t) for t in report.definitions.get("tools", [])
            if isinstance(t, dict) and isinstance(t.get("name"), str)]


def _shadowing(reports: Sequence[Report]) -> Finding:
    owners: dict[str, list[str]] = {}
    for r in reports:
        for name in dict(_tools(r)):
            owners.setdefault(name, []).append(r.server)
    listed = sum(1 for r in reports if r.definitions.get("tools"))
    if listed < 2:
        return finding("CROSS.shadowing", "n/a", "Fewer than two servers list tools.")
    shared = {n: s for n, s in owners.items() if len(s) > 1}
    if not shared:
        return finding("CROSS.shadowing", "pass",
                       f"{len(owners)} tool names across {listed} servers, none offered twice.")
    shown = [f"{shorten(n)} ({', '.join(s)})" for n, s in shared.items()]
    return finding("CROSS.shadowing", "fail",
                   f"{len(shared)} tool name(s) offered by more than one server: "
                   f"{name_list(shown)}. The model cannot tell them apart, and the server it "
                   "picks may not be the one the user trusts: remove one of the servers or "
                   "rename the tools.", to_json(shared))


_DISTINCT = re.compile(r"[_.-]|[a-z][A-Z]")


def _references(reports: Sequence[Report]) -> Finding:
    names = {n: r.server for r in reports for n, _ in _tools(r)
             if len(n) >= 5 and _DISTINCT.search(n)}
    if len({r.server for r in reports if r.definitions.get("tools")}) < 2:
        return finding("CROSS.reference", "n/a", "Fewer than two servers list tools.")
    if not names:
        return finding("CROSS.reference", "pass", "No distinctive tool name to look for.")
    pattern = re.compile(r"(?<![\w.-])(" + "|".join(
        re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")(?![\w-])")
    hits: list[tuple[str, str, str, str]] = []
    for r in reports:
        own = {n for n, _ in _tools(r)}
        for kind in ("tools", "prompts", "resources", "resourceTemplates"):
            for item in r.definitions.get(kind, []):
                text = item.get("description") if isinstance(item, dict) else None
                if not isinstance(text, str):
                    continue
                for m in pattern.finditer(text):
                    other = names[m.group(1)]
                    if other != r.server and m.group(1) not in own:
                        where = f"{r.server}: {shorten(str(item.get('name')))}"
                        hits.append((where, m.group(1), other, excerpt(text, m.start(),
                                                                       m.end())))
                        break
    if not hits:
        return finding("CROSS.reference", "pass",
                       f"No description names a tool of another server ({len(names)} "
                       "distinctive names looked for).")
    shown = [f"{where} names {tool} of {other}" for where, tool, other, _ in hits]
    return finding("CROSS.reference", "fail",
                   f"{len(hits)} description(s) name another server's tools: "
                   f"{name_list(shown)}. A server has no business telling the model how to "
                   "use another server's tools (cross-server shadowing); remove it.",
                   to_json({where: text for where, _, _, text in hits[:8]}))


def cross_server(reports: Sequence[Report]) -> list[Finding]:
    """The ``CROSS.*`` findings over the servers' reports."""
    return [_shadowing(reports), _references(reports)]
