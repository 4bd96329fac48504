"""The server framework: ``Server``, its registries and the request ``Context``."""

from .app import Server
from .content import Audio, EmbeddedResource, Image, ResourceLink
from .context import Context, ElicitResult
from .prompts import Prompt
from .resources import Resource, ResourceTemplate
from .tools import Tool

__all__ = [
    "Audio",
    "Context",
    "ElicitResult",
    "EmbeddedResource",
    "Image",
    "Prompt",
    "Resource",
    "ResourceLink",
    "ResourceTemplate",
    "Server",
    "Tool",
]
