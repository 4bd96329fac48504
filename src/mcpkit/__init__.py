"""mcpkit: a complete, fast Model Context Protocol implementation for Python."""

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

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``mcpkit.proxy``: ``mcpkit.bridge.proxy``, imported on first use (the client
    stack it needs stays unloaded by ``import mcpkit``; not in ``__all__`` for that
    reason)."""
    if name == "proxy":
        from .bridge import proxy

        return proxy
    raise AttributeError(f"module 'mcpkit' has no attribute {name!r}")


__all__ = [
    "LATEST_STATEFUL",
    "STATEFUL_VERSIONS",
    "Audio",
    "AuditLog",
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
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and isinstance(_obj, type):
        _obj.__module__ = "mcpkit"
del _name, _obj
