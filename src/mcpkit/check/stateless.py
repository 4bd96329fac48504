"""Probing the stateless revision 2026-07-28: discovery, per-request ``_meta``, headers,
``resultType`` and caching hints, then the same feature probes as the handshake era.

No ``initialize``: every request stands alone and carries
``io.modelcontextprotocol/protocolVersion`` and ``clientCapabilities`` in ``params._meta``;
over HTTP it also carries ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name``.
"""

from __future__ import annotations

from typing import Any

from ..protocol.stateless import CACHEABLE, SERVER_INFO
from ..protocol.stateless import CLIENT_CAPABILITIES as META_CAPS
from ..protocol.stateless import CLIENT_INFO as META_INFO
from ..protocol.stateless import PROTOCOL_VERSION as META_VERSION
from .facts import Facts
from .features import (
    STATELESS_VERSION,
    Speaker,
    probe_completion,
    probe_invalid_cursor,
    probe_lists,
    probe_prompts,
    probe_resources,
    probe_rpc_errors,
    probe_tools,
    probe_undeclared_lists,
)
from .model import Verdict
from .rules import finding
from .stateful import FOREIGN_ORIGIN, UNKNOWN_VERSION
from .target import Target
from .taskprobe import declared_tasks, probe_tasks
from .wire import CHECKER_INFO, Reply, WireLog
from .wire.http import HttpChannel

STATELESS_ERRORS = frozenset({-32020, -32021, -32022})
"""The error codes the stateless revision added: header mismatch, missing client capability,
unsupported protocol version. Refusing ``server/discover`` with one shows the server knows
2026-07-28."""


async def probe_stateless(target: Target, call_tools: str, stateful_served: bool,
                          task_hint: dict[str, str] | None = None) -> Facts:
    """Probe the stateless era; ``task_hint``: which tools the handshake era listed with
    ``execution.taskSupport`` optional or required (this era's listing has no ``execution``)."""
    log = WireLog()
    facts = Facts("stateless", target.transport, log)
    async with target.channel(log, "stateless") as chan:
        chan.revision = STATELESS_VERSION
        sp = Speaker(chan, stateless=True)
        if not await _discover(sp, facts):
            return facts
        await probe_lists(sp, facts)
        await probe_undeclared_lists(facts)
        await probe_invalid_cursor(sp, facts)
        await probe_tools(sp, facts, call_tools)
        await probe_tasks(sp, facts, call_tools, task_hint)
        await probe_resources(sp, facts)
        await probe_prompts(sp, facts)
        await probe_completion(sp, facts)
        await _meta_rules(sp, facts)
        if isinstance(chan, HttpChannel):
            await _header_rules(sp, chan, facts, stateful_served)
        await probe_rpc_errors(sp, facts, "tools/list")
        _unknown_method_status(facts)
    _result_rules(facts)
    return facts


async def _discover(sp: Speaker, facts: Facts) -> bool:
    era = facts.era
    reply = await sp.call("server/discover", {})
    facts.init = reply
    result = reply.result
    if not isinstance(result, dict):
        code = reply.error_code
        facts.note = (
            "server/discover was refused" + (f" with {code}" if code is not None else
                                             " (no answer)")
            + ": the server does not serve 2026-07-28"
        )
        if code in STATELESS_ERRORS:
            facts.findings.append(finding(
                "STATELESS.discover", "fail",
                f"server/discover answered with the stateless revision's error {code} but no "
                "result; a server that speaks 2026-07-28 must implement server/discover.",
                reply.evidence, era))
        return False
    facts.served = True
    facts.revision = STATELESS_VERSION
    caps = result.get("capabilities")
    facts.capabilities = caps if isinstance(caps, dict) else {}
    instr = result.get("instructions")
    facts.instructions = instr if isinstance(instr, str) else None
    meta = result.get("_meta")
    info = meta.get(SERVER_INFO) if isinstance(meta, dict) else None
    facts.server_info = info if isinstance(info, dict) else None
    problems = []
    versions = result.get("supportedVersions")
    if not isinstance(versions, list) or STATELESS_VERSION not in versions:
        problems.append(f"supportedVersions must list {STATELESS_VERSION} (got {versions!r})")
    if not isinstance(caps, dict):
        problems.append("capabilities must be an object")
    if problems:
        for rec in facts.log.received:
            if rec.msg is reply.msg:
                rec.blamed = True
        facts.findings.append(finding("STATELESS.discover", "fail", "; ".join(problems) + ".",
                                      reply.evidence, era))
    else:
        facts.findings.append(finding(
            "STATELESS.discover", "pass",
            f"server/discover lists {versions} and capabilities {sorted(facts.capabilities)}.",
            reply.evidence, era))
    return True


