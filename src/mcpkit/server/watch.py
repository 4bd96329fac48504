"""``CallWatch``: what a server does around ``tools/call`` when it has rate limits or an
audit hook (``limits.py``, ``audit.py``).

A server with neither never reaches this module: ``Methods`` routes ``tools/call`` here
only once one is configured (``Methods.watch_calls``), so the plain path carries no check
at all. On this path a call is still answered inline when it can be (a tool that never
waits and a store that answers synchronously): the audit record is then written before
the answer leaves. When the answer is a coroutine, the record is written when it ends,
also when it ends by cancellation.

Failure modes: an audit hook that raises is logged (``audit.emit``); a bucket store that
raises fails the call like any server fault (a JSON-RPC internal error, audited as
``"invalid"``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any

from ..protocol.connection import RequestReceived
from ..protocol.jsonrpc import JSONObject
from ..session import HandlerResult, Session
from .audit import AuditHook, AuditRecord, Outcome, emit
from .limits import Inherit, Limiter, RateLimit, caller_key, limited_result

if TYPE_CHECKING:
    from .tools import Tool


class Call:
    """One ``tools/call`` being watched: who asked, when, and (once known) its outcome."""

    __slots__ = ("event", "limit", "outcome", "peer", "principal", "session", "started",
                 "time")

    def __init__(self, session: Session, event: RequestReceived) -> None:
        self.session = session
        self.event = event
        # Read now: an HTTP session's principal and peer change with the next POST.
        self.principal = session.principal
        self.peer = session.peer
        self.time = time.time()
        self.started = time.perf_counter()
        self.limit: RateLimit | None = None
        self.outcome: Outcome | None = None  # decided before the result: rate_limited...


class CallWatch:
    """Rate limits (``limiter``) and the audit hook (``audit``) of one server's tool
    calls; ``audit_arguments``: put the arguments in the records."""

    __slots__ = ("audit", "audit_arguments", "limiter")

    def __init__(self, limiter: Limiter | None, audit: AuditHook | None,
                 audit_arguments: bool) -> None:
        self.limiter = limiter
        self.audit = audit
        self.audit_arguments = audit_arguments

    def take(self, call: Call, tool: Tool, session: Session) -> float | Awaitable[float]:
        """Draw one call of ``tool`` from its caller's budget: 0 (go ahead), the seconds
        to wait, or an awaitable of either (an async store)."""
        limiter = self.limiter
        if limiter is None:
            return 0.0
        limit = limiter.limit_of(tool.rate_limit)
        if limit is None:
            return 0.0
        call.limit = limit
        own = not isinstance(tool.rate_limit, Inherit)
        return limiter.take(tool.name, own, limit, caller_key(session))

    def limited(self, call: Call, tool: Tool, wait: float) -> JSONObject:
        """The answer to a call over its limit (see ``limits.limited_result``)."""
        assert call.limit is not None
        call.outcome = "rate_limited"
        return limited_result(tool.name, call.limit, wait)

    def invalid(self, call: Call) -> None:
        """The call's arguments failed the tool's schema (whatever answers it)."""
        call.outcome = "invalid"

    def finish(self, call: Call, result: HandlerResult) -> HandlerResult:
        """``result`` as the call's answer, audited: now when it is one, else when the
        coroutine ends."""
        if self.audit is None:
            return result
        if isinstance(result, dict):
            self._record(call, call.outcome or _outcome(result))
            return result
        return self._finishing(call, result)

    def failed(self, call: Call, exc: BaseException) -> None:
        """The call ends with ``exc`` (a protocol error, a fault, or cancellation)."""
        if self.audit is not None:
            self._record(call, "invalid" if isinstance(exc, Exception) else "cancelled")

    async def _finishing(self, call: Call,
                         work: Coroutine[Any, Any, JSONObject]) -> JSONObject:
        try:
            result = await work
        except BaseException as exc:
            self.failed(call, exc)
            raise
        self._record(call, call.outcome or _outcome(result))
        return result

    def _record(self, call: Call, outcome: Outcome) -> None:
        assert self.audit is not None
        session, event = call.session, call.event
        principal = call.principal
        params = event.params
        name = params.get("name")
        arguments = params.get("arguments") if self.audit_arguments else None
        if event.meta is not None:
            version: str | None = event.meta.revision.version
        else:
            rev = session.conn.revision
            version = None if rev is None else rev.version
        emit(self.audit, AuditRecord(
            time=call.time,
            tool=name[:200] if isinstance(name, str) else "",
            outcome=outcome,
            duration=time.perf_counter() - call.started,
            request_id=event.id,
            identity=None if principal is None else principal.identity,
            subject=getattr(principal, "subject", None),
            client_id=getattr(principal, "client_id", None),
            address=call.peer,
            protocol_version=version,
            arguments=arguments if isinstance(arguments, dict) else None,
        ))


def _outcome(result: JSONObject) -> Outcome:
    if result.get("resultType") == "input_required":
        return "input_required"
    return "error" if result.get("isError") else "ok"
