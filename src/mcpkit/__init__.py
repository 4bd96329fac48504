"""mcpkit: a complete, fast Model Context Protocol implementation for Python.

``Client`` and its transports (``Stdio``, ``Http``) are attributes of the package too,
loaded on first use (``__getattr__``): a server never imports the client (pydantic,
the validators).
"""

import typing as _typing

from .protocol.errors import (
    CapabilityNotSupported,
    ConnectionClosed,
    HandshakeError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    InvalidResult,
    LocalProtocolError,
    MCPError,
    MethodNotFound,
    OutputSchemaError,
    PaginationError,
    ParseError,
    ProtocolError,
    RemoteError,
    RequestTimeout,
    ResourceNotFound,
    ServerUnreachable,
    TaskCancelled,
    TaskTimeout,
    ToolError,
    TransportError,
)
from .protocol.versions import LATEST_STATEFUL, STATEFUL_VERSIONS
from .server import (
    Audio,
    AuditLog,
    AuditRecord,
    BucketStore,
    Context,
    ElicitResult,
    EmbeddedResource,
    Image,
    MemoryBuckets,
    Prompt,
    RateLimit,
    Resource,
    ResourceLink,
    ResourceTemplate,
    Server,
    Tool,
)

if _typing.TYPE_CHECKING:
    from .client import Client, Http, Stdio

__version__ = "0.1.0"
_LAZY = ("Client", "Http", "Stdio")
"""Names of ``mcpkit.client`` that ``mcpkit`` offers without importing it up front."""


__all__ = [
    "LATEST_STATEFUL",
    "STATEFUL_VERSIONS",
    "Audio",
    "AuditLog",
    "Client",
    "Http",
    "Stdio",
    "AuditRecord",
    "BucketStore",
    "CapabilityNotSupported",
    "ConnectionClosed",
    "Context",
    "ElicitResult",
    "EmbeddedResource",
    "HandshakeError",
    "Image",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "InvalidResult",
    "LocalProtocolError",
    "MCPError",
    "MemoryBuckets",
    "MethodNotFound",
    "OutputSchemaError",
    "PaginationError",
    "ParseError",
    "Prompt",
    "ProtocolError",
    "RateLimit",
    "RemoteError",
    "RequestTimeout",
    "Resource",
    "ResourceLink",
    "ResourceNotFound",
    "ResourceTemplate",
    "Server",
    "ServerUnreachable",
    "TaskCancelled",
    "TaskTimeout",
    "Tool",
    "ToolError",
    "TransportError",
    "__version__",
]

for _name in __all__:
    if _name in _LAZY:
        continue
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and isinstance(_obj, type):
        _obj.__module__ = "mcpkit"
del _name, _obj


def __getattr__(name: str) -> _typing.Any:
    """``mcpkit.Client`` (and ``Http``, ``Stdio``): imported from ``mcpkit.client`` when
    first asked for, so ``import mcpkit`` stays light for a server; ``mcpkit.proxy`` is
    ``mcpkit.bridge.proxy``, likewise (not in ``__all__``, so ``import *`` skips it)."""
    if name == "proxy":
        from .bridge import proxy

        return proxy
    if name in _LAZY:
        from . import client

        value = getattr(client, name)
        value.__module__ = "mcpkit"  # as every class of the public surface shows itself
        globals()[name] = value  # the next access is a plain attribute
        return value
    raise AttributeError(f"module 'mcpkit' has no attribute {name!r}")
