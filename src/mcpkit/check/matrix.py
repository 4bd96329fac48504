"""Verdicts for the rows of the compliance matrix (M011-M089, S001-S030, A001-A026; the
envelope rows M001-M010 are judged in :mod:`mcpkit.check.wirejudge`).

Each row is either judged from what the probes observed (:class:`Facts`), or listed as
*untestable* with the reason: most such rows bind the client (the checker *is* the client),
or need an event the checker cannot cause (a resource changing). A row that does not apply
to what the server offers (no resources, stdio transport, the stateless era) is *n/a*.
A message a row fails is marked blamed so that ``WIRE.schema`` does not report it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .facts import Facts
from .model import Finding, Verdict
from .rules import finding, matrix
from .schemas import REVISIONS
from .stateful import BATCH_REVISION, LATEST, UNKNOWN_VERSION
from .wire import Reply, dump

Judgement = tuple[Verdict, str, str]  # verdict, message, evidence
Judge = Callable[[Facts], Judgement]

CLIENT = "A requirement on the client; the checker is the client, so the server has nothing "\
         "to show."
AUTH_SIDE = "Concerns the authorization server or client flows, not the MCP server's answers."

UNTESTABLE: dict[str, str] = {
    **dict.fromkeys(
        ["M012", "M017", "M019", "M020", "M021", "M024", "M029", "M032", "M033", "M034", "M035",
         "M036", "M037", "M039", "M040", "M041", "M043", "M044", "M071", "M072", "M073", "M074",
         "M075", "M076", "M077", "M078", "M082", "S001", "S007", "S012", "S013", "S015", "S017",
         "A006", "A009", "A010", "A021"], CLIENT),
    **dict.fromkeys(["M031", "S010", "S011", "A016"], AUTH_SIDE),
    "M055": "Needs a resource to change, which the checker cannot cause from outside.",
    "S023": "Needs the resource list to change, which the checker cannot cause from outside.",
    "S024": "Needs the prompt list to change, which the checker cannot cause from outside.",
    "S025": "Needs the tool list to change, which the checker cannot cause from outside.",
    "S009": "Whether a stdio server uses OAuth is decided by its configuration, not visible "
            "on the wire.",
    "S019": "Needs the server to send a request and the checker to stay silent until the "
            "server's timeout; servers rarely send requests to a client without capabilities.",
    "S020": "Follows S019: needs a server request left unanswered until it times out.",
    "S026": "Periodic pings show only over a long-lived connection; the checker's runs are "
            "short.",
    "S027": "Needs a long-running tool to cancel; the checker does not run tools for that long.",
    "S028": "About the server as a requester ignoring late responses; not observable.",
    "S029": "Relevance is a judgement about the server's data.",
    "A012": "Replaying requires a broken stream mid-response, which the checker does not force.",
    "A014": "The server may end sessions at any time; nothing to judge.",
    "A022": "About the server as a requester; not observable.",
    "A024": "Ignoring unknown cancellations leaves nothing to observe.",
}

STATELESS_NA = "The 2026-07-28 revision has no initialize, ping, batches or sessions."
STATEFUL_ONLY = frozenset({
    "M011", "M022", "M025", "M026", "M027", "M028", "M042", "M045", "M046", "M047", "M056",
    "M079", "M087", "S006", "S014", "S016", "S005", "A013", "A015", "A011", "A008",
})


def _blame(facts: Facts, msg: Any) -> None:
    for rec in facts.log.received:
        if rec.msg is msg:
            rec.blamed = True


def _na(message: str) -> Judgement:
    return ("n/a", message, "")


def _list_rows(method: str, key: str, fields: tuple[str, ...], noun: str) -> tuple[Judge, Judge]:
    """(the list result has the array, each item has ``fields``) for one list method."""

    def array(facts: Facts) -> Judgement:
        outcome = facts.lists.get(method)
        if outcome is None or not outcome.pages:
            return _na(f"{method} is not served.")
        for page in outcome.pages:
            if not isinstance(page.result.get(key), list):
                facts.blame_answers(method)
                return ("fail", f"A {method} result has no {key} array.", page.evidence)
        return ("pass", f"{len(outcome.pages)} page(s), {len(outcome.items)} {noun}(s).",
                outcome.pages[0].evidence)

    def items(facts: Facts) -> Judgement:
        outcome = facts.lists.get(method)
        if outcome is None or not outcome.pages:
            return _na(f"{method} is not served.")
        if not outcome.items:
            return _na(f"The server lists no {noun}s.")
        bad = []
        for item in outcome.items:
            if not isinstance(item, dict) or any(not isinstance(item.get(f), str) for f in fields):
                bad.append(item)
        if bad:
            facts.blame_answers(method)
            return ("fail", f"{len(bad)} of {len(outcome.items)} {noun}(s) lack "
                    f"{' / '.join(fields)} (as strings): {dump(bad[0])[:200]}", dump(bad[:3]))
        return ("pass", f"All {len(outcome.items)} {noun}(s) have {', '.join(fields)}.", "")

    return array, items


def _capability_row(methods: tuple[str, ...], capability: str) -> Judge:
    def judge(facts: Facts) -> Judgement:
        for m in methods:
            reply = facts.probes.get(f"undeclared:{m}")
            if reply is not None:
                return ("fail", f"{m} answered although the {capability} capability is not "
                        f"declared (capabilities: {dump(facts.capabilities)}); declare "
                        f"\"{capability}\".", reply.evidence)
        if facts.declared(capability):
            return ("pass", f"The {capability} capability is declared.", "")
        return _na(f"The server does not offer {capability}.")
    return judge


def _list_changed_row(capability: str) -> Judge:
    method = f"notifications/{capability}/list_changed"

    def judge(facts: Facts) -> Judgement:
        sent = [r for r in facts.log.received if isinstance(r.msg, dict)
                and r.msg.get("method") == method]
        caps = facts.capabilities.get(capability)
        declared = isinstance(caps, dict) and caps.get("listChanged") is True
        if sent and not declared:
            return ("fail", f"{method} sent without declaring {capability}.listChanged.",
                    sent[0].raw)
        if sent:
            return ("pass", f"{method} sent with {capability}.listChanged declared.", "")
        return _na(f"No {method} was sent.")
    return judge


def _replies_rows(
    attr: str, key: str, noun: str, item_ok: Callable[[Any, Facts], str | None]
) -> tuple[Judge, Judge]:
    def replies(facts: Facts) -> list[Reply]:
        got: list[Reply] = getattr(facts, attr)
        return [r for r in got if isinstance(r.result, dict)]

    def array(facts: Facts) -> Judgement:
        rs = replies(facts)
        if not rs:
            return _na(f"No {noun} result to judge.")
        for r in rs:
            if not isinstance(r.result.get(key), list):
                _blame(facts, r.msg)
                return ("fail", f"A {noun} result has no {key} array.", r.evidence)
        return ("pass", f"{len(rs)} {noun} result(s) carry {key}.", rs[0].evidence)

    def items(facts: Facts) -> Judgement:
        rs = replies(facts)
        entries = [(r, e) for r in rs for e in (r.result.get(key) or []) if isinstance(
            r.result.get(key), list)]
        if not entries:
            return _na(f"No {noun} {key} to judge.")
        for r, e in entries:
            problem = item_ok(e, facts)
            if problem:
                _blame(facts, r.msg)
                return ("fail", f"{noun}: {problem}", r.evidence)
        return ("pass", f"{len(entries)} {key} item(s) well formed.", "")

    return array, items


def _content_types(facts: Facts) -> set[str]:
    base = {"text", "image", "resource"}
    rev = facts.revision or LATEST
    if rev >= "2025-03-26":
        base.add("audio")
    if rev >= "2025-06-18":
        base.add("resource_link")
    return base


def _resource_content(item: Any, facts: Facts) -> str | None:
    if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
        return f"a content item lacks uri: {dump(item)[:200]}"
    if not isinstance(item.get("text"), str) and not isinstance(item.get("blob"), str):
        return f"a content item has neither text nor blob: {dump(item)[:200]}"
    return None


def _prompt_message(item: Any, facts: Facts) -> str | None:
    if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
        return f"a message lacks a role of user/assistant: {dump(item)[:200]}"
    if not isinstance(item.get("content"), dict):
        return f"a message lacks content: {dump(item)[:200]}"
    return None


def _prompt_content(item: Any, facts: Facts) -> str | None:
    content = item.get("content") if isinstance(item, dict) else None
    if isinstance(content, dict) and content.get("type") not in _content_types(facts):
        return f"content type {content.get('type')!r} is not one of {sorted(_content_types(facts))}"
    return None


M049, M050 = _list_rows("resources/list", "resources", ("uri", "name"), "resource")
M053, M054 = _list_rows("resources/templates/list", "resourceTemplates", ("uriTemplate",),
                        "resource template")
M059, M060 = _list_rows("prompts/list", "prompts", ("name",), "prompt")
M066, M067 = _list_rows("tools/list", "tools", ("name", "description"), "tool")
M051, M052 = _replies_rows("reads", "contents", "resources/read", _resource_content)
M061, M062 = _replies_rows("prompt_gets", "messages", "prompts/get", _prompt_message)
_, M063 = _replies_rows("prompt_gets", "messages", "prompts/get", _prompt_content)


def M067_full(facts: Facts) -> Judgement:
    verdict = M067(facts)
    if verdict[0] != "pass":
        return verdict
    bad = [t for t in facts.tools if not isinstance(t.get("inputSchema"), dict)]
    if bad:
        facts.blame_answers("tools/list")
        return ("fail", f"{len(bad)} tool(s) lack an inputSchema object: "
                f"{', '.join(str(t.get('name')) for t in bad[:5])}", dump(bad[:2]))
    return ("pass", f"All {len(facts.tools)} tool(s) have name, description and inputSchema.", "")


def _call_results(facts: Facts) -> list[Reply]:
    return [r for r in facts.call_replies if isinstance(r.result, dict)]


def M068(facts: Facts) -> Judgement:
    rs = _call_results(facts)
    if not rs:
        return _na("No tools/call result to judge (see --call-tools).")
    for r in rs:
        if not isinstance(r.result.get("content"), list):
            _blame(facts, r.msg)
            return ("fail", "A tools/call result has no content array.", r.evidence)
        if not isinstance(r.result.get("isError"), bool):
            return ("fail", "A tools/call result has no isError flag; send isError: false on "
                    "success so every client can tell.", r.evidence)
    return ("pass", f"{len(rs)} tools/call result(s) carry content and isError.", "")


def M069(facts: Facts) -> Judgement:
    rs = _call_results(facts)
    allowed = _content_types(facts)
    blocks = [(r, b) for r in rs for b in (r.result.get("content") or [])
              if isinstance(r.result.get("content"), list)]
    if not blocks:
        return _na("No tool result content to judge.")
    for r, b in blocks:
        if not isinstance(b, dict) or b.get("type") not in allowed:
            _blame(facts, r.msg)
            return ("fail", f"Content block type {dump(b)[:100]} is not one of {sorted(allowed)}.",
                    r.evidence)
    return ("pass", f"{len(blocks)} content block(s) of known types.", "")


def M011(facts: Facts) -> Judgement:
    reply = facts.probes.get("batch")
    if reply is None:
        echoed = facts.versions_echoed.get(BATCH_REVISION)
        return _na(f"Batches exist only in {BATCH_REVISION}; the server answered that request "
                   f"with {echoed!r}.")
    msg = reply.msg
    if isinstance(msg, list) and len(msg) == 2 and all(
            isinstance(m, dict) and m.get("result") == {} for m in msg):
        return ("pass", "A batch of two pings got a batch of two results.", reply.evidence)
    return ("fail", "A JSON-RPC batch of two pings (2025-03-26) was not answered with an array "
            "of two results.", reply.evidence)


def M013(facts: Facts) -> Judgement:
    if facts.transport != "stdio":
        return _na("Not a stdio server.")
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
        return _na("Not a stdio server.")
    _, joined, _ = _bad_lines(facts)
    if joined:
        return ("fail", "Several messages on one line; end every message with a newline.",
                joined[0])
    return ("pass", "Every message arrived on its own line.", "")


def M015(facts: Facts) -> Judgement:
    if facts.transport != "stdio":
        return _na("Not a stdio server.")
    multi, _, _ = _bad_lines(facts)
    if multi:
        return ("fail", "A message spread over several lines (pretty-printed JSON); write each "
                "message as one line.", multi[0])
    return ("pass", "No message contained a raw newline.", "")


def M016(facts: Facts) -> Judgement:
    if facts.transport != "stdio":
        return _na("Not a stdio server.")
    _, _, other = _bad_lines(facts)
    if other:
        return ("fail", f"{len(other)} line(s) on stdout are not JSON-RPC messages; write logs "
                "to stderr.", "\n".join(other[:5]))
    return ("pass", "Everything on stdout was a JSON-RPC message.", "")


def _http(facts: Facts) -> bool:
    return facts.transport == "http"


def M018(facts: Facts) -> Judgement:
    if not _http(facts):
        return _na("Not an HTTP server.")
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
        return _na("Not an HTTP server.")
    reply = facts.probes.get("initialized")
    if reply is None or reply.http is None:
        return _na("No notification was posted.")
    if reply.http.status == 202 and not reply.http.body.strip():
        return ("pass", "notifications/initialized got 202 with no body.", reply.evidence)
    return ("fail", f"notifications/initialized got HTTP {reply.http.status} with body "
            f"{reply.http.body[:100]!r}; answer 202 Accepted with no body.", reply.evidence)


def M023(facts: Facts) -> Judgement:
    if not _http(facts):
        return _na("Not an HTTP server.")
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
        return _na("Not an HTTP server.")
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
        return _na("Not an HTTP server.")
    get = facts.probes.get("get")
    if get is None or get.http is None or get.http.status != 200:
        return _na("The server offers no GET stream.")
    responses = [m for m in get.others if isinstance(m, dict) and "method" not in m]
    if responses:
        return ("fail", "A JSON-RPC response arrived on the GET stream; responses go on the "
                "POST that asked.", get.evidence)
    return ("pass", "No response arrived on the GET stream while a request was answered.",
            get.evidence)


def M027(facts: Facts) -> Judgement:
    if not _http(facts):
        return _na("Not an HTTP server.")
    get, post = facts.probes.get("get"), facts.probes.get("post-during-get")
    if get is None or post is None or get.http is None or get.http.status != 200:
        return _na("The server offers no GET stream.")
    rid = post.sent.get("id") if isinstance(post.sent, dict) else None
    dup = [m for m in get.others if isinstance(m, dict) and m.get("id") == rid]
    if dup and post.msg is not None:
        return ("fail", "The same response arrived on both the POST and the GET stream.",
                post.evidence + "\n" + get.evidence)
    return ("pass", "Each message arrived on one stream only.", "")


def M028(facts: Facts) -> Judgement:
    if not facts.session_ids:
        return _na("The server issued no session id.")
    for sid in facts.session_ids:
        if not sid or any(not 0x21 <= ord(c) <= 0x7E for c in sid):
            return ("fail", f"Session id {sid!r} has characters outside 0x21-0x7E.", sid)
    return ("pass", f"{len(facts.session_ids)} session id(s) of visible ASCII.", "")


def _auth_status(facts: Facts) -> int | None:
    return facts.init.http.status if facts.init is not None and facts.init.http else None


def M030(facts: Facts) -> Judgement:
    if _auth_status(facts) == 401:
        return ("pass", "The server answered 401 to a request without a token.",
                facts.init.evidence if facts.init else "")
    return _na("The server did not require authorization.")


def M038(facts: Facts) -> Judgement:
    if _auth_status(facts) == 401:
        return ("untestable", "Needs a valid token to compare with an invalid one; pass one "
                "with --header.", "")
    return _na("The server did not require authorization.")


def S008(facts: Facts) -> Judgement:
    if _auth_status(facts) != 401 or facts.init is None or facts.init.http is None:
        return _na("The server did not require authorization.")
    www = facts.init.http.headers.get("www-authenticate", "")
    if www.lower().startswith("bearer"):
        return ("pass", f"401 with WWW-Authenticate: {www[:120]}", facts.init.evidence)
    return ("fail", "401 without a Bearer WWW-Authenticate challenge naming the resource "
            "metadata.", facts.init.evidence)


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
        _blame(facts, reply.msg if reply else None)
        return ("fail", f"The initialize result lacks {', '.join(missing)}.", reply.evidence
                if reply else "")
    return ("pass", "The initialize result has protocolVersion, capabilities and serverInfo.",
            reply.evidence if reply else "")


def M045(facts: Facts) -> Judgement:
    got = facts.versions_echoed.get(LATEST)
    if got == LATEST:
        return ("pass", f"{LATEST} requested, {LATEST} answered.", "")
    old = facts.versions_echoed.get(BATCH_REVISION)
    if old is not None and old != BATCH_REVISION and old in REVISIONS and old > BATCH_REVISION:
        return ("fail", f"{BATCH_REVISION} requested, {old} answered, although the server "
                f"speaks {old}; echo a requested version the server supports.",
                facts.probes["old-initialize"].evidence)
    return ("pass", f"{LATEST} requested, {got} answered: the server does not support {LATEST}.",
            "")


def M046(facts: Facts) -> Judgement:
    reply = facts.probes.get("unknown-version")
    if reply is None:
        return _na("Not probed.")
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


def M056(facts: Facts) -> Judgement:
    reply = facts.probes.get("undeclared:resources/subscribe")
    if reply is not None and reply.result is not None:
        return ("fail", "resources/subscribe succeeded without resources.subscribe declared.",
                reply.evidence)
    reply = facts.probes.get("subscribe")
    if reply is not None:
        if reply.result is not None:
            return ("pass", "resources.subscribe declared and subscribing works.", reply.evidence)
        return ("fail", "resources.subscribe is declared but resources/subscribe failed.",
                reply.evidence)
    return _na("The server does not offer subscriptions.")


def M079(facts: Facts) -> Judgement:
    reply = facts.probes.get("ping")
    if reply is None:
        return _na("Not probed.")
    if reply.result == {} or (isinstance(reply.result, dict) and set(reply.result) <= {"_meta"}):
        return ("pass", "ping answered with an empty result.", reply.evidence)
    return ("fail", "ping was not answered with an empty result.", reply.evidence)


def _notes(facts: Facts, method: str) -> list[Any]:
    return [r.msg for r in facts.log.received
            if isinstance(r.msg, dict) and r.msg.get("method") == method]


def M080(facts: Facts) -> Judgement:
    notes = _notes(facts, "notifications/cancelled")
    if not notes:
        return _na("The server sent no cancellation.")
    bad = [n for n in notes if not isinstance((n.get("params") or {}).get("requestId"),
                                              (str, int))]
    if bad:
        return ("fail", "A notifications/cancelled lacks requestId.", dump(bad[0]))
    return ("pass", f"{len(notes)} cancellation(s) name a requestId.", "")


def M081(facts: Facts) -> Judgement:
    notes = _notes(facts, "notifications/cancelled")
    if not notes:
        return _na("The server sent no cancellation.")
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
        return _na("The server sent no request with a progress token.")
    if len(set(map(dump, tokens))) != len(tokens):
        return ("fail", "The server reused a progress token across requests.", dump(tokens))
    return ("pass", f"{len(tokens)} distinct progress token(s).", "")


def _progress(facts: Facts) -> list[dict[str, Any]]:
    return [n for n in _notes(facts, "notifications/progress") if isinstance(n, dict)]


def M084(facts: Facts) -> Judgement:
    notes = _progress(facts)
    if not notes:
        return _na("No progress notification was sent.")
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
        return _na("No progress notification was sent.")
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
        return _na("No progress notification was sent.")
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
    reply = facts.probes.get("undeclared:logging/setLevel")
    if reply is not None and reply.result is not None:
        return ("fail", "logging/setLevel succeeded without the logging capability declared.",
                reply.evidence)
    reply = facts.probes.get("logging")
    if reply is not None:
        if reply.result is not None:
            return ("pass", "logging declared and logging/setLevel works.", reply.evidence)
        return ("fail", "logging is declared but logging/setLevel failed.", reply.evidence)
    return _na("The server does not offer logging.")


def M088(facts: Facts) -> Judgement:
    reply = facts.probes.get("undeclared:completion/complete")
    if reply is not None and reply.result is not None:
        return ("fail", "completion/complete answered without the completions capability.",
                reply.evidence)
    if facts.declared("completions"):
        return ("pass", "The completions capability is declared.", "")
    return _na("The server does not offer completion.")


def M089(facts: Facts) -> Judgement:
    if not facts.completions:
        return _na("No completion request was made (nothing to complete, or not declared).")
    for r in facts.completions:
        comp = r.result.get("completion") if isinstance(r.result, dict) else None
        if not isinstance(comp, dict) or not isinstance(comp.get("values"), list):
            if r.result is not None:
                _blame(facts, r.msg)
            return ("fail", "completion/complete did not return completion.values.", r.evidence)
    return ("pass", "completion/complete returned completion.values.",
            facts.completions[0].evidence)


def S002(facts: Facts) -> Judgement:
    sse = [r for r in facts.log.http_replies if r.http and r.http.content_type.startswith(
        "text/event-stream") and isinstance(r.sent, dict) and "id" in r.sent]
    if not sse:
        return _na("No request was answered over SSE.")
    lost = [r for r in sse if r.msg is None]
    if lost:
        return ("fail", f"{len(lost)} of {len(sse)} SSE stream(s) ended without the response.",
                lost[0].evidence)
    return ("pass", f"{len(sse)} SSE stream(s) each carried their response.", "")


def S003(facts: Facts) -> Judgement:
    sse = [r for r in facts.log.http_replies if r.http and r.http.content_type.startswith(
        "text/event-stream") and isinstance(r.sent, dict) and "id" in r.sent]
    if not sse:
        return _na("No request was answered over SSE.")
    closed = [r for r in sse if r.msg is None and r.http is not None and not r.http.sse_ids]
    if closed:
        return ("fail", "An SSE stream closed before its response, with no event id to resume "
                "from.", closed[0].evidence)
    return ("pass", "No SSE stream closed before its response.", "")


def S004(facts: Facts) -> Judgement:
    get = facts.probes.get("get")
    if get is None or get.http is None or get.http.status != 200:
        return _na("The server offers no GET stream.")
    related = [m for m in get.others if isinstance(m, dict) and m.get("method") in (
        "notifications/progress",)]
    if related:
        return ("fail", "A message about an in-flight request arrived on the GET stream.",
                get.evidence)
    return ("pass", "Nothing about in-flight requests arrived on the GET stream.", "")


def S005(facts: Facts) -> Judgement:
    ids = facts.session_ids
    if not ids:
        return _na("The server issued no session id.")
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
        return _na("The server issued no session id.")
    status = reply.http.status if reply.http else None
    if status == 400:
        return ("pass", "A request without the session id got 400.", reply.evidence)
    return ("fail", f"A request without the required session id got HTTP {status}; answer 400.",
            reply.evidence)


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
        return _na("Not observable on this transport.")
    return ("pass", "No request before notifications/initialized.", "")


def S016(facts: Facts) -> Judgement:
    reply = facts.probes.get("unknown-version")
    res = reply.result if reply is not None else None
    offered = res.get("protocolVersion") if isinstance(res, dict) else None
    known = [v for v in facts.versions_echoed.values() if v in REVISIONS]
    if offered not in REVISIONS or not known:
        return _na("No known version was offered for an unknown one (see M046).")
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
        return _na("Not probed.")
    if reply.result is not None:
        return ("pass", "After malformed JSON, an invalid request and an unknown method the "
                "server still answers.", reply.evidence)
    return ("fail", "After malformed JSON, an invalid request and an unknown method the server "
            "no longer answers.", reply.evidence)


def S022(facts: Facts) -> Judgement:
    items = [c for r in facts.reads if isinstance(r.result, dict)
             for c in (r.result.get("contents") or []) if isinstance(c, dict)]
    if not items:
        return _na("No resource was read.")
    bad = [c for c in items if not isinstance(c.get("mimeType"), str)]
    if bad:
        return ("fail", f"{len(bad)} of {len(items)} content item(s) lack mimeType.",
                dump(bad[0])[:400])
    return ("pass", f"{len(items)} content item(s) carry mimeType.", "")


def S030(facts: Facts) -> Judgement:
    reply = facts.probes.get("invalid-cursor")
    if reply is None:
        return _na("No list to page through.")
    if reply.error_code == -32602:
        return ("pass", "An invalid cursor got -32602.", reply.evidence)
    got = f"error {reply.error_code}" if reply.error is not None else "a result"
    return ("fail", f"An invalid cursor got {got}; answer -32602.", reply.evidence)


def _optional_fields(method: str, noun: str, fields: dict[str, type | tuple[type, ...]]) -> Judge:
    def judge(facts: Facts) -> Judgement:
        items = [i for i in facts.items(method) if isinstance(i, dict)]
        using = [i for i in items if any(f in i for f in fields)]
        if not using:
            return _na(f"No {noun} uses these optional fields.")
        for i in using:
            for f, t in fields.items():
                if f in i and not isinstance(i[f], t):
                    return ("fail", f"{noun} field {f} has the wrong type: {dump(i)[:200]}",
                            dump(i))
        return ("pass", f"{len(using)} {noun}(s) use optional fields correctly.", "")
    return judge


def A004(facts: Facts) -> Judgement:
    return _na("A permission: the server may log to stderr; the checker reads stderr only as "
               "evidence when the server dies.")


def A011(facts: Facts) -> Judgement:
    ids = [i for r in facts.log.http_replies if r.http for i in r.http.sse_ids]
    if ids:
        return ("pass", f"SSE events carry ids ({len(ids)} seen).", "")
    return _na("No SSE event id was seen.")


def A013(facts: Facts) -> Judgement:
    if facts.session_ids:
        return ("pass", "The server assigns session ids.", "")
    return _na("The server assigns no session id.")


def A015(facts: Facts) -> Judgement:
    reply = facts.probes.get("delete")
    if reply is None or reply.http is None:
        return _na("No session to delete.")
    status = reply.http.status
    if status == 405 or 200 <= status < 300:
        return ("pass", f"DELETE answered {status}.", reply.evidence)
    return ("fail", f"DELETE answered {status}; allow it (2xx) or refuse it with 405.",
            reply.evidence)


def A023(facts: Facts) -> Judgement:
    notes = _notes(facts, "notifications/cancelled")
    with_reason = [n for n in notes if "reason" in (n.get("params") or {})]
    if not with_reason:
        return _na("No cancellation with a reason was sent.")
    if all(isinstance(n["params"]["reason"], str) for n in with_reason):
        return ("pass", "Cancellation reasons are strings.", "")
    return ("fail", "A cancellation reason is not a string.", dump(with_reason[0]))


def A025(facts: Facts) -> Judgement:
    notes = [n for n in _progress(facts) if isinstance(n.get("params"), dict)]
    using = [n for n in notes if "total" in n["params"] or "message" in n["params"]]
    if not using:
        return _na("No progress notification uses total or message.")
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
        return _na("No completion result carries total.")
    if all(isinstance(c["total"], int) for c in using):
        return ("pass", "completion.total is an integer.", "")
    return ("fail", "completion.total is not an integer.", dump(using[0]))


def _permission(message: str) -> Judge:
    def judge(facts: Facts) -> Judgement:
        return _na(message)
    return judge


JUDGES: dict[str, Judge] = {
    "M011": M011, "M013": M013, "M014": M014, "M015": M015, "M016": M016, "M018": M018,
    "M022": M022, "M023": M023, "M025": M025, "M026": M026, "M027": M027, "M028": M028,
    "M030": M030, "M038": M038, "M042": M042, "M045": M045, "M046": M046, "M047": M047,
    "M048": _capability_row(("resources/list", "resources/templates/list"), "resources"),
    "M049": M049, "M050": M050, "M051": M051, "M052": M052, "M053": M053, "M054": M054,
    "M056": M056, "M057": _list_changed_row("resources"),
    "M058": _capability_row(("prompts/list",), "prompts"),
    "M059": M059, "M060": M060, "M061": M061, "M062": M062, "M063": M063,
    "M064": _list_changed_row("prompts"),
    "M065": _capability_row(("tools/list",), "tools"),
    "M066": M066, "M067": M067_full, "M068": M068, "M069": M069,
    "M070": _list_changed_row("tools"),
    "M079": M079, "M080": M080, "M081": M081, "M083": M083, "M084": M084, "M085": M085,
    "M086": M086, "M087": M087, "M088": M088, "M089": M089,
    "S002": S002, "S003": S003, "S004": S004, "S005": S005, "S006": S006, "S008": S008,
    "S014": S014, "S016": S016, "S018": S018, "S021": S021, "S022": S022, "S030": S030,
    "A001": _permission("A permission about request params; any choice conforms."),
    "A002": _permission("A permission about notification params; any choice conforms."),
    "A003": _permission("The server may send batches; none is required."),
    "A004": A004,
    "A005": _permission("The server may send requests and notifications before a response."),
    "A007": _permission("The server may send requests and notifications on SSE streams."),
    "A008": _permission("The server may close an SSE stream at any time."),
    "A011": A011, "A013": A013, "A015": A015,
    "A017": _optional_fields("resources/list", "resource",
                             {"description": str, "mimeType": str, "size": int}),
    "A018": _optional_fields("resources/templates/list", "resource template",
                             {"name": str, "description": str, "mimeType": str}),
    "A019": _optional_fields("prompts/list", "prompt", {"description": str, "arguments": list}),
    "A020": _optional_fields("tools/list", "tool", {"annotations": dict}),
    "A023": A023, "A025": A025, "A026": A026,
}


def judge_matrix(facts: Facts) -> list[Finding]:
    """One finding per matrix row from M011 on (the envelope rows are judged elsewhere)."""
    out: list[Finding] = []
    for row in matrix():
        if row.id in ("M001", "M002", "M003", "M004", "M005", "M006", "M007", "M008", "M009",
                      "M010"):
            continue
        if row.id in UNTESTABLE:
            out.append(finding(row.id, "untestable", UNTESTABLE[row.id], "", facts.era))
            continue
        if facts.era == "stateless" and row.id in STATEFUL_ONLY:
            out.append(finding(row.id, "n/a", STATELESS_NA, "", facts.era))
            continue
        judge = JUDGES.get(row.id)
        if judge is None:
            out.append(finding(row.id, "untestable", "No probe observes this row.", "",
                               facts.era))
            continue
        try:
            verdict, message, evidence = judge(facts)
        except (AttributeError, KeyError, TypeError) as exc:  # a shape we did not foresee
            verdict, message, evidence = ("fail", f"The server's answers could not be read "
                                          f"({type(exc).__name__}: {exc}).", "")
        out.append(finding(row.id, verdict, message, evidence, facts.era))
    return out
