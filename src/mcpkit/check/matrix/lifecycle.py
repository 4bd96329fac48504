"""Judges of the matrix rows on the base protocol's lifecycle: batching (1.1.4),
initialization, version and capability negotiation (1.4.1-1.4.3), and error handling
(1.4.4).

They read the handshake the probes drove: ``initialize`` with the newest revision, with an
unknown version and with 2025-03-26 (the last revision with JSON-RPC batches, so a batch is
sent only if the server accepts it), and what the server sent before
``notifications/initialized``.
"""

from __future__ import annotations

from ..facts import Facts
from ..schemas import REVISIONS
from ..stateful import BATCH_REVISION, LATEST, NEGOTIATE, UNKNOWN_VERSION
from ..wire import dump
from .common import Judge, Judgement, na


def M011(facts: Facts) -> Judgement:
    reply = facts.probes.get("batch")
    if reply is None:
        echoed = facts.versions_echoed.get(BATCH_REVISION)
        return na(f"Batches exist only in {BATCH_REVISION}; the server answered that request "
                  f"with {echoed!r}.")
    msg = reply.msg
    if isinstance(msg, list) and len(msg) == 2 and all(
            isinstance(m, dict) and m.get("result") == {} for m in msg):
        return ("pass", "A batch of two pings got a batch of two results.", reply.evidence)
    return ("fail", "A JSON-RPC batch of two pings (2025-03-26) was not answered with an array "
            "of two results.", reply.evidence)


def M042(facts: Facts) -> Judgement:
    reply = facts.init
    res = reply.result if reply is not None else None
    if not isinstance(res, dict):
        return ("fail", "initialize got no result.", reply.evidence if reply else "")
    missing = [k for k, t in (("protocolVersion", str), ("capabilities", dict),
                              ("serverInfo", dict)) if not isinstance(res.get(k), t)]
    info = res.get("serverInfo")
    if isinstance(info, dict) and not (isinstance(info.get("name"), str)
                                       and isinstance(info.get("version"), str)):
        missing.append("serverInfo.name/version")
    if missing:
        facts.blame(reply.msg if reply else None)
        return ("fail", f"The initialize result lacks {', '.join(missing)}.", reply.evidence
                if reply else "")
    return ("pass", "The initialize result has protocolVersion, capabilities and serverInfo.",
            reply.evidence if reply else "")


def _negotiation(facts: Facts) -> dict[str, tuple[str | None, str]]:
    """Every initialize the probes sent: requested version -> (answered version or None,
    evidence)."""
    out: dict[str, tuple[str | None, str]] = {}
    for requested, key in ((LATEST, None), (BATCH_REVISION, "old-initialize"),
                           (UNKNOWN_VERSION, "unknown-version"),
                           *((v, f"negotiate:{v}") for v in NEGOTIATE)):
        reply = facts.init if key is None else facts.probes.get(key)
        if reply is None:
            continue
        res = reply.result
        answer = res.get("protocolVersion") if isinstance(res, dict) else None
        out[requested] = (answer if isinstance(answer, str) else None, reply.evidence)
    return out


def M045(facts: Facts) -> Judgement:
    """Judged on the set of answers: a version the server answered with (to any request)
    is one it supports, since it MUST answer with a supported one; asked for such a version
    directly, it MUST echo it. Refusing it, or answering another, breaks the row."""
    asked = _negotiation(facts)
    supported = {a for a, _ in asked.values() if a in REVISIONS}
    for requested, (answer, evidence) in asked.items():
        if requested in supported and answer != requested:
            proof = next(r for r, (a, _) in asked.items() if a == requested)
            got = f"answered {answer}" if answer else "refused it"
            return ("fail", f"Asked for {requested}, the server {got}, although it supports "
                    f"{requested} (it answered {requested} when asked for {proof}); a "
                    "requested version the server supports must be echoed.", evidence)
    echoed = sorted(r for r, (a, _) in asked.items() if a == r)
    other = sorted(f"{r}→{a}" for r, (a, _) in asked.items() if a != r and r in REVISIONS)
    return ("pass", f"Asked for {len(asked)} versions: echoed {', '.join(echoed) or 'none'}"
            + (f"; for the others answered {', '.join(other)} (not supported)" if other else "")
            + ".", "")


