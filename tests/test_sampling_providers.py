"""The provider samplers (``mcpkit.client.sampling``) against their providers' own SDKs.

No network: ``anthropic.AsyncAnthropic`` and ``openai.AsyncOpenAI`` are pointed at a
loopback HTTP fixture (Starlette under uvicorn, ``tests/support/http.LiveServer``) that
records each request body and answers the next queued response, shaped as the real APIs
answer (``POST /v1/messages``, ``POST /v1/chat/completions``). The tests check what the
SDK sent (model from the hints, system prompt, an image, tools, the tool round trip) and
the MCP result, the errors a server gets, and a server's ``ctx.sample`` answered through
each sampler in both eras with every message validated against the schema.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpkit import Context, Server
from mcpkit.client.sampling import AnthropicSampler, OpenAISampler
from mcpkit.protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    InternalError,
    InvalidParams,
    RemoteError,
)
from mcpkit.testing import ERAS, connect

from .support.http import LiveServer

pytestmark = pytest.mark.anyio

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()
WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"]}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDKs' async clients run on asyncio


class Provider:
    """The fixture's state: the requests received, the answers still to give."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.answers: list[tuple[int, Any, dict[str, str]]] = []

    def answer(self, body: Any, status: int = 200, **headers: str) -> None:
        self.answers.append((status, body, headers))

    async def endpoint(self, request: Request) -> JSONResponse:
        self.requests.append(await request.json())
        self.headers.append(dict(request.headers))
        status, body, headers = self.answers.pop(0)
        return JSONResponse(body, status_code=status, headers=headers)


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[LiveServer, Provider]]:
    provider = Provider()
    app = Starlette(routes=[
        Route("/v1/messages", provider.endpoint, methods=["POST"]),
        Route("/v1/chat/completions", provider.endpoint, methods=["POST"]),
    ])
    with LiveServer(app) as server:
        yield server, provider


OPEN: list[Any] = []  # the SDK clients a test made, closed when it ends (on its loop)


@pytest.fixture
async def close_clients() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().close()


@pytest.fixture
def fixture(live: tuple[LiveServer, Provider], close_clients: None) -> Iterator[Provider]:
    _server, provider = live
    provider.requests.clear()
    provider.headers.clear()
    provider.answers.clear()
    yield provider
    assert not provider.answers, "the test left answers unasked"


@pytest.fixture
def base(live: tuple[LiveServer, Provider]) -> str:
    return live[0].base


# ---------------------------------------------------------------- recorded-looking answers

def claude(content: list[dict[str, Any]], stop: str = "end_turn",
           model: str = "claude-sonnet-4-5-20250929") -> dict[str, Any]:
    return {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
            "model": model, "content": content, "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 2095, "output_tokens": 503,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "service_tier": "standard"}}


def gpt(message: dict[str, Any], finish: str = "stop",
        model: str = "gpt-4o-2024-08-06") -> dict[str, Any]:
    return {"id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion",
            "created": 1741570283, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "refusal": None,
                                                 "annotations": [], **message},
                         "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1117, "completion_tokens": 46, "total_tokens": 1163,
                      "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                      "completion_tokens_details": {
                          "reasoning_tokens": 0, "audio_tokens": 0,
                          "accepted_prediction_tokens": 0,
                          "rejected_prediction_tokens": 0}},
            "service_tier": "default", "system_fingerprint": "fp_fc9f1d7035"}


def anthropic_sampler(base: str, **options: Any) -> AnthropicSampler:
    client = anthropic.AsyncAnthropic(api_key="test-key", base_url=base, max_retries=0)
    OPEN.append(client)
    return AnthropicSampler(client, default_model="claude-haiku-4-5",
                            models=["claude-sonnet-4-5", "claude-opus-4-1"], **options)


def openai_sampler(base: str, **options: Any) -> OpenAISampler:
    client = openai.AsyncOpenAI(api_key="test-key", base_url=f"{base}/v1", max_retries=0)
    OPEN.append(client)
    return OpenAISampler(client, default_model="gpt-4o-mini",
                         models={"gpt-4o": "gpt-4o", "sonnet": "gpt-4.1"}, **options)


