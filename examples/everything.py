"""The "everything" server: every feature the official MCP conformance suite exercises,
plus ``echo``, ``add`` and ``sleep``.

    python examples/everything.py                        # serve on stdio
    python examples/everything.py --http --port 3001     # Streamable HTTP at /mcp
    python examples/everything.py --http --sqlite s.db   # ... resumable across restarts
    python examples/everything.py --http --port 3001 --redis redis://127.0.0.1:6379/0
        # one of several instances sharing all state on Redis (behind any balancer)
    python examples/everything.py --http --drain 3 --log-level INFO
        # requests in flight get 3 s on SIGTERM (default 10); the drain's log lines shown
"""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio

from mcpkit import (
    Audio,
    Context,
    EmbeddedResource,
    Image,
    InternalError,
    Schema,
    Server,
    ToolError,
)


def _png_1x1() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    pixel = zlib.compress(b"\x00\xff\x00\x00\xff")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixel) + chunk(
        b"IEND", b""
    )


def _wav_silence() -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 800)
    return buf.getvalue()


PNG = _png_1x1()
WAV = _wav_silence()
PNG_B64 = base64.b64encode(PNG).decode()

JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

watched = {"content": "Watched resource content, version 0"}


@asynccontextmanager
async def lifespan(server: Server) -> AsyncIterator[None]:
    """Update test://watched-resource every 3 seconds while the server runs."""

    async def update() -> None:
        version = 0
        while True:
            await anyio.sleep(3)
            version += 1
            watched["content"] = f"Watched resource content, version {version}"
            server.notify_resource_updated("test://watched-resource")

    async with anyio.create_task_group() as tg:
        tg.start_soon(update)
        yield
        tg.cancel_scope.cancel()


server = Server(
    "mcpkit-everything",
    "0.1.0",
    title="mcpkit everything server",
    instructions="A test server exposing every MCP feature; tools are prefixed test_.",
    lifespan=lifespan,
)


# ---------------------------------------------------------------- simple tools


@server.tool
async def echo(text: str) -> str:
    """Echo the text back unchanged. Use to check the connection works."""
    return text


@server.tool(annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False})
async def add(a: int, b: int) -> int:
    """Add two integers and return their sum.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@server.tool
async def sleep(seconds: float, ctx: Context) -> str:
    """Wait for the given number of seconds (cancellable), reporting progress each second."""
    if seconds < 0 or seconds > 3600:
        raise ToolError("seconds must be between 0 and 3600; pass a smaller value.")
    waited = 0.0
    while waited < seconds:
        step = min(1.0, seconds - waited)
        await anyio.sleep(step)
        waited += step
        await ctx.report_progress(waited, seconds)
    return f"Slept {seconds} seconds."


@server.tool
async def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@server.tool
async def test_image_content() -> Image:
    """Returns an image (PNG)."""
    return Image(PNG, "image/png")


@server.tool
async def test_audio_content() -> Audio:
    """Returns audio (WAV)."""
    return Audio(WAV, "audio/wav")


@server.tool
async def test_embedded_resource() -> EmbeddedResource:
    """Returns an embedded text resource."""
    return EmbeddedResource(
        "test://embedded-resource", text="This is an embedded resource content.",
        mime_type="text/plain",
    )


@server.tool
async def test_multiple_content_types() -> list[Any]:
    """Returns text, an image and an embedded resource in one result."""
    return [
        "Multiple content types test:",
        Image(PNG, "image/png"),
        EmbeddedResource(
            "test://mixed-content-resource",
            text='{"test":"data","value":123}',
            mime_type="application/json",
        ),
    ]


@server.tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Emits three info log messages while it runs."""
    await ctx.info("Tool execution started")
    await anyio.sleep(0.05)
    await ctx.info("Tool processing data")
    await anyio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100 on the request's progress token."""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await anyio.sleep(0.05)
    return str(ctx.progress_token)


@server.tool
async def test_error_handling() -> str:
    """Always fails with an error result (isError: true), to test error handling."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's LLM to answer the prompt (sampling/createMessage).

    Args:
        prompt: The prompt to send to the LLM.
    """
    result = await ctx.sample(prompt, max_tokens=100)
    content = result.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return f"LLM response: {text if text is not None else content}"