def M046(facts: Facts) -> Judgement:
    reply = facts.probes.get("unknown-version")
    if reply is None:
        return na("Not probed.")
    res = reply.result
    version = res.get("protocolVersion") if isinstance(res, dict) else None
    if isinstance(version, str) and version in REVISIONS and version != UNKNOWN_VERSION:
        return ("pass", f"Asked for {UNKNOWN_VERSION}, the server offered {version}.",
                reply.evidence)
    if reply.error is not None:
        return ("fail", f"initialize with {UNKNOWN_VERSION} was refused with {reply.error_code}; "
                "answer with a version the server supports instead (the client then decides).",
                reply.evidence)
    return ("fail", f"initialize with {UNKNOWN_VERSION} answered protocolVersion {version!r}, "
            "not a version the server supports.", reply.evidence)


def M047(facts: Facts) -> Judgement:
    res = facts.init.result if facts.init is not None else None
    if isinstance(res, dict) and isinstance(res.get("capabilities"), dict):
        return ("pass", f"Capabilities declared: {sorted(res['capabilities'])}.", "")
    return ("fail", "initialize declared no capabilities object.",
            facts.init.evidence if facts.init else "")


def S014(facts: Facts) -> Judgement:
    early = facts.probes.get("before-initialized")
    init_others = facts.init.others if facts.init is not None else []
    seen = [m for m in [*(early.others if early else []), *init_others]
            if isinstance(m, dict) and "id" in m and m.get("method") not in (None, "ping")
            and not str(m.get("method")).startswith("notifications/")]  # M009's business
    if seen:
        return ("fail", f"The server sent {seen[0].get('method')} before "
                "notifications/initialized.", dump(seen[0]))
    if early is None:
        return na("Not observable on this transport.")
    return ("pass", "No request before notifications/initialized.", "")


def S016(facts: Facts) -> Judgement:
    reply = facts.probes.get("unknown-version")
    res = reply.result if reply is not None else None
    offered = res.get("protocolVersion") if isinstance(res, dict) else None
    known = [v for v in facts.versions_echoed.values() if v in REVISIONS]
    if offered not in REVISIONS or not known:
        return na("No known version was offered for an unknown one (see M046).")
    newest = max(known)
    if offered < newest:
        return ("fail", f"For an unknown version the server offered {offered}, but it speaks "
                f"{newest}; offer the newest version.", reply.evidence if reply else "")
    return ("pass", f"For an unknown version the server offered {offered}, its newest.", "")


def S018(facts: Facts) -> Judgement:
    reqs = [r for r in facts.log.server_requests if isinstance(r.msg, dict)
            and r.msg.get("method") in ("sampling/createMessage", "roots/list",
                                        "elicitation/create")]
    if reqs:
        return ("fail", f"The server sent {reqs[0].msg.get('method')} although the checker "
                "declared no client capabilities.", reqs[0].raw)
    return ("pass", "The server used no capability the checker did not declare.", "")


def S021(facts: Facts) -> Judgement:
    reply = facts.probes.get("survive")
    if reply is None:
        return na("Not probed.")
    if reply.result is not None:
        return ("pass", "After malformed JSON, an invalid request and an unknown method the "
                "server still answers.", reply.evidence)
    return ("fail", "After malformed JSON, an invalid request and an unknown method the server "
            "no longer answers.", reply.evidence)


JUDGES: dict[str, Judge] = {
    "M011": M011, "M042": M042, "M045": M045, "M046": M046, "M047": M047, "S014": S014,
    "S016": S016, "S018": S018, "S021": S021,
}
"""The rows of this module -> their judges."""
