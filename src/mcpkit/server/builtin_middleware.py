"""Ready-made middleware: a structured request log, error mapping and a list cache.

- ``RequestLog``: one JSON line per request and notification (method, request id,
  session id, protocol version, duration, outcome, error code) to a ``logging`` logger.
- ``ErrorMapping``: exceptions of your own types raised by handlers (a resource read, a
  prompt, another middleware) sent as the MCP errors you choose, instead of an internal
  error. A tool's exception is already a tool-execution error (``isError``), which the
  model sees; this is for what is not.
- ``ListCache``: the results of ``tools/list``, ``resources/list``,
  ``resources/templates/list`` and ``prompts/list`` kept until that list changes (any
  ``notifications/*/list_changed`` the server sends, also one announced by another
  instance of a shared deployment), for servers whose listing is costly (many items,
  or middleware that filters them).

The tool-call rate limits and the audit log are middleware too (``watch.CallWatch``),
installed by ``Server(rate_limit=..., audit=...)``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ..protocol.errors import InternalError, ProtocolError
from ..protocol.jsonrpc import JSONObject
from .audit import json_line
from .middleware import LIST_METHODS, CallNext, Middleware, NotifyNext, Request

if TYPE_CHECKING:
    from .app import Server

_LISTS_OF: Final = {"tools": ("tools/list",), "prompts": ("prompts/list",),
                    "resources": ("resources/list", "resources/templates/list")}
"""The list methods whose results a ``notifications/<kind>/list_changed`` outdates."""

ErrorFactory = Callable[[Exception], ProtocolError] | type[ProtocolError]


class RequestLog(Middleware):
    """Log every request and notification as one JSON line (keys sorted) to ``logger``
    (a name or a ``logging.Logger``; default ``"mcpkit.requests"``) at ``level`` (INFO).

    Keys: ``method``, ``id``, ``session`` (None outside an HTTP session),
    ``protocol_version``, ``duration_ms``, ``outcome`` (``"ok"``, ``"tool_error"`` for an
    ``isError`` result, ``"error"`` for a JSON-RPC error, ``"cancelled"``), ``code`` (the
    JSON-RPC error code) and, with ``params=True``, the request's params (off by default:
    they may hold personal data or secrets). Nothing is formatted unless the logger is
    enabled for ``level``."""

    def __init__(self, logger: str | logging.Logger = "mcpkit.requests",
                 level: int = logging.INFO, *, params: bool = False) -> None:
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.level = level
        self.params = params

    async def on_request(self, request: Request, call_next: CallNext) -> JSONObject:
        if not self.logger.isEnabledFor(self.level):
            return await call_next(request)
        started = time.perf_counter()
        outcome, code = "cancelled", None
        try:
            result = await call_next(request)
            outcome = "tool_error" if result.get("isError") is True else "ok"
            return result
        except ProtocolError as exc:
            outcome, code = "error", exc.code
            raise
        except Exception:
            outcome, code = "error", InternalError.code
            raise
        finally:
            self._write(request, started, outcome, code)

    async def on_notification(self, request: Request, call_next: NotifyNext) -> None:
        if not self.logger.isEnabledFor(self.level):
            return await call_next(request)
        started = time.perf_counter()
        outcome = "cancelled"
        try:
            await call_next(request)
            outcome = "ok"
        except Exception:
            outcome = "error"
            raise
        finally:
            self._write(request, started, outcome, None)

    def _write(self, request: Request, started: float, outcome: str,
               code: int | None) -> None:
        line: dict[str, Any] = {
            "method": request.method, "id": request.id, "session": request.session_id,
            "protocol_version": request.protocol_version, "outcome": outcome,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        }
        if code is not None:
            line["code"] = code
        if self.params:
            line["params"] = request.params
        self.logger.log(self.level, json_line(line, "params"))


class ErrorMapping(Middleware):
    """Send exceptions of the types in ``mapping`` as MCP errors.

    ``mapping``: exception type -> a ``ProtocolError`` subclass (made with the
    exception's message) or a function of the exception returning a ``ProtocolError``.
    The most specific type wins (the exception's own class first, then its bases).
    Other exceptions, and ``ProtocolError``s, pass unchanged (an unexpected exception is
    logged and answered as an internal error, which tells the client nothing of it).
    ``TypeError`` when a value is neither."""

    def __init__(self, mapping: Mapping[type[Exception], ErrorFactory]) -> None:
        for kind, factory in mapping.items():
            if not (isinstance(kind, type) and issubclass(kind, Exception)):
                raise TypeError(f"ErrorMapping keys are exception types, got {kind!r}")
            if not callable(factory):
                raise TypeError(f"ErrorMapping[{kind.__name__}] must be a ProtocolError "
                                f"subclass or a function returning one, got {factory!r}")
        self.mapping = dict(mapping)

    async def on_request(self, request: Request, call_next: CallNext) -> JSONObject:
        try:
            return await call_next(request)
        except ProtocolError:
            raise
        except Exception as exc:
            error = self.mapped(exc)
            if error is None:
                raise
            raise error from exc

    def mapped(self, exc: Exception) -> ProtocolError | None:
        """The error ``exc`` is sent as, or None when its type is not mapped."""
        for kind in type(exc).__mro__:
            factory = self.mapping.get(kind)
            if factory is None:
                continue
            error: object = factory(str(exc)) if isinstance(factory, type) else factory(exc)
            if not isinstance(error, ProtocolError):
                raise TypeError(f"the ErrorMapping function for {kind.__name__} returned "
                                f"{error!r}, not a ProtocolError")
            return error
        return None


class ListCache(Middleware):
    """Keep the results of the list methods until their list changes (see the module
    docstring). A result is kept per method, cursor and protocol version (the
    revisions' shapes differ), at most ``max_entries`` of them (then the oldest goes);
    each answer is a copy, so what sends it cannot change the one kept."""

    def __init__(self, max_entries: int = 256) -> None:
        if not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(f"max_entries must be a positive int, got {max_entries!r}")
        self.max_entries = max_entries
        self._kept: dict[tuple[str, str | None, str | None, bool], JSONObject] = {}
        self._changes = 0  # list changes seen: a result computed across one is not kept
        self.hits = 0
        self.misses = 0

    def setup(self, server: Server) -> None:
        server._peers.list_watchers.append(self.forget)

    def forget(self, method: str) -> None:
        """Drop what was kept of the list ``method`` (a ``notifications/*/list_changed``)
        announces as changed."""
        kind = method.removeprefix("notifications/").removesuffix("/list_changed")
        dropped = _LISTS_OF.get(kind, ())
        self._changes += 1
        for key in [k for k in self._kept if k[0] in dropped]:
            del self._kept[key]

    async def on_request(self, request: Request, call_next: CallNext) -> JSONObject:
        if request.method not in LIST_METHODS:
            return await call_next(request)
        cursor = request.params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            return await call_next(request)  # refused there, not kept
        key = (request.method, cursor, request.protocol_version, request.stateless is not None)
        kept = self._kept.get(key)
        if kept is not None:
            self.hits += 1
            return dict(kept)
        self.misses += 1
        changes = self._changes
        result = await call_next(request)
        if changes != self._changes:
            return result  # the list changed meanwhile: this one may be stale already
        if len(self._kept) >= self.max_entries:
            del self._kept[next(iter(self._kept))]
        self._kept[key] = dict(result)
        return result
