"""Probes of the server features, shared by both eras: lists, tools, resources, prompts,
completion, and the JSON-RPC error paths.

A :class:`Speaker` hides what differs between eras: in the handshake era a request is sent
as is on an initialized channel; in 2026-07-28 every request carries the protocol ``_meta``
fields (and, over HTTP, the routing headers). Each probe records what it saw in
:class:`~mcpkit.check.facts.Facts` and, where the verdict is local to the probe, appends
the finding straight away.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..protocol.stateless import CLIENT_CAPABILITIES as META_CAPS
from ..protocol.stateless import CLIENT_INFO as META_INFO
from ..protocol.stateless import PROTOCOL_VERSION as META_VERSION
from ..protocol.versions import V2026_07_28
from ..transports.http_routing import NAMED_BY, header_value, param_header_value
from .argsgen import invalid_arguments, valid_arguments
from .facts import CAPABILITY_OF, LIST_KEYS, Facts, ListOutcome
from .lint.input import ProvokedError, ToolCall
from .rules import finding
from .schemas import check_instance
from .wire import CHECKER_INFO, Channel, Reply, dump
from .wire.http import HttpChannel
from .wire.sse import SseChannel
from .wire.stdio import StdioChannel

MAX_PAGES = 50
MAX_TOOLS_CALLED = 20
UNKNOWN_TOOL = "mcpkit_check_no_such_tool"
UNKNOWN_RESOURCE = "mcpkit-check://no-such-resource/0"
UNKNOWN_METHOD = "mcpkit/check-no-such-method"
BAD_CURSOR = "mcpkit-check:not-a-cursor"
STATELESS_VERSION = V2026_07_28


class Speaker:
    """Sends requests the way the era under test expects them."""

    def __init__(self, channel: Channel, stateless: bool) -> None:
        self.channel = channel
        self.stateless = stateless
        #: tool -> {parameter: header} of its ``x-mcp-header`` declarations, once listed:
        #: a 2026-07-28 call mirrors those arguments in ``Mcp-Param-*`` as a client must.
        self.param_headers: dict[str, dict[str, str]] = {}

    def meta(self, version: str = STATELESS_VERSION) -> dict[str, Any]:
        return {META_VERSION: version, META_CAPS: {}, META_INFO: CHECKER_INFO}

    def params(self, method: str, params: dict[str, Any] | None) -> dict[str, Any] | None:
        if not self.stateless:
            return params
        out = dict(params or {})
        out["_meta"] = {**self.meta(), **(out.get("_meta") or {})}
        return out

    def headers(self, method: str, params: dict[str, Any] | None) -> dict[str, str] | None:
        if not (self.stateless and isinstance(self.channel, HttpChannel)):
            return None
        h = {"Mcp-Method": method, "MCP-Protocol-Version": STATELESS_VERSION}
        p = params or {}
        key = NAMED_BY.get(method)  # what Mcp-Name repeats (tasks/*: the taskId)
        name = p.get(key) if key is not None else None
        if isinstance(name, str):
            h["Mcp-Name"] = header_value(name)
        arguments = p.get("arguments")
        if method == "tools/call" and isinstance(name, str) and isinstance(arguments, dict):
            for param, header in self.param_headers.get(name, {}).items():
                value = param_header_value(arguments.get(param))
                if value is not None:
                    h[f"Mcp-Param-{header}"] = value
        return h

    def fence(self) -> dict[str, Any]:
        """A harmless request that marks a point in the server's input (see send_raw)."""
        method = "tools/list" if self.stateless else "ping"
        return self.channel.make_request(method, self.params(method, None), None)

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        full = self.params(method, params)
        hdrs = {**(self.headers(method, params) or {}), **(headers or {})}
        return await self.channel.request(method, full, timeout=timeout, headers=hdrs or None)


def _item_key(item: Any) -> str:
    if isinstance(item, dict):
        for key in ("name", "uri", "uriTemplate"):
            if isinstance(item.get(key), str):
                return f"{key}={item[key]}"
    return dump(item)


