"""The server framework: ``Server``, its registries and the request ``Context``."""

from .app import Server
from .audit import AuditLog, AuditRecord
from .content import Audio, EmbeddedResource, Image, ResourceLink
from .context import Context, ElicitResult
from .limits import BucketStore, MemoryBuckets, RateLimit
from .prompts import Prompt
from .resources import Resource, ResourceTemplate
from .tools import Tool

__all__ = [
    "Audio",
    "AuditLog",
    "AuditRecord",
    "BucketStore",
    "Context",
    "ElicitResult",
    "EmbeddedResource",
    "Image",
    "MemoryBuckets",
    "Prompt",
    "RateLimit",
    "Resource",
    "ResourceLink",
    "ResourceTemplate",
    "Server",
    "Tool",
]