def _expect(
    facts: Facts, rule: str, reply: Reply, code: int, status: int | None, what: str, fix: str
) -> None:
    era = facts.era
    got_status = reply.http.status if reply.http else None
    problems = []
    if reply.error_code != code:
        seen = (f"error {reply.error_code}" if reply.error is not None else
                "a result" if reply.result is not None else "no JSON-RPC error")
        problems.append(f"{seen} instead of {code}")
    if status is not None and reply.http is not None and got_status != status:
        problems.append(f"HTTP {got_status} instead of {status}")
    if problems:
        facts.findings.append(finding(rule, "fail", f"{what}: {', '.join(problems)}. {fix}",
                                      reply.evidence, era))
    else:
        tail = f" (HTTP {got_status})" if reply.http is not None else ""
        facts.findings.append(finding(rule, "pass", f"{what}: {code}{tail}.", reply.evidence, era))


async def _meta_rules(sp: Speaker, facts: Facts) -> None:
    chan = sp.channel
    # protocolVersion present (so the request is plainly stateless), clientCapabilities missing.
    params: dict[str, Any] = {"_meta": {META_VERSION: STATELESS_VERSION, META_INFO: CHECKER_INFO}}
    reply = await chan.request("tools/list", params, headers=sp.headers("tools/list", None))
    facts.probes["meta-required"] = reply
    _expect(facts, "STATELESS.meta-required", reply, -32602, 400,
            "A request without io.modelcontextprotocol/clientCapabilities",
            "Refuse a request lacking either protocol _meta field with -32602 (HTTP 400).")
    params = {"_meta": {META_VERSION: UNKNOWN_VERSION, META_CAPS: {}, META_INFO: CHECKER_INFO}}
    headers = {**(sp.headers("tools/list", None) or {})}
    if headers:
        headers["MCP-Protocol-Version"] = UNKNOWN_VERSION
    reply = await chan.request("tools/list", params, headers=headers or None)
    facts.probes["unsupported-version"] = reply
    _expect(facts, "STATELESS.unsupported-version", reply, -32022, 400,
            f"protocolVersion {UNKNOWN_VERSION}",
            "Answer -32022 with data.supported and data.requested (HTTP 400).")
    data = reply.error.get("data") if isinstance(reply.error, dict) else None
    last = facts.findings[-1]
    if last.verdict == "pass" and not (
        isinstance(data, dict) and isinstance(data.get("supported"), list)
        and data.get("requested") == UNKNOWN_VERSION
    ):
        last.verdict = "fail"
        last.message = ("-32022 must carry data.supported (the versions served) and "
                        f"data.requested ({UNKNOWN_VERSION!r}); got data {data!r}.")
    reply = await sp.call("ping")
    facts.probes["removed-method"] = reply
    _expect(facts, "STATELESS.removed-method", reply, -32601, 404,
            "ping (removed in 2026-07-28)",
            "Answer methods that 2026-07-28 removed with -32601 (HTTP 404).")


async def _header_rules(
    sp: Speaker, chan: HttpChannel, facts: Facts, stateful_served: bool
) -> None:
    era = facts.era
    base = sp.headers("tools/list", None) or {}
    body = sp.params("tools/list", {})
    reply = await chan.request("tools/list", body,
                               headers={**base, "MCP-Protocol-Version": "2025-11-25"})
    facts.probes["header-version"] = reply
    _expect(facts, "STATELESS.header-version", reply, -32020, 400,
            "MCP-Protocol-Version 2025-11-25 with _meta protocolVersion 2026-07-28",
            "Refuse a header that disagrees with the body with 400 and -32020 (HeaderMismatch).")
    reply = await chan.request("tools/list", body, headers={**base, "Mcp-Method": "prompts/list"})
    facts.probes["header-method"] = reply
    _expect(facts, "STATELESS.header-method", reply, -32020, 400,
            "Mcp-Method prompts/list on a tools/list body",
            "Refuse a Mcp-Method that disagrees with the body with 400 and -32020.")
    if facts.lists.get("tools/list") and facts.lists["tools/list"].ok:
        params = sp.params("tools/call", {"name": "mcpkit_check_a", "arguments": {}})
        reply = await chan.request("tools/call", params, headers={
            **(sp.headers("tools/call", {"name": "mcpkit_check_b"}) or {})})
        facts.probes["header-name"] = reply
        _expect(facts, "STATELESS.header-name", reply, -32020, 400,
                "Mcp-Name mcpkit_check_b on a call of mcpkit_check_a",
                "Refuse a Mcp-Name that disagrees with params.name with 400 and -32020.")
    else:
        facts.findings.append(finding("STATELESS.header-name", "n/a",
                                      "The server lists no tools to name.", "", era))
    if stateful_served:
        facts.findings.append(finding(
            "STATELESS.get-delete", "n/a",
            "The server also serves the handshake era, whose GET stream and DELETE remain.",
            "", era))
    else:
        get = await chan.get(read_for=0.2)
        delete = await chan.delete()
        statuses = (get.http.status if get.http else None,
                    delete.http.status if delete.http else None)
        verdict: Verdict = "pass" if statuses == (405, 405) else "fail"
        facts.findings.append(finding(
            "STATELESS.get-delete", verdict,
            f"GET got {statuses[0]} and DELETE got {statuses[1]}"
            + ("." if verdict == "pass" else "; a stateless-only server answers both with 405."),
            get.evidence + "\n" + delete.evidence, era))
        reply = await chan.request("tools/list", body, headers={**base, "Origin": FOREIGN_ORIGIN})
        facts.probes["origin"] = reply
        status = reply.http.status if reply.http else None
        facts.findings.append(finding(
            "HTTP.origin", "pass" if status == 403 else "fail",
            "A foreign Origin was refused with 403." if status == 403 else
            f"A request with Origin: {FOREIGN_ORIGIN} got HTTP {status}; answer 403.",
            reply.evidence, era))