@server.tool
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a response (elicitation/create, form mode).

    Args:
        message: The message to show the user.
    """
    answer = await ctx.elicit(
        message,
        {
            "type": "object",
            "properties": {"response": {"type": "string", "description": "User's response"}},
            "required": ["response"],
        },
    )
    return f"User response: action={answer.action}, content={answer.content or {}}"


@server.tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicitation whose schema has defaults for every primitive type (SEP-1034)."""
    answer = await ctx.elicit(
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {
                    "type": "boolean",
                    "description": "Verification status",
                    "default": True,
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={answer.action}, content={answer.content or {}}"


@server.tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicitation with the five enum schema variants (SEP-1330)."""
    answer = await ctx.elicit(
        "Please select options from the enum fields",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Select one option",
                    "enum": ["option1", "option2", "option3"],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Select one option with titles",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Select multiple options",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Select multiple options with titles",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={answer.action}, content={answer.content or {}}"


async def json_schema_2020_12_tool(**arguments: Any) -> str:
    return f"JSON Schema 2020-12 tool called with: {arguments}"


server.add_tool(
    json_schema_2020_12_tool,
    description="Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    input_schema=JSON_SCHEMA_2020_12,
)


# ---------------------------------------------------------------- 2026-07-28 (stateless)
# The same handler code serves both eras: under 2025-11-25 ctx.elicit/sample/list_roots
# are requests on the session; under 2026-07-28 they become an InputRequiredResult and the
# tool runs again when the client retries with the answers (in a sealed requestState).

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}},
               "required": ["name"]}
OK_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


async def test_custom_header(region: str) -> str:
    return f"Region: {region}"


# `x-mcp-header` mirrors the argument into an `Mcp-Param-Region` header on 2026-07-28 HTTP
# requests; the server rejects a request whose header is missing, malformed (bad
# `=?base64?...?=`) or different from the argument with -32020 (HTTP 400).
server.add_tool(
    test_custom_header,
    description="Echoes a region passed both as an argument and as the Mcp-Param-Region "
                "header (SEP-2243 custom headers)",
    input_schema={
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    },
)


def _text_of(result: dict[str, Any]) -> str:
    content = result.get("content")
    return content.get("text", "") if isinstance(content, dict) else ""


@server.tool
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability (-32021 without it, in 2026-07-28)."""
    ctx.require_capability("sampling")
    return "Success"


@server.tool
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name (MRTR elicitation)."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


@server.tool
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's LLM a question (MRTR sampling)."""
    result = await ctx.sample("What is the capital of France?", max_tokens=100,
                              key="capital_question")
    return f"Sampling result: {_text_of(result) or 'no response'}"


@server.tool
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Lists the client's roots (MRTR roots/list)."""
    roots = await ctx.list_roots(key="roots_request")
    return f"Found {len(roots)} root(s)"


@server.tool
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks for a confirmation; the answer travels back in the sealed requestState."""
    answer = await ctx.elicit("Please confirm", OK_SCHEMA, key="confirm")
    ok = (answer.content or {}).get("ok") is True
    return "state-ok: requestState validated" if ok else "state-ok: not confirmed"


@server.tool
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Asks for a name, an LLM greeting and the roots in one round."""
    got = await ctx.request_inputs({
        "user_name": ("elicitation/create", {"mode": "form", "message": "What is your name?",
                                             "requestedSchema": NAME_SCHEMA}),
        "greeting": ("sampling/createMessage", {"messages": [{"role": "user", "content": {
            "type": "text", "text": "Generate a greeting"}}], "maxTokens": 50}),
        "client_roots": ("roots/list", {}),
    })
    name = (got["user_name"].get("content") or {}).get("name", "stranger")
    roots = got["client_roots"].get("roots") or []
    return f"Name: {name}; Greeting: {_text_of(got['greeting']) or 'Hello there!'}; " \
        f"Roots: {len(roots)}"


@server.tool
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Two rounds: a name, then a favourite colour."""
    first = await ctx.elicit("Step 1: What is your name?", NAME_SCHEMA, key="step1")
    second = await ctx.elicit(
        "Step 2: What is your favorite color?",
        {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
        key="step2",
    )
    name = (first.content or {}).get("name", "friend")
    return f"Multi-round complete for {name} who likes {(second.content or {}).get('color')}"


@server.tool
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Asks for a confirmation; a tampered requestState is refused with -32602."""
    await ctx.elicit("Please confirm", OK_SCHEMA, key="confirm")
    return "integrity-ok: state verified"


@server.tool
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only for the kinds of input this request's client capabilities allow."""
    caps = ctx.client_capabilities
    wanted: dict[str, tuple[str, dict[str, Any] | None]] = {}
    if "elicitation" in caps:
        wanted["elicit_input"] = ("elicitation/create", {
            "mode": "form", "message": "Elicitation input", "requestedSchema": {
                "type": "object", "properties": {"value": {"type": "string"}},
                "required": ["value"]}})
    if "sampling" in caps:
        wanted["sample_input"] = ("sampling/createMessage", {"messages": [{
            "role": "user", "content": {"type": "text", "text": "Sample request"}}],
            "maxTokens": 50})
    if not wanted:
        return "No supported capabilities declared"
    got = await ctx.request_inputs(wanted)
    return f"capabilities-ok: received {','.join(got)}"


@server.tool
async def test_streaming_elicitation(ctx: Context) -> str:
    """Streams a progress notification, then answers (never a request on the stream)."""
    await ctx.report_progress(50, 100, "halfway")
    return "Streaming complete"


@server.tool
async def test_logging_tool(ctx: Context) -> str:
    """Logs only when the request asked for logs (2026-07-28: _meta logLevel)."""
    await ctx.info("Diagnostic trace logging activated")
    return "Logging evaluated"


@server.tool
async def test_trigger_tool_change() -> str:
    """Announces a change of the tool list (to listen streams and sessions)."""
    server.notify_list_changed("tools")
    return "Mutation triggered"


@server.tool
async def test_trigger_prompt_change() -> str:
    """Announces a change of the prompt list (to listen streams and sessions)."""
    server.notify_list_changed("prompts")
    return "Mutation triggered"


# ---------------------------------------------------------------- resources

server.add_resource(
    "This is the content of the static text resource.",
    "test://static-text",
    name="static-text",
    title="Static Text Resource",
    description="A static text resource for testing",
    mime_type="text/plain",
)
server.add_resource(
    PNG,
    "test://static-binary",
    name="static-binary",
    title="Static Binary Resource",
    description="A static binary resource (image) for testing",
    mime_type="image/png",
)


@server.resource(
    "test://template/{id}/data",
    name="template",
    title="Resource Template",
    description="A resource template with parameter substitution",
    mime_type="application/json",
)
async def template_data(id: str) -> dict[str, Any]:
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


@server.resource(
    "test://watched-resource",
    name="watched-resource",
    title="Watched Resource",
    description="A resource that auto-updates every 3 seconds",
    mime_type="text/plain",
)
async def watched_resource() -> str:
    return watched["content"]


# ---------------------------------------------------------------- prompts


# ---------------------------------------------------------------------- tasks
# The fixtures of the tasks-* conformance scenarios (the io.modelcontextprotocol/tasks
# extension, 2026-07-28) that also run as 2025-11-25 in-core tasks (docs/tasks.md).

CONFIRM_SCHEMA = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
                  "required": ["confirm"]}


@server.tool
async def greet(name: str) -> str:
    """Greets by name, at once (never a task)."""
    return f"Hello, {name}!"


@server.tool(task="optional")
async def slow_compute(seconds: float, ctx: Context, label: str = "") -> str:
    """Works for ``seconds`` seconds (reporting progress), then answers; as a task when
    the client can take one."""
    steps = max(1, min(int(seconds * 4), 1000))
    for step in range(steps):
        await anyio.sleep(seconds / steps)
        await ctx.report_progress(step + 1, steps)
    return f"Computed {label or 'result'} in {seconds:g}s"


@server.tool(task="required")
async def failing_job() -> str:
    """Runs as a task and fails like a tool does after about a second (an isError
    result: completed in the extension, failed in 2025-11-25)."""
    await anyio.sleep(1.0)
    raise ToolError("The job failed: the input data was rejected. Fix the data and retry.")


@server.tool(task="optional")
async def protocol_error_job() -> str:
    """Ends with a JSON-RPC error instead of a result (the task ends failed)."""
    await anyio.sleep(0.1)
    raise InternalError("Internal error: the job's worker crashed; retry later.")


@server.tool(task="optional")
async def confirm_delete(
    # (Schema, not pydantic's Field: the same keywords without loading pydantic; an
    # ASCII class and maxLength, not Unicode \w{1,100}, which a regex engine may compile
    # into a large automaton)
    filename: Annotated[str, Schema(pattern=r"^[A-Za-z0-9_.-]+$", maxLength=100,
                                    description="A file name, without a directory.")],
    ctx: Context,
) -> str:
    """Asks the user to confirm, then 'deletes' ``filename``."""
    answer = await ctx.elicit(f"Delete {filename}?", CONFIRM_SCHEMA, key="confirm")
    if answer.action == "accept" and (answer.content or {}).get("confirm"):
        return f"Deleted {filename}"
    return f"Kept {filename}"


@server.tool(task="optional")
async def multi_input(ctx: Context) -> str:
    """Asks for a name and a confirmation at the same time (two inputs pending)."""
    answers = await ctx.request_inputs({
        "name": ("elicitation/create", {"mode": "form", "message": "Your name?",
                                        "requestedSchema": NAME_SCHEMA}),
        "confirm": ("elicitation/create", {"mode": "form", "message": "Go ahead?",
                                           "requestedSchema": CONFIRM_SCHEMA}),
    })
    name = (answers["name"].get("content") or {}).get("name", "stranger")
    ok = (answers["confirm"].get("content") or {}).get("confirm", False)
    return f"{name} {'confirmed' if ok else 'declined'}"


@server.tool(task="required", task_start="explicit")
async def test_tool_with_task(ctx: Context) -> str:
    """Asks the user's name the plain way (MRTR), then goes on as a task."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    await ctx.start_task()
    await anyio.sleep(0.2)
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}, from a task!"


@server.prompt(title="Simple Prompt")
async def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt(title="Prompt With Arguments")
async def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with required arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(title="Prompt With Embedded Resource")
async def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
    """A prompt that includes an embedded resource.

    Args:
        resourceUri: URI of the resource to embed.
    """
    return [
        EmbeddedResource(resourceUri, text="Embedded resource content for testing.",
                         mime_type="text/plain"),
        "Please process the embedded resource above.",
    ]


@server.prompt(title="Prompt With Image")
async def test_prompt_with_image() -> list[Any]:
    """A prompt that includes image content."""
    return [Image(PNG, "image/png"), "Please analyze the image above."]


@server.prompt(title="Prompt needing input")
async def test_input_required_result_prompt(ctx: Context) -> str:
    """Asks the user for context before rendering (MRTR in prompts/get)."""
    answer = await ctx.elicit(
        "What context should the prompt use?",
        {"type": "object", "properties": {"context": {"type": "string"}},
         "required": ["context"]},
        key="user_context",
    )
    return f"Prompt with context: {(answer.content or {}).get('context', '')}"


@server.completion(prompt="test_prompt_with_arguments", argument="arg1")
def complete_arg1(value: str, context: dict[str, str]) -> list[str]:
    return [v for v in ("alpha", "beta", "gamma", "paramValue1") if v.startswith(value)]


@server.completion(prompt="test_prompt_with_arguments", argument="arg2")
def complete_arg2(value: str, context: dict[str, str]) -> list[str]:
    return [v for v in ("one", "two", "three", "paramValue2") if v.startswith(value)]


@server.completion(resource_template="test://template/{id}/data", argument="id")
def complete_id(value: str, context: dict[str, str]) -> list[str]:
    return [v for v in ("1", "2", "3", "42") if v.startswith(value)]


if __name__ == "__main__":
    import sys

    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 3001
        options: dict[str, Any] = {}
        if "--sqlite" in sys.argv:  # sessions and SSE events survive a restart
            from mcpkit.storage import SQLiteEventStore, SQLiteSessionStore

            path = sys.argv[sys.argv.index("--sqlite") + 1]
            options["event_store"] = SQLiteEventStore(path)
            options["session_store"] = SQLiteSessionStore(path)
            from mcpkit.storage import SQLiteTaskStore

            server.tasks.store = SQLiteTaskStore(path)  # finished tasks survive it too
        if "--redis" in sys.argv:  # one of several instances sharing all state on Redis
            options["store"] = sys.argv[sys.argv.index("--redis") + 1]
        if "--drain" in sys.argv:  # seconds requests in flight get on SIGTERM
            options["drain"] = float(sys.argv[sys.argv.index("--drain") + 1])
        if "--log-level" in sys.argv:
            options["log_level"] = sys.argv[sys.argv.index("--log-level") + 1]
        server.run("http", port=port, **options)
    else:
        server.run()
