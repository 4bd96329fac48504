"""Pinning: notice when a server's tools change after you approved them (rug pulls).

A server can show harmless tools when it is installed and swap in a poisoned description
later; the host does not tell the user. ``mcpkit check --pin FILE`` records, per server, a
canonical hash (SHA-256 of the JSON with sorted keys, no whitespace) and a copy of every
tool, prompt and resource-template definition; later runs compare what the server lists
now with the pin and report ``PIN.definitions``: definitions added, removed and changed,
with the fields that changed (``description``, ``inputSchema.properties.path.pattern``).

A server's pin is written the first time it is seen and never changed afterwards, so a
change keeps failing until someone accepts it: delete the server's entry (or the file) and
run again. The file is written atomically (a temporary file, then a rename).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from .lint.common import name_list, shorten, to_json
from .model import Report
from .report.ci import server_of
from .rules import finding

KINDS = (("tools", "tool", "name"), ("prompts", "prompt", "name"),
         ("resourceTemplates", "template", "uriTemplate"))
"""(definitions key, label, identifying field) of what is pinned."""

FORMAT = "mcpkit-pins/1"
MAX_PATHS = 6
"""Changed field paths named per definition."""


class PinError(ValueError):
    """The pin file cannot be read or written, or is not one."""


def digest(definition: Any) -> str:
    """The canonical hash of one definition."""
    return hashlib.sha256(orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)).hexdigest()


def snapshot(report: Report) -> dict[str, Any]:
    """``{"tool notes_add": definition, ...}`` of what the report's server listed."""
    out: dict[str, Any] = {}
    for key, label, ident in KINDS:
        for item in report.definitions.get(key, []):
            if isinstance(item, dict) and isinstance(item.get(ident), str):
                out.setdefault(f"{label} {item[ident]}", item)
    return out


def load(path: str) -> dict[str, Any]:
    """The pins in ``path`` by server (empty when the file does not exist yet)."""
    p = Path(path)
    if not p.exists():
        return {}
    try:
        doc = orjson.loads(p.read_bytes())
    except OSError as exc:
        raise PinError(f"cannot read the pin file {path}: {exc.strerror or exc}") from exc
    except orjson.JSONDecodeError as exc:
        raise PinError(f"the pin file {path} is not JSON: {exc}") from exc
    if not (isinstance(doc, dict) and doc.get("format") == FORMAT
            and isinstance(doc.get("servers"), dict)):
        raise PinError(f"{path} is not a pin file of mcpkit check (format {FORMAT})")
    servers: dict[str, Any] = doc["servers"]
    return servers


def _paths(old: Any, new: Any, prefix: str = "", depth: int = 0) -> Iterator[str]:
    """The paths where two JSON values differ, as ``a.b.c``."""
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict) and depth < 6:
        for k in sorted(set(old) | set(new), key=str):
            yield from _paths(old.get(k), new.get(k), f"{prefix}.{k}" if prefix else str(k),
                              depth + 1)
        return
    yield prefix or "(whole definition)"


def compare(pinned: dict[str, Any], now: dict[str, Any]
            ) -> tuple[list[str], list[str], list[tuple[str, list[str]]]]:
    """Definitions added, removed, and changed (with the changed field paths)."""
    added = [k for k in now if k not in pinned]
    removed = [k for k in pinned if k not in now]
    changed = []
    for k, item in now.items():
        old = pinned.get(k)
        if isinstance(old, dict) and old.get("sha256") != digest(item):
            paths = list(_paths(old.get("definition"), item))
            changed.append((k, paths[:MAX_PATHS] + ([f"+{len(paths) - MAX_PATHS} more"]
                                                    if len(paths) > MAX_PATHS else [])))
    return added, removed, changed


def _judge(report: Report, pinned: dict[str, Any] | None, path: str) -> None:
    era = next((e.era for e in report.eras if e.served), None)
    if not report.definitions:
        report.findings.append(finding("PIN.definitions", "untestable",
                                       "The server listed nothing (it was not served).", "",
                                       era))
        return
    now = snapshot(report)
    if pinned is None:
        report.findings.append(finding(
            "PIN.definitions", "pass", f"First run: {len(now)} definitions pinned in {path}; "
            "later runs report any change.", "", era))
        return
    stored = pinned.get("definitions")
    defs: dict[str, Any] = stored if isinstance(stored, dict) else {}
    added, removed, changed = compare(defs, now)
    if not (added or removed or changed):
        report.findings.append(finding(
            "PIN.definitions", "pass", f"All {len(now)} definitions match the pin.", "", era))
        return
    parts = []
    if changed:
        shown = [k + " (" + ", ".join(p) + ")" for k, p in changed]
        parts.append(f"changed: {name_list(shown)}")
    if added:
        parts.append(f"added: {name_list([shorten(k) for k in added])}")
    if removed:
        parts.append(f"removed: {name_list([shorten(k) for k in removed])}")
    evidence = {k: {"pinned": _pick(defs[k].get("definition"), p),
                    "now": _pick(now[k], p)} for k, p in changed[:4]}
    evidence.update({k: {"now": now[k]} for k in added[:2]})
    report.findings.append(finding(
        "PIN.definitions", "fail",
        f"The definitions differ from the pin in {path}: {'; '.join(parts)}. A server that "
        "changes its tools after approval can slip in instructions the user never saw (a "
        "rug pull): review the change, then delete this server's pin to accept it.",
        to_json(evidence), era))


def _pick(definition: Any, paths: Sequence[str]) -> Any:
    """The values at ``paths`` of ``definition`` (for evidence)."""
    out: dict[str, Any] = {}
    for p in paths:
        node = definition
        for part in p.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        out[p] = node
    return out


def apply(reports: Sequence[Report], path: str, pins: dict[str, Any]) -> None:
    """Judge every report against ``pins`` (from :func:`load`), add the servers not pinned
    yet, and write the file back when something was added."""
    fresh = False
    for r in reports:
        if r.server.startswith("(across servers)"):
            continue
        key = server_of(r)
        pinned = pins.get(key) if isinstance(pins.get(key), dict) else None
        _judge(r, pinned, path)
        if pinned is None and r.definitions:
            pins[key] = {"definitions": {k: {"sha256": digest(v), "definition": v}
                                         for k, v in snapshot(r).items()}}
            fresh = True
    if fresh:
        _write(path, {"format": FORMAT, "servers": pins})


def _write(path: str, doc: dict[str, Any]) -> None:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".pins-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise PinError(f"cannot write the pin file {path}: {exc.strerror or exc}") from exc