def _unknown_method_status(facts: Facts) -> None:
    reply = facts.probes.get("unknown-method")
    if reply is None or reply.http is None:
        return
    status = reply.http.status
    ok = status == 404 and reply.error_code == -32601
    facts.findings.append(finding(
        "STATELESS.unknown-method-status", "pass" if ok else "fail",
        "Unknown method: HTTP 404 with -32601." if ok else
        f"Unknown method: HTTP {status} with error {reply.error_code}; 2026-07-28 answers 404 "
        "with a -32601 body so clients can tell it from a legacy server's bare 404.",
        reply.evidence, facts.era))


def _result_rules(facts: Facts) -> None:
    """resultType, caching hints and serverInfo on every result received."""
    era = facts.era
    results = [
        r for r in facts.log.received
        if isinstance(r.msg, dict) and isinstance(r.msg.get("result"), dict)
    ]
    if not results:
        for rule in ("STATELESS.result-type", "STATELESS.cache-hints", "STATELESS.server-info"):
            facts.findings.append(finding(rule, "n/a", "No result was received.", "", era))
        return
    no_type = [r for r in results if "resultType" not in r.msg["result"]]
    # "task" is the tasks extension's, when the server declares it (a task given to a
    # request that did not declare it is TASKS.plain-call's)
    known = ("complete", "input_required", *(("task",) if declared_tasks(facts) else ()))
    bad_type = [r for r in results
                if r.msg["result"].get("resultType") not in (None, *known)]
    if no_type or bad_type:
        for rec in (*no_type, *bad_type):
            rec.blamed = True
        r = (no_type or bad_type)[0]
        facts.findings.append(finding(
            "STATELESS.result-type", "fail",
            f"{len(no_type)} result(s) without resultType and {len(bad_type)} with an unknown one "
            f"(first: answer to {r.answered}); every 2026-07-28 result carries resultType "
            "\"complete\" or \"input_required\" (\"task\" with the tasks extension).", r.raw,
            era))
    else:
        facts.findings.append(finding(
            "STATELESS.result-type", "pass", f"All {len(results)} results carry resultType.",
            "", era))
    cacheable = [r for r in results if r.answered in CACHEABLE
                 and r.msg["result"].get("resultType") != "input_required"]
    missing = []
    for r in cacheable:
        res = r.msg["result"]
        ttl = res.get("ttlMs")
        if not (isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0) or res.get(
                "cacheScope") not in ("public", "private"):
            missing.append(r)
    if missing:
        for rec in missing:
            rec.blamed = True
        r = missing[0]
        facts.findings.append(finding(
            "STATELESS.cache-hints", "fail",
            f"{len(missing)} of {len(cacheable)} cacheable result(s) lack a valid ttlMs (integer "
            f">= 0) or cacheScope (public|private); first: the answer to {r.answered}.",
            r.raw, era))
    elif cacheable:
        facts.findings.append(finding(
            "STATELESS.cache-hints", "pass",
            f"All {len(cacheable)} cacheable results carry ttlMs and cacheScope.", "", era))
    else:
        facts.findings.append(finding("STATELESS.cache-hints", "n/a",
                                      "No cacheable result was received.", "", era))
    no_info = [r for r in results if not _names_server(r.msg["result"])]
    if no_info:
        facts.findings.append(finding(
            "STATELESS.server-info", "fail",
            f"{len(no_info)} of {len(results)} results lack _meta "
            f"\"{SERVER_INFO}\"; include it so clients know which server answered.",
            no_info[0].raw, era))
    else:
        facts.findings.append(finding(
            "STATELESS.server-info", "pass", f"All {len(results)} results name the server.",
            "", era))



def _names_server(result: dict[str, Any]) -> bool:
    meta = result.get("_meta")
    return isinstance(meta, dict) and isinstance(meta.get(SERVER_INFO), dict)
