"""Judges of the matrix rows on transports: stdio framing (1.2.1),
Streamable HTTP (1.2.2) and sessions (1.2.3); authorization (1.3) is
:mod:`~mcpkit.check.matrix.auth`.

Stdio rows read the lines the channel could not take as one message each
(:attr:`~mcpkit.check.wire.WireLog.bad_lines`); HTTP rows read status codes, content types,
SSE event ids and session ids. A row of the other transport is n/a.
"""

from __future__ import annotations

from ..facts import Facts
from ..wire import dump
from .common import Judge, Judgement, na


def M013(facts: Facts) -> Judgement:
    if facts.transport != "stdio":
        return na("Not a stdio server.")
    return ("pass", "The server read initialize from stdin and answered on stdout.",
            facts.init.evidence if facts.init else "")


def _bad_lines(facts: Facts) -> tuple[list[str], list[str], list[str]]:
    multi, joined, other = [], [], []
    for _, line in facts.log.bad_lines:
        if line.startswith("MULTILINE:"):
            multi.append(line[len("MULTILINE:"):])
        elif line.startswith("JOINED:"):
            joined.append(line[len("JOINED:"):])
        else:
            other.append(line)
    return multi, joined, other


def M014(facts: Facts) -> Judgement:
    if facts.transport != "stdio":
        return na("Not a stdio server.")
    _, joined, _ = _bad_lines(facts)
    if joined:
        return ("fail", "Several messages on one line; end every message with a newline.",
                joined[0])
    return ("pass", "Every message arrived on its own line.", "")


def M015(facts: Facts) -> Judgement:
    if facts.transport != "stdio":
        return na("Not a stdio server.")
    multi, _, _ = _bad_lines(facts)
    if multi:
        return ("fail", "A message spread over several lines (pretty-printed JSON); write each "
                "message as one line.", multi[0])
    return ("pass", "No message contained a raw newline.", "")


def M016(facts: Facts) -> Judgement:
    if facts.transport != "stdio":
        return na("Not a stdio server.")
    _, _, other = _bad_lines(facts)
    if other:
        return ("fail", f"{len(other)} line(s) on stdout are not JSON-RPC messages; write logs "
                "to stderr.", "\n".join(other[:5]))
    return ("pass", "Everything on stdout was a JSON-RPC message.", "")


def _http(facts: Facts) -> bool:
    return facts.transport == "http"


def M018(facts: Facts) -> Judgement:
    if not _http(facts):
        return na("Not an HTTP server.")
    get = facts.probes.get("get")
    status = get.http.status if get is not None and get.http else None
    if facts.era == "stateless":
        return ("pass", "The endpoint serves POST.", "")
    if status in (404, None):
        return ("fail", f"POST works but GET on the same endpoint got {status}; serve GET (an "
                "SSE stream) or answer 405.", get.evidence if get else "")
    return ("pass", f"POST served; GET answered {status}.", get.evidence if get else "")


def M022(facts: Facts) -> Judgement:
    if not _http(facts):
        return na("Not an HTTP server.")
    reply = facts.probes.get("initialized")
    if reply is None or reply.http is None:
        return na("No notification was posted.")
    if reply.http.status == 202 and not reply.http.body.strip():
        return ("pass", "notifications/initialized got 202 with no body.", reply.evidence)
    return ("fail", f"notifications/initialized got HTTP {reply.http.status} with body "
            f"{reply.http.body[:100]!r}; answer 202 Accepted with no body.", reply.evidence)


def M023(facts: Facts) -> Judgement:
    if not _http(facts):
        return na("Not an HTTP server.")
    replies = [r for r in [facts.init, facts.probes.get("ping"),
                           *[p for o in facts.lists.values() for p in o.pages]] if r is not None]
    for r in replies:
        if r.http and r.http.status == 200 and not (
            r.http.content_type.startswith("application/json")
            or r.http.content_type.startswith("text/event-stream")
        ):
            return ("fail", f"A request was answered with Content-Type "
                    f"{r.http.content_type!r}.", r.evidence)
    return ("pass", f"{len(replies)} request(s) answered as JSON or SSE.", "")


def M025(facts: Facts) -> Judgement:
    if not _http(facts):
        return na("Not an HTTP server.")
    get = facts.probes.get("get")
    if get is None or get.http is None:
        return ("fail", "GET got no answer.", get.evidence if get else "")
    if get.http.status == 405 or (
            get.http.status == 200 and get.http.content_type.startswith("text/event-stream")):
        return ("pass", f"GET answered {get.http.status} {get.http.content_type}.", get.evidence)
    return ("fail", f"GET answered {get.http.status} {get.http.content_type}; reply with an SSE "
            "stream or 405.", get.evidence)


def M026(facts: Facts) -> Judgement:
    if not _http(facts):
        return na("Not an HTTP server.")
    get = facts.probes.get("get")
    if get is None or get.http is None or get.http.status != 200:
        return na("The server offers no GET stream.")
    responses = [m for m in get.others if isinstance(m, dict) and "method" not in m]
    if responses:
        return ("fail", "A JSON-RPC response arrived on the GET stream; responses go on the "
                "POST that asked.", get.evidence)
    return ("pass", "No response arrived on the GET stream while a request was answered.",
            get.evidence)


