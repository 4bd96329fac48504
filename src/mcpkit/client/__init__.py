"""The client library: ``Client`` and its typed results."""

from . import types
from .client import Client, HandshakeError, OutputSchemaError, PaginationError

__all__ = ["Client", "HandshakeError", "OutputSchemaError", "PaginationError", "types"]
