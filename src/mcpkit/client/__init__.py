"""The client library: ``Client`` and its typed results.

The client's exceptions are defined with every other in ``mcpkit.protocol.errors`` (and
exported from ``mcpkit``); they are re-exported here, with ``AuthorizationFailed``: what
connecting or a request raises when an ``auth=mcpkit.auth.OAuth(...)`` could not get a
token (importing it from here leaves the auth client modules unloaded).

| module | job |
|---|---|
| ``client`` | ``Client``: opening the session, the request path, the typed methods |
| ``connect`` | the transports (``Stdio``, ``Http``, a server in memory); why one failed |
| ``handlers`` | the application's answers to server requests, and the capabilities they declare |
| ``stateless`` | the 2026-07-28 revision: ``server/discover``, per-request ``_meta``, MRTR |
| ``listen`` | ``Client.listen``: ``subscriptions/listen`` streams |
| ``cache`` | ``ClientCache``: list and read results kept as long as their ``ttlMs`` allows |
| ``tasks`` | ``TaskHandle``: a tool call running as a task on the server (both generations) |
| ``task_host`` | tasks the client runs for the server: task-augmented sampling / elicitation |
| ``results`` | typed results, ``Structured`` data, ``x-mcp-header``, ``outputSchema`` |
| ``types`` | the result types (on ``model``'s ``Wire``, not pydantic) |
| ``model`` | ``Wire``: JSON read into typed attributes by each class's annotations |
"""

from ..protocol.errors import (
    AuthorizationFailed,
    HandshakeError,
    InvalidResult,
    OutputSchemaError,
    PaginationError,
    ServerUnreachable,
    ToolError,
    TransportError,
)
from ..session import ProgressCallback
from . import types
from .cache import ClientCache
from .client import Client
from .connect import Http, Servable, Stdio
from .handlers import (
    ElicitationHandler,
    LogHandler,
    NotificationHandler,
    RootsType,
    SamplingHandler,
)
from .listen import ListenStream
from .results import Structured
from .tasks import TaskHandle

__all__ = [
    "AuthorizationFailed", "Client", "ClientCache", "ElicitationHandler", "HandshakeError", "Http",
    "InvalidResult", "ListenStream", "LogHandler", "NotificationHandler", "OutputSchemaError",
    "PaginationError", "ProgressCallback", "RootsType", "SamplingHandler", "Servable",
    "ServerUnreachable", "Stdio", "Structured", "TaskHandle", "ToolError", "TransportError",
    "types",
]