async def list_all(sp: Speaker, method: str) -> ListOutcome:
    """Follow ``nextCursor`` to the end (bounded), noting repeated cursors and items."""
    out = ListOutcome(method)
    cursor: Any = None
    seen_cursors: set[str] = set()
    seen_items: set[str] = set()
    for _ in range(MAX_PAGES):
        reply = await sp.call(method, {"cursor": cursor} if cursor is not None else None)
        result = reply.result
        if not isinstance(result, dict):
            out.error = reply
            return out
        out.pages.append(reply)
        items = result.get(LIST_KEYS[method])
        page_keys = set()
        for item in items if isinstance(items, list) else []:
            key = _item_key(item)
            if key in seen_items and out.problem is None:
                out.problem = f"{key} appears again on a later page"
            page_keys.add(key)
            out.items.append(item)
        seen_items |= page_keys
        cursor = result.get("nextCursor")
        if cursor is None:
            return out
        marker = dump(cursor)
        if marker in seen_cursors:
            out.problem = f"nextCursor {marker} repeats: following it would loop forever"
            return out
        seen_cursors.add(marker)
    out.problem = f"still returning nextCursor after {MAX_PAGES} pages"
    return out


def declared_param_headers(tools: list[Any]) -> dict[str, dict[str, str]]:
    """``{tool: {parameter: header}}`` from the ``x-mcp-header`` annotations in tools'
    input schemas (the well-formed ones; the server's own checks judge the rest)."""
    out: dict[str, dict[str, str]] = {}
    for tool in tools:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        schema = tool.get("inputSchema")
        props = schema.get("properties") if isinstance(schema, dict) else None
        declared = {p: sub["x-mcp-header"] for p, sub in (props or {}).items()
                    if isinstance(sub, dict) and isinstance(sub.get("x-mcp-header"), str)}
        if declared:
            out[tool["name"]] = declared
    return out


async def probe_lists(sp: Speaker, facts: Facts) -> None:
    for method in LIST_KEYS:
        facts.lists[method] = await list_all(sp, method)
    if facts.lists["tools/list"].ok:
        facts.second_tools = await list_all(sp, "tools/list")
    sp.param_headers = declared_param_headers(facts.tools)
    era = facts.era
    problems = [o for o in facts.lists.values() if o.ok and o.problem]
    listed = [o for o in facts.lists.values() if o.ok]
    if problems:
        o = problems[0]
        facts.findings.append(finding(
            "LIST.pagination", "fail",
            f"{o.method}: {o.problem}. Return nextCursor only while more items follow, and "
            "never repeat an item or a cursor.", o.evidence, era))
    elif listed:
        pages = sum(len(o.pages) for o in listed)
        facts.findings.append(finding(
            "LIST.pagination", "pass",
            f"{len(listed)} list method(s) followed to the end over {pages} page(s).",
            listed[0].evidence, era))
    else:
        facts.findings.append(finding("LIST.pagination", "n/a", "No list method answered.",
                                      "", era))
    first, second = facts.lists["tools/list"], facts.second_tools
    if first.ok and second is not None and second.ok:
        a = [_item_key(t) for t in first.items]
        b = [_item_key(t) for t in second.items]
        if a == b:
            facts.findings.append(finding(
                "LIST.deterministic-order", "pass",
                f"tools/list gave the same {len(a)} tool(s) in the same order twice.",
                "", era))
        else:
            facts.findings.append(finding(
                "LIST.deterministic-order", "fail",
                "tools/list gave a different list or order the second time: "
                f"{a[:8]} then {b[:8]}. Sort tools by a stable key.",
                second.evidence, era))
    else:
        facts.findings.append(finding(
            "LIST.deterministic-order", "n/a", "tools/list did not answer twice.", "", era))


async def probe_invalid_cursor(sp: Speaker, facts: Facts) -> None:
    if facts.lists.get("tools/list") and facts.lists["tools/list"].ok:
        facts.probes["invalid-cursor"] = await sp.call("tools/list", {"cursor": BAD_CURSOR})


