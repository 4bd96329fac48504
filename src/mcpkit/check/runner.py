"""Run a whole check: probe each era, judge what was seen, assemble the report.

The authorization probes run once, before the eras, and both eras' judges read them.
Judging order matters for "one defect, one rule": the envelope rows and the matrix rows
mark the messages they fail, and the schema pass then skips those messages.
"""

from __future__ import annotations

import time
from typing import Literal

from .authprobe import AuthFacts, probe_auth
from .facts import LIST_KEYS, Facts
from .lint import LintInput, lint
from .matrix import AUTH_ROWS, judge_matrix
from .matrix.envelope import judge_envelope, judge_schema, messages_checked
from .model import EraSummary, Finding, Report, Verdict
from .rules import finding
from .sec import announced, inputs, security
from .stateful import probe_stateful
from .stateless import probe_stateless
from .target import Target
from .taskprobe import task_support
from .toolschema import judge_input_schemas
from .wire.sse import discover

EraChoice = Literal["stateful", "stateless", "both"]
CallTools = Literal["none", "readonly", "all"]


def _judge(facts: Facts, url: str | None) -> list[Finding]:
    out = list(facts.findings)
    out += judge_envelope(facts)
    out += judge_matrix(facts)
    out.append(judge_input_schemas(facts))
    # an unannounced change between the two listings is SEC.silent-change's (one defect,
    # one rule); an announced one is still a design smell for LINT.static-descriptions
    second = (facts.second_tools.items if facts.second_tools is not None and announced(facts)
              else None)
    out += lint(LintInput(facts.tools, facts.instructions, facts.calls, facts.provoked, second),
                facts.era)
    out += security(inputs(facts, url), facts.era)
    out.append(judge_schema(facts))
    return out


def _unserved(facts: Facts, required: bool) -> list[Finding]:
    verdict: Verdict = "fail" if required else "n/a"
    auth = facts.auth
    refused = auth is not None and auth.with_token is not None and (
        auth.with_token.status in (401, 403))
    if auth is not None and auth.protected and (auth.with_token is None or refused):
        # a protected server and no usable token: the era could not be probed, the
        # authorization rows can be
        status = auth.no_credentials.status
        why = (f"the token given was refused (HTTP {auth.with_token.status}); give one "
               "this server accepts" if refused and auth.with_token is not None else
               "give an access token with --token")
        rule = "M042" if facts.era == "stateful" else "STATELESS.discover"
        return [finding(rule, "untestable", f"The server requires authorization (HTTP "
                        f"{status} without credentials); {why} to check the rest.",
                        auth.no_credentials.evidence, facts.era),
                *judge_matrix(facts, only=AUTH_ROWS)]
    if facts.era == "stateful":
        return [finding("M042", verdict, f"The handshake era is not served: {facts.note}.",
                        facts.init.evidence if facts.init else "", "stateful")]
    return [finding("STATELESS.discover", verdict,
                    f"The stateless revision is not served: {facts.note}.",
                    facts.init.evidence if facts.init else "", "stateless")]


def _summary(facts: Facts) -> EraSummary:
    note = facts.note
    if facts.log.overflow:
        note = (note + "; " if note else "") + (
            f"{facts.log.overflow} further messages were not kept (flood)")
    return EraSummary(facts.era, facts.served, facts.revision, facts.server_info,
                      facts.capabilities or None, note, messages_checked(facts))


async def _legacy_sse(target: Target, eras: list[Facts], call_tools: CallTools,
                      auth: AuthFacts | None) -> None:
    """A URL that serves neither era may be a 2024-11-05 HTTP+SSE server's SSE URL: when a
    GET there opens a stream whose first event is ``endpoint``, probe the handshake era
    over that transport instead (it has no stateless revision)."""
    if target.url is None or target._client is None or (auth is not None and auth.protected):
        return
    endpoint, why = await discover(target._client, target.url, target.http_headers(),
                                   target.timeout)
    if endpoint is None:
        if why and eras:  # a legacy-looking stream that cannot be used: say so
            eras[0].note = (eras[0].note + "; " if eras[0].note else "") + why
        return
    target.legacy_sse = True
    facts = await probe_stateful(target, call_tools)
    facts.note = (f"legacy HTTP+SSE transport (2024-11-05): event stream at {target.url}, "
                  f"messages POSTed to {endpoint}" + (f"; {facts.note}" if facts.note else ""))
    eras[:] = [facts, *(f for f in eras if f.era == "stateless")]
    for other in eras[1:]:
        other.note = "the legacy HTTP+SSE transport has no stateless revision"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcpkit")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


async def run_check(target: Target, era: EraChoice = "both",
                    call_tools: CallTools = "readonly") -> Report:
    """Probe ``target`` and judge it; never raises for anything the server does."""
    started = time.monotonic()
    report = Report(target.describe(), "stdio" if target.command else "http", call_tools,
                    checker_version=_version())
    eras: list[Facts] = []
    auth: AuthFacts | None = None
    async with target.session():
        auth = await probe_auth(target)
        stateful_served = False
        hint: dict[str, str] | None = None
        if era in ("stateful", "both"):
            facts = await probe_stateful(target, call_tools)
            stateful_served = facts.served
            hint = task_support(facts.tools) if facts.served else None
            eras.append(facts)
        if era in ("stateless", "both"):
            eras.append(await probe_stateless(target, call_tools, stateful_served, hint))
        if era != "stateless" and not any(f.served for f in eras):
            await _legacy_sse(target, eras, call_tools, auth)
    for facts in eras:
        facts.auth = auth
    any_served = any(f.served for f in eras)
    served = next((f for f in eras if f.served), None)
    if served is not None:
        report.definitions = {LIST_KEYS[m]: served.items(m) for m in LIST_KEYS}
    for facts in eras:
        report.eras.append(_summary(facts))
        if facts.served:
            report.findings += _judge(facts, target.url)
        else:
            report.findings += _unserved(facts, required=era != "both" or not any_served)
    report.duration_s = time.monotonic() - started
    return report
