"""``AnthropicSampler``: sampling answered by Claude through Anthropic's Messages API.

The request's parts map one to one onto ``messages.create``: ``systemPrompt`` ->
``system``, ``maxTokens`` -> ``max_tokens``, ``stopSequences`` -> ``stop_sequences``
(``temperature`` is not sent: the Messages API of the SDK this was built on takes none;
``options={"extra_body": {...}}`` adds fields the SDK does not name); text
and base64 images (JPEG, PNG, GIF, WebP) -> text and image blocks; tools in sampling
(2025-11-25) -> ``tools`` (``inputSchema`` -> ``input_schema``), ``toolChoice`` ->
``tool_choice`` (``required`` is Anthropic's ``any``), ``tool_use`` / ``tool_result``
blocks -> Anthropic's own. Audio is refused (the Messages API takes none). The answer's
text and ``tool_use`` blocks come back as MCP content and its ``stop_reason`` as the
MCP ``stopReason``; other blocks (thinking) stay with the client. The ``anthropic``
package (``pip install 'mcpkit[anthropic]'``) is imported when the first request needs
a client, never by importing mcpkit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.jsonrpc import JSONObject
from .common import (
    Sampler,
    blocks,
    message_result,
    tool_result_text,
    unsupported,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

PROVIDER = "Anthropic"
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image media types the Messages API takes."""
STOP_REASONS: dict[str, str] = {
    "end_turn": "endTurn",
    "stop_sequence": "stopSequence",
    "max_tokens": "maxTokens",
    "tool_use": "toolUse",
}
"""Anthropic's ``stop_reason`` -> MCP's; others (``refusal``, ``pause_turn``...) are
passed on as they are (``stopReason`` is an open string)."""
TOOL_CHOICE: dict[str, str] = {"auto": "auto", "required": "any", "none": "none"}


class AnthropicSampler(Sampler):
    """A ``sampling=`` handler answered by Anthropic (see ``Sampler`` for the options).

    ``client``: an ``anthropic.AsyncAnthropic``; by default one made on first use,
    which reads ``ANTHROPIC_API_KEY`` from the environment.
    """

    provider = PROVIDER

    client: AsyncAnthropic | None

    def request(self, params: JSONObject, model: str) -> JSONObject:
        """The keyword arguments of ``messages.create`` for ``params`` and ``model``."""
        kwargs: JSONObject = {
            "model": model,
            "max_tokens": self.token_budget(params),
            "messages": [_message(m) for m in params.get("messages") or []],
        }
        if isinstance(params.get("systemPrompt"), str) and params["systemPrompt"]:
            kwargs["system"] = params["systemPrompt"]
        if params.get("stopSequences"):
            kwargs["stop_sequences"] = list(params["stopSequences"])
        tools = params.get("tools")
        if tools:
            kwargs["tools"] = [_tool(t) for t in tools]
            mode = (params.get("toolChoice") or {}).get("mode")
            if mode in TOOL_CHOICE:
                kwargs["tool_choice"] = {"type": TOOL_CHOICE[mode]}
        return {**kwargs, **self.options}

    def sdk(self) -> Any:
        import anthropic

        return anthropic

    def new_client(self, sdk: Any) -> Any:
        return sdk.AsyncAnthropic()

    async def send(self, client: Any, kwargs: JSONObject) -> Any:
        return await client.messages.create(**kwargs)

    def read(self, answer: JSONObject) -> JSONObject:
        return read_message(answer)


def read_message(message: JSONObject) -> JSONObject:
    """The ``CreateMessageResult`` for a Messages API ``message`` (as JSON)."""
    content: list[JSONObject] = []
    for block in message.get("content") or []:
        if block.get("type") == "text":
            content.append({"type": "text", "text": block.get("text", "")})
        elif block.get("type") == "tool_use":
            content.append({"type": "tool_use", "id": block["id"], "name": block["name"],
                            "input": block.get("input") or {}})
    reason = message.get("stop_reason")
    stop = STOP_REASONS.get(reason, reason) if isinstance(reason, str) else None
    return message_result(content, str(message.get("model")), stop)


def _message(msg: JSONObject) -> JSONObject:
    role = msg.get("role")
    return {"role": role, "content": [_block(b) for b in blocks(msg.get("content"))]}


def _block(block: JSONObject) -> JSONObject:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "image":
        return _image(block)
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name"),
                "input": block.get("input") or {}}
    if kind == "tool_result":
        out: JSONObject = {
            "type": "tool_result", "tool_use_id": block.get("toolUseId"),
            "content": [_block(b) for b in tool_result_text(block, PROVIDER)],
        }
        if block.get("isError"):
            out["is_error"] = True
        return out
    raise unsupported(PROVIDER, f"'{kind}' content" if kind != "audio" else "audio")


def _image(block: JSONObject) -> JSONObject:
    mime = block.get("mimeType")
    if mime not in IMAGE_TYPES:
        raise unsupported(PROVIDER, f"{mime} images (only JPEG, PNG, GIF and WebP)")
    return {"type": "image",
            "source": {"type": "base64", "media_type": mime, "data": block.get("data")}}


def _tool(tool: JSONObject) -> JSONObject:
    out: JSONObject = {"name": tool.get("name"),
                       "input_schema": tool.get("inputSchema") or {"type": "object"}}
    if isinstance(tool.get("description"), str):
        out["description"] = tool["description"]
    return out


__all__ = ["AnthropicSampler", "read_message"]