def _tool_text(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    parts = []
    for block in result.get("content") or []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def tools_to_call(facts: Facts, mode: str, limit: int | None = MAX_TOOLS_CALLED
                  ) -> list[dict[str, Any]]:
    """The listed tools ``mode`` lets the checker call (``all``: every one; ``readonly``:
    those annotated ``readOnlyHint: true``), the first ``limit`` of them."""
    tools = [t for t in facts.tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    if mode == "readonly":
        tools = [t for t in tools if isinstance(t.get("annotations"), dict)
                 and t["annotations"].get("readOnlyHint") is True]
    elif mode != "all":
        tools = []
    return tools[:limit]


async def probe_tools(sp: Speaker, facts: Facts, mode: str) -> None:
    era = facts.era
    if not facts.lists.get("tools/list") or not facts.lists["tools/list"].ok:
        for rule in ("TOOLS.unknown-tool", "TOOLS.invalid-arguments", "TOOLS.structured-content"):
            facts.findings.append(finding(rule, "n/a", "The server lists no tools.", "", era))
        return
    if mode == "none":
        for rule in ("TOOLS.unknown-tool", "TOOLS.invalid-arguments", "TOOLS.structured-content"):
            facts.findings.append(finding(
                rule, "n/a", "Not probed: --call-tools none forbids every tools/call.", "", era))
        return
    # An unknown tool: no tool runs, so this is safe in every mode but "none".
    reply = await sp.call("tools/call", {"name": UNKNOWN_TOOL, "arguments": {}})
    facts.probes["unknown-tool"] = reply
    if reply.error_code == -32602:
        facts.findings.append(finding(
            "TOOLS.unknown-tool", "pass", "Unknown tool answered with -32602.", reply.evidence,
            era))
    elif reply.error is not None:
        facts.findings.append(finding(
            "TOOLS.unknown-tool", "fail",
            f"Unknown tool answered with code {reply.error_code}; use -32602 (Invalid params).",
            reply.evidence, era))
    elif reply.result is not None:
        facts.findings.append(finding(
            "TOOLS.unknown-tool", "fail",
            "Unknown tool answered with a result; an unknown tool is a protocol error "
            "(JSON-RPC error -32602), not a tool execution error.", reply.evidence, era))
    else:
        facts.findings.append(finding(
            "TOOLS.unknown-tool", "fail", "No answer to a call of an unknown tool.",
            reply.evidence, era))
    if reply.error is not None or reply.result is not None:
        message = reply.error.get("message") if isinstance(reply.error, dict) else _tool_text(
            reply.result)
        facts.provoked.append(ProvokedError(
            "unknown tool", str(message), (UNKNOWN_TOOL,), reply.evidence))
    await _probe_invalid_arguments(sp, facts, mode)
    if mode == "all":
        await _probe_valid_calls(sp, facts)
    else:
        facts.findings.append(finding(
            "TOOLS.structured-content", "n/a",
            "Not probed: needs successful calls, which only --call-tools all allows.", "", era))


async def _probe_invalid_arguments(sp: Speaker, facts: Facts, mode: str) -> None:
    era = facts.era
    tool_error_required = (facts.revision or "") >= "2025-11-25"
    verdicts: list[tuple[str, str, str]] = []  # (verdict, message, evidence)
    refused: list[str] = []  # tools the token may not call: their arguments were not judged
    candidates = tools_to_call(facts, mode)
    for tool in candidates:
        made = invalid_arguments(tool.get("inputSchema"))
        if made is None:
            continue
        args, param = made
        reply = await sp.call("tools/call", {"name": tool["name"], "arguments": args})
        facts.call_replies.append(reply)
        facts.calls.append(ToolCall(tool["name"], args, reply.result if isinstance(
            reply.result, dict) else None, reply.error if isinstance(reply.error, dict) else None,
            reply.evidence))
        name = tool["name"]
        result = reply.result
        if reply.http is not None and reply.http.status in (401, 403):
            refused.append(f"{name} (HTTP {reply.http.status})")
            continue
        if isinstance(result, dict) and result.get("isError") is True:
            verdicts.append(("pass", f"{name}: isError result", reply.evidence))
            facts.provoked.append(ProvokedError(
                f"invalid arguments for {name}", _tool_text(result), (param,), reply.evidence))
        elif isinstance(result, dict):
            verdicts.append((
                "fail",
                f"{name} ran with arguments that violate its inputSchema ({param}) and returned a "
                "result without isError; validate arguments and answer with isError: true",
                reply.evidence))
        elif reply.error is not None:
            msg = str(reply.error.get("message") if isinstance(reply.error, dict) else reply.error)
            facts.provoked.append(ProvokedError(
                f"invalid arguments for {name}", msg, (param,), reply.evidence))
            if tool_error_required:
                verdicts.append((
                    "fail",
                    f"{name}: invalid arguments answered with JSON-RPC error {reply.error_code}; "
                    "since 2025-11-25 they are a tool execution error (result with isError: true) "
                    "so the model sees the message and can correct itself",
                    reply.evidence))
            else:
                verdicts.append(("pass", f"{name}: protocol error {reply.error_code}, allowed "
                                 f"before 2025-11-25", reply.evidence))
        else:
            verdicts.append(("fail", f"{name}: no answer to a call with invalid arguments",
                             reply.evidence))
    if not verdicts:
        why = ("no tool is annotated readOnlyHint: true (use --call-tools all to probe the others)"
               if mode == "readonly" else "no tool has an inputSchema that arguments can violate")
        if refused:
            why = ("the server refused the token for " + ", ".join(refused)
                   + "; a token with more scopes lets the checker probe them")
        facts.findings.append(finding(
            "TOOLS.invalid-arguments", "n/a", f"Not probed: {why}.", "", era))
        return
    failed = [v for v in verdicts if v[0] == "fail"]
    if failed:
        facts.findings.append(finding(
            "TOOLS.invalid-arguments", "fail",
            f"{len(failed)} of {len(verdicts)} tool(s): " + "; ".join(v[1] for v in failed[:3]),
            failed[0][2], era))
    else:
        facts.findings.append(finding(
            "TOOLS.invalid-arguments", "pass",
            f"{len(verdicts)} tool(s) refused schema-violating arguments: "
            + "; ".join(v[1] for v in verdicts[:3])
            + ("; not judged, the token may not call: " + ", ".join(refused) if refused
               else ""), verdicts[0][2], era))


async def _probe_valid_calls(sp: Speaker, facts: Facts) -> None:
    era = facts.era
    checked: list[tuple[str, str, str]] = []
    for n, tool in enumerate(tools_to_call(facts, "all")):
        args = valid_arguments(tool.get("inputSchema"))
        if args is None:
            continue
        params: dict[str, Any] = {"name": tool["name"], "arguments": args,
                                  "_meta": {"progressToken": f"mcpkit-check-{n}"}}
        reply = await sp.call("tools/call", params)
        facts.call_replies.append(reply)
        result = reply.result if isinstance(reply.result, dict) else None
        facts.calls.append(ToolCall(tool["name"], args, result, reply.error if isinstance(
            reply.error, dict) else None, reply.evidence))
        schema = tool.get("outputSchema")
        if result is None or result.get("isError") is True or schema is None:
            continue
        if "structuredContent" not in result:
            checked.append(("fail", f"{tool['name']} declares outputSchema but its result has no "
                            "structuredContent", reply.evidence))
            continue
        errors = check_instance(schema, result["structuredContent"])
        if errors:
            checked.append(("fail", f"{tool['name']}: structuredContent does not match "
                            f"outputSchema: {errors[0]}", reply.evidence))
        elif errors is not None:
            checked.append(("pass", tool["name"], reply.evidence))
    failed = [c for c in checked if c[0] == "fail"]
    if failed:
        facts.findings.append(finding(
            "TOOLS.structured-content", "fail", "; ".join(c[1] for c in failed[:3]),
            failed[0][2], era))
    elif checked:
        facts.findings.append(finding(
            "TOOLS.structured-content", "pass",
            f"{len(checked)} result(s) matched their outputSchema.", checked[0][2], era))
    else:
        facts.findings.append(finding(
            "TOOLS.structured-content", "n/a",
            "No successful call of a tool with an outputSchema.", "", era))


async def probe_resources(sp: Speaker, facts: Facts) -> None:
    era = facts.era
    for res in facts.items("resources/list")[:3]:
        if isinstance(res, dict) and isinstance(res.get("uri"), str):
            facts.reads.append(await sp.call("resources/read", {"uri": res["uri"]}))
    listed = facts.lists.get("resources/list")
    if not facts.declared("resources") and not (listed and listed.ok):
        facts.findings.append(finding(
            "RES.unknown-resource", "n/a", "The server offers no resources.", "", era))
        return
    reply = await sp.call("resources/read", {"uri": UNKNOWN_RESOURCE})
    facts.probes["unknown-resource"] = reply
    stateless = facts.era == "stateless"
    want = -32602 if stateless else -32002
    code = reply.error_code
    if reply.error is not None:
        message = reply.error.get("message") if isinstance(reply.error, dict) else ""
        facts.provoked.append(ProvokedError("unknown resource", str(message),
                                            (UNKNOWN_RESOURCE,), reply.evidence))
    if code == want:
        f = finding("RES.unknown-resource", "pass", f"Unknown resource answered with {want}.",
                    reply.evidence, era)
    elif reply.error is not None:
        f = finding("RES.unknown-resource", "fail",
                    f"Unknown resource answered with code {code}; "
                    + ("2026-07-28 requires -32602 (never -32002)." if stateless else
                       "use -32002 (Resource not found)."), reply.evidence, era)
    elif reply.result is not None:
        f = finding("RES.unknown-resource", "fail",
                    "Reading a resource that does not exist returned a result; answer with "
                    f"error {want} instead of empty or made-up contents.", reply.evidence, era)
    else:
        f = finding("RES.unknown-resource", "fail", "No answer to reading an unknown resource.",
                    reply.evidence, era)
    if stateless:
        f.level = "MUST"
    facts.findings.append(f)


async def probe_prompts(sp: Speaker, facts: Facts) -> None:
    for prompt in facts.items("prompts/list")[:5]:
        if not isinstance(prompt, dict) or not isinstance(prompt.get("name"), str):
            continue
        args = {
            a["name"]: "example"
            for a in prompt.get("arguments") or []
            if isinstance(a, dict) and isinstance(a.get("name"), str) and a.get("required")
        }
        params: dict[str, Any] = {"name": prompt["name"]}
        if args:
            params["arguments"] = args
        facts.prompt_gets.append(await sp.call("prompts/get", params))


def _completion_ref(facts: Facts) -> dict[str, Any] | None:
    for prompt in facts.items("prompts/list"):
        if isinstance(prompt, dict) and isinstance(prompt.get("name"), str):
            for arg in prompt.get("arguments") or []:
                if isinstance(arg, dict) and isinstance(arg.get("name"), str):
                    return {"ref": {"type": "ref/prompt", "name": prompt["name"]},
                            "argument": {"name": arg["name"], "value": ""}}
    for tpl in facts.items("resources/templates/list"):
        if isinstance(tpl, dict) and isinstance(tpl.get("uriTemplate"), str):
            var = tpl["uriTemplate"].partition("{")[2].partition("}")[0].lstrip("+#./;?&")
            if var:
                return {"ref": {"type": "ref/resource", "uri": tpl["uriTemplate"]},
                        "argument": {"name": var.split(",")[0].rstrip("*"), "value": ""}}
    return None


async def probe_completion(sp: Speaker, facts: Facts) -> None:
    params = _completion_ref(facts)
    if params is None:
        return
    reply = await sp.call("completion/complete", params)
    if facts.declared("completions"):
        facts.completions.append(reply)
    else:
        facts.probes["undeclared:completion/complete"] = reply


async def probe_undeclared_lists(facts: Facts) -> None:
    """Record list methods answered although their capability was not declared."""
    for method, outcome in facts.lists.items():
        if outcome.ok and not facts.declared(CAPABILITY_OF[method]) and outcome.pages:
            facts.probes[f"undeclared:{method}"] = outcome.pages[0]


async def probe_rpc_errors(sp: Speaker, facts: Facts, survive: str) -> None:
    """Unknown method, malformed JSON, an invalid request; then check the server still
    answers (``survive`` is the method to try: ``ping`` or ``tools/list``)."""
    era = facts.era
    channel = sp.channel
    reply = await sp.call(UNKNOWN_METHOD, {})
    facts.probes["unknown-method"] = reply
    if reply.error_code == -32601:
        facts.findings.append(finding("RPC.unknown-method", "pass",
                                      "Unknown method answered with -32601.", reply.evidence, era))
    else:
        got = (f"code {reply.error_code}" if reply.error is not None else
               "a result" if reply.result is not None else "no answer")
        facts.findings.append(finding(
            "RPC.unknown-method", "fail",
            f"Unknown method answered with {got}; use -32601 (Method not found).",
            reply.evidence, era))
    if reply.error is not None:
        msg = reply.error.get("message") if isinstance(reply.error, dict) else ""
        facts.provoked.append(ProvokedError("unknown method", str(msg), (UNKNOWN_METHOD,),
                                            reply.evidence))
    # Malformed JSON.
    raw = await channel.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": ',
                                 fence=sp.fence())
    facts.probes["parse-error"] = raw
    _judge_error_code(facts, "RPC.parse-error", raw, -32700, "malformed JSON")
    # A request whose method is not a string.
    bad = {"jsonrpc": "2.0", "id": "mcpkit-check-invalid", "method": 42}
    inv = await channel.send_raw(orjson.dumps(bad), fence=sp.fence())
    facts.probes["invalid-request"] = inv
    _judge_error_code(facts, "RPC.invalid-request", inv, -32600, "a request whose method is 42")
    # A notification must not be answered.
    if isinstance(channel, (StdioChannel, SseChannel)):  # answers come on one stream
        await channel.notify("notifications/mcpkit-check")
        stray = await channel.wait_orphan(0.3)
        answered = stray.msg
        evidence = stray.evidence
    else:
        assert isinstance(channel, HttpChannel)
        note = await channel.notify("notifications/mcpkit-check")
        answered = note.msg if note.http and note.http.status < 300 else None
        evidence = note.evidence
    if answered is None:
        facts.findings.append(finding("RPC.notification-no-reply", "pass",
                                      "An unknown notification got no response.", evidence, era))
    else:
        facts.findings.append(finding(
            "RPC.notification-no-reply", "fail",
            "The server answered a notification; notifications never get a response.",
            f"→ notifications/mcpkit-check\n← {dump(answered)}", era))
    facts.probes["survive"] = await sp.call(survive, None if survive == "ping" else {})


def _judge_error_code(facts: Facts, rule: str, reply: Reply, code: int, what: str) -> None:
    era = facts.era
    what = what[:1].upper() + what[1:]
    msg = reply.msg
    if isinstance(msg, list) and msg:
        msg = msg[0]
    err = msg.get("error") if isinstance(msg, dict) else None
    got = err.get("code") if isinstance(err, dict) else None
    status = reply.http.status if reply.http else None
    if got == code:
        facts.findings.append(finding(rule, "pass", f"{what} answered with {code}.",
                                      reply.evidence, era))
    elif reply.http is not None and got is None and status is not None and 400 <= status < 500:
        facts.findings.append(finding(
            rule, "pass", f"{what} refused with HTTP {status} (no JSON-RPC body).",
            reply.evidence, era))
    else:
        seen = f"code {got}" if got is not None else (
            "a result" if isinstance(msg, dict) and "result" in msg else "no answer")
        facts.findings.append(finding(
            rule, "fail", f"{what} got {seen}; JSON-RPC requires error "
            f"{code} (with id null when the id cannot be read).", reply.evidence, era))
