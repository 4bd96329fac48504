"""Content a tool or prompt returns, and its conversion to MCP content blocks.

Tools return plain Python values; this module turns them into ``ContentBlock`` dicts:
``str`` -> text, ``Image``/``Audio`` -> base64 blocks, ``EmbeddedResource`` and
``ResourceLink`` -> resource blocks, a dict with a ``type`` key -> passed through,
anything else JSON-able -> its JSON text.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from ..protocol.record import Record

JSON = dict[str, Any]

MAX_TEXT_SUMMARY = 20_000
"""Past this many characters, the text mirror of structured content is summarised."""


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


class Image(Record):
    """An image: raw bytes (or base64 text) and its MIME type."""

    __slots__ = ("data", "mime_type")

    def __init__(self, data: bytes | str, mime_type: str = "image/png") -> None:
        self.data = data
        self.mime_type = mime_type

    def to_block(self) -> JSON:
        return {"type": "image", "data": _b64(self.data), "mimeType": self.mime_type}


class Audio(Record):
    """Audio: raw bytes (or base64 text) and its MIME type."""

    __slots__ = ("data", "mime_type")

    def __init__(self, data: bytes | str, mime_type: str = "audio/wav") -> None:
        self.data = data
        self.mime_type = mime_type

    def to_block(self) -> JSON:
        return {"type": "audio", "data": _b64(self.data), "mimeType": self.mime_type}


class EmbeddedResource(Record):
    """A resource's contents embedded in a result: ``text`` or ``blob`` (bytes)."""

    __slots__ = ("blob", "mime_type", "text", "uri")

    def __init__(
        self,
        uri: str,
        text: str | None = None,
        blob: bytes | None = None,
        mime_type: str | None = None,
    ) -> None:
        self.uri = uri
        self.text = text
        self.blob = blob
        self.mime_type = mime_type

    def to_block(self) -> JSON:
        return {"type": "resource", "resource": resource_contents(
            self.uri, self.blob if self.text is None else self.text, self.mime_type)}


class ResourceLink(Record):
    """A link to a resource the client may read (need not be listed)."""

    __slots__ = ("description", "mime_type", "name", "uri")

    def __init__(
        self,
        uri: str,
        name: str,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> None:
        self.uri = uri
        self.name = name
        self.description = description
        self.mime_type = mime_type

    def to_block(self) -> JSON:
        block: JSON = {"type": "resource_link", "uri": self.uri, "name": self.name}
        if self.description:
            block["description"] = self.description
        if self.mime_type:
            block["mimeType"] = self.mime_type
        return block


Content = Image | Audio | EmbeddedResource | ResourceLink
CONTENT_TYPES = (Image, Audio, EmbeddedResource, ResourceLink)


def resource_contents(uri: str, value: str | bytes | None, mime_type: str | None) -> JSON:
    """One ``TextResourceContents`` or ``BlobResourceContents`` item."""
    item: JSON = {"uri": uri}
    if mime_type:
        item["mimeType"] = mime_type
    if isinstance(value, bytes | bytearray):
        item["blob"] = base64.b64encode(value).decode("ascii")
    else:
        item["text"] = "" if value is None else value
    return item


def to_json_text(value: Any) -> str:
    """Compact JSON text of a JSON-able value (pydantic models and dataclasses included)."""
    return orjson.dumps(value, default=_default).decode()


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def to_blocks(value: Any) -> list[JSON]:
    """Content blocks for a tool/prompt return value."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, CONTENT_TYPES):
        return [value.to_block()]
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return [value]
    if isinstance(value, list | tuple) and value and all(
        isinstance(v, (str, *CONTENT_TYPES)) or (isinstance(v, dict) and "type" in v)
        for v in value
    ):
        blocks: list[JSON] = []
        for v in value:
            blocks.extend(to_blocks(v))
        return blocks
    return [{"type": "text", "text": to_json_text(value)}]


def is_content(value: Any) -> bool:
    """Whether a value is content (a content object or a list holding one)."""
    if isinstance(value, CONTENT_TYPES):
        return True
    return isinstance(value, list | tuple) and any(isinstance(v, CONTENT_TYPES) for v in value)


def summarise(text: str, limit: int = MAX_TEXT_SUMMARY) -> str:
    """``text`` cut to ``limit`` characters with a note saying where the rest is."""
    if len(text) <= limit:
        return text
    return (
        text[:limit]
        + f"… [truncated: {len(text) - limit} more characters; the complete value is in "
        "structuredContent]"
    )