PARAMS: dict[str, Any] = {
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "What is in this picture?"},
                                     {"type": "image", "data": PNG,
                                      "mimeType": "image/png"}]},
    ],
    "systemPrompt": "You are terse.",
    "maxTokens": 300,
    "temperature": 0.2,
    "stopSequences": ["###"],
    "modelPreferences": {"hints": [{"name": "gemini"}, {"name": "sonnet"}],
                         "intelligencePriority": 0.8},
}


# -------------------------------------------------------------------------- Anthropic

async def test_anthropic_request_and_text_answer(fixture: Provider, base: str) -> None:
    fixture.answer(claude([{"type": "text", "text": "A tiny "},
                           {"type": "text", "text": "PNG."}]))
    result = await anthropic_sampler(base)(PARAMS)
    assert result == {"role": "assistant", "model": "claude-sonnet-4-5-20250929",
                      "content": {"type": "text", "text": "A tiny PNG."},
                      "stopReason": "endTurn"}
    (sent,) = fixture.requests
    assert sent == {
        "model": "claude-sonnet-4-5",  # "gemini" matches nothing; "sonnet" does
        "max_tokens": 300, "system": "You are terse.",  # no temperature: the API has none
        "stop_sequences": ["###"],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": PNG}}]}],
    }
    assert fixture.headers[0]["authorization"] == "Bearer test-key"
    assert fixture.headers[0]["anthropic-version"]


async def test_anthropic_tools_round_trip(fixture: Provider, base: str) -> None:
    fixture.answer(claude([{"type": "text", "text": "Let me check."},
                           {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9",
                            "name": "get_weather", "input": {"city": "Paris"}}],
                          stop="tool_use"))
    sampler = anthropic_sampler(base, max_tokens=100)
    asked = {"messages": [{"role": "user", "content": {"type": "text",
                                                         "text": "Weather in Paris?"}}],
             "maxTokens": 1000, "tools": [WEATHER], "toolChoice": {"mode": "required"}}
    first = await sampler(asked)
    assert first["stopReason"] == "toolUse"
    assert first["content"] == [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
         "input": {"city": "Paris"}}]
    sent = fixture.requests[0]
    assert sent["model"] == "claude-haiku-4-5"  # no hints: the default
    assert sent["max_tokens"] == 100  # the client's ceiling, not the server's 1000
    assert sent["tools"] == [{"name": "get_weather", "description": "The weather in a city.",
                              "input_schema": WEATHER["inputSchema"]}]
    assert sent["tool_choice"] == {"type": "any"}

    fixture.answer(claude([{"type": "text", "text": "Sunny, 21 °C."}]))
    again = {**asked, "toolChoice": {"mode": "none"}, "messages": [
        *asked["messages"],
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [{"type": "tool_result",
                                      "toolUseId": "toolu_01A09q90qw90lq917835lq9",
                                      "content": [{"type": "text", "text": "sunny, 21"}],
                                      "isError": False}]}]}
    second = await sampler(again)
    assert second["content"] == {"type": "text", "text": "Sunny, 21 °C."}
    assert fixture.requests[1]["tool_choice"] == {"type": "none"}
    assert fixture.requests[1]["messages"][1:] == [
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9",
             "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
             "content": [{"type": "text", "text": "sunny, 21"}]}]}]


async def test_anthropic_stop_reasons(fixture: Provider, base: str) -> None:
    sampler = anthropic_sampler(base)
    short = {"messages": [{"role": "user", "content": {"type": "text", "text": "Count"}}],
             "maxTokens": 5}
    for stop, expected in (("max_tokens", "maxTokens"), ("stop_sequence", "stopSequence"),
                           ("refusal", "refusal")):
        fixture.answer(claude([{"type": "text", "text": "1, 2"}], stop=stop))
        assert (await sampler(short))["stopReason"] == expected