def M027(facts: Facts) -> Judgement:
    if not _http(facts):
        return na("Not an HTTP server.")
    get, post = facts.probes.get("get"), facts.probes.get("post-during-get")
    if get is None or post is None or get.http is None or get.http.status != 200:
        return na("The server offers no GET stream.")
    rid = post.sent.get("id") if isinstance(post.sent, dict) else None
    dup = [m for m in get.others if isinstance(m, dict) and m.get("id") == rid]
    if dup and post.msg is not None:
        return ("fail", "The same response arrived on both the POST and the GET stream.",
                post.evidence + "\n" + get.evidence)
    return ("pass", "Each message arrived on one stream only.", "")


def M028(facts: Facts) -> Judgement:
    if not facts.session_ids:
        return na("The server issued no session id.")
    for sid in facts.session_ids:
        if not sid or any(not 0x21 <= ord(c) <= 0x7E for c in sid):
            return ("fail", f"Session id {sid!r} has characters outside 0x21-0x7E.", sid)
    return ("pass", f"{len(facts.session_ids)} session id(s) of visible ASCII.", "")


def S002(facts: Facts) -> Judgement:
    sse = [r for r in facts.log.http_replies if r.http and r.http.content_type.startswith(
        "text/event-stream") and isinstance(r.sent, dict) and "id" in r.sent]
    if not sse:
        return na("No request was answered over SSE.")
    lost = [r for r in sse if r.msg is None]
    if lost:
        return ("fail", f"{len(lost)} of {len(sse)} SSE stream(s) ended without the response.",
                lost[0].evidence)
    return ("pass", f"{len(sse)} SSE stream(s) each carried their response.", "")


def S003(facts: Facts) -> Judgement:
    sse = [r for r in facts.log.http_replies if r.http and r.http.content_type.startswith(
        "text/event-stream") and isinstance(r.sent, dict) and "id" in r.sent]
    if not sse:
        return na("No request was answered over SSE.")
    closed = [r for r in sse if r.msg is None and r.http is not None and not r.http.sse_ids]
    if closed:
        return ("fail", "An SSE stream closed before its response, with no event id to resume "
                "from.", closed[0].evidence)
    return ("pass", "No SSE stream closed before its response.", "")


def S004(facts: Facts) -> Judgement:
    get = facts.probes.get("get")
    if get is None or get.http is None or get.http.status != 200:
        return na("The server offers no GET stream.")
    related = [m for m in get.others if isinstance(m, dict) and m.get("method") in (
        "notifications/progress",)]
    if related:
        return ("fail", "A message about an in-flight request arrived on the GET stream.",
                get.evidence)
    return ("pass", "Nothing about in-flight requests arrived on the GET stream.", "")


def S005(facts: Facts) -> Judgement:
    ids = facts.session_ids
    if not ids:
        return na("The server issued no session id.")
    if len(set(ids)) != len(ids):
        return ("fail", f"Two sessions got the same id {ids[0]!r}.", dump(ids))
    weak = [s for s in ids if len(s) < 16 or s.isdigit()]
    if weak:
        return ("fail", f"Session id {weak[0]!r} is short or numeric, so guessable; use at "
                "least 128 random bits (e.g. a secure UUID).", dump(ids))
    return ("pass", f"{len(ids)} distinct session ids of {min(map(len, ids))}+ characters.", "")


def S006(facts: Facts) -> Judgement:
    reply = facts.probes.get("no-session")
    if reply is None:
        return na("The server issued no session id.")
    status = reply.http.status if reply.http else None
    if status == 400:
        return ("pass", "A request without the session id got 400.", reply.evidence)
    return ("fail", f"A request without the required session id got HTTP {status}; answer 400.",
            reply.evidence)


def A011(facts: Facts) -> Judgement:
    ids = [i for r in facts.log.http_replies if r.http for i in r.http.sse_ids]
    if ids:
        return ("pass", f"SSE events carry ids ({len(ids)} seen).", "")
    return na("No SSE event id was seen.")


def A013(facts: Facts) -> Judgement:
    if facts.session_ids:
        return ("pass", "The server assigns session ids.", "")
    return na("The server assigns no session id.")


def A015(facts: Facts) -> Judgement:
    reply = facts.probes.get("delete")
    if reply is None or reply.http is None:
        return na("No session to delete.")
    status = reply.http.status
    if status == 405 or 200 <= status < 300:
        return ("pass", f"DELETE answered {status}.", reply.evidence)
    return ("fail", f"DELETE answered {status}; allow it (2xx) or refuse it with 405.",
            reply.evidence)


JUDGES: dict[str, Judge] = {
    "M013": M013, "M014": M014, "M015": M015, "M016": M016, "M018": M018, "M022": M022,
    "M023": M023, "M025": M025, "M026": M026, "M027": M027, "M028": M028, "S002": S002,
    "S003": S003, "S004": S004, "S005": S005, "S006": S006, "A011": A011, "A013": A013,
    "A015": A015,
}
"""The rows of this module -> their judges."""
