"""The client library: ``Client`` and its typed results."""

from . import types
from .client import (
    Client,
    HandshakeError,
    InvalidResult,
    OutputSchemaError,
    PaginationError,
    ServerUnreachable,
)

__all__ = [
    "Client", "HandshakeError", "InvalidResult", "OutputSchemaError", "PaginationError",
    "ServerUnreachable", "types",
]
