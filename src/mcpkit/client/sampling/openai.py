"""``OpenAISampler``: sampling answered through OpenAI's Chat Completions API.

``systemPrompt`` becomes the first, ``system`` message; ``maxTokens`` ->
``max_completion_tokens``, ``stopSequences`` -> ``stop``, ``temperature``. User text,
base64 images (a ``data:`` URL) and WAV / MP3 audio (``input_audio``, for the models
that hear) -> content parts; an assistant's text and ``tool_use`` blocks -> its
``content`` and ``tool_calls`` (the input as a JSON string); each ``tool_result`` -> a
``tool`` message (text only: Chat Completions takes no image there). Tools in sampling
-> ``function`` tools (``inputSchema`` -> ``parameters``), ``toolChoice`` ->
``tool_choice``. The first choice comes back as MCP content: its text (or refusal) and
its tool calls as ``tool_use`` blocks; ``finish_reason`` as ``stopReason`` (``stop`` is
``endTurn``: the API does not say whether a stop sequence ended it). The ``openai``
package (``pip install 'mcpkit[openai]'``) is imported when the first request needs a
client, never by importing mcpkit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from ...protocol.errors import InternalError
from ...protocol.jsonrpc import JSONObject
from .common import (
    Sampler,
    blocks,
    message_result,
    tool_result_text,
    unsupported,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

PROVIDER = "OpenAI"
AUDIO_FORMATS: dict[str, str] = {"audio/wav": "wav", "audio/x-wav": "wav",
                                 "audio/wave": "wav", "audio/mpeg": "mp3",
                                 "audio/mp3": "mp3"}
"""Audio media types -> the ``input_audio`` formats Chat Completions takes."""
STOP_REASONS: dict[str, str] = {
    "stop": "endTurn",
    "length": "maxTokens",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}
"""``finish_reason`` -> MCP ``stopReason``; others (``content_filter``) pass as they are."""


class OpenAISampler(Sampler):
    """A ``sampling=`` handler answered by OpenAI (see ``Sampler`` for the options).

    ``client``: an ``openai.AsyncOpenAI`` (or one for any service that speaks Chat
    Completions, given its ``base_url``); by default one made on first use, which reads
    ``OPENAI_API_KEY`` from the environment.
    """

    provider = PROVIDER

    client: AsyncOpenAI | None

    def request(self, params: JSONObject, model: str) -> JSONObject:
        """The keyword arguments of ``chat.completions.create`` for ``params``."""
        messages: list[JSONObject] = []
        if isinstance(params.get("systemPrompt"), str) and params["systemPrompt"]:
            messages.append({"role": "system", "content": params["systemPrompt"]})
        for msg in params.get("messages") or []:
            messages.extend(_messages(msg))
        kwargs: JSONObject = {"model": model, "messages": messages,
                              "max_completion_tokens": self.token_budget(params)}
        if isinstance(params.get("temperature"), int | float):
            kwargs["temperature"] = params["temperature"]
        if params.get("stopSequences"):
            kwargs["stop"] = list(params["stopSequences"])
        tools = params.get("tools")
        if tools:
            kwargs["tools"] = [_tool(t) for t in tools]
            mode = (params.get("toolChoice") or {}).get("mode")
            if mode in ("auto", "required", "none"):
                kwargs["tool_choice"] = mode
        return {**kwargs, **self.options}

    def sdk(self) -> Any:
        import openai

        return openai

    def new_client(self, sdk: Any) -> Any:
        return sdk.AsyncOpenAI()

    async def send(self, client: Any, kwargs: JSONObject) -> Any:
        return await client.chat.completions.create(**kwargs)

    def read(self, answer: JSONObject) -> JSONObject:
        return read_completion(answer)


def read_completion(completion: JSONObject) -> JSONObject:
    """The ``CreateMessageResult`` for a chat ``completion`` (as JSON): its first choice."""
    choices = completion.get("choices") or []
    if not choices:
        raise InternalError(f"Sampling failed: {PROVIDER} answered no choice.",
                            {"provider": PROVIDER, "retryable": True})
    choice = choices[0]
    message = choice.get("message") or {}
    content: list[JSONObject] = []
    text = message.get("content") or message.get("refusal")
    if isinstance(text, str) and text:
        content.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        content.append({"type": "tool_use", "id": call.get("id"),
                        "name": function.get("name"),
                        "input": _arguments(function.get("arguments"))})
    reason = choice.get("finish_reason")
    stop = STOP_REASONS.get(reason, reason) if isinstance(reason, str) else None
    if message.get("refusal") and not message.get("content"):
        stop = "refusal"
    return message_result(content, str(completion.get("model")), stop)


def _arguments(raw: Any) -> JSONObject:
    """A tool call's ``arguments`` (a JSON string) as the ``tool_use`` input object."""
    try:
        value = orjson.loads(raw or "{}")
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise InternalError(f"Sampling failed: {PROVIDER} answered a tool call whose "
                            "arguments are not a JSON object; retry the request.",
                            {"provider": PROVIDER, "retryable": True})
    return value


def _messages(msg: JSONObject) -> list[JSONObject]:
    """The Chat Completions messages for one MCP sampling message."""
    items = blocks(msg.get("content"))
    if msg.get("role") == "assistant":
        text = "".join(_assistant_text(b) for b in items if b.get("type") != "tool_use")
        out: JSONObject = {"role": "assistant", "content": text or None}
        calls = [{"id": b.get("id"), "type": "function",
                  "function": {"name": b.get("name"),
                               "arguments": orjson.dumps(b.get("input") or {}).decode()}}
                 for b in items if b.get("type") == "tool_use"]
        if calls:
            out["tool_calls"] = calls
        return [out]
    if any(b.get("type") == "tool_result" for b in items):
        return [_tool_message(b) for b in items]
    return [{"role": "user", "content": [_part(b) for b in items]}]


def _assistant_text(block: JSONObject) -> str:
    if block.get("type") != "text":
        raise unsupported(PROVIDER, f"'{block.get('type')}' content from the assistant")
    return str(block.get("text", ""))


def _tool_message(block: JSONObject) -> JSONObject:
    parts = tool_result_text(block, PROVIDER)
    if any(p["type"] != "text" for p in parts):
        raise unsupported(PROVIDER, "images in a tool result")
    text = "".join(p["text"] for p in parts)
    if block.get("isError"):
        text = f"Error: {text}"
    return {"role": "tool", "tool_call_id": block.get("toolUseId"), "content": text}


def _part(block: JSONObject) -> JSONObject:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "image":
        url = f"data:{block.get('mimeType')};base64,{block.get('data')}"
        return {"type": "image_url", "image_url": {"url": url}}
    if kind == "audio":
        fmt = AUDIO_FORMATS.get(str(block.get("mimeType")))
        if fmt is None:
            raise unsupported(PROVIDER, f"{block.get('mimeType')} audio (only WAV and MP3)")
        return {"type": "input_audio", "input_audio": {"data": block.get("data"),
                                                       "format": fmt}}
    raise unsupported(PROVIDER, f"'{kind}' content")


def _tool(tool: JSONObject) -> JSONObject:
    function: JSONObject = {"name": tool.get("name"),
                            "parameters": tool.get("inputSchema") or {"type": "object"}}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


__all__ = ["OpenAISampler", "read_completion"]
