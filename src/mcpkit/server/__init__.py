"""The server framework: ``Server``, its registries and the request ``Context``."""

from .app import Server
from .audit import AuditLog, AuditRecord
from .builtin_middleware import ErrorMapping, ListCache, RequestLog
from .content import Audio, EmbeddedResource, Image, ResourceLink
from .context import Context, ElicitResult
from .limits import BucketStore, MemoryBuckets, RateLimit
from .middleware import CallNext, Middleware, NotifyNext, Request
from .prompts import Prompt
from .resources import Resource, ResourceTemplate
from .tools import Tool

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
    "Server",
    "Tool",
]
