"""The client side of the stateless revision (2026-07-28).

There is no ``initialize``: ``server/discover`` tells whether the server speaks the
revision, and every request carries the client's version, capabilities, info and log
level in its ``_meta``. A request may come back ``input_required`` (MRTR): the client
answers the server's input requests with the application's handlers and sends the
request again, as a new request (new id) with the answers and the server's
``requestState``. A request whose answer stream was lost (``AnswerLost``: that revision
has no resumption) is sent again the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..protocol.errors import (
    UNSUPPORTED_PROTOCOL_VERSION,
    AnswerLost,
    AuthorizationFailed,
    CapabilityNotSupported,
    HandshakeError,
    InvalidResult,
    MCPError,
    RemoteError,
)
from ..protocol.jsonrpc import JSONObject, RequestId
from ..protocol.stateless import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION,
    SERVER_INFO,
)
from ..protocol.tasks import AUGMENTABLE
from ..protocol.tasks import EXTENSION as TASKS_EXTENSION
from ..protocol.versions import STATELESS_VERSIONS
from ..session import ProgressCallback, Session
from .handlers import Handlers

log = logging.getLogger("mcpkit.client")

MAX_INPUT_ROUNDS = 16
"""Rounds of input a request may ask for before the client gives up."""
RESENDS = 2
"""How often a request whose answer stream was lost is sent again."""


class Stateless:
    """What a client speaking the stateless revision adds to its requests (see the module
    docstring); ``version`` is None while it speaks a stateful one."""

    __slots__ = ("handlers", "info", "log_level", "version")

    def __init__(self, info: JSONObject, handlers: Handlers) -> None:
        self.info = info
        self.handlers = handlers
        self.version: str | None = None
        self.log_level: str | None = None  # sent in every request's _meta once set

    def meta(self, params: JSONObject | None) -> JSONObject:
        """``params`` with this client's per-request metadata."""
        out = dict(params or {})
        meta = dict(out.get("_meta") or {})
        meta[PROTOCOL_VERSION] = self.version
        meta[CLIENT_CAPABILITIES] = self.handlers.stateless_capabilities()
        meta[CLIENT_INFO] = self.info
        if self.log_level is not None:
            meta[LOG_LEVEL] = self.log_level
        out["_meta"] = meta
        return out

    async def discover(self, session: Session, offer: str | None, timeout: float, *,
                       required: bool) -> JSONObject | None:
        """Probe with ``server/discover`` (offering ``offer``, or the newest stateless
        revision; once more with a revision the server lists if it refuses that one).

        Returns the result when the server speaks the revision: the connection speaks
        it from now on. Returns None when it does not (the connection is back to the
        handshake era), or raises ``HandshakeError`` if ``required``."""
        version = offer if offer in STATELESS_VERSIONS else STATELESS_VERSIONS[-1]
        assert version is not None
        failure, cause = None, None
        try:
            try:
                res = await self._discover(session, version, timeout)
            except RemoteError as exc:
                data = exc.data if isinstance(exc.data, dict) else {}
                shared = [v for v in data.get("supported") or () if v in STATELESS_VERSIONS]
                if exc.code != UNSUPPORTED_PROTOCOL_VERSION or not shared:
                    raise
                version = shared[-1]
                res = await self._discover(session, version, timeout)
        except AuthorizationFailed:
            raise  # no token for this server: trying the stateful revision would not help
        except MCPError as exc:
            failure, cause = f"the server does not speak {version}: {exc}", exc
        else:
            versions = res.get("supportedVersions")
            if not isinstance(versions, list) or version not in versions:
                failure = f"the server does not list {version} in server/discover"
        if failure is None:
            return res
        self.version = None
        session.conn.use_stateful()
        if required:
            raise HandshakeError(failure) from cause  # (the CLI reads a redirect's target)
        return None

    async def _discover(self, session: Session, version: str, timeout: float) -> JSONObject:
        session.conn.use_stateless(version)
        self.version = version
        return await session.request("server/discover", self.meta(None), timeout=timeout)

    async def request(
        self,
        session: Session,
        method: str,
        params: JSONObject | None,
        *,
        timeout: float | None,
        on_progress: ProgressCallback | None = None,
        on_sent: Callable[[RequestId], None] | None = None,
    ) -> JSONObject:
        """Send ``method`` until it is complete (see the module docstring).

        Raises what ``Session.request`` raises (``AnswerLost`` once the resends are used
        up), ``InvalidResult`` for a result type the revision does not have,
        ``CapabilityNotSupported`` when the server asks for input this client has no
        handler for, and ``MCPError`` after ``MAX_INPUT_ROUNDS`` rounds. A task
        (``resultType: "task"``, tasks extension) is returned as it came, for the caller
        to follow."""
        base = self.meta(params)
        sent = base
        for _ in range(MAX_INPUT_ROUNDS):
            res = await self._send(session, method, sent, timeout, on_progress, on_sent)
            kind = res.get("resultType", "complete")  # older servers send none: complete
            if kind == "complete":
                return res
            if kind == "task":
                if method not in AUGMENTABLE or not self.handlers.tasks:
                    raise InvalidResult(
                        f"{method}: a task (resultType 'task'), which "
                        + ("only tools/call may answer" if self.handlers.tasks else
                           f"this client did not accept (no {TASKS_EXTENSION} extension)"))
                return res
            if kind != "input_required":
                raise InvalidResult(f"{method}: unknown resultType {kind!r}")
            rev = session.revision
            if rev is None or not rev.has("mrtr"):
                raise InvalidResult(f"{method}: an input_required result, which protocol "
                                    f"revision {self.version} does not have")
            requests = res.get("inputRequests")
            answers = {key: await self.answer_input(req)
                       for key, req in (requests.items() if isinstance(requests, dict) else ())}
            sent = dict(base)  # a new request (new id) with the original params
            if answers:
                sent["inputResponses"] = answers
            if "requestState" in res:
                sent["requestState"] = res["requestState"]
        raise MCPError(f"{method}: the server still needed input after {MAX_INPUT_ROUNDS} "
                       "rounds; giving up")

    async def _send(self, session: Session, method: str, params: JSONObject,
                    timeout: float | None, on_progress: ProgressCallback | None,
                    on_sent: Callable[[RequestId], None] | None) -> JSONObject:
        resends = 0
        while True:
            try:
                return await session.request(method, params, timeout=timeout,
                                             on_progress=on_progress, on_sent=on_sent)
            except AnswerLost as exc:
                if resends == RESENDS:
                    raise
                resends += 1
                log.info("%s; sending the request again", exc)

    async def answer_input(self, request: Any) -> JSONObject:
        """Answer one MRTR input request with the application's handlers."""
        method = request.get("method") if isinstance(request, dict) else None
        params = request.get("params") if isinstance(request, dict) else None
        answer = self.handlers.answer(method, params if isinstance(params, dict) else {})
        if answer is None:
            raise CapabilityNotSupported(f"the server asked for {method!r}, which this "
                                         "client has no handler for")
        return await answer


def described(res: JSONObject) -> tuple[JSONObject, JSONObject, str | None]:
    """What a ``server/discover`` result says of the server: its capabilities, its
    ``serverInfo`` (from ``_meta``) and its instructions, each empty when malformed."""
    caps = res.get("capabilities")
    meta = res.get("_meta")
    info = meta.get(SERVER_INFO) if isinstance(meta, dict) else None
    instructions = res.get("instructions")
    return (caps if isinstance(caps, dict) else {}, info if isinstance(info, dict) else {},
            instructions if isinstance(instructions, str) else None)
