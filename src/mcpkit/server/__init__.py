"""The server framework: ``Server``, its registries and the request ``Context``.

The ready-made middleware (``ErrorMapping``, ``ListCache``, ``RequestLog``) is imported
when first asked for: a server that uses none does not load it (issue #28)."""

from typing import TYPE_CHECKING, Any

from .app import Server
from .audit import AuditLog, AuditRecord
from .content import Audio, EmbeddedResource, Image, ResourceLink
from .context import Context, ElicitResult
from .limits import BucketStore, MemoryBuckets, RateLimit
from .middleware import CallNext, Middleware, NotifyNext, Request
from .prompts import Prompt
from .resources import Resource, ResourceTemplate
from .schema import Schema
from .tools import Tool

if TYPE_CHECKING:
    from .builtin_middleware import ErrorMapping, ListCache, RequestLog

_LATER = frozenset({"ErrorMapping", "ListCache", "RequestLog"})

__all__ = [
    "Audio",
    "AuditLog",
    "AuditRecord",
    "BucketStore",
    "CallNext",
    "Context",
    "ElicitResult",
    "EmbeddedResource",
    "ErrorMapping",
    "Image",
    "ListCache",
    "MemoryBuckets",
    "Middleware",
    "NotifyNext",
    "Prompt",
    "RateLimit",
    "Request",
    "RequestLog",
    "Resource",
    "ResourceLink",
    "ResourceTemplate",
    "Schema",
    "Server",
    "Tool",
]


def __getattr__(name: str) -> Any:
    if name in _LATER:
        from . import builtin_middleware

        value = getattr(builtin_middleware, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mcpkit.server' has no attribute {name!r}")
