"""Typed results the client returns: pydantic models over the MCP result shapes.

Models accept unknown fields (``extra="allow"``) so a newer server's additions survive,
and use the wire's camelCase names as aliases (``input_schema`` <-> ``inputSchema``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..protocol.tasks import CORE, EXT, TaskStatus, is_terminal


class Model(BaseModel):
    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class TextContent(Model):
    type: Literal["text"] = "text"
    text: str
    annotations: dict[str, Any] | None = None


class ImageContent(Model):
    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: dict[str, Any] | None = None


class AudioContent(Model):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: dict[str, Any] | None = None


class ResourceContents(Model):
    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None


class EmbeddedResource(Model):
    type: Literal["resource"] = "resource"
    resource: ResourceContents
    annotations: dict[str, Any] | None = None


class ResourceLink(Model):
    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


ContentBlock = Annotated[
    TextContent | ImageContent | AudioContent | EmbeddedResource | ResourceLink,
    Field(discriminator="type"),
]


class Tool(Model):
    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    execution: dict[str, Any] | None = None  # 2025-11-25: {"taskSupport": ...}

    @property
    def task_support(self) -> str:
        """``execution.taskSupport`` (2025-11-25): ``forbidden`` (the default),
        ``optional`` or ``required``."""
        value = (self.execution or {}).get("taskSupport")
        return value if value in ("optional", "required") else "forbidden"


class CallToolResult(Model):
    content: list[ContentBlock] = []
    structured_content: dict[str, Any] | None = None
    is_error: bool = False

    @property
    def text(self) -> str:
        """All text blocks joined by newlines (handy for printing and tests)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))


class Resource(Model):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None


class ResourceTemplate(Model):
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


class ReadResourceResult(Model):
    contents: list[ResourceContents]


class PromptArgument(Model):
    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


class Prompt(Model):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None


class PromptMessage(Model):
    role: Literal["user", "assistant"]
    content: ContentBlock


class GetPromptResult(Model):
    description: str | None = None
    messages: list[PromptMessage]


class Completion(Model):
    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class InitializeResult(Model):
    protocol_version: str
    capabilities: dict[str, Any]
    server_info: dict[str, Any]
    instructions: str | None = None


class Task(Model):
    """A task's state (``tasks/get``, ``notifications/tasks/status``, ``CreateTaskResult``).

    Both generations read into this one model: 2025-11-25's ``ttl`` / ``pollInterval``
    and 2026-07-28's ``ttlMs`` / ``pollIntervalMs`` are both milliseconds. A 2026-07-28
    ``tasks/get`` also carries the terminal ``result`` or ``error``, or the
    ``input_requests`` a task in ``input_required`` waits for."""

    task_id: str = Field(min_length=1)
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl: int | None = Field(default=None, validation_alias=AliasChoices(CORE.ttl, EXT.ttl))
    poll_interval: int | None = Field(
        default=None, validation_alias=AliasChoices(CORE.poll_interval, EXT.poll_interval))
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        """Whether the task has ended (completed, failed or cancelled): it never changes
        again."""
        return is_terminal(self.status)