async def test_anthropic_errors_reach_the_server_as_protocol_errors(
        fixture: Provider, base: str) -> None:
    sampler = anthropic_sampler(base)
    params = {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
              "maxTokens": 10}
    fixture.answer({"type": "error", "error": {"type": "rate_limit_error",
                                               "message": "Number of request tokens has "
                                                          "exceeded your rate limit."}},
                   status=429, **{"retry-after": "30"})
    with pytest.raises(InternalError) as limited:
        await sampler(params)
    assert limited.value.code == INTERNAL_ERROR
    assert "rate limiting" in limited.value.message
    assert "request tokens" not in limited.value.message  # not the provider's own text
    assert limited.value.data == {"provider": "Anthropic", "status": 429,
                                  "type": "rate_limit_error", "retryable": True,
                                  "retryAfter": 30}
    fixture.answer({"type": "error", "error": {"type": "invalid_request_error",
                                               "message": "prompt is too long: 210000 "
                                                          "tokens > 200000 maximum"}},
                   status=400)
    with pytest.raises(InvalidParams, match="prompt is too long") as refused:
        await sampler(params)
    assert refused.value.data["retryable"] is False
    with pytest.raises(InvalidParams, match="cannot take audio"):
        await sampler({"maxTokens": 5, "messages": [{"role": "user", "content": {
            "type": "audio", "data": PNG, "mimeType": "audio/wav"}}]})
    with pytest.raises(InvalidParams, match="image/bmp"):
        await sampler({"maxTokens": 5, "messages": [{"role": "user", "content": {
            "type": "image", "data": PNG, "mimeType": "image/bmp"}}]})
    assert len(fixture.requests) == 2  # refused content never reached the provider


async def test_unreachable_provider_is_a_retryable_internal_error(close_clients: None
                                                                  ) -> None:
    client = anthropic.AsyncAnthropic(api_key="k", base_url="http://127.0.0.1:9",
                                      max_retries=0)
    OPEN.append(client)
    sampler = AnthropicSampler(client, default_model="claude-haiku-4-5")
    with pytest.raises(InternalError, match="could not be reached") as failed:
        await sampler({"maxTokens": 5, "messages": [
            {"role": "user", "content": {"type": "text", "text": "Hi"}}]})
    assert failed.value.data == {"provider": "Anthropic", "retryable": True}


# ----------------------------------------------------------------------------- OpenAI

async def test_openai_request_and_text_answer(fixture: Provider, base: str) -> None:
    fixture.answer(gpt({"content": "A tiny PNG."}, model="gpt-4.1-2025-04-14"))
    result = await openai_sampler(base)(PARAMS)
    assert result == {"role": "assistant", "model": "gpt-4.1-2025-04-14",
                      "content": {"type": "text", "text": "A tiny PNG."},
                      "stopReason": "endTurn"}
    (sent,) = fixture.requests
    assert sent == {
        "model": "gpt-4.1",  # the hint "sonnet" mapped to this provider's equivalent
        "max_completion_tokens": 300, "temperature": 0.2, "stop": ["###"],
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]}],
    }
    assert fixture.headers[0]["authorization"] == "Bearer test-key"


async def test_openai_tools_round_trip(fixture: Provider, base: str) -> None:
    fixture.answer(gpt({"content": None, "tool_calls": [
        {"id": "call_62136354", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        finish="tool_calls"))
    sampler = openai_sampler(base)
    asked = {"messages": [{"role": "user", "content": {"type": "text",
                                                         "text": "Weather in Paris?"}}],
             "maxTokens": 200, "tools": [WEATHER], "toolChoice": {"mode": "auto"},
             "modelPreferences": {"hints": [{"name": "gpt-4o"}]}}
    first = await sampler(asked)
    assert first == {"role": "assistant", "model": "gpt-4o-2024-08-06",
                     "stopReason": "toolUse",
                     "content": [{"type": "tool_use", "id": "call_62136354",
                                  "name": "get_weather", "input": {"city": "Paris"}}]}
    sent = fixture.requests[0]
    assert sent["model"] == "gpt-4o"
    assert sent["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": WEATHER["inputSchema"]}}]
    assert sent["tool_choice"] == "auto"

    fixture.answer(gpt({"content": "Sunny, 21 °C."}))
    second = await sampler({**asked, "messages": [
        *asked["messages"],
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [{"type": "tool_result", "toolUseId": "call_62136354",
                                      "content": [], "structuredContent": {"sky": "sun"}}]}]})
    assert second["content"] == {"type": "text", "text": "Sunny, 21 °C."}
    assert fixture.requests[1]["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_62136354", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_62136354", "content": "{\"sky\":\"sun\"}"}]


