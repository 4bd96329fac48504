"""mcpkit: a complete, fast Model Context Protocol implementation for Python.

Every public name (``Server``, ``Client``, the errors, ...) is an attribute of the package
loaded on first use (``__getattr__``, PEP 562): ``import mcpkit`` imports nothing else,
so ``mcpkit --version`` starts like a small tool, and a server never imports the client
(pydantic, the validators). ``from mcpkit import Server`` loads the server framework then.
"""

from importlib import import_module as _import_module

_TYPE_CHECKING = False  # (not typing's: importing typing costs ``mcpkit --version`` ~3 ms)
if _TYPE_CHECKING:
    from .client import Client, Http, Stdio
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
    from .protocol.release import MCPKIT_VERSION as __version__
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
        Schema,
        Server,
        Tool,
    )

_EXPORTS: dict[str, str] = {
    "CapabilityNotSupported": "protocol.errors",
    "ConnectionClosed": "protocol.errors",
    "HandshakeError": "protocol.errors",
    "InternalError": "protocol.errors",
    "InvalidParams": "protocol.errors",
    "InvalidRequest": "protocol.errors",
    "InvalidResult": "protocol.errors",
    "LocalProtocolError": "protocol.errors",
    "MCPError": "protocol.errors",
    "MethodNotFound": "protocol.errors",
    "OutputSchemaError": "protocol.errors",
    "PaginationError": "protocol.errors",
    "ParseError": "protocol.errors",
    "ProtocolError": "protocol.errors",
    "RemoteError": "protocol.errors",
    "RequestTimeout": "protocol.errors",
    "ResourceNotFound": "protocol.errors",
    "ServerUnreachable": "protocol.errors",
    "TaskCancelled": "protocol.errors",
    "TaskTimeout": "protocol.errors",
    "ToolError": "protocol.errors",
    "TransportError": "protocol.errors",
    "LATEST_STATEFUL": "protocol.versions",
    "STATEFUL_VERSIONS": "protocol.versions",
    "Audio": "server",
    "AuditLog": "server",
    "AuditRecord": "server",
    "BucketStore": "server",
    "Context": "server",
    "ElicitResult": "server",
    "EmbeddedResource": "server",
    "Image": "server",
    "MemoryBuckets": "server",
    "Prompt": "server",
    "RateLimit": "server",
    "Resource": "server",
    "ResourceLink": "server",
    "ResourceTemplate": "server",
    "Schema": "server",
    "Server": "server",
    "Tool": "server",
    "Client": "client",
    "Clients": "bridge",
    "Http": "client",
    "Stdio": "client",
}
"""Each public name and the module (below ``mcpkit``) it is loaded from on first use."""


__all__ = [
    "LATEST_STATEFUL",
    "STATEFUL_VERSIONS",
    "Audio",
    "AuditLog",
    "Client",
    "Clients",
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
    "Schema",
    "Server",
    "ServerUnreachable",
    "TaskCancelled",
    "TaskTimeout",
    "Tool",
    "ToolError",
    "TransportError",
    "__version__",
]


def __getattr__(name: str) -> object:
    """A public name, imported from its module when first asked for (the next access is a
    plain attribute); a class shows itself as ``mcpkit.X``, the name users import it by.
    ``mcpkit.proxy`` is ``mcpkit.bridge.proxy``, likewise (not in ``__all__``, so
    ``import *`` skips it)."""
    if name == "proxy":
        from .bridge import proxy

        return proxy
    if name == "__version__":
        from .protocol.release import MCPKIT_VERSION

        return MCPKIT_VERSION
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'mcpkit' has no attribute {name!r}")
    value = getattr(_import_module(f".{where}", __name__), name)
    if isinstance(value, type):
        value.__module__ = "mcpkit"
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
