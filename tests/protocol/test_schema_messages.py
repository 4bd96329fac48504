"""Every message the server Connection writes validates against the official schema.

A client and a server are wired back to back (no event loop) for each stateful revision
and taken through the kinds of exchanges of ``test_connection.py``: handshake, ping,
listing and calling tools, prompts, resources, completion, progress, logging,
cancellation, server->client requests, list-change notifications, every kind of error,
and (2025-03-26) batches. Everything the server writes is recorded, then each message is
validated against the official schema of the negotiated revision (the copy mcpkit
ships, ``mcpkit/check/data/schema/<negotiated>.schema.json``): the JSON-RPC
envelope definition, plus the MCP definition picked by method (``InitializeResult`` for
an ``initialize`` response, ``ProgressNotification``, ``LoggingMessageNotification``, ...).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema
import orjson
import pytest

from mcpkit.protocol.connection import Connection, SessionReady, SessionStarted
from mcpkit.protocol.errors import InvalidParams, ResourceNotFound
from mcpkit.protocol.lifecycle import Role
from mcpkit.protocol.versions import (
    STATEFUL_VERSIONS,
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
)
from tests.support.schemas import SCHEMA_DIR

# ---------------------------------------------------------------------------- schema access


@functools.cache
def _schema(version: str) -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / f"{version}.schema.json").read_text())


def _defs_key(version: str) -> str:
    # 2024-11-05 … 2025-06-18 use draft-07 `definitions`; 2025-11-25 uses `$defs`.
    return "$defs" if "$defs" in _schema(version) else "definitions"


def has_def(version: str, name: str) -> bool:
    return name in _schema(version)[_defs_key(version)]


@functools.cache
def _validator(version: str, name: str) -> Any:
    schema = _schema(version)
    key = _defs_key(version)
    assert name in schema[key], f"{name} is not defined in the {version} schema"
    wrapper: dict[str, Any] = {"$ref": f"#/{key}/{name}", key: schema[key]}
    if "$schema" in schema:
        wrapper["$schema"] = schema["$schema"]
    return jsonschema.validators.validator_for(schema)(wrapper)


@functools.cache
def _error_validator_without_id(version: str) -> Any:
    """The error-response definition with ``id`` neither required nor described."""
    schema = _schema(version)
    key = _defs_key(version)
    name = "JSONRPCErrorResponse" if has_def(version, "JSONRPCErrorResponse") else "JSONRPCError"
    base = dict(schema[key][name])
    base["required"] = [r for r in base["required"] if r != "id"]
    base["properties"] = {k: v for k, v in base["properties"].items() if k != "id"}
    wrapper: dict[str, Any] = {**base, key: schema[key]}
    if "$schema" in schema:
        wrapper["$schema"] = schema["$schema"]
    return jsonschema.validators.validator_for(schema)(wrapper)


def schema_errors(version: str, name: str, instance: Any) -> list[str]:
    return [
        f"{name}: {'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in _validator(version, name).iter_errors(instance)
    ]


# ---------------------------------------------------------------------------- definitions

RESULT_DEFS = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "resources/subscribe": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "completion/complete": "CompleteResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
}
NOTIFICATION_DEFS = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/cancelled": "CancelledNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
}
REQUEST_DEFS = {
    "ping": "PingRequest",
    "roots/list": "ListRootsRequest",
    "sampling/createMessage": "CreateMessageRequest",
    "elicitation/create": "ElicitRequest",
}


def validate_message(version: str, msg: Any, answered: dict[Any, str]) -> list[str]:
    """Schema problems of one server->client message (``answered``: request id -> method)."""
    problems: list[str] = []
    if "error" in msg:
        if msg.get("id") is None:
            # The request id could not be read (parse error, bad id, oversized line, bad
            # batch): JSON-RPC 2.0 §5 says to answer with `"id": null`, and mcpkit does.
            # - 2025-11-25: `JSONRPCErrorResponse.id` is optional (it may be omitted when
            #   unreadable) and `RequestId` is string|integer, so mcpkit omits it there.
            # - 2024-11-05 … 2025-06-18: `JSONRPCError.id` is a required `RequestId`; those
            #   schemas have no way to express an unreadable id at all. This is the one
            #   deliberate exception: we validate everything but `id` (same as above) and
            #   assert that `id` is present and null, as JSON-RPC 2.0 requires.
            # (Before initialize no revision is known yet, so even a 2025-11-25 session
            # answers such a message with a null id.)
            assert msg.get("id") is None, msg
            stripped = {k: v for k, v in msg.items() if k != "id"}
            problems += [
                f"error(id null): {e.message}"
                for e in _error_validator_without_id(version).iter_errors(stripped)
            ]
            return problems
        name = (
            "JSONRPCErrorResponse" if has_def(version, "JSONRPCErrorResponse") else ("JSONRPCError")
        )
        problems += schema_errors(version, name, msg)
        problems += schema_errors(version, "JSONRPCMessage", msg)
        return problems
    if "result" in msg:
        name = (
            "JSONRPCResultResponse"
            if has_def(version, "JSONRPCResultResponse")
            else ("JSONRPCResponse")
        )
        problems += schema_errors(version, name, msg)
        problems += schema_errors(version, "JSONRPCMessage", msg)
        method = answered[msg["id"]]
        problems += schema_errors(version, RESULT_DEFS[method], msg["result"])
        return problems
    if "id" in msg:
        problems += schema_errors(version, "JSONRPCRequest", msg)
        problems += schema_errors(version, "JSONRPCMessage", msg)
        problems += schema_errors(version, "ServerRequest", msg)
        problems += schema_errors(version, REQUEST_DEFS[msg["method"]], msg)
        return problems
    problems += schema_errors(version, "JSONRPCNotification", msg)
    problems += schema_errors(version, "JSONRPCMessage", msg)
    problems += schema_errors(version, "ServerNotification", msg)
    problems += schema_errors(version, NOTIFICATION_DEFS[msg["method"]], msg)
    return problems


def validate_output(version: str, line: Any, answered: dict[Any, str]) -> list[str]:
    """Schema problems of one line the server wrote: a message, or a batch answer."""
    if isinstance(line, list):
        assert version == V2025_03_26, "batch answers exist only in 2025-03-26"
        assert line, "a batch answer is never empty"
        problems: list[str] = []
        for item in line:
            problems += validate_message(version, item, answered)
        if all(item.get("id") is not None for item in line):
            problems += schema_errors(version, "JSONRPCBatchResponse", line)
            problems += schema_errors(version, "JSONRPCMessage", line)
        return problems
    return validate_message(version, line, answered)


# ---------------------------------------------------------------------------- fixtures

CLIENT_INFO = {"name": "schema-client", "version": "1.0.0"}
SERVER_INFO = {
    "name": "schema-server",
    "version": "3.1.4",
    "title": "Schema Server",
    "description": "Writes every kind of message",
    "websiteUrl": "https://example.com",
    "icons": [{"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"]}],
}
SERVER_CAPS: dict[str, Any] = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "logging": {},
    "completions": {},
    "experimental": {"com.example/feature": {}},
    "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
}
CLIENT_CAPS: dict[str, Any] = {
    "roots": {"listChanged": True},
    "sampling": {},
    "elicitation": {},
}
ICONS = [{"src": "https://example.com/t.png", "mimeType": "image/png"}]
TOOL = {
    "name": "get_weather",
    "title": "Get weather",
    "description": "Forecast for a city.",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    "outputSchema": {"type": "object", "properties": {"temp": {"type": "number"}}},
    "annotations": {"title": "Weather", "readOnlyHint": True, "openWorldHint": True},
    "icons": ICONS,
    "execution": {"taskSupport": "optional"},
    "_meta": {"com.example/owner": "weather"},
}
TEXT = {"type": "text", "text": "Sunny, 21°C"}
IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
AUDIO = {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
LINK = {"type": "resource_link", "uri": "file:///r.txt", "name": "r", "mimeType": "text/plain"}
EMBEDDED = {
    "type": "resource",
    "resource": {"uri": "file:///r.txt", "mimeType": "text/plain", "text": "r", "_meta": {"k": 1}},
}
PROMPT = {
    "name": "greet",
    "title": "Greet",
    "description": "Say hello",
    "arguments": [{"name": "who", "title": "Who", "description": "Name", "required": True}],
    "icons": ICONS,
    "_meta": {"com.example/k": 1},
}
RESOURCE = {
    "uri": "file:///r.txt",
    "name": "r",
    "title": "R",
    "description": "A resource",
    "mimeType": "text/plain",
    "icons": ICONS,
    "annotations": {"audience": ["user"], "priority": 0.5},
    "_meta": {"com.example/k": 1},
}
TEMPLATE = {
    "uriTemplate": "file:///{name}",
    "name": "files",
    "title": "Files",
    "mimeType": "text/plain",
    "icons": ICONS,
    "_meta": {"com.example/k": 1},
}


class Recorder:
    """A client and a server back to back; records every line the server writes."""

    def __init__(self, version: str, *, max_message_size: int = 4096) -> None:
        self.version = version
        self.client = Connection(Role.CLIENT, info=CLIENT_INFO, capabilities=CLIENT_CAPS)
        self.server = Connection(
            Role.SERVER,
            info=SERVER_INFO,
            capabilities=SERVER_CAPS,
            instructions="Use get_weather for forecasts.",
            max_message_size=max_message_size,
        )
        self.out: list[Any] = []  # every line the server wrote, decoded
        self.answered: dict[Any, str] = {}  # ids of requests to the server -> method

    def to_server(self) -> list[Any]:
        return self.server.receive_data(self.client.data_to_send())

    def to_client(self) -> list[Any]:
        data = self.server.data_to_send()
        if data:
            assert data.endswith(b"\n")
            self.out += [orjson.loads(x) for x in data[:-1].split(b"\n")]
        return self.client.receive_data(data)

    def raw(self, data: bytes | Any) -> list[Any]:
        """A misbehaving client writes ``data`` (bytes as is, else one JSON line)."""
        if not isinstance(data, bytes):
            data = orjson.dumps(data) + b"\n"
        events = self.server.receive_data(data)
        self.to_client()
        return events

    def handshake(self) -> None:
        rid = self.client.start_handshake(self.version)
        self.answered[rid] = "initialize"
        assert [type(e) for e in self.to_server()] == [SessionStarted]
        assert [type(e) for e in self.to_client()] == [SessionStarted]
        assert self.to_server() == [SessionReady()]

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        rid = self.client.send_request(method, params)
        self.answered[rid] = method
        self.to_server()
        return rid

    def answer(self, method: str, value: dict[str, Any], params: Any = None) -> None:
        rid = self.call(method, params if params is not None else {})
        assert self.server.send_result(rid, value) is True
        self.to_client()


def record_exchanges(version: str) -> Recorder:
    """Drive one session through every kind of exchange; return what the server wrote."""
    rec = Recorder(version)
    server, client = rec.server, rec.client

    # Before the handshake: a premature request, a ping, a parse error.
    rec.answered["early"] = "tools/list"
    rec.raw({"jsonrpc": "2.0", "id": "early", "method": "tools/list"})
    rec.answered["early-ping"] = "ping"
    rec.raw({"jsonrpc": "2.0", "id": "early-ping", "method": "ping"})
    rec.raw(b"{not json\n")

    rec.handshake()

    # Results of every client->server method, as built in the newest shape.
    rec.call("ping")  # answered by the connection itself
    rec.to_client()
    rec.answer("tools/list", {"tools": [TOOL], "nextCursor": "page-2"})
    rec.answer(
        "tools/call",
        {
            "content": [TEXT, IMAGE, AUDIO, LINK, EMBEDDED],
            "structuredContent": {"temp": 21},
            "isError": False,
        },
        {"name": "get_weather", "arguments": {"city": "Paris"}},
    )
    rec.answer(
        "tools/call",
        {"content": [{"type": "text", "text": "city not found"}], "isError": True},
        {"name": "get_weather", "arguments": {"city": "Atlantis"}},
    )
    rec.answer("prompts/list", {"prompts": [PROMPT]})
    rec.answer(
        "prompts/get",
        {
            "description": "Greeting",
            "messages": [
                {"role": "user", "content": TEXT},
                {"role": "assistant", "content": AUDIO},
                {"role": "user", "content": LINK},
                {"role": "user", "content": EMBEDDED},
            ],
        },
        {"name": "greet", "arguments": {"who": "Ada"}},
    )
    rec.answer("resources/list", {"resources": [RESOURCE]})
    rec.answer("resources/templates/list", {"resourceTemplates": [TEMPLATE]})
    rec.answer(
        "resources/read",
        {
            "contents": [
                {"uri": "file:///r.txt", "mimeType": "text/plain", "text": "r", "_meta": {"k": 1}},
                {"uri": "file:///b.bin", "blob": "AAEC"},
            ]
        },
        {"uri": "file:///r.txt"},
    )
    rec.answer("resources/subscribe", {}, {"uri": "file:///r.txt"})
    rec.answer(
        "completion/complete",
        {"completion": {"values": ["Ada", "Alan"], "total": 2, "hasMore": False}},
        {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "A"}},
    )

    # Error answers sent by the application.
    rid = rec.call("resources/read", {"uri": "file:///missing"})
    server.send_error(rid, ResourceNotFound("Resource not found", {"uri": "file:///missing"}))
    rec.to_client()
    rid = rec.call("tools/call", {"name": "nope"})
    server.send_error(rid, InvalidParams("Unknown tool: nope"))
    rec.to_client()

    # Progress, then the result; progress after it is dropped.
    rid = rec.call("tools/call", {"name": "slow", "_meta": {"progressToken": "p1"}})
    assert server.send_progress(rid, 1, 3, "one of three") is True
    assert server.send_progress(rid, 2.5) is True
    assert server.send_result(rid, {"content": [TEXT]}) is True
    rec.to_client()
    rid = rec.call("tools/call", {"name": "slow", "_meta": {"progressToken": 42}})
    assert server.send_progress(rid, 10, None, "ten") is True
    server.send_result(rid, {"content": []})
    rec.to_client()

    # Logging: a bad level, a good level, messages above and below it.
    rec.answered["bad-level"] = "logging/setLevel"
    rec.raw(
        {
            "jsonrpc": "2.0",
            "id": "bad-level",
            "method": "logging/setLevel",
            "params": {"level": "loud"},
        }
    )
    rec.call("logging/setLevel", {"level": "info"})
    rec.to_client()
    assert server.send_log("debug", "filtered") is False
    assert server.send_log("info", "started", "app") is True
    assert server.send_log("error", {"code": 7, "detail": ["a", "b"]}) is True
    rec.to_client()

    # Cancellation by the client: nothing is written for the cancelled request.
    rid = rec.call("tools/call", {"name": "slow"})
    client.cancel_request(rid, "user abort")
    rec.to_server()
    assert server.send_result(rid, {"content": []}) is False

    # Server->client requests, and the server cancelling one of its own.
    server.send_request("ping")
    server.send_request("roots/list")
    server.send_request(
        "sampling/createMessage",
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
            "maxTokens": 50,
            "systemPrompt": "Be brief.",
            "includeContext": "none",
        },
    )
    if version not in (V2024_11_05, V2025_03_26):
        server.send_request(
            "elicitation/create",
            {
                "message": "Your name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "minLength": 1}},
                    "required": ["name"],
                },
            },
        )
    doomed = server.send_request("roots/list")
    assert server.cancel_request(doomed, "no longer needed") is True
    rec.to_client()

    # Change notifications.
    assert server.send_notification("notifications/tools/list_changed") is True
    assert server.send_notification("notifications/prompts/list_changed") is True
    assert server.send_notification("notifications/resources/list_changed") is True
    assert server.send_notification("notifications/resources/updated", {"uri": "file:///r.txt"})
    rec.to_client()

    # Protocol errors for bad input (each leaves the connection working).
    rec.raw(b"\xff\xfe\n")  # invalid UTF-8 -> -32700, id null
    rec.raw(b"[1, 2\n")  # truncated JSON -> -32700, id null
    rec.raw(42)  # not an object -> -32600, id null
    rec.raw({"jsonrpc": "2.0", "id": 1.5, "method": "ping"})  # bad id -> -32600, id null
    rec.raw({"jsonrpc": "2.0", "id": None, "method": "ping"})  # null id -> -32600, id null
    rec.raw({"jsonrpc": "1.0", "id": "v1", "method": "ping"})  # -> -32600 with the id
    rec.raw({"jsonrpc": "2.0", "id": "arr", "method": "tools/list", "params": [1]})
    rec.raw({"jsonrpc": "2.0", "id": "unknown", "method": "no/such"})  # -32601
    rec.raw(
        {
            "jsonrpc": "2.0",
            "id": "again",
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO},
        }
    )  # second initialize -> -32600
    rec.raw(b"x" * 5000 + b"\n")  # over max_message_size -> -32600, id null
    rec.answered["dup"] = "tools/list"
    rec.raw({"jsonrpc": "2.0", "id": "dup", "method": "tools/list"})
    rec.raw({"jsonrpc": "2.0", "id": "dup", "method": "tools/list"})  # in flight -> -32600
    server.send_result("dup", {"tools": []})
    rec.to_client()

    # Batches: answered as one array in 2025-03-26, refused as a whole otherwise.
    for rid, method in (("b1", "tools/list"), ("b2", "ping"), ("b3", "tools/call")):
        rec.answered[rid] = method
    rec.raw(
        [
            {"jsonrpc": "2.0", "id": "b1", "method": "tools/list"},
            {"jsonrpc": "2.0", "id": "b2", "method": "ping"},
            {"jsonrpc": "2.0", "id": "b3", "method": "tools/call", "params": {"name": "t"}},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        ]
    )
    if version == V2025_03_26:
        server.send_result("b1", {"tools": [TOOL]})
        server.send_result("b3", {"content": [AUDIO]})
        rec.to_client()
        rec.raw(
            [
                {"jsonrpc": "2.0", "id": "b4", "method": "initialize", "params": {}},
                {"jsonrpc": "2.0", "id": 2.5, "method": "ping"},
                {"jsonrpc": "2.0", "id": "b5", "method": "no/such"},
            ]
        )
    rec.raw([])  # empty batch -> -32600, id null
    return rec


# ---------------------------------------------------------------------------- tests


@pytest.mark.parametrize("version", STATEFUL_VERSIONS)
def test_every_server_message_validates(version: str) -> None:
    rec = record_exchanges(version)
    problems: list[str] = []
    for n, line in enumerate(rec.out):
        for p in validate_output(version, line, rec.answered):
            problems.append(f"line {n} {orjson.dumps(line)[:200]!r}: {p}")
    assert problems == []


@pytest.mark.parametrize("version", STATEFUL_VERSIONS)
def test_exchanges_cover_every_kind_of_message(version: str) -> None:
    """Guard against the validation test silently checking less than it claims."""
    rec = record_exchanges(version)
    flat = [m for line in rec.out for m in (line if isinstance(line, list) else [line])]
    results = {rec.answered[m["id"]] for m in flat if "result" in m}
    assert results == set(RESULT_DEFS)
    notes = {m["method"] for m in flat if "method" in m and "id" not in m}
    assert notes == set(NOTIFICATION_DEFS)
    requests = {m["method"] for m in flat if "method" in m and "id" in m}
    expected_requests = set(REQUEST_DEFS)
    if version in (V2024_11_05, V2025_03_26):
        expected_requests.discard("elicitation/create")
    assert requests == expected_requests
    codes = {(m["error"]["code"], m.get("id") is None) for m in flat if "error" in m}
    assert codes >= {
        (-32700, True),
        (-32600, True),
        (-32600, False),
        (-32601, False),
        (-32602, False),
        (-32002, False),
    }
    batches = [line for line in rec.out if isinstance(line, list)]
    assert len(batches) == (2 if version == V2025_03_26 else 0)


@pytest.mark.parametrize("version", STATEFUL_VERSIONS)
def test_initialize_result_declares_negotiated_version(version: str) -> None:
    rec = Recorder(version)
    rec.handshake()
    (init,) = rec.out
    assert init["result"]["protocolVersion"] == version
    assert schema_errors(version, "InitializeResult", init["result"]) == []


def test_unknown_version_initialize_result_validates_against_latest() -> None:
    rec = Recorder("2099-01-01")
    rec.handshake()
    (init,) = rec.out
    assert init["result"]["protocolVersion"] == V2025_11_25
    assert validate_message(V2025_11_25, init, rec.answered) == []


# ---------------------------------------------------------------------------- the validator


@pytest.mark.parametrize("version", STATEFUL_VERSIONS)
def test_schema_files_are_valid_json_schemas(version: str) -> None:
    schema = _schema(version)
    jsonschema.validators.validator_for(schema).check_schema(schema)


@pytest.mark.parametrize(
    ("version", "name", "instance"),
    [
        (V2024_11_05, "InitializeResult", {"protocolVersion": 1}),
        (V2025_11_25, "InitializeResult", {"protocolVersion": V2025_11_25, "capabilities": {}}),
        (V2024_11_05, "CallToolResult", {"content": [AUDIO]}),
        (V2025_03_26, "CallToolResult", {"content": [LINK]}),
        (
            V2025_06_18,
            "ProgressNotification",
            {"method": "notifications/progress", "params": {"progressToken": 1.5, "progress": 1}},
        ),
        (
            V2025_11_25,
            "LoggingMessageNotification",
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "loud", "data": 1},
            },
        ),
        (
            V2025_11_25,
            "JSONRPCErrorResponse",
            {"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "m"}},
        ),
        (
            V2024_11_05,
            "JSONRPCError",
            {"jsonrpc": "2.0", "id": 1, "error": {"code": "1", "message": "m"}},
        ),
    ],
)
def test_validator_rejects_bad_messages(version: str, name: str, instance: Any) -> None:
    # The schema checks above can fail: known-bad instances are rejected.
    assert schema_errors(version, name, instance) != []


def test_null_id_exception_still_checks_the_error_object() -> None:
    bad = {"jsonrpc": "2.0", "id": None, "error": {"code": "x", "message": "m"}}
    for version in STATEFUL_VERSIONS:
        assert validate_message(version, bad, {}) != []