async def test_openai_stop_reasons_refusal_and_errors(fixture: Provider, base: str) -> None:
    sampler = openai_sampler(base)
    params = {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
              "maxTokens": 5}
    fixture.answer(gpt({"content": "Hello, how"}, finish="length"))
    assert (await sampler(params))["stopReason"] == "maxTokens"
    fixture.answer(gpt({"content": None, "refusal": "I can't help with that."}))
    refused = await sampler(params)
    assert refused["content"] == {"type": "text", "text": "I can't help with that."}
    assert refused["stopReason"] == "refusal"
    fixture.answer({"error": {"message": "Invalid 'messages[0].content': string too long.",
                              "type": "invalid_request_error", "param": "messages",
                              "code": "string_above_max_length"}}, status=400)
    with pytest.raises(InvalidParams, match="string too long") as bad:
        await sampler(params)
    assert bad.value.code == INVALID_PARAMS
    assert bad.value.data["type"] == "invalid_request_error"
    fixture.answer({"error": {"message": "Incorrect API key provided: test-key.",
                              "type": "invalid_request_error", "param": None,
                              "code": "invalid_api_key"}}, status=401)
    with pytest.raises(InternalError, match="credentials") as denied:
        await sampler(params)
    assert "test-key" not in denied.value.message
    assert denied.value.data["retryable"] is False
    audio = {"maxTokens": 5, "messages": [{"role": "user", "content": {
        "type": "audio", "data": PNG, "mimeType": "audio/wav"}}]}
    fixture.answer(gpt({"content": "A beep."}, model="gpt-4o-audio-preview"))
    await sampler(audio)
    assert fixture.requests[-1]["messages"][0]["content"] == [
        {"type": "input_audio", "input_audio": {"data": PNG, "format": "wav"}}]
    with pytest.raises(InvalidParams, match="images in a tool result"):
        await sampler({"maxTokens": 5, "tools": [WEATHER], "messages": [
            {"role": "user", "content": {"type": "text", "text": "Go"}},
            {"role": "assistant", "content": {"type": "tool_use", "id": "c", "name": "w",
                                              "input": {}}},
            {"role": "user", "content": {"type": "tool_result", "toolUseId": "c",
                                         "content": [{"type": "image", "data": PNG,
                                                      "mimeType": "image/png"}]}}]})


# ------------------------------------------------------------------------- end to end

def weather_server() -> Server:
    server = Server("weather")

    @server.tool
    async def forecast(ctx: Context, city: str) -> str:
        """Ask the client's model, which may call get_weather once."""
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": {"type": "text", "text": f"Weather in {city}?"}}]
        prefs = {"hints": [{"name": "sonnet"}], "costPriority": 0.3}
        reply = await ctx.sample(messages, max_tokens=200, system_prompt="Be brief.",
                                 model_preferences=prefs, tools=[WEATHER])
        while reply.get("stopReason") == "toolUse":
            uses = [b for b in reply["content"] if b["type"] == "tool_use"]
            messages += [{"role": "assistant", "content": reply["content"]},
                         {"role": "user", "content": [
                             {"type": "tool_result", "toolUseId": u["id"],
                              "content": [{"type": "text", "text": "sunny, 21"}]}
                             for u in uses]}]
            reply = await ctx.sample(messages, max_tokens=200, system_prompt="Be brief.",
                                     model_preferences=prefs, tools=[WEATHER])
        return f"{reply['model']}: {reply['content']['text']}"

    return server


@pytest.mark.parametrize("mode", ERAS)
async def test_server_sampling_through_anthropic(fixture: Provider, base: str,
                                                 mode: Any) -> None:
    fixture.answer(claude([{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                            "input": {"city": "Oslo"}}], stop="tool_use"))
    fixture.answer(claude([{"type": "text", "text": "Sunny."}]))
    async with connect(weather_server(), mode=mode, sampling=anthropic_sampler(base),
                       sampling_tools=True) as client:
        result = await client.call_tool("forecast", {"city": "Oslo"})
    assert result.text == "claude-sonnet-4-5-20250929: Sunny."
    assert [r["model"] for r in fixture.requests] == ["claude-sonnet-4-5"] * 2
    assert fixture.requests[0]["system"] == "Be brief."
    assert fixture.requests[1]["messages"][-1]["content"][0]["tool_use_id"] == "toolu_1"


