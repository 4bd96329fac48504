"""Judges of the matrix rows on the protocol's utilities: ping, cancellation, progress,
logging, completion and pagination (4.1-4.6).

Cancellation and progress rows read the notifications and requests the server sent, and
the progress tokens of the checker's own requests; logging and completion rows check that
each works only when its capability is declared.
"""

from __future__ import annotations

from typing import Any

from ..facts import Facts
from ..wire import dump
from .common import Judge, Judgement, capability_probes, na


def M079(facts: Facts) -> Judgement:
    reply = facts.probes.get("ping")
    if reply is None:
        return na("Not probed.")
    if reply.result == {} or (isinstance(reply.result, dict) and set(reply.result) <= {"_meta"}):
        return ("pass", "ping answered with an empty result.", reply.evidence)
    return ("fail", "ping was not answered with an empty result.", reply.evidence)


def _notes(facts: Facts, method: str) -> list[Any]:
    return [r.msg for r in facts.log.received
            if isinstance(r.msg, dict) and r.msg.get("method") == method]


def M080(facts: Facts) -> Judgement:
    notes = _notes(facts, "notifications/cancelled")
    if not notes:
        return na("The server sent no cancellation.")
    bad = [n for n in notes if not isinstance((n.get("params") or {}).get("requestId"),
                                              (str, int))]
    if bad:
        return ("fail", "A notifications/cancelled lacks requestId.", dump(bad[0]))
    return ("pass", f"{len(notes)} cancellation(s) name a requestId.", "")


def M081(facts: Facts) -> Judgement:
    notes = _notes(facts, "notifications/cancelled")
    if not notes:
        return na("The server sent no cancellation.")
    issued = {r.msg.get("id") for r in facts.log.server_requests if isinstance(r.msg, dict)}
    stray = [n for n in notes if (n.get("params") or {}).get("requestId") not in issued]
    if stray and facts.era == "stateful":
        return ("fail", "A cancellation names a request the server never sent.", dump(stray[0]))
    return ("pass", "Cancellations reference the server's own requests.", "")


def M083(facts: Facts) -> Judgement:
    tokens = [((r.msg.get("params") or {}).get("_meta") or {}).get("progressToken")
              for r in facts.log.server_requests if isinstance(r.msg, dict)
              and isinstance(r.msg.get("params"), dict)]
    tokens = [t for t in tokens if t is not None]
    if not tokens:
        return na("The server sent no request with a progress token.")
    if len(set(map(dump, tokens))) != len(tokens):
        return ("fail", "The server reused a progress token across requests.", dump(tokens))
    return ("pass", f"{len(tokens)} distinct progress token(s).", "")


def _progress(facts: Facts) -> list[dict[str, Any]]:
    return [n for n in _notes(facts, "notifications/progress") if isinstance(n, dict)]


def M084(facts: Facts) -> Judgement:
    notes = _progress(facts)
    if not notes:
        return na("No progress notification was sent.")
    for n in notes:
        p = n.get("params")
        if not isinstance(p, dict) or "progressToken" not in p or not isinstance(
                p.get("progress"), (int, float)):
            return ("fail", "A progress notification lacks progressToken or a numeric "
                    "progress.", dump(n))
    return ("pass", f"{len(notes)} progress notification(s) well formed.", "")


def M085(facts: Facts) -> Judgement:
    notes = _progress(facts)
    if not notes:
        return na("No progress notification was sent.")
    last: dict[str, float] = {}
    for n in notes:
        p = n.get("params") or {}
        token, value = dump(p.get("progressToken")), p.get("progress")
        if not isinstance(value, (int, float)):
            continue
        if token in last and value <= last[token]:
            return ("fail", f"Progress for token {token} went from {last[token]} to {value}; "
                    "it must increase with each notification.", dump(n))
        last[token] = value
    return ("pass", "Progress increased with every notification.", "")


