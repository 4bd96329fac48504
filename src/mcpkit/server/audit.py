"""The audit log hook: one structured record per ``tools/call``.

What: ``Server(audit=hook)`` calls ``hook(record)`` once for every ``tools/call`` request,
after its answer is decided, with an ``AuditRecord``: when it started, how long it took,
the tool named, the outcome, the request id, who called (the verified token's identity,
subject and client id over a protected HTTP endpoint; the client's address over HTTP) and
the protocol revision. ``AuditLog`` is a ready-made hook that writes each record as one
JSON line to a ``logging`` logger.

Outcomes: ``"ok"``; ``"error"`` (an ``isError`` result: the tool failed); ``"invalid"``
(an unknown tool, arguments that fail its schema — a protocol error in older revisions,
an ``isError`` result from 2025-11-25 on, the same outcome either way — or another
protocol error); ``"rate_limited"``; ``"cancelled"`` (the client cancelled it, or its
connection went away, before it finished); ``"input_required"`` (a 2026-07-28 call that
asked the client for input: the retry is a call of its own).

Why it is shaped so: an audit trail must say who did what and how it ended, and must not
become a leak. The arguments are left out unless ``audit_arguments=True`` (they may hold
personal data or secrets); the access token never appears (an ``AccessToken`` does not
keep it, and the record keeps only three of its fields).

Failure modes: the hook runs synchronously on the event loop, so it must be quick (hand
slow work to a queue). An exception it raises is logged (logger ``mcpkit.server``) and
never changes the call's answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

import orjson

from ..protocol.jsonrpc import RequestId
from ..protocol.record import Record

log = logging.getLogger("mcpkit.server")

Outcome = Literal["ok", "error", "invalid", "rate_limited", "cancelled", "input_required"]


class AuditRecord(Record):
    """One ``tools/call`` (see the module docstring). Immutable.

    ``time``: when it arrived, seconds since the epoch; ``duration``: seconds until its
    answer was decided. ``tool``: the name the request gave (at most 200 characters; it
    may name no tool when the outcome is ``"invalid"``). ``identity``, ``subject``,
    ``client_id``: of the verified access token (None without one). ``address``: the HTTP
    client's address (None on stdio and in memory). ``protocol_version``: of the session
    or of the stateless request. ``arguments``: only with ``audit_arguments=True``.
    """

    __slots__ = ("address", "arguments", "client_id", "duration", "identity", "outcome",
                 "protocol_version", "request_id", "subject", "time", "tool")

    time: float
    tool: str
    outcome: Outcome
    duration: float
    request_id: RequestId | None
    identity: str | None
    subject: str | None
    client_id: str | None
    address: str | None
    protocol_version: str | None
    arguments: dict[str, Any] | None

    def __init__(self, *, time: float, tool: str, outcome: Outcome, duration: float,
                 request_id: RequestId | None = None, identity: str | None = None,
                 subject: str | None = None, client_id: str | None = None,
                 address: str | None = None, protocol_version: str | None = None,
                 arguments: dict[str, Any] | None = None) -> None:
        for name, value in (("time", time), ("tool", tool), ("outcome", outcome),
                            ("duration", duration), ("request_id", request_id),
                            ("identity", identity), ("subject", subject),
                            ("client_id", client_id), ("address", address),
                            ("protocol_version", protocol_version),
                            ("arguments", arguments)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"AuditRecord is immutable; cannot set {name!r}")

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON-able dict (``arguments`` only when it was kept)."""
        out = {name: getattr(self, name) for name in self.__slots__}
        if out["arguments"] is None:
            del out["arguments"]
        return out


AuditHook = Callable[[AuditRecord], object]
"""``hook(record)``: called once per ``tools/call``, synchronously; see the module
docstring for what happens when it raises."""


def emit(hook: AuditHook, record: AuditRecord) -> None:
    """Hand ``record`` to ``hook``; an exception it raises is logged, not propagated."""
    try:
        hook(record)
    except Exception:
        log.exception("the audit hook raised on the record of tools/call %r (id %r); the "
                      "call's answer is unaffected", record.tool, record.request_id)


class AuditLog:
    """An audit hook writing each record as one JSON line (keys sorted) to ``logger`` (a
    name or a ``logging.Logger``; default ``"mcpkit.audit"``) at ``level`` (INFO).

    Route that logger to a file or a collector with ordinary ``logging`` configuration;
    with none, Python's last-resort handler shows only warnings and above, so INFO
    records go nowhere until it is configured.
    """

    __slots__ = ("level", "logger")

    def __init__(self, logger: str | logging.Logger = "mcpkit.audit",
                 level: int = logging.INFO) -> None:
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.level = level

    def __call__(self, record: AuditRecord) -> None:
        if self.logger.isEnabledFor(self.level):
            self.logger.log(self.level, json_line(record.as_dict(), "arguments"))


def json_line(fields: dict[str, Any], peer_value: str) -> str:
    """``fields`` as one line of JSON (keys sorted, unknown types by ``repr``); when
    ``fields[peer_value]``, a value the peer sent, nests deeper than orjson writes (the
    request is refused for it; see ``protocol.nesting``), a note stands in its place."""
    try:
        return orjson.dumps(fields, option=orjson.OPT_SORT_KEYS, default=repr).decode()
    except TypeError:
        fields = {**fields, peer_value: "(not written: nested too deeply)"}
        return orjson.dumps(fields, option=orjson.OPT_SORT_KEYS, default=repr).decode()
