"""Judging every received message: the JSON-RPC envelope rows of the compliance matrix
(M001-M010) and schema validity against the negotiated revision (``WIRE.schema``).

Envelope rows run first and mark the messages they fail as *blamed*; schema validation
then skips blamed messages, so one defect is reported once, under its most specific rule.
"""

from __future__ import annotations

from typing import Any

from ..facts import Facts
from ..model import Finding
from ..rules import finding
from ..schemas import REVISIONS, validate_message
from ..wire import Received, dump, id_key

ENVELOPE_ROWS = ("M001", "M002", "M003", "M004", "M005", "M006", "M007", "M008", "M009", "M010")


def _envelope_defects(rec: Received, item: Any, sent: set[Any], seen_ids: set[Any]) -> list[
        tuple[str, str]]:
    """(row, what is wrong) for one message (a batch element is judged on its own)."""
    if not isinstance(item, dict):
        return [("M001", f"a {type(item).__name__} is not a JSON-RPC message")]
    out: list[tuple[str, str]] = []
    if item.get("jsonrpc") != "2.0":
        out.append(("M001", f"jsonrpc is {item.get('jsonrpc')!r}, not \"2.0\""))
    if "method" in item:
        method = item["method"]
        if "id" in item:
            rid = item["id"]
            if isinstance(method, str) and method.startswith("notifications/"):
                out.append(("M009", f"the notification {method} carries an id"))
                return out
            if rid is None:
                out.append(("M003", "a request has id null"))
            elif not isinstance(rid, (str, int)) or isinstance(rid, bool):
                out.append(("M002", f"a request id is {dump(rid)}, not a string or integer"))
            elif id_key(rid) in seen_ids:
                out.append(("M004", f"request id {dump(rid)} was used before in this session"))
            else:
                seen_ids.add(id_key(rid))
            if not isinstance(method, str):
                out.append(("M005", f"a request's method is {dump(method)}, not a string"))
        elif not isinstance(method, str):
            out.append(("M010", f"a notification's method is {dump(method)}, not a string"))
        return out
    has_result, has_error = "result" in item, "error" in item
    if not has_result and not has_error and "id" not in item:
        out.append(("M010", "a message with neither id nor method (a notification lacks its "
                    "method)"))
        return out
    if has_result == has_error:
        out.append(("M007", "a response has " + ("both result and error" if has_result else
                                                 "neither result nor error")))
    if has_error:
        err = item["error"]
        if not isinstance(err, dict) or not isinstance(err.get("code"), int) or isinstance(
                err.get("code"), bool) or not isinstance(err.get("message"), str):
            out.append(("M008", f"error object {dump(err)[:200]} lacks an integer code or a "
                        "string message"))
    rid = item.get("id")
    if rid is None:
        if not has_error:
            out.append(("M006", "a result carries no id (or id null)"))
    elif id_key(rid) not in sent:
        out.append(("M006", f"a response carries id {dump(rid)}, which no request of the "
                    "checker used"))
    return out


def judge_envelope(facts: Facts) -> list[Finding]:
    """M001-M010 over every received message; failed messages are marked blamed."""
    era = facts.era
    defects: dict[str, list[tuple[str, Received]]] = {row: [] for row in ENVELOPE_ROWS}
    seen: dict[str, set[Any]] = {}
    counts = {"requests": 0, "notifications": 0, "responses": 0}
    for rec in facts.log.received:
        sent = facts.log.sent_ids.get(rec.channel, set())
        ids = seen.setdefault(rec.channel, set())
        items = rec.msg if isinstance(rec.msg, list) else [rec.msg]
        for item in items:
            if isinstance(item, dict):
                kind = ("requests" if "id" in item else "notifications") if "method" in item else (
                    "responses")
                counts[kind] += 1
            for row, what in _envelope_defects(rec, item, sent, ids):
                defects[row].append((what, rec))
                rec.blamed = True
    findings: list[Finding] = []
    total = sum(counts.values())
    for row in ENVELOPE_ROWS:
        found = defects[row]
        if found:
            what, rec = found[0]
            findings.append(finding(
                row, "fail", f"{len(found)} message(s): {what}.", rec.raw, era))
            continue
        relevant = {
            "M002": "requests", "M003": "requests", "M004": "requests", "M005": "requests",
            "M006": "responses", "M007": "responses", "M008": "responses",
            "M009": "notifications", "M010": "notifications",
        }.get(row)
        n = counts[relevant] if relevant else total
        if n == 0:
            findings.append(finding(row, "n/a", f"The server sent no {relevant}.", "", era))
        else:
            findings.append(finding(row, "pass", f"{n} {relevant or 'messages'} checked.", "",
                                    era))
    return findings


def judge_schema(facts: Facts) -> Finding:
    """``WIRE.schema`` over every message no other rule has already failed."""
    era = facts.era
    checked = 0
    bad: list[tuple[Received, list[str]]] = []
    for rec in facts.log.received:
        revision = rec.revision
        if rec.blamed or revision not in REVISIONS:
            continue
        items = rec.msg if isinstance(rec.msg, list) else [rec.msg]
        for item in items:
            checked += 1
            answered = rec.answered
            if isinstance(rec.msg, list) and isinstance(item, dict):
                answered = None
            errors = validate_message(revision, item, answered)
            if errors:
                bad.append((rec, errors))
    facts_checked = checked
    if bad:
        rec, errors = bad[0]
        return finding(
            "WIRE.schema", "fail",
            f"{len(bad)} of {facts_checked} message(s) do not validate against the "
            f"{rec.revision} schema; first (answer to {rec.answered or 'no request'}): "
            f"{errors[0]}", rec.raw + "\n" + "\n".join(errors), era)
    if checked == 0:
        return finding("WIRE.schema", "n/a", "No message to validate.", "", era)
    revisions = sorted({r.revision for r in facts.log.received if r.revision})
    return finding("WIRE.schema", "pass",
                   f"{checked} message(s) valid against the schema of {', '.join(revisions)}.",
                   "", era)


def messages_checked(facts: Facts) -> int:
    return sum(1 for r in facts.log.received if r.revision in REVISIONS)
