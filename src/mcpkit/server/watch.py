"""``CallWatch``: the tool-call rate limits (``limits.py``) and the audit hook
(``audit.py``) of a server, as the innermost middleware (``middleware.py``).

A server with neither never installs it, so its ``tools/call`` carries no check at all.
Once one is configured (``Server(rate_limit=..., audit=...)`` or a tool's own
``rate_limit``) the server puts it last in its middleware chain: what outer middleware
short-circuit is neither drawn from a budget nor audited. The audit record is written
when the call's answer is decided, also when it ends by an error or a cancellation.

Failure modes: an audit hook that raises is logged (``audit.emit``); a bucket store that
raises fails the call like any server fault (a JSON-RPC internal error, audited as
``"invalid"``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from ..protocol.jsonrpc import JSONObject
from .audit import AuditHook, AuditRecord, Outcome, emit
from .limits import Inherit, Limiter, RateLimit, caller_key, limited_result
from .middleware import CallNext, Middleware, Request

if TYPE_CHECKING:
    from .tools import Tool


class Call:
    """One ``tools/call`` being watched: who asked, when, and (once known) its outcome."""

    __slots__ = ("limit", "outcome", "request", "started", "time")

    def __init__(self, request: Request) -> None:
        self.request = request  # its principal and peer were read when it arrived
        self.time = time.time()
        self.started = time.perf_counter()
        self.limit: RateLimit | None = None
        self.outcome: Outcome | None = None  # decided before the result: rate_limited


class CallWatch(Middleware):
    """Rate limits (``limiter``) and the audit hook (``audit``) of the tool calls of
    ``tools`` (a server's registered tools, by name); ``audit_arguments``: put the
    arguments in the records."""

    def __init__(self, tools: dict[str, Tool], limiter: Limiter, audit: AuditHook | None,
                 audit_arguments: bool) -> None:
        self.tools = tools
        self.limiter = limiter
        self.audit = audit
        self.audit_arguments = audit_arguments

    @property
    def needed(self) -> bool:
        """Whether there is anything to watch: an audit hook or a rate limit."""
        return self.audit is not None or self.limiter.default is not None or any(
            isinstance(tool.rate_limit, RateLimit) for tool in self.tools.values())

    async def on_call_tool(self, request: Request, call_next: CallNext) -> JSONObject:
        """Draw the call from its caller's budget (a call over it runs nothing), then
        run it and audit how it ended."""
        call = Call(request)
        name = request.params.get("name")
        tool = self.tools.get(name) if isinstance(name, str) else None
        try:
            if tool is not None:
                wait = self.take(call, tool)
                if not isinstance(wait, int | float):
                    wait = await wait
                if wait:
                    return self._finish(call, self.limited(call, tool, wait), tool)
            result = await call_next(request)
        except BaseException as exc:
            if self.audit is not None:
                self._record(call, "invalid" if isinstance(exc, Exception) else "cancelled")
            raise
        return self._finish(call, result, tool)

    def take(self, call: Call, tool: Tool) -> float | Awaitable[float]:
        """Draw one call of ``tool`` from its caller's budget: 0 (go ahead), the seconds
        to wait, or an awaitable of either (an async store)."""
        limiter = self.limiter
        limit = limiter.limit_of(tool.rate_limit)
        if limit is None:
            return 0.0
        call.limit = limit
        own = not isinstance(tool.rate_limit, Inherit)
        return limiter.take(tool.name, own, limit, caller_key(call.request.principal,
                                                         call.request.peer))

    def limited(self, call: Call, tool: Tool, wait: float) -> JSONObject:
        """The answer to a call over its limit (see ``limits.limited_result``)."""
        assert call.limit is not None
        call.outcome = "rate_limited"
        return limited_result(tool.name, call.limit, wait)

    def _finish(self, call: Call, result: JSONObject, tool: Tool | None) -> JSONObject:
        """``result`` as the call's answer, audited."""
        if self.audit is not None:
            self._record(call, call.outcome or _outcome(result, tool, call.request))
        return result

    def _record(self, call: Call, outcome: Outcome) -> None:
        assert self.audit is not None
        request = call.request
        event = request.event
        principal = request.principal
        params = event.params
        name = params.get("name")
        arguments = params.get("arguments") if self.audit_arguments else None
        emit(self.audit, AuditRecord(
            time=call.time,
            tool=name[:200] if isinstance(name, str) else "",
            outcome=outcome,
            duration=time.perf_counter() - call.started,
            request_id=request.id,
            identity=None if principal is None else principal.identity,
            subject=getattr(principal, "subject", None),
            client_id=getattr(principal, "client_id", None),
            address=request.peer,
            protocol_version=request.protocol_version,
            arguments=arguments if isinstance(arguments, dict) else None,
        ))


def _outcome(result: JSONObject, tool: Tool | None, request: Request) -> Outcome:
    """How a call that was answered with ``result`` ended: an ``isError`` result is
    ``"invalid"`` when the arguments failed the tool's schema (2025-11-25 on answer that
    with ``isError``), else ``"error"``."""
    if result.get("resultType") == "input_required":
        return "input_required"
    if not result.get("isError"):
        return "ok"
    arguments = request.params.get("arguments")
    if tool is not None and not tool.validator.is_valid({} if arguments is None else
                                                        arguments):
        return "invalid"
    return "error"