@pytest.mark.parametrize("mode", ERAS)
async def test_server_sampling_through_openai(fixture: Provider, base: str,
                                              mode: Any) -> None:
    fixture.answer(gpt({"content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        finish="tool_calls"))
    fixture.answer(gpt({"content": "Sunny."}))
    async with connect(weather_server(), mode=mode, sampling=openai_sampler(base),
                       sampling_tools=True) as client:
        result = await client.call_tool("forecast", {"city": "Oslo"})
    assert result.text == "gpt-4o-2024-08-06: Sunny."
    assert [r["model"] for r in fixture.requests] == ["gpt-4.1"] * 2
    assert fixture.requests[1]["messages"][-1] == {
        "role": "tool", "tool_call_id": "call_1", "content": "sunny, 21"}


@pytest.mark.parametrize("mode", ERAS)
async def test_provider_failure_is_the_error_the_server_sees(fixture: Provider, base: str,
                                                             mode: Any) -> None:
    server = Server("asker")
    seen: list[RemoteError] = []

    @server.tool
    async def ask(ctx: Context) -> str:
        """Sample once; report what failed."""
        try:
            await ctx.sample("Hi", max_tokens=10)
        except RemoteError as exc:
            seen.append(exc)
            return f"{exc.code} {exc.data['status']}"
        return "answered"

    fixture.answer({"type": "error", "error": {"type": "overloaded_error",
                                               "message": "Overloaded"}}, status=529)
    async with connect(server, mode=mode, sampling=anthropic_sampler(base)) as client:
        if mode == "stateful":  # the error answers the server's request
            assert (await client.call_tool("ask", {})).text == "-32603 529"
            assert "retry later" in seen[0].message
        else:  # an input response carries results only: the client's call fails
            with pytest.raises(InternalError, match="retry later"):
                await client.call_tool("ask", {})


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_default_client_from_the_environment(
        fixture: Provider, base: str, provider: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``client=``, the sampler makes the SDK's default client on first use (its
    key and address from the environment) and closes it on ``aclose``."""
    sampler: AnthropicSampler | OpenAISampler
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base)
        sampler = AnthropicSampler(default_model="claude-haiku-4-5")
        fixture.answer(claude([{"type": "text", "text": "hi"}]))
    else:
        monkeypatch.setenv("OPENAI_API_KEY", "env-key")
        monkeypatch.setenv("OPENAI_BASE_URL", f"{base}/v1")
        sampler = OpenAISampler(default_model="gpt-4o-mini")
        fixture.answer(gpt({"content": "hi"}))
    assert sampler.client is None
    result = await sampler({"maxTokens": 5, "messages": [
        {"role": "user", "content": {"type": "text", "text": "Hi"}}]})
    assert result["content"] == {"type": "text", "text": "hi"}
    assert fixture.headers[0]["authorization"] == "Bearer env-key"
    assert sampler.owns_client
    await sampler.aclose()
    assert sampler.client is None and not sampler.owns_client


def test_importing_the_samplers_loads_no_sdk() -> None:
    code = ("import sys, mcpkit, mcpkit.client.sampling; "
            "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=30)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_tool_result_content_as_the_providers_take_it() -> None:
    from mcpkit.client.sampling.common import tool_result_text

    block = {"type": "tool_result", "toolUseId": "t", "content": [
        {"type": "text", "text": "a"},
        {"type": "resource_link", "uri": "file:///x.txt", "name": "x"},
        {"type": "resource", "resource": {"uri": "file:///y.txt", "text": "y"}}]}
    assert tool_result_text(block, "P") == [
        {"type": "text", "text": "a"}, {"type": "text", "text": "Resource link: file:///x.txt"},
        {"type": "text", "text": "y"}]
    blob = {"type": "tool_result", "toolUseId": "t", "content": [
        {"type": "resource", "resource": {"uri": "file:///z.bin", "blob": "AA=="}}]}
    with pytest.raises(InvalidParams, match="'resource' content in a tool result"):
        tool_result_text(blob, "P")
