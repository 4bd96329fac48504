"""Probing the handshake era (2024-11-05 … 2025-11-25): lifecycle, features, HTTP rules.

Three conversations, each on a fresh process (stdio) or session (HTTP):

* **main**: ``initialize`` with the newest revision, ``notifications/initialized``, ping,
  every list, tools, resources, prompts, completion, logging, subscriptions, the JSON-RPC
  error paths, HTTP status rules, and finally a second ``initialize``;
* **gate**: a request before ``initialize``, then ``initialize`` with an unknown version;
* **old**: ``initialize`` with 2025-03-26, the last revision with JSON-RPC batches, and a
  batch if the server accepts that revision.
"""

from __future__ import annotations

from typing import Any

import anyio
import orjson

from ..protocol.versions import LATEST_STATEFUL, V2025_03_26, V2026_07_28
from .facts import Facts
from .features import (
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
from .rules import finding
from .schemas import REVISIONS
from .target import Target
from .taskprobe import probe_tasks
from .wire import CHECKER_INFO, Channel, Reply, WireLog
from .wire.http import HttpChannel
from .wire.sse import SseChannel
from .wire.stdio import StdioChannel

LATEST = LATEST_STATEFUL
BATCH_REVISION = V2025_03_26
UNKNOWN_VERSION = "1999-01-01"
NEGOTIATE = tuple(v for v in REVISIONS if v < V2026_07_28 and v not in (LATEST, BATCH_REVISION))
"""The handshake revisions asked for only to judge version negotiation (M045)."""
FOREIGN_ORIGIN = "http://mcpkit-check.invalid"


def init_params(version: str) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": CHECKER_INFO}


async def initialize(chan: Channel, version: str) -> Reply:
    reply = await chan.request("initialize", init_params(version))
    result = reply.result
    if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
        if result["protocolVersion"] in REVISIONS:
            chan.revision = result["protocolVersion"]
        else:
            chan.revision = LATEST  # judge its messages by the newest schema we know
        for rec in chan.log.received:  # what came before the answer is judged by it too
            if rec.channel == chan.label and rec.revision is None:
                rec.revision = chan.revision
    return reply


async def probe_stateful(target: Target, call_tools: str) -> Facts:
    log = WireLog()
    facts = Facts("stateful", target.transport, log)
    async with target.channel(log, "main") as chan:
        await _main(target, chan, facts, call_tools)
    if not facts.served:
        return facts
    async with target.channel(log, "gate") as chan:
        await _gate(chan, facts)
    async with target.channel(log, "old") as chan:
        await _old(chan, facts)
    for version in NEGOTIATE:  # every other handshake revision, each on its own channel
        async with target.channel(log, f"negotiate-{version}") as chan:
            reply = await initialize(chan, version)
            facts.probes[f"negotiate:{version}"] = reply
            answer = reply.result.get("protocolVersion") if isinstance(
                reply.result, dict) else None
            facts.versions_echoed[version] = answer if isinstance(answer, str) else None
    return facts


async def _main(target: Target, chan: Channel, facts: Facts, call_tools: str) -> None:
    reply = await initialize(chan, LATEST)
    facts.init = reply
    result = reply.result
    if not isinstance(result, dict):
        facts.note = (
            "initialize was refused: " + (str(reply.error) if reply.error else "no answer")
        )
        if isinstance(chan, (StdioChannel, SseChannel)) and chan.start_error:
            facts.note = chan.start_error
        return
    facts.served = True
    facts.revision = chan.revision
    facts.versions_echoed[LATEST] = result.get("protocolVersion") if isinstance(
        result.get("protocolVersion"), str) else None
    caps = result.get("capabilities")
    facts.capabilities = caps if isinstance(caps, dict) else {}
    info = result.get("serverInfo")
    facts.server_info = info if isinstance(info, dict) else None
    instr = result.get("instructions")
    facts.instructions = instr if isinstance(instr, str) else None
    if isinstance(chan, HttpChannel) and chan.session_id is not None:
        facts.session_ids.append(chan.session_id)
    if isinstance(chan, StdioChannel):
        await anyio.sleep(0.1)  # room for requests sent before notifications/initialized (S014)
    facts.probes["initialized"] = await chan.notify("notifications/initialized")
    sp = Speaker(chan, stateless=False)
    facts.probes["ping"] = await chan.request("ping")
    await probe_lists(sp, facts)
    await probe_undeclared_lists(facts)
    await probe_invalid_cursor(sp, facts)
    await probe_tools(sp, facts, call_tools)
    await probe_tasks(sp, facts, call_tools)
    await probe_resources(sp, facts)
    await probe_prompts(sp, facts)
    await probe_completion(sp, facts)
    await _logging_and_subscriptions(chan, facts)
    if isinstance(chan, HttpChannel):
        await _http_rules(target, chan, facts)
    await probe_rpc_errors(sp, facts, "ping")
    await _second_initialize(chan, facts)
    if isinstance(chan, HttpChannel):
        await _http_delete(chan, facts)


async def _logging_and_subscriptions(chan: Channel, facts: Facts) -> None:
    reply = await chan.request("logging/setLevel", {"level": "debug"})
    facts.probes["logging" if facts.declared("logging") else "undeclared:logging/setLevel"] = reply
    resources = [r for r in facts.items("resources/list") if isinstance(r, dict)]
    uri = next((r["uri"] for r in resources if isinstance(r.get("uri"), str)), None)
    if uri is None:
        return
    res_caps = facts.capabilities.get("resources")
    declared = isinstance(res_caps, dict) and res_caps.get("subscribe") is True
    reply = await chan.request("resources/subscribe", {"uri": uri})
    facts.probes["subscribe" if declared else "undeclared:resources/subscribe"] = reply
    if declared and reply.result is not None:
        facts.probes["unsubscribe"] = await chan.request("resources/unsubscribe", {"uri": uri})


async def _second_initialize(chan: Channel, facts: Facts) -> None:
    reply = await chan.request("initialize", init_params(LATEST))
    facts.probes["second-initialize"] = reply
    era = facts.era
    if reply.error is not None:
        facts.findings.append(finding(
            "LIFE.second-initialize", "pass",
            f"A second initialize was refused with {reply.error_code}.", reply.evidence, era))
    elif reply.result is not None:
        facts.findings.append(finding(
            "LIFE.second-initialize", "fail",
            "A second initialize on an initialized session was accepted; refuse it (e.g. "
            "-32600) so the negotiated version and capabilities cannot change mid-session.",
            reply.evidence, era))
    elif reply.http is not None and reply.http.status >= 400:
        facts.findings.append(finding(
            "LIFE.second-initialize", "pass",
            f"A second initialize was refused with HTTP {reply.http.status}.", reply.evidence, era))
    else:
        facts.findings.append(finding(
            "LIFE.second-initialize", "fail", "No answer to a second initialize.",
            reply.evidence, era))


async def _gate(chan: Channel, facts: Facts) -> None:
    era = facts.era
    early = await chan.request("tools/list", {}, timeout=min(chan.timeout, 3.0))
    facts.probes["before-initialize"] = early
    status = early.http.status if early.http else None
    if early.result is not None:
        facts.findings.append(finding(
            "LIFE.request-before-initialize", "fail",
            "tools/list was served before initialize; refuse requests (other than ping) until "
            "the initialize handshake is done.", early.evidence, era))
    elif early.error is not None or (status is not None and status >= 400):
        what = f"error {early.error_code}" if early.error is not None else f"HTTP {status}"
        facts.findings.append(finding(
            "LIFE.request-before-initialize", "pass",
            f"A request before initialize was refused ({what}).", early.evidence, era))
    else:
        facts.findings.append(finding(
            "LIFE.request-before-initialize", "fail",
            "No answer to a request sent before initialize; refuse it with an error instead "
            "of leaving it hanging.", early.evidence, era))
    if isinstance(chan, HttpChannel):
        chan.session_id = None
    reply = await initialize(chan, UNKNOWN_VERSION)
    facts.probes["unknown-version"] = reply
    if isinstance(chan, HttpChannel) and chan.session_id is not None:
        facts.session_ids.append(chan.session_id)
    if isinstance(chan, StdioChannel) and reply.result is not None:
        facts.probes["before-initialized"] = Reply(sent=None, others=await chan.quiet(0.2))


async def _old(chan: Channel, facts: Facts) -> None:
    reply = await initialize(chan, BATCH_REVISION)
    facts.probes["old-initialize"] = reply
    result = reply.result
    echoed = result.get("protocolVersion") if isinstance(result, dict) else None
    facts.versions_echoed[BATCH_REVISION] = echoed if isinstance(echoed, str) else None
    if echoed != BATCH_REVISION:
        return
    await chan.notify("notifications/initialized")
    batch = [
        {"jsonrpc": "2.0", "id": "mcpkit-check-batch-1", "method": "ping"},
        {"jsonrpc": "2.0", "id": "mcpkit-check-batch-2", "method": "ping"},
    ]
    fence = chan.make_request("ping", None, None)
    facts.probes["batch"] = await chan.send_raw(orjson.dumps(batch), fence=fence)


async def _http_rules(target: Target, chan: HttpChannel, facts: Facts) -> None:
    era = facts.era
    # Origin: a foreign Origin must be refused with 403.
    reply = await chan.request("ping", headers={"Origin": FOREIGN_ORIGIN})
    facts.probes["origin"] = reply
    status = reply.http.status if reply.http else None
    if status == 403:
        facts.findings.append(finding("HTTP.origin", "pass", "A foreign Origin was refused "
                                      "with 403.", reply.evidence, era))
    else:
        facts.findings.append(finding(
            "HTTP.origin", "fail",
            f"A request with Origin: {FOREIGN_ORIGIN} got HTTP {status}; validate Origin and "
            "answer 403 to origins you do not serve (DNS-rebinding protection).",
            reply.evidence, era))
    # An unsupported MCP-Protocol-Version header.
    reply = await chan.request("ping", headers={"MCP-Protocol-Version": UNKNOWN_VERSION})
    facts.probes["version-header"] = reply
    status = reply.http.status if reply.http else None
    if (facts.revision or "") < "2025-06-18":
        facts.findings.append(finding(
            "HTTP.protocol-version-header", "n/a",
            f"The header is required from 2025-06-18; this session negotiated {facts.revision}.",
            reply.evidence, era))
    elif status == 400:
        facts.findings.append(finding(
            "HTTP.protocol-version-header", "pass",
            "MCP-Protocol-Version: 1999-01-01 was refused with 400.", reply.evidence, era))
    else:
        facts.findings.append(finding(
            "HTTP.protocol-version-header", "fail",
            f"MCP-Protocol-Version: {UNKNOWN_VERSION} got HTTP {status}; answer 400 to an "
            "invalid or unsupported protocol version header.", reply.evidence, era))
    # Without the session id (S006) — judged by the matrix.
    if chan.session_id is not None:
        saved, chan.session_id = chan.session_id, None
        facts.probes["no-session"] = await chan.request("ping")
        chan.session_id = saved
    # GET stream, with a request in flight on POST (M025, M026, M027).
    async with anyio.create_task_group() as tg:
        holder: dict[str, Reply] = {}

        async def open_get() -> None:
            holder["get"] = await chan.get(read_for=0.6)

        tg.start_soon(open_get)
        await anyio.sleep(0.15)
        holder["post"] = await chan.request("tools/list", {})
    facts.probes["get"] = holder["get"]
    facts.probes["post-during-get"] = holder["post"]


async def _http_delete(chan: HttpChannel, facts: Facts) -> None:
    era = facts.era
    if chan.session_id is None:
        chan.session_id = "mcpkit-check-unknown-session"
        reply = await chan.request("ping")
        facts.probes["unknown-session"] = reply
        facts.findings.append(finding(
            "HTTP.unknown-session", "n/a", "The server uses no sessions.", reply.evidence, era))
        return
    deleted = await chan.delete()
    facts.probes["delete"] = deleted
    status = deleted.http.status if deleted.http else None
    if status is not None and 200 <= status < 300:
        after = await chan.request("ping")
        what = "the session it just ended"
    else:
        chan.session_id = "mcpkit-check-unknown-session"
        after = await chan.request("ping")
        what = "a session id it never issued"
    facts.probes["unknown-session"] = after
    got = after.http.status if after.http else None
    if got == 404:
        facts.findings.append(finding(
            "HTTP.unknown-session", "pass", f"A request naming {what} got 404.",
            deleted.evidence + "\n" + after.evidence, era))
    else:
        facts.findings.append(finding(
            "HTTP.unknown-session", "fail",
            f"A request naming {what} got HTTP {got}; answer 404 so the client starts a new "
            "session.", deleted.evidence + "\n" + after.evidence, era))
