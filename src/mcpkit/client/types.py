"""Typed results the client returns: small classes over the MCP result shapes.

Each accepts unknown fields (a newer server's additions survive, readable as attributes
under their wire names) and reads the wire's camelCase names into snake_case attributes
(``inputSchema`` -> ``input_schema``). One naming style: every field the protocol defines
is a snake_case attribute, nested objects (annotations, icons, ``execution``) included;
what stays a dict is data of the server's own (``meta``, JSON Schemas,
``structured_content``, capabilities). ``to_wire()`` gives any of them back as the wire's
camelCase JSON, ``from_wire()`` reads one. They are not pydantic models: importing
pydantic would cost every client 130 ms at start-up (``client/model.py`` says more).
"""

from typing import Any, Generic, Literal, TypeVar

from ..protocol.tasks import CORE, EXT, TaskStatus, is_terminal
from .model import Wire, WireError, field

__all__ = [
    "Annotations", "AudioContent", "CallToolResult", "Completion", "ContentBlock",
    "EmbeddedResource", "GetPromptResult", "Icon", "ImageContent", "Implementation",
    "InitializeResult", "Model", "Prompt", "PromptArgument", "PromptInfo", "PromptMessage",
    "ReadResourceResult", "Resource", "ResourceContents", "ResourceInfo", "ResourceLink",
    "ResourceTemplate", "ResourceTemplateInfo", "Task", "TextContent", "Tool",
    "ToolAnnotations", "ToolExecution", "ToolInfo", "WireError",
]


class Model(Wire):
    """The base of every result type: ``meta`` is the object's ``_meta``."""

    meta: dict[str, Any] | None = field(None, wire="_meta")


class Annotations(Model):
    """Hints on a content block or a resource: who it is for, how much it matters."""

    audience: list[str] | None = None  # roles: "user", "assistant"
    priority: float | None = None
    last_modified: str | None = None


class ToolAnnotations(Model):
    """Hints about a tool's behaviour (the wire's ``readOnlyHint``, ...): a client may
    show them, never trust them from an untrusted server."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Icon(Model):
    """An icon of a tool, resource, prompt or implementation."""

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: str | None = None  # "light" or "dark"


class ToolExecution(Model):
    """How a tool runs (2025-11-25): ``task_support`` is ``forbidden``, ``optional`` or
    ``required`` (absent: forbidden)."""

    task_support: str | None = None


class Implementation(Model):
    """A client's or server's name and version (``serverInfo``)."""

    name: str
    version: str
    title: str | None = None
    description: str | None = None
    website_url: str | None = None
    icons: list[Icon] | None = None


class TextContent(Model):
    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None


class ImageContent(Model):
    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class AudioContent(Model):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class ResourceContents(Model):
    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None


class EmbeddedResource(Model):
    type: Literal["resource"] = "resource"
    resource: ResourceContents
    annotations: Annotations | None = None


class ResourceLink(Model):
    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None


# told apart by their ``type``
ContentBlock = TextContent | ImageContent | AudioContent | EmbeddedResource | ResourceLink


class ToolInfo(Model):
    """A tool as a server lists it (``tools/list``); the server's own class is ``mcpkit.Tool``."""

    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    icons: list[Icon] | None = None
    execution: ToolExecution | None = None  # 2025-11-25

    @property
    def task_support(self) -> str:
        """``execution.task_support`` (2025-11-25): ``forbidden`` (the default),
        ``optional`` or ``required``."""
        value = self.execution.task_support if self.execution else None
        return value if value in ("optional", "required") else "forbidden"


T = TypeVar("T")


class CallToolResult(Model, Generic[T]):
    """A ``tools/call`` result. ``data`` is its ``structured_content`` once checked against
    the tool's ``outputSchema``, as the ``result_type`` the caller asked for
    (``Client.call_tool``); ``is_error``: the tool failed (``content`` says why)."""

    content: list[ContentBlock] = []  # noqa: RUF012  (copied for each object)
    structured_content: dict[str, Any] | None = None
    is_error: bool = False
    _data: Any = None  # set by the client once it has read structured_content

    @property
    def data(self) -> T:
        """The structured result: ``structured_content`` as the caller's ``result_type``
        (a primitive type unwrapped from the ``{"result": ...}`` a server wraps it in), or
        as is without one; None when the tool returned none (or failed)."""
        return self._data  # type: ignore[no-any-return]

    @property
    def text(self) -> str:
        """All text blocks joined by newlines (handy for printing and tests)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))


class ResourceInfo(Model):
    """A resource as a server lists it (``resources/list``); the server's own class is
    ``mcpkit.Resource``."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None


class ResourceTemplateInfo(Model):
    """A resource template as a server lists it (``resources/templates/list``); the
    server's own class is ``mcpkit.ResourceTemplate``."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None


class ReadResourceResult(Model):
    contents: list[ResourceContents]


class PromptArgument(Model):
    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


class PromptInfo(Model):
    """A prompt as a server lists it (``prompts/list``); the server's own class is
    ``mcpkit.Prompt``."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None


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
    server_info: Implementation
    instructions: str | None = None


class Task(Model):
    """A task's state (``tasks/get``, ``notifications/tasks/status``, ``CreateTaskResult``).

    Both generations read into this one model: 2025-11-25's ``ttl`` / ``pollInterval``
    and 2026-07-28's ``ttlMs`` / ``pollIntervalMs`` are both milliseconds. A 2026-07-28
    ``tasks/get`` also carries the terminal ``result`` or ``error``, or the
    ``input_requests`` a task in ``input_required`` waits for."""

    task_id: str = field(min_length=1)
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl: int | None = field(None, wire=CORE.ttl, aliases=(EXT.ttl,))
    poll_interval: int | None = field(None, wire=CORE.poll_interval,
                                      aliases=(EXT.poll_interval,))
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        """Whether the task has ended (completed, failed or cancelled): it never changes
        again."""
        return is_terminal(self.status)


# The former names of the listed definitions, kept for code written against them; the
# server's classes of the same names (``mcpkit.Tool`` ...) are other things.
Tool = ToolInfo
Resource = ResourceInfo
ResourceTemplate = ResourceTemplateInfo
Prompt = PromptInfo