def M086(facts: Facts) -> Judgement:
    notes = _progress(facts)
    if not notes:
        return na("No progress notification was sent.")
    active = set()
    for r in facts.call_replies:
        sent = r.sent if isinstance(r.sent, dict) else {}
        token = ((sent.get("params") or {}).get("_meta") or {}).get("progressToken")
        if token is not None and any(o in r.others for o in notes):
            active.add(dump(token))
    ours = {dump(((r.sent.get("params") or {}).get("_meta") or {}).get("progressToken"))
            for r in facts.call_replies if isinstance(r.sent, dict)}
    for n in notes:
        token = dump((n.get("params") or {}).get("progressToken"))
        if token not in ours:
            return ("fail", f"Progress for token {token}, which no request of the checker used.",
                    dump(n))
        if token not in active:
            return ("fail", f"Progress for token {token} arrived after its request had been "
                    "answered.", dump(n))
    return ("pass", "Progress notifications referenced only requests in flight.", "")


def M087(facts: Facts) -> Judgement:
    logs = _notes(facts, "notifications/message")
    if logs and not facts.declared("logging"):
        return ("fail", "notifications/message sent without the logging capability.",
                dump(logs[0]))
    probed = capability_probes(facts, "logging/setLevel", "the logging capability", "logging")
    return na("The server does not offer logging.") if probed is None else probed


def M088(facts: Facts) -> Judgement:
    probed = capability_probes(facts, "completion/complete", "the completions capability")
    if probed is not None:
        return probed
    if facts.declared("completions"):
        return ("pass", "The completions capability is declared.", "")
    return na("The server does not offer completion.")


def M089(facts: Facts) -> Judgement:
    if not facts.completions:
        return na("No completion request was made (nothing to complete, or not declared).")
    for r in facts.completions:
        comp = r.result.get("completion") if isinstance(r.result, dict) else None
        if not isinstance(comp, dict) or not isinstance(comp.get("values"), list):
            if r.result is not None:
                facts.blame(r.msg)
            return ("fail", "completion/complete did not return completion.values.", r.evidence)
    return ("pass", "completion/complete returned completion.values.",
            facts.completions[0].evidence)


def S030(facts: Facts) -> Judgement:
    reply = facts.probes.get("invalid-cursor")
    if reply is None:
        return na("No list to page through.")
    if reply.error_code == -32602:
        return ("pass", "An invalid cursor got -32602.", reply.evidence)
    got = f"error {reply.error_code}" if reply.error is not None else "a result"
    return ("fail", f"An invalid cursor got {got}; answer -32602.", reply.evidence)


def A023(facts: Facts) -> Judgement:
    notes = _notes(facts, "notifications/cancelled")
    with_reason = [n for n in notes if "reason" in (n.get("params") or {})]
    if not with_reason:
        return na("No cancellation with a reason was sent.")
    if all(isinstance(n["params"]["reason"], str) for n in with_reason):
        return ("pass", "Cancellation reasons are strings.", "")
    return ("fail", "A cancellation reason is not a string.", dump(with_reason[0]))


def A025(facts: Facts) -> Judgement:
    notes = [n for n in _progress(facts) if isinstance(n.get("params"), dict)]
    using = [n for n in notes if "total" in n["params"] or "message" in n["params"]]
    if not using:
        return na("No progress notification uses total or message.")
    for n in using:
        p = n["params"]
        if ("total" in p and not isinstance(p["total"], (int, float))) or (
                "message" in p and not isinstance(p["message"], str)):
            return ("fail", "Progress total/message of the wrong type.", dump(n))
    return ("pass", "Progress total and message well typed.", "")


def A026(facts: Facts) -> Judgement:
    comps = [r.result.get("completion") for r in facts.completions if isinstance(r.result, dict)]
    using = [c for c in comps if isinstance(c, dict) and "total" in c]
    if not using:
        return na("No completion result carries total.")
    if all(isinstance(c["total"], int) for c in using):
        return ("pass", "completion.total is an integer.", "")
    return ("fail", "completion.total is not an integer.", dump(using[0]))


JUDGES: dict[str, Judge] = {
    "M079": M079, "M080": M080, "M081": M081, "M083": M083, "M084": M084, "M085": M085,
    "M086": M086, "M087": M087, "M088": M088, "M089": M089, "S030": S030, "A023": A023,
    "A025": A025, "A026": A026,
}
"""The rows of this module -> their judges."""
