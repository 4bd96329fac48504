"""The client library: ``Client`` and its typed results.

The client's exceptions are defined with every other in ``mcpkit.protocol.errors`` (and
exported from ``mcpkit``); they are re-exported here.
"""

from . import types
from .client import (
    Client,
    HandshakeError,
    InvalidResult,
    ListenStream,
    OutputSchemaError,
    PaginationError,
    ServerUnreachable,
)

__all__ = [
    "Client", "HandshakeError", "InvalidResult", "ListenStream", "OutputSchemaError",
    "PaginationError", "ServerUnreachable", "types",
]
