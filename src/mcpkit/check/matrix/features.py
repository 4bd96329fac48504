"""Judges of the matrix rows on the server features: resources, prompts and tools (2.1-2.3).

Most rows come in kinds, built by a factory per method: the capability is declared when the
methods answer (``M048``, ``M058``, ``M065``), a list result has its array and each item its
required fields, a read or get result has its contents, and ``list_changed`` is sent only
when declared. Tool call results must carry content of the types the negotiated revision
knows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..facts import Facts
from ..stateful import LATEST
from ..wire import Reply, dump
from .common import Judge, Judgement, capability_probes, na


def _list_rows(method: str, key: str, fields: tuple[str, ...], noun: str) -> tuple[Judge, Judge]:
    """(the list result has the array, each item has ``fields``) for one list method."""

    def array(facts: Facts) -> Judgement:
        outcome = facts.lists.get(method)
        if outcome is None or not outcome.pages:
            return na(f"{method} is not served.")
        for page in outcome.pages:
            if not isinstance(page.result.get(key), list):
                facts.blame_answers(method)
                return ("fail", f"A {method} result has no {key} array.", page.evidence)
        return ("pass", f"{len(outcome.pages)} page(s), {len(outcome.items)} {noun}(s).",
                outcome.pages[0].evidence)

    def items(facts: Facts) -> Judgement:
        outcome = facts.lists.get(method)
        if outcome is None or not outcome.pages:
            return na(f"{method} is not served.")
        if not outcome.items:
            return na(f"The server lists no {noun}s.")
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
        return na(f"The server does not offer {capability}.")
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
        return na(f"No {method} was sent.")
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
            return na(f"No {noun} result to judge.")
        for r in rs:
            if not isinstance(r.result.get(key), list):
                facts.blame(r.msg)
                return ("fail", f"A {noun} result has no {key} array.", r.evidence)
        return ("pass", f"{len(rs)} {noun} result(s) carry {key}.", rs[0].evidence)

    def items(facts: Facts) -> Judgement:
        rs = replies(facts)
        entries = [(r, e) for r in rs for e in (r.result.get(key) or []) if isinstance(
            r.result.get(key), list)]
        if not entries:
            return na(f"No {noun} {key} to judge.")
        for r, e in entries:
            problem = item_ok(e, facts)
            if problem:
                facts.blame(r.msg)
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
        return na("No tools/call result to judge (see --call-tools).")
    for r in rs:
        if not isinstance(r.result.get("content"), list):
            facts.blame(r.msg)
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
        return na("No tool result content to judge.")
    for r, b in blocks:
        if not isinstance(b, dict) or b.get("type") not in allowed:
            facts.blame(r.msg)
            return ("fail", f"Content block type {dump(b)[:100]} is not one of {sorted(allowed)}.",
                    r.evidence)
    return ("pass", f"{len(blocks)} content block(s) of known types.", "")


def M056(facts: Facts) -> Judgement:
    probed = capability_probes(facts, "resources/subscribe", "resources.subscribe",
                               "subscribe")
    if probed is not None:
        return probed
    # no probe ran: say why from what the server showed, not a guess
    caps = facts.capabilities.get("resources")
    declared = isinstance(caps, dict) and caps.get("subscribe") is True
    if not declared:
        return na("The server does not declare resources.subscribe.")
    templates = len(facts.items("resources/templates/list"))
    only = (f" (the server offers only {templates} resource template(s))" if templates else "")
    return ("untestable", f"resources.subscribe is declared, but resources/list listed no "
            f"resource with a URI{only}, so there was nothing to subscribe to.",
            dump({"capabilities": {"resources": caps}}))


def S022(facts: Facts) -> Judgement:
    items = [c for r in facts.reads if isinstance(r.result, dict)
             for c in (r.result.get("contents") or []) if isinstance(c, dict)]
    if not items:
        return na("No resource was read.")
    bad = [c for c in items if not isinstance(c.get("mimeType"), str)]
    if bad:
        return ("fail", f"{len(bad)} of {len(items)} content item(s) lack mimeType.",
                dump(bad[0])[:400])
    return ("pass", f"{len(items)} content item(s) carry mimeType.", "")


def _optional_fields(method: str, noun: str, fields: dict[str, type | tuple[type, ...]]) -> Judge:
    def judge(facts: Facts) -> Judgement:
        items = [i for i in facts.items(method) if isinstance(i, dict)]
        using = [i for i in items if any(f in i for f in fields)]
        if not using:
            return na(f"No {noun} uses these optional fields.")
        for i in using:
            for f, t in fields.items():
                if f in i and not isinstance(i[f], t):
                    return ("fail", f"{noun} field {f} has the wrong type: {dump(i)[:200]}",
                            dump(i))
        return ("pass", f"{len(using)} {noun}(s) use optional fields correctly.", "")
    return judge


JUDGES: dict[str, Judge] = {
    "M048": _capability_row(("resources/list", "resources/templates/list"), "resources"),
    "M049": M049, "M050": M050, "M051": M051, "M052": M052, "M053": M053, "M054": M054,
    "M056": M056, "M057": _list_changed_row("resources"),
    "M058": _capability_row(("prompts/list",), "prompts"),
    "M059": M059, "M060": M060, "M061": M061, "M062": M062, "M063": M063,
    "M064": _list_changed_row("prompts"),
    "M065": _capability_row(("tools/list",), "tools"),
    "M066": M066, "M067": M067_full, "M068": M068, "M069": M069,
    "M070": _list_changed_row("tools"),
    "S022": S022,
    "A017": _optional_fields("resources/list", "resource",
                             {"description": str, "mimeType": str, "size": int}),
    "A018": _optional_fields("resources/templates/list", "resource template",
                             {"name": str, "description": str, "mimeType": str}),
    "A019": _optional_fields("prompts/list", "prompt", {"description": str, "arguments": list}),
    "A020": _optional_fields("tools/list", "tool", {"annotations": dict}),
}
"""The rows of this module -> their judges."""
