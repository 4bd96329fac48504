"""The sans-I/O Connection, h11 style: a client and a server wired back to back.

No event loop and no sleeps: bytes are moved by hand with ``a.data_to_send()`` ->
``b.receive_data(...)``, and every test asserts the exact events and the exact messages
on the wire. A "raw" peer (plain dicts encoded with orjson) is used where the real
Connection would refuse to send the malformed or out-of-order message under test.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcpkit.protocol.connection import (
    CancelRequested,
    Connection,
    ErrorReceived,
    Event,
    HandshakeFailed,
    NotificationReceived,
    ProgressReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    SessionReady,
    SessionStarted,
)
from mcpkit.protocol.errors import CapabilityNotSupported, InvalidParams, LocalProtocolError
from mcpkit.protocol.lifecycle import Role, State
from mcpkit.protocol.versions import (
    REVISIONS,
    STATEFUL_VERSIONS,
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
)

# ---------------------------------------------------------------------------- helpers

CLIENT_INFO: dict[str, Any] = {"name": "test-client", "version": "1.0.0"}
SERVER_INFO: dict[str, Any] = {
    "name": "test-server",
    "version": "2.0.0",
    "title": "Test Server",
    "description": "A server for tests",
    "websiteUrl": "https://example.com",
    "icons": [{"src": "https://example.com/icon.png", "mimeType": "image/png"}],
}
CLIENT_CAPS: dict[str, Any] = {"roots": {"listChanged": True}}
SERVER_CAPS: dict[str, Any] = {
    "tools": {"listChanged": True},
    "prompts": {},
    "resources": {"subscribe": True},
    "logging": {},
    "completions": {},
    "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
}


class _AnyMessage:
    """Equal to any non-empty string (error messages are prose, codes are asserted)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other.strip())

    def __repr__(self) -> str:
        return "<any message>"


ANY_MESSAGE: Any = _AnyMessage()


class Contains:
    """Equal to a string containing every given fragment."""

    def __init__(self, *fragments: str) -> None:
        self.fragments = fragments

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and all(f in other for f in self.fragments)

    def __repr__(self) -> str:
        return f"<str containing {self.fragments!r}>"


def error(id: Any, code: int, message: Any = ANY_MESSAGE) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}


def unread(conn: Connection, code: int, message: Any = ANY_MESSAGE) -> dict[str, Any]:
    """An error answering an unreadable id: ``id`` null, omitted in 2025-11-25 (its schema
    makes the id optional and forbids null)."""
    msg = error(None, code, message)
    if conn.revision is not None and conn.revision.has("omit_unreadable_id"):
        del msg["id"]
    return msg


def result(id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": value}


def request(id: Any, method: str, params: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def initialize_request(id: Any = 1, version: str = V2025_11_25) -> dict[str, Any]:
    return request(
        id,
        "initialize",
        {"protocolVersion": version, "capabilities": CLIENT_CAPS, "clientInfo": CLIENT_INFO},
    )


def norm(events: list[Event]) -> list[Any]:
    """Events as comparable values: exceptions inside events become (kind, code[, ...])."""
    out: list[Any] = []
    for ev in events:
        if isinstance(ev, ProtocolViolation):
            out.append(("violation", ev.error.code))
        elif isinstance(ev, ErrorReceived):
            out.append(("error", ev.id, ev.error.code, ev.error.message))
        else:
            out.append(ev)
    return out


def wire(conn: Connection) -> list[Any]:
    """Drain ``conn``'s output and decode it, one JSON value per line."""
    return decode_lines(conn.data_to_send())


def send(conn: Connection, *objs: Any) -> list[Event]:
    """A raw peer writes ``objs`` (one per line) to ``conn``."""
    return conn.receive_data(b"".join(orjson.dumps(o) + b"\n" for o in objs))


def pump(src: Connection, dst: Connection) -> list[Event]:
    return dst.receive_data(src.data_to_send())


def decode_lines(data: bytes) -> list[Any]:
    if not data:
        return []
    assert data.endswith(b"\n")
    lines = data[:-1].split(b"\n")
    assert all(lines), "no blank lines on the wire"
    return [orjson.loads(line) for line in lines]


def transfer(src: Connection, dst: Connection) -> tuple[list[Any], list[Event]]:
    """Like ``pump``, but also return the messages that crossed the wire (decoded)."""
    data = src.data_to_send()
    return decode_lines(data), dst.receive_data(data)


def make_client(
    caps: dict[str, Any] | None = None, versions: tuple[str, ...] = STATEFUL_VERSIONS
) -> Connection:
    return Connection(
        Role.CLIENT,
        info=CLIENT_INFO,
        capabilities=CLIENT_CAPS if caps is None else caps,
        versions=versions,
    )


def make_server(
    caps: dict[str, Any] | None = None,
    versions: tuple[str, ...] = STATEFUL_VERSIONS,
    instructions: str | None = None,
    max_message_size: int = 4096,
) -> Connection:
    return Connection(
        Role.SERVER,
        info=SERVER_INFO,
        capabilities=SERVER_CAPS if caps is None else caps,
        instructions=instructions,
        versions=versions,
        max_message_size=max_message_size,
    )


def connect(
    version: str = V2025_11_25,
    *,
    server_caps: dict[str, Any] | None = None,
    client_caps: dict[str, Any] | None = None,
    max_message_size: int = 4096,
) -> tuple[Connection, Connection]:
    """A client and a server that completed the handshake on ``version``."""
    client = make_client(client_caps)
    server = make_server(server_caps, max_message_size=max_message_size)
    client.start_handshake(version)
    assert [type(e) for e in pump(client, server)] == [SessionStarted]
    assert [type(e) for e in pump(server, client)] == [SessionStarted]
    assert pump(client, server) == [SessionReady()]
    assert client.state is State.READY and server.state is State.READY
    assert client.data_to_send() == server.data_to_send() == b""
    return client, server


def ready_server(
    version: str = V2025_11_25,
    caps: dict[str, Any] | None = None,
    max_message_size: int = 4096,
) -> Connection:
    """A server that a raw client brought to READY on ``version``."""
    server = make_server(caps, max_message_size=max_message_size)
    assert [type(e) for e in send(server, initialize_request(0, version))] == [SessionStarted]
    assert wire(server)[0]["result"]["protocolVersion"] == version
    assert send(server, notification("notifications/initialized")) == [SessionReady()]
    return server


def ready_client(
    version: str = V2025_11_25,
    caps: dict[str, Any] | None = None,
    server_caps: dict[str, Any] | None = None,
) -> Connection:
    """A client that a raw server brought to READY on ``version``."""
    client = make_client(caps)
    rid = client.start_handshake(version)
    wire(client)
    init = {
        "protocolVersion": version,
        "capabilities": SERVER_CAPS if server_caps is None else server_caps,
        "serverInfo": {"name": "raw", "version": "0"},
    }
    assert [type(e) for e in send(client, result(rid, init))] == [SessionStarted]
    assert wire(client) == [notification("notifications/initialized")]
    return client


def expected_server_caps(version: str) -> dict[str, Any]:
    caps = dict(SERVER_CAPS)
    if version == V2024_11_05:
        del caps["completions"]
    if version != V2025_11_25:
        del caps["tasks"]
    return caps


def expected_server_info(version: str) -> dict[str, Any]:
    info = {"name": "test-server", "version": "2.0.0"}
    if version in (V2025_06_18, V2025_11_25):
        info["title"] = "Test Server"
    if version == V2025_11_25:
        info = dict(SERVER_INFO)
    return info


# ---------------------------------------------------------------------------- handshake


@pytest.mark.parametrize("version", STATEFUL_VERSIONS)
def test_handshake(version: str) -> None:
    client = make_client()
    server = make_server(instructions="Call get_weather for forecasts.")
    assert client.state is State.NEW and server.state is State.NEW

    rid = client.start_handshake(version)
    assert client.state is State.INITIALIZING
    msgs, events = transfer(client, server)
    assert msgs == [
        request(
            rid,
            "initialize",
            {"protocolVersion": version, "capabilities": CLIENT_CAPS, "clientInfo": CLIENT_INFO},
        )
    ]
    rev = REVISIONS[version]
    assert events == [
        SessionStarted(rev, CLIENT_INFO, CLIENT_CAPS, "Call get_weather for forecasts.")
    ]
    assert server.state is State.INITIALIZING
    assert server.revision is rev
    init_result = {
        "protocolVersion": version,
        "capabilities": expected_server_caps(version),
        "serverInfo": expected_server_info(version),
        "instructions": "Call get_weather for forecasts.",
    }
    msgs, events = transfer(server, client)
    assert msgs == [result(rid, init_result)]
    assert events == [
        SessionStarted(
            rev,
            expected_server_info(version),
            expected_server_caps(version),
            "Call get_weather for forecasts.",
        )
    ]
    assert client.state is State.READY
    assert client.revision is rev
    assert client.peer_capabilities == expected_server_caps(version)
    assert transfer(client, server) == (
        [notification("notifications/initialized")],
        [SessionReady()],
    )
    assert server.state is State.READY

    # Normal operation: a request and its answer go through both ways.
    rid = client.send_request("tools/list", {})
    assert pump(client, server) == [RequestReceived(rid, "tools/list", {})]
    assert server.send_result(rid, {"tools": []}) is True
    assert pump(server, client) == [ResponseReceived(rid, {"tools": []})]


def test_handshake_without_instructions_omits_them() -> None:
    client = make_client()
    server = make_server(caps={})
    rid = client.start_handshake(V2025_06_18)
    pump(client, server)
    msgs, events = transfer(server, client)
    assert msgs == [
        result(
            rid,
            {
                "protocolVersion": V2025_06_18,
                "capabilities": {},
                "serverInfo": {"name": "test-server", "version": "2.0.0", "title": "Test Server"},
            },
        )
    ]
    assert events == [
        SessionStarted(
            REVISIONS[V2025_06_18],
            {"name": "test-server", "version": "2.0.0", "title": "Test Server"},
            {},
            None,
        )
    ]


def test_client_offers_its_newest_version_by_default() -> None:
    client = make_client(versions=(V2024_11_05, V2025_03_26))
    client.start_handshake()
    (msg,) = wire(client)
    assert msg["params"]["protocolVersion"] == V2025_03_26


@pytest.mark.parametrize("offered", ["2099-01-01", "1.0", "2026-07-28"])
def test_unknown_version_server_answers_its_latest(offered: str) -> None:
    client = make_client()
    server = make_server()
    client.start_handshake(offered)
    events = pump(client, server)
    assert [type(e) for e in events] == [SessionStarted]
    assert server.revision is REVISIONS[V2025_11_25]
    # The client speaks 2025-11-25 too, so it goes on with it.
    msgs, events = transfer(server, client)
    assert msgs[0]["result"]["protocolVersion"] == V2025_11_25
    assert [type(e) for e in events] == [SessionStarted]
    assert client.revision is REVISIONS[V2025_11_25]
    assert pump(client, server) == [SessionReady()]


def test_unknown_version_answered_with_newest_of_servers_own_set() -> None:
    server = make_server(versions=(V2024_11_05, V2025_03_26))
    send(server, initialize_request(1, "2030-01-01"))
    (msg,) = wire(server)
    assert msg["result"]["protocolVersion"] == V2025_03_26


def test_server_answers_supported_older_version_with_it() -> None:
    server = make_server(versions=(V2024_11_05, V2025_06_18))
    send(server, initialize_request(1, V2024_11_05))
    (msg,) = wire(server)
    assert msg["result"]["protocolVersion"] == V2024_11_05


def test_client_refuses_server_version_it_does_not_support() -> None:
    client = make_client(versions=(V2024_11_05,))
    server = make_server(versions=(V2025_06_18,))
    client.start_handshake()
    pump(client, server)
    events = pump(server, client)
    assert events == [
        HandshakeFailed(
            "the server chose protocol revision '2025-06-18', which this client does not "
            "support (supported: 2024-11-05)"
        )
    ]
    assert client.state is State.CLOSED
    assert client.revision is None
    # No notifications/initialized follows a refused handshake.
    assert client.data_to_send() == b""


@pytest.mark.parametrize("bad_version", [None, 20250618, "2099-01-01"])
def test_client_refuses_missing_or_garbled_server_version(bad_version: Any) -> None:
    client = make_client()
    rid = client.start_handshake()
    wire(client)
    init: dict[str, Any] = {"capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
    if bad_version is not None:
        init["protocolVersion"] = bad_version
    events = send(client, result(rid, init))
    assert [type(e) for e in events] == [HandshakeFailed]
    assert client.state is State.CLOSED
    assert client.data_to_send() == b""


def test_initialize_error_response_fails_handshake() -> None:
    client = make_client()
    rid = client.start_handshake()
    wire(client)
    events = send(client, error(rid, -32602, "Unsupported protocol version"))
    assert events == [
        HandshakeFailed("initialize refused: Unsupported protocol version (code -32602)")
    ]
    assert client.state is State.CLOSED


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"protocolVersion": 5, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
        {"protocolVersion": V2025_11_25, "clientInfo": {"name": "c", "version": "1"}},
        {"protocolVersion": V2025_11_25, "capabilities": [], "clientInfo": {"name": "c"}},
        {"protocolVersion": V2025_11_25, "capabilities": {}},
        {"protocolVersion": V2025_11_25, "capabilities": {}, "clientInfo": {"version": "1"}},
    ],
)
def test_initialize_with_bad_params_is_invalid_params(params: dict[str, Any]) -> None:
    server = make_server()
    events = send(server, request(1, "initialize", params))
    assert norm(events) == [("violation", -32602)]
    assert wire(server) == [error(1, -32602, Contains("Invalid params for initialize"))]
    # Nothing was negotiated: a correct initialize still works.
    assert server.state is State.NEW and server.revision is None
    assert [type(e) for e in send(server, initialize_request(2))] == [SessionStarted]


def test_client_cannot_send_requests_before_initialize_result() -> None:
    client = make_client()
    with pytest.raises(LocalProtocolError):
        client.send_request("tools/list")
    client.start_handshake()
    with pytest.raises(LocalProtocolError):
        client.send_request("tools/list")
    with pytest.raises(LocalProtocolError):
        client.start_handshake()  # initialize is sent once
    # ping is always allowed
    rid = client.send_request("ping")
    assert wire(client)[-1] == request(rid, "ping")


def test_server_cannot_start_handshake() -> None:
    with pytest.raises(LocalProtocolError):
        make_server().start_handshake()


# ---------------------------------------------------------------------------- lifecycle


def test_request_before_initialize_is_refused_but_ping_allowed() -> None:
    server = make_server()
    events = send(server, request(1, "tools/list"))
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [error(1, -32600, Contains("'initialize'"))]

    # Even methods that do not exist: the session comes first.
    assert norm(send(server, request("x", "no/such"))) == [("violation", -32600)]
    assert wire(server) == [error("x", -32600, Contains("'initialize'"))]

    assert send(server, request(2, "ping")) == []
    assert wire(server) == [result(2, {})]
    assert server.state is State.NEW


def test_notifications_before_initialize_are_ignored() -> None:
    server = make_server()
    assert send(server, notification("notifications/roots/list_changed")) == []
    assert send(server, notification("notifications/initialized")) == []
    assert server.state is State.NEW
    assert server.data_to_send() == b""


def test_request_before_initialized_notification_is_refused() -> None:
    client = make_client()
    server = make_server()
    client.start_handshake()
    pump(client, server)
    wire(server)
    assert server.state is State.INITIALIZING

    events = send(server, request(50, "tools/list"))
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [error(50, -32600, Contains("notifications/initialized"))]

    assert send(server, request(51, "ping")) == []
    assert wire(server) == [result(51, {})]

    # The server may not send requests other than ping yet either.
    with pytest.raises(LocalProtocolError):
        server.send_request("roots/list")
    ping_id = server.send_request("ping")
    assert wire(server) == [request(ping_id, "ping")]

    assert send(server, notification("notifications/initialized")) == [SessionReady()]
    assert send(server, request(52, "tools/list")) == [RequestReceived(52, "tools/list", {})]


@pytest.mark.parametrize("when", ["initializing", "ready"])
def test_second_initialize_is_refused(when: str) -> None:
    server = make_server()
    send(server, initialize_request(1, V2025_03_26))
    wire(server)
    if when == "ready":
        assert send(server, notification("notifications/initialized")) == [SessionReady()]
    state = server.state

    events = send(server, initialize_request(2, V2024_11_05))
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [error(2, -32600, Contains("already initialized"))]
    # Nothing was renegotiated.
    assert server.revision is REVISIONS[V2025_03_26]
    assert server.state is state


def test_initialized_notification_twice_is_harmless() -> None:
    _client, server = connect()
    assert send(server, notification("notifications/initialized")) == []
    assert server.state is State.READY
    assert server.data_to_send() == b""


# ---------------------------------------------------------------------------- method gating


def test_unknown_method_is_method_not_found() -> None:
    server = ready_server()
    events = send(server, request(7, "foo/bar", {}))
    assert norm(events) == [("violation", -32601)]
    assert wire(server) == [
        error(
            7, -32601, "Method not found: 'foo/bar' does not exist in protocol revision 2025-11-25."
        )
    ]


def test_method_missing_from_revision_is_method_not_found() -> None:
    server = ready_server(V2025_06_18)
    assert norm(send(server, request(1, "tasks/list", {}))) == [("violation", -32601)]
    assert wire(server) == [error(1, -32601, Contains("'tasks/list'", "2025-06-18"))]
    server = ready_server(V2025_11_25)
    assert send(server, request(1, "tasks/list", {})) == [RequestReceived(1, "tasks/list", {})]


def test_server_to_client_method_sent_to_server_is_method_not_found() -> None:
    server = ready_server()
    assert norm(send(server, request(1, "sampling/createMessage", {}))) == [("violation", -32601)]
    assert wire(server) == [error(1, -32601)]


@pytest.mark.parametrize(
    ("method", "missing"),
    [
        ("completion/complete", "completions"),
        ("tools/call", "tools"),
        ("tools/list", "tools"),
        ("prompts/get", "prompts"),
        ("resources/read", "resources"),
        ("resources/subscribe", "resources.subscribe"),
        ("logging/setLevel", "logging"),
    ],
)
def test_method_gated_by_missing_server_capability(method: str, missing: str) -> None:
    caps = {k: v for k, v in SERVER_CAPS.items() if k != missing.split(".")[0]}
    if missing == "resources.subscribe":
        caps["resources"] = {"listChanged": True}
    server = ready_server(caps=caps)
    events = send(server, request(3, method, {}))
    assert norm(events) == [("violation", -32601)]
    assert wire(server) == [error(3, -32601, Contains(f"'{method}'", f"'{missing}'"))]


def test_completion_allowed_when_server_declares_completions() -> None:
    server = ready_server(caps={"completions": {}})
    params = {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}
    assert send(server, request(3, "completion/complete", params)) == [
        RequestReceived(3, "completion/complete", params)
    ]


def test_client_refuses_to_send_request_server_lacks_capability_for() -> None:
    client, _server = connect(server_caps={"tools": {}})
    with pytest.raises(CapabilityNotSupported):
        client.send_request("completion/complete", {})
    with pytest.raises(CapabilityNotSupported):
        client.send_request("resources/subscribe", {"uri": "file:///x"})
    with pytest.raises(CapabilityNotSupported):
        client.send_request("logging/setLevel", {"level": "info"})
    with pytest.raises(CapabilityNotSupported):
        client.send_request("sampling/createMessage", {})  # wrong direction
    assert client.data_to_send() == b""


def test_client_may_send_completion_to_2024_11_05_server() -> None:
    # 2024-11-05 has no `completions` capability flag (it is stripped from the
    # initialize result), so the client cannot gate completion/complete on it.
    params = {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}
    client, server = connect(V2024_11_05)
    assert "completions" not in client.peer_capabilities
    rid = client.send_request("completion/complete", params)
    assert pump(client, server) == [RequestReceived(rid, "completion/complete", params)]


def test_client_tasks_methods_only_in_2025_11_25() -> None:
    client, _ = connect(V2025_06_18)
    with pytest.raises(CapabilityNotSupported):
        client.send_request("tasks/list", {})


def test_elicitation_does_not_exist_in_2024_11_05() -> None:
    _client, server = connect(V2024_11_05, client_caps={"elicitation": {}})
    with pytest.raises(CapabilityNotSupported, match="elicitation/create"):
        server.send_request("elicitation/create", {"message": "?", "requestedSchema": {}})
    assert server.data_to_send() == b""


def test_elicitation_allowed_in_2025_06_18_with_client_capability() -> None:
    client, server = connect(V2025_06_18, client_caps={"elicitation": {}})
    params = {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}
    rid = server.send_request("elicitation/create", params)
    assert pump(server, client) == [RequestReceived(rid, "elicitation/create", params)]
    assert client.send_result(rid, {"action": "decline"}) is True
    assert pump(client, server) == [ResponseReceived(rid, {"action": "decline"})]


def test_elicitation_needs_client_capability() -> None:
    _client, server = connect(V2025_06_18, client_caps={})
    with pytest.raises(CapabilityNotSupported, match="'elicitation'"):
        server.send_request("elicitation/create", {"message": "?", "requestedSchema": {}})


def test_sampling_needs_client_capability() -> None:
    _client, server = connect(client_caps={"roots": {}})
    with pytest.raises(CapabilityNotSupported, match="'sampling'"):
        server.send_request("sampling/createMessage", {"messages": [], "maxTokens": 10})
    assert server.data_to_send() == b""


def test_sampling_round_trip_with_client_capability() -> None:
    client, server = connect(client_caps={"sampling": {}})
    params = {"messages": [], "maxTokens": 10}
    rid = server.send_request("sampling/createMessage", params)
    assert pump(server, client) == [RequestReceived(rid, "sampling/createMessage", params)]
    answer = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
    assert client.send_result(rid, answer) is True
    assert pump(client, server) == [ResponseReceived(rid, answer)]


def test_nested_capability_declared_by_an_empty_object() -> None:
    """``sampling.tools`` is declared as ``{"tools": {}}`` (an object, as the schema has
    it), ``resources.subscribe`` as ``true``: both count; false, null and absence do not."""
    from mcpkit.protocol.methods import has_capability

    assert has_capability({"sampling": {"tools": {}}}, "sampling.tools")
    assert has_capability({"sampling": {"context": {}}}, "sampling.context")
    assert has_capability({"resources": {"subscribe": True}}, "resources.subscribe")
    assert not has_capability({"sampling": {}}, "sampling.tools")
    assert not has_capability({"resources": {"subscribe": False}}, "resources.subscribe")
    assert not has_capability({"sampling": {"tools": None}}, "sampling.tools")
    assert not has_capability({"sampling": None}, "sampling.tools")


def test_roots_list_round_trip() -> None:
    client, server = connect()
    rid = server.send_request("roots/list")
    assert pump(server, client) == [RequestReceived(rid, "roots/list", {})]
    client.send_result(rid, {"roots": [{"uri": "file:///tmp"}]})
    assert pump(client, server) == [ResponseReceived(rid, {"roots": [{"uri": "file:///tmp"}]})]


def test_client_answers_undeclared_server_request_with_method_not_found() -> None:
    client = ready_client(caps={})
    events = send(client, request("s1", "sampling/createMessage", {"maxTokens": 1}))
    assert norm(events) == [("violation", -32601)]
    assert wire(client) == [error("s1", -32601, Contains("'sampling'"))]
    assert norm(send(client, request("s2", "roots/list"))) == [("violation", -32601)]
    assert wire(client) == [error("s2", -32601, Contains("'roots'"))]


def test_client_answers_unknown_server_request_with_method_not_found() -> None:
    client = ready_client(V2024_11_05, caps={"elicitation": {}})
    assert norm(send(client, request(1, "elicitation/create", {}))) == [("violation", -32601)]
    assert wire(client) == [error(1, -32601, Contains("'elicitation/create'", "2024-11-05"))]


def test_client_answers_ping_before_and_after_handshake() -> None:
    client = make_client()
    assert send(client, request(1, "ping")) == []
    assert wire(client) == [result(1, {})]
    client = ready_client()
    assert send(client, request(2, "ping")) == []
    assert wire(client) == [result(2, {})]


def test_server_ping_round_trip() -> None:
    client, server = connect()
    rid = server.send_request("ping")
    assert pump(server, client) == []
    assert pump(client, server) == [ResponseReceived(rid, {})]


def test_error_response_becomes_error_received() -> None:
    client, server = connect()
    rid = client.send_request("tools/call", {"name": "nope"})
    assert pump(client, server) == [RequestReceived(rid, "tools/call", {"name": "nope"})]
    assert server.send_error(rid, InvalidParams("Unknown tool: nope", {"name": "nope"})) is True
    msgs, events = transfer(server, client)
    assert msgs == [
        {
            "jsonrpc": "2.0",
            "id": rid,
            "error": {"code": -32602, "message": "Unknown tool: nope", "data": {"name": "nope"}},
        }
    ]
    assert norm(events) == [("error", rid, -32602, "Unknown tool: nope")]
    (ev,) = events
    assert isinstance(ev, ErrorReceived) and ev.error.data == {"name": "nope"}
    # Answered once only: a second answer is the caller's bug.
    with pytest.raises(LocalProtocolError, match="not in flight"):
        server.send_error(rid, InvalidParams("again"))
    with pytest.raises(LocalProtocolError, match="not in flight"):
        server.send_result(rid, {})
    assert server.data_to_send() == b""


def test_error_response_with_null_id_is_a_violation() -> None:
    client = ready_client()
    events = send(client, error(None, -32700, "Parse error"))
    assert norm(events) == [("violation", -32600)]
    assert client.data_to_send() == b""


def test_responses_to_unknown_ids_are_ignored() -> None:
    client = ready_client()
    assert send(client, result(999, {})) == []
    assert send(client, error(998, -32603, "x")) == []
    assert client.data_to_send() == b""


# ---------------------------------------------------------------------------- duplicate ids


def test_duplicate_in_flight_id_refused_first_still_answerable() -> None:
    server = ready_server()
    params = {"name": "slow", "arguments": {}}
    assert send(server, request(7, "tools/call", params)) == [
        RequestReceived(7, "tools/call", params)
    ]
    assert server.in_flight == 1
    events = send(server, request(7, "tools/list", {}))
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [error(7, -32600, Contains("already in use"))]
    assert server.in_flight == 1

    answer = {"content": [{"type": "text", "text": "done"}], "isError": False}
    assert server.send_result(7, answer) is True
    assert wire(server) == [result(7, answer)]
    assert server.in_flight == 0


def test_same_id_value_with_different_types_are_different_requests() -> None:
    server = ready_server()
    assert [
        type(e) for e in send(server, request(1, "tools/list"), request("1", "tools/list"))
    ] == [RequestReceived, RequestReceived]
    assert server.in_flight == 2
    assert server.data_to_send() == b""


# ---------------------------------------------------------------------------- cancellation


def test_cancellation_suppresses_the_response() -> None:
    client, server = connect()
    rid = client.send_request("tools/call", {"name": "slow"})
    assert pump(client, server) == [RequestReceived(rid, "tools/call", {"name": "slow"})]

    assert client.cancel_request(rid, "user pressed stop") is True
    assert transfer(client, server) == (
        [
            notification(
                "notifications/cancelled", {"requestId": rid, "reason": "user pressed stop"}
            )
        ],
        [CancelRequested(rid, "user pressed stop")],
    )
    assert server.in_flight == 0

    assert server.send_result(rid, {"content": []}) is False
    assert server.send_error(rid, InvalidParams("late")) is False
    assert server.send_progress(rid, 1.0) is False
    assert server.data_to_send() == b""
    # Cancelling again is a no-op on both sides.
    assert client.cancel_request(rid) is False
    assert client.data_to_send() == b""


def test_cancel_without_reason() -> None:
    client, server = connect()
    rid = client.send_request("tools/call", {"name": "slow"})
    pump(client, server)
    client.cancel_request(rid)
    assert transfer(client, server) == (
        [notification("notifications/cancelled", {"requestId": rid})],
        [CancelRequested(rid, None)],
    )


@pytest.mark.parametrize(
    "params",
    [{"requestId": 404}, {"requestId": None}, {"requestId": 1.5}, {}, {"requestId": [1]}],
)
def test_invalid_or_unknown_cancellation_is_ignored(params: dict[str, Any]) -> None:
    server = ready_server()
    send(server, request(1, "tools/list"))
    assert send(server, notification("notifications/cancelled", params)) == []
    assert server.in_flight == 1
    assert server.data_to_send() == b""


def test_cancellation_of_finished_request_is_ignored() -> None:
    server = ready_server()
    send(server, request(1, "tools/list"))
    server.send_result(1, {"tools": []})
    wire(server)
    assert send(server, notification("notifications/cancelled", {"requestId": 1})) == []
    assert server.data_to_send() == b""


def test_initialize_cannot_be_cancelled() -> None:
    client = make_client()
    server = make_server()
    rid = client.start_handshake()
    assert client.cancel_request(rid) is False
    data = client.data_to_send()
    assert [orjson.loads(x)["method"] for x in data.split(b"\n")[:-1]] == ["initialize"]

    # A raw client that cancels its initialize anyway: the cancel is ignored.
    events = server.receive_data(
        data + orjson.dumps(notification("notifications/cancelled", {"requestId": rid})) + b"\n"
    )
    assert [type(e) for e in events] == [SessionStarted]
    (msg,), events = transfer(server, client)
    assert msg["id"] == rid and "result" in msg
    assert [type(e) for e in events] == [SessionStarted]


def test_late_response_to_cancelled_request_is_ignored() -> None:
    client, server = connect()
    rid = client.send_request("tools/call", {"name": "slow"})
    pump(client, server)
    client.cancel_request(rid, "timeout")
    # The server answers before the cancellation reaches it (the allowed race).
    assert server.send_result(rid, {"content": []}) is True
    assert pump(server, client) == []
    assert pump(client, server) == []  # the cancel for a finished request is ignored
    assert server.data_to_send() == b""


def test_late_error_to_cancelled_request_is_ignored() -> None:
    client = ready_client()
    rid = client.send_request("tools/list")
    client.cancel_request(rid)
    wire(client)
    assert send(client, error(rid, -32603, "Internal error")) == []


def test_server_cancels_its_own_request() -> None:
    client, server = connect()
    rid = server.send_request("roots/list")
    assert pump(server, client) == [RequestReceived(rid, "roots/list", {})]
    assert server.cancel_request(rid, "no longer needed") is True
    assert pump(server, client) == [CancelRequested(rid, "no longer needed")]
    assert client.send_result(rid, {"roots": []}) is False
    assert client.data_to_send() == b""


def test_cancelling_unknown_outbound_request_sends_nothing() -> None:
    client, _ = connect()
    assert client.cancel_request(12345) is False
    assert client.data_to_send() == b""


# ---------------------------------------------------------------------------- progress


@pytest.mark.parametrize("version", STATEFUL_VERSIONS)
def test_progress_round_trip(version: str) -> None:
    client, server = connect(version)
    params = {"name": "slow", "_meta": {"progressToken": "tok-1"}}
    rid = client.send_request("tools/call", params)
    assert pump(client, server) == [RequestReceived(rid, "tools/call", params)]
    assert server.progress_token(rid) == "tok-1"

    assert server.send_progress(rid, 1, 10, "Step one") is True
    expected: dict[str, Any] = {"progressToken": "tok-1", "progress": 1, "total": 10}
    if version != V2024_11_05:  # `message` exists from 2025-03-26 on
        expected["message"] = "Step one"
    has_message = version != V2024_11_05
    assert transfer(server, client) == (
        [notification("notifications/progress", expected)],
        [ProgressReceived(rid, 1.0, 10.0, "Step one" if has_message else None)],
    )

    # Not increasing: dropped.
    assert server.send_progress(rid, 1) is False
    assert server.send_progress(rid, 0.5) is False
    assert server.data_to_send() == b""
    # Increasing (floats allowed), no total.
    assert server.send_progress(rid, 1.5) is True
    assert transfer(server, client) == (
        [notification("notifications/progress", {"progressToken": "tok-1", "progress": 1.5})],
        [ProgressReceived(rid, 1.5, None, None)],
    )

    # None after the response.
    assert server.send_result(rid, {"content": []}) is True
    assert server.send_progress(rid, 9) is False
    assert pump(server, client) == [ResponseReceived(rid, {"content": []})]


def test_progress_needs_a_progress_token() -> None:
    client, server = connect()
    rid = client.send_request("tools/call", {"name": "x"})
    pump(client, server)
    assert server.progress_token(rid) is None
    assert server.send_progress(rid, 1) is False
    assert server.data_to_send() == b""


@pytest.mark.parametrize("meta", [{"progressToken": 1.5}, {"progressToken": None}, [1], "x"])
def test_invalid_progress_token_is_ignored(meta: Any) -> None:
    server = ready_server()
    send(server, request(1, "tools/call", {"name": "x", "_meta": meta}))
    assert server.progress_token(1) is None
    assert server.send_progress(1, 1) is False


def test_integer_progress_token() -> None:
    client, server = connect()
    rid = client.send_request("tools/call", {"name": "x", "_meta": {"progressToken": 77}})
    pump(client, server)
    assert server.send_progress(rid, 3, 4) is True
    assert transfer(server, client) == (
        [notification("notifications/progress", {"progressToken": 77, "progress": 3, "total": 4})],
        [ProgressReceived(rid, 3.0, 4.0, None)],
    )


def test_progress_for_unknown_or_finished_token_is_ignored_by_receiver() -> None:
    client, server = connect()
    rid = client.send_request("tools/call", {"name": "x", "_meta": {"progressToken": "t"}})
    pump(client, server)
    unknown = notification("notifications/progress", {"progressToken": "other", "progress": 1})
    assert send(client, unknown) == []
    server.send_result(rid, {"content": []})
    assert pump(server, client) == [ResponseReceived(rid, {"content": []})]
    late = notification("notifications/progress", {"progressToken": "t", "progress": 2})
    assert send(client, late) == []
    bad = notification("notifications/progress", {"progressToken": "t", "progress": "2"})
    assert send(client, bad) == []


def test_progress_token_is_released_after_cancel() -> None:
    client, _server = connect()
    rid = client.send_request("tools/call", {"name": "x", "_meta": {"progressToken": "t"}})
    with pytest.raises(LocalProtocolError, match="already in use"):
        client.send_request("tools/call", {"name": "y", "_meta": {"progressToken": "t"}})
    client.cancel_request(rid)
    assert (
        send(client, notification("notifications/progress", {"progressToken": "t", "progress": 1}))
        == []
    )
    client.send_request("tools/call", {"name": "y", "_meta": {"progressToken": "t"}})


def test_progress_is_tagged_with_its_request() -> None:
    client, server = connect()
    rid = client.send_request("tools/call", {"name": "x", "_meta": {"progressToken": "t"}})
    pump(client, server)
    server.send_progress(rid, 1)
    server.send_log("info", "working")
    server.send_result(rid, {"content": []})
    assert [o.related for o in server.messages_to_send()] == [rid, None, rid]


# ---------------------------------------------------------------------------- logging


def test_set_level_bad_level_is_invalid_params() -> None:
    client, server = connect()
    rid = client.send_request("logging/setLevel", {"level": "verbose"})
    assert pump(client, server) == []
    msgs, events = transfer(server, client)
    assert msgs == [error(rid, -32602, Contains("'verbose'", "debug", "emergency"))]
    assert norm(events) == [("error", rid, -32602, Contains("'verbose'"))]
    assert server.log_level is None


@pytest.mark.parametrize("params", [{}, {"level": None}, {"level": 3}, {"level": "INFO"}])
def test_set_level_missing_or_malformed_level(params: dict[str, Any]) -> None:
    server = ready_server()
    assert send(server, request(1, "logging/setLevel", params)) == []
    assert wire(server) == [error(1, -32602)]
    assert server.log_level is None


def test_set_level_filters_logs() -> None:
    client, server = connect()
    # Before any setLevel the server may send every level.
    assert server.wants_log("debug") is True
    rid = client.send_request("logging/setLevel", {"level": "warning"})
    assert pump(client, server) == []  # kept by the connection, not surfaced
    assert server.log_level == "warning"
    assert transfer(server, client) == ([result(rid, {})], [ResponseReceived(rid, {})])

    for level in ("debug", "info", "notice"):
        assert server.send_log(level, "quiet") is False
    assert server.data_to_send() == b""

    assert server.send_log("warning", {"disk": "low"}, "storage") is True
    assert server.send_log("emergency", "boom") is True
    warning = {"level": "warning", "data": {"disk": "low"}, "logger": "storage"}
    emergency = {"level": "emergency", "data": "boom"}
    assert transfer(server, client) == (
        [
            notification("notifications/message", warning),
            notification("notifications/message", emergency),
        ],
        [
            NotificationReceived("notifications/message", warning),
            NotificationReceived("notifications/message", emergency),
        ],
    )


def test_send_log_unknown_level_raises() -> None:
    _, server = connect()
    with pytest.raises(LocalProtocolError, match="unknown log level"):
        server.send_log("verbose", "x")


def test_send_log_without_logging_capability_sends_nothing() -> None:
    _client, server = connect(server_caps={"tools": {}})
    assert server.wants_log("emergency") is False
    assert server.send_log("emergency", "nobody hears this") is False
    assert server.send_notification("notifications/message", {"level": "info", "data": 1}) is False
    assert server.data_to_send() == b""


def test_send_log_before_initialize_sends_nothing() -> None:
    server = make_server()
    assert server.send_log("error", "too early") is False
    assert server.data_to_send() == b""


def test_send_log_allowed_before_initialized_notification() -> None:
    server = make_server()
    send(server, initialize_request())
    wire(server)
    assert server.send_log("info", "starting") is True
    assert wire(server) == [
        notification("notifications/message", {"level": "info", "data": "starting"})
    ]


# ---------------------------------------------------------------------------- notifications


def test_list_changed_needs_declared_sub_capability() -> None:
    client, server = connect(server_caps={"tools": {"listChanged": True}, "prompts": {}})
    assert server.send_notification("notifications/tools/list_changed") is True
    assert server.send_notification("notifications/prompts/list_changed") is False
    assert server.send_notification("notifications/resources/updated", {"uri": "x"}) is False
    assert pump(server, client) == [NotificationReceived("notifications/tools/list_changed", {})]


def test_notification_not_in_revision_is_not_sent() -> None:
    _client, server = connect(V2025_06_18)
    assert (
        server.send_notification("notifications/elicitation/complete", {"elicitationId": "e"})
        is False
    )
    assert server.send_notification("notifications/unknown") is False
    assert server.data_to_send() == b""


def test_client_notifications_reach_server() -> None:
    client, server = connect()
    assert client.send_notification("notifications/roots/list_changed") is True
    assert pump(client, server) == [NotificationReceived("notifications/roots/list_changed", {})]
    # Without roots.listChanged declared the client does not send it.
    client, server = connect(client_caps={"roots": {}})
    assert client.send_notification("notifications/roots/list_changed") is False


def test_initialized_notification_sent_only_once() -> None:
    client, _ = connect()
    with pytest.raises(LocalProtocolError, match="notifications/initialized"):
        client.send_notification("notifications/initialized")
    assert client.data_to_send() == b""


# ---------------------------------------------------------------------------- batches


def test_batch_of_requests_and_notification_answered_as_one_array() -> None:
    server = ready_server(V2025_03_26)
    batch = [
        request("a", "tools/list", {}),
        request("b", "tools/call", {"name": "echo", "arguments": {"x": 1}}),
        notification("notifications/roots/list_changed"),
    ]
    events = send(server, batch)
    assert events == [
        RequestReceived("a", "tools/list", {}),
        RequestReceived("b", "tools/call", {"name": "echo", "arguments": {"x": 1}}),
        NotificationReceived("notifications/roots/list_changed", {}),
    ]
    assert server.data_to_send() == b""

    call_result = {"content": [{"type": "text", "text": "1"}]}
    assert server.send_result("b", call_result) is True
    assert server.data_to_send() == b""  # still waiting for "a"
    assert server.send_result("a", {"tools": []}) is True
    assert wire(server) == [[result("b", call_result), result("a", {"tools": []})]]
    assert server.in_flight == 0


def test_batch_with_ping_waits_for_the_other_elements() -> None:
    _client, server = connect(V2025_03_26)
    batch = [request(101, "ping"), request(100, "tools/list", {})]
    events = send(server, batch)
    assert events == [RequestReceived(100, "tools/list", {})]
    # ping is answered at once, but the batch's array waits for every element.
    assert server.data_to_send() == b""
    server.send_result(100, {"tools": []})
    assert wire(server) == [[result(101, {}), result(100, {"tools": []})]]


def test_batch_with_set_level_waits_for_other_elements() -> None:
    server = ready_server(V2025_03_26)
    batch = [
        request(1, "logging/setLevel", {"level": "nope"}),
        request(2, "logging/setLevel", {"level": "error"}),
        request(3, "tools/list"),
    ]
    assert send(server, batch) == [RequestReceived(3, "tools/list", {})]
    assert server.data_to_send() == b""
    server.send_result(3, {"tools": []})
    assert wire(server) == [[error(1, -32602), result(2, {}), result(3, {"tools": []})]]
    assert server.log_level == "error"


def test_batch_with_only_synchronous_answers_is_sent_at_once() -> None:
    server = ready_server(V2025_03_26)
    assert send(server, [request(1, "ping"), request(2, "ping")]) == []
    assert wire(server) == [[result(1, {}), result(2, {})]]


def test_batch_with_initialize_element_refused() -> None:
    server = ready_server(V2025_03_26)
    events = send(server, [initialize_request(9, V2025_03_26), request(10, "ping")])
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [[error(9, -32600, Contains("'initialize'", "batch")), result(10, {})]]
    assert server.revision is REVISIONS[V2025_03_26]


def test_batch_with_initialize_refused_before_handshake() -> None:
    # Before initialize nothing is negotiated, so no batch is accepted at all.
    server = make_server()
    events = send(server, [initialize_request(1, V2025_03_26)])
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [unread(server, -32600, Contains("batch"))]
    assert server.state is State.NEW


@pytest.mark.parametrize("version", [V2024_11_05, V2025_06_18, V2025_11_25])
def test_batch_refused_in_revisions_without_batches(version: str) -> None:
    server = ready_server(version)
    events = send(server, [request(1, "tools/list"), request(2, "ping")])
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [unread(server, -32600, Contains("batch", version))]
    assert server.in_flight == 0


def test_batch_refused_before_initialize() -> None:
    server = make_server()
    events = send(server, [request(1, "ping")])
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [unread(server, -32600, Contains("batch", "before initialize"))]


def test_empty_batch_refused() -> None:
    server = ready_server(V2025_03_26)
    events = send(server, [])
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [unread(server, -32600, "Invalid Request: empty batch.")]


def test_batch_of_notifications_only_gets_no_answer() -> None:
    server = ready_server(V2025_03_26)
    events = send(
        server,
        [notification("notifications/roots/list_changed"), notification("notifications/x")],
    )
    assert events == [
        NotificationReceived("notifications/roots/list_changed", {}),
        NotificationReceived("notifications/x", {}),
    ]
    assert server.data_to_send() == b""


def test_batch_with_invalid_elements_answers_each() -> None:
    server = ready_server(V2025_03_26)
    batch = [
        1,
        {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
        request(3, "no/such"),
        request(4, "ping"),
    ]
    events = send(server, batch)
    assert norm(events) == [("violation", -32600), ("violation", -32600), ("violation", -32601)]
    assert wire(server) == [
        [error(None, -32600), error(None, -32600), error(3, -32601), result(4, {})]
    ]


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.mark.parametrize(
    "first",
    [
        request(1, "nope/x"),  # -32601
        request(1, "sampling/createMessage"),  # a server->client method: -32601
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},  # bad envelope, readable id
        request(1, "tools/list", {"_meta": MODERN_META}),  # a 2026-07-28 request
    ],
    ids=["unknown-method", "wrong-direction", "bad-envelope", "modern"],
)
def test_batch_answer_is_named_by_its_first_request_id(first: dict[str, Any]) -> None:
    """Streamable HTTP opens a batch POST's stream under its first element's request id
    and routes the answer by ``Outgoing.related``. The connection named the batch after
    the first request it *accepted* (none for a 2026-07-28 one), so a batch opening with
    a refused request answered on no stream: the POST hung, the array went to the GET
    stream."""
    server = ready_server(V2025_03_26)
    events = server.receive_message([first, request(2, "tools/call", {"name": "slow"})])
    assert [type(e) for e in events][-1] is RequestReceived
    assert server.messages_to_send() == []  # waiting for the handler
    if "params" in first:  # the 2026-07-28 request reached the handler too
        assert server.send_result(1, {"tools": []}) is True
    assert server.send_result(2, {"content": []}) is True
    (out,) = server.messages_to_send()
    assert out.related == 1 and out.final
    assert [m["id"] for m in orjson.loads(out.data)] == [1, 2]


def test_batch_of_refusals_is_named_by_its_first_request_id() -> None:
    server = ready_server(V2025_03_26)
    server.receive_message([{"jsonrpc": "2.0", "method": 5}, request("x", "nope/x"),
                            request("y", "nope/y")])
    (out,) = server.messages_to_send()
    assert out.related == "x"
    assert [m["id"] for m in orjson.loads(out.data)] == [None, "x", "y"]


def test_batch_with_duplicate_id_inside() -> None:
    server = ready_server(V2025_03_26)
    events = send(server, [request(1, "tools/list"), request(1, "tools/list")])
    assert norm(events) == [RequestReceived(1, "tools/list", {}), ("violation", -32600)]
    assert server.data_to_send() == b""
    server.send_result(1, {"tools": []})
    assert wire(server) == [[error(1, -32600), result(1, {"tools": []})]]


def test_cancelled_request_left_out_of_batch_answer() -> None:
    server = ready_server(V2025_03_26)
    send(server, [request("a", "tools/list"), request("b", "tools/call", {"name": "t"})])
    events = send(server, notification("notifications/cancelled", {"requestId": "a"}))
    assert events == [CancelRequested("a", None)]
    assert server.data_to_send() == b""
    assert server.send_result("a", {"tools": []}) is False
    server.send_result("b", {"content": []})
    assert wire(server) == [[result("b", {"content": []})]]


def test_cancelled_last_pending_request_flushes_batch() -> None:
    server = ready_server(V2025_03_26)
    send(server, [request("a", "tools/list"), request("b", "tools/list")])
    server.send_result("a", {"tools": []})
    assert server.data_to_send() == b""
    assert send(server, notification("notifications/cancelled", {"requestId": "b"})) == [
        CancelRequested("b", None)
    ]
    assert wire(server) == [[result("a", {"tools": []})]]


def test_fully_cancelled_batch_sends_nothing() -> None:
    server = ready_server(V2025_03_26)
    send(server, [request("a", "tools/list"), request("b", "tools/list")])
    send(server, notification("notifications/cancelled", {"requestId": "a"}))
    send(server, notification("notifications/cancelled", {"requestId": "b"}))
    assert server.data_to_send() == b""
    assert server.in_flight == 0


def test_cancel_inside_the_same_batch() -> None:
    server = ready_server(V2025_03_26)
    events = send(
        server,
        [
            request("a", "tools/list"),
            notification("notifications/cancelled", {"requestId": "a", "reason": "oops"}),
            request("b", "ping"),
        ],
    )
    assert events == [RequestReceived("a", "tools/list", {}), CancelRequested("a", "oops")]
    assert wire(server) == [[result("b", {})]]


def test_batch_of_responses_to_server_requests() -> None:
    _client, server = connect(V2025_03_26, client_caps={"roots": {}, "sampling": {}})
    r1 = server.send_request("roots/list")
    r2 = server.send_request("ping")
    wire(server)
    events = send(server, [result(r1, {"roots": []}), result(r2, {})])
    assert events == [ResponseReceived(r1, {"roots": []}), ResponseReceived(r2, {})]
    assert server.data_to_send() == b""


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("ready", [False, True], ids=["before-init", "after-init"])
@pytest.mark.parametrize(
    "line",
    [b"this is not json", b'{"jsonrpc":"2.0",', b"\xff\xfe", b'{"a":"\xc3\x28"}'],
    ids=["text", "truncated", "bad-utf8", "bad-utf8-in-string"],
)
def test_parse_error_answered_with_null_id_and_connection_keeps_working(
    ready: bool, line: bytes
) -> None:
    server = ready_server() if ready else make_server()
    events = server.receive_data(line + b"\n")
    assert norm(events) == [("violation", -32700)]
    assert wire(server) == [unread(server, -32700, Contains("Parse error"))]
    assert send(server, request(1, "ping")) == []
    assert wire(server) == [result(1, {})]


@pytest.mark.parametrize("obj", [42, "text", None, True])
def test_non_object_json_is_invalid_request(obj: Any) -> None:
    server = ready_server()
    assert norm(send(server, obj)) == [("violation", -32600)]
    assert wire(server) == [unread(server, -32600)]


def test_bad_envelope_answered_with_its_readable_id() -> None:
    server = ready_server()
    assert norm(send(server, {"jsonrpc": "1.0", "id": 5, "method": "ping"})) == [
        ("violation", -32600)
    ]
    assert wire(server) == [error(5, -32600, Contains('"jsonrpc"'))]


@pytest.mark.parametrize("rid", [None, 1.5, 1.0, True, {}, []])
def test_request_with_bad_id_answered_with_null_id(rid: Any) -> None:
    server = ready_server()
    assert norm(send(server, {"jsonrpc": "2.0", "id": rid, "method": "ping"})) == [
        ("violation", -32600)
    ]
    assert wire(server) == [unread(server, -32600)]
    assert server.in_flight == 0


@pytest.mark.parametrize("rid", [2**64, -(2**63) - 1])
@pytest.mark.parametrize("version", [V2025_06_18, V2025_11_25])
def test_decoded_id_past_64_bits_is_unreadable_not_a_crash(rid: int, version: str) -> None:
    """Handed to receive_message by a decoder other than orjson, such an id used to be
    accepted and then raised TypeError out of receive_message when echoed in the answer
    (orjson writes 64-bit integers only). Now it is unreadable, as its float is on the
    wire path: -32600 with id null (omitted in 2025-11-25)."""
    server = ready_server(version)
    events = server.receive_message({"jsonrpc": "2.0", "id": rid, "method": "ping"})
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [unread(server, -32600)]
    big = str(rid).encode()
    assert norm(server.receive_data(b'{"jsonrpc":"2.0","id":' + big + b',"method":"ping"}\n')
                ) == [("violation", -32600)]
    assert wire(server) == [unread(server, -32600)]
    assert server.receive_message(request(2**64 - 1, "ping")) == []
    assert wire(server) == [result(2**64 - 1, {})]


def test_initialize_with_client_info_orjson_cannot_write_is_still_served() -> None:
    """Sharing identical client info across sessions serializes it: an integer past 64
    bits (from another decoder) raised TypeError out of receive_message."""
    server = make_server()
    params = {"protocolVersion": V2025_11_25, "capabilities": {"x": 2**70},
              "clientInfo": {"name": "c", "version": "1", "build": 2**64}}
    events = server.receive_message(request(1, "initialize", params))
    assert [type(e) for e in events] == [SessionStarted]
    assert wire(server)[0]["result"]["protocolVersion"] == V2025_11_25
    assert server.peer_info["build"] == 2**64


def test_params_array_refused() -> None:
    server = ready_server()
    assert norm(send(server, request(1, "tools/list", [1, 2]))) == [("violation", -32600)]
    assert wire(server) == [error(1, -32600, Contains('"params"'))]


def test_oversized_line_is_invalid_request_and_connection_keeps_working() -> None:
    server = ready_server(max_message_size=200)
    big = orjson.dumps(request(1, "tools/call", {"name": "x", "arguments": {"s": "y" * 500}}))
    events = server.receive_data(big + b"\n" + orjson.dumps(request(2, "ping")) + b"\n")
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [
        unread(
            server,
            -32600,
            "Message too large: the limit is 200 bytes per message; send smaller messages.",
        ),
        result(2, {}),
    ]
    assert server.in_flight == 0


def test_oversized_line_across_several_feeds() -> None:
    server = ready_server(max_message_size=200)
    big = orjson.dumps(request(1, "tools/call", {"name": "x", "arguments": {"s": "y" * 500}}))
    events: list[Event] = []
    for i in range(0, len(big), 64):
        events += server.receive_data(big[i : i + 64])
    assert norm(events) == [("violation", -32600)]
    assert wire(server) == [unread(server, -32600, Contains("too large"))]
    events = server.receive_data(b"\n" + orjson.dumps(request(2, "ping")) + b"\n")
    assert events == []
    assert wire(server) == [result(2, {})]


def test_message_split_across_feeds() -> None:
    server = ready_server()
    data = orjson.dumps(request(1, "tools/list")) + b"\r\n"
    events: list[Event] = []
    for i in range(len(data)):
        events += server.receive_data(data[i : i + 1])
    assert events == [RequestReceived(1, "tools/list", {})]


def test_eof_delivers_unterminated_last_message() -> None:
    server = ready_server()
    assert server.receive_data(orjson.dumps(request(1, "ping"))) == []
    assert server.data_to_send() == b""
    assert server.receive_eof() == []
    assert wire(server) == [result(1, {})]


def test_several_messages_in_one_feed_give_ordered_events() -> None:
    server = make_server()
    events = send(
        server,
        initialize_request(1),
        notification("notifications/initialized"),
        request(2, "tools/list"),
        request(3, "ping"),
    )
    assert [type(e) for e in events] == [SessionStarted, SessionReady, RequestReceived]
    assert [m["id"] for m in wire(server)] == [1, 3]


def test_receive_message_takes_decoded_values() -> None:
    server = make_server()
    assert [type(e) for e in server.receive_message(initialize_request(1))] == [SessionStarted]
    (out,) = server.messages_to_send()
    assert out.related == 1
    assert orjson.loads(out.data)["result"]["protocolVersion"] == V2025_11_25


def test_fail_pending_forgets_outbound_requests() -> None:
    client, _server = connect()
    r1 = client.send_request("tools/list")
    r2 = client.send_request("ping")
    assert client.fail_pending() == [r1, r2]
    assert client.state is State.CLOSED
    assert send(client, result(r1, {"tools": []})) == []


# ---------------------------------------------------------------------------- compat

FULL_TOOL: dict[str, Any] = {
    "name": "get_weather",
    "title": "Get weather",
    "description": "Forecast for a city.",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    "outputSchema": {"type": "object", "properties": {"temp": {"type": "number"}}},
    "annotations": {"readOnlyHint": True, "openWorldHint": True},
    "icons": [{"src": "https://example.com/sun.png", "mimeType": "image/png"}],
    "execution": {"taskSupport": "optional"},
    "_meta": {"com.example/owner": "weather-team"},
}


def _tool_keys(*keys: str) -> dict[str, Any]:
    return {k: FULL_TOOL[k] for k in keys}


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (V2024_11_05, _tool_keys("name", "description", "inputSchema")),
        (V2025_03_26, _tool_keys("name", "description", "inputSchema", "annotations")),
        (
            V2025_06_18,
            _tool_keys(
                "name",
                "title",
                "description",
                "inputSchema",
                "outputSchema",
                "annotations",
                "_meta",
            ),
        ),
        (V2025_11_25, FULL_TOOL),
    ],
)
def test_tools_list_result_is_stripped_for_revision(version: str, expected: dict[str, Any]) -> None:
    client, server = connect(version)
    rid = client.send_request("tools/list", {})
    pump(client, server)
    server.send_result(rid, {"tools": [FULL_TOOL], "nextCursor": "c2"})
    value = {"tools": [expected], "nextCursor": "c2"}
    assert transfer(server, client) == ([result(rid, value)], [ResponseReceived(rid, value)])


AUDIO = {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
LINK = {"type": "resource_link", "uri": "file:///report.pdf", "name": "report"}
TEXT = {"type": "text", "text": "Sunny"}


@pytest.mark.parametrize(
    ("version", "content", "structured"),
    [
        (
            V2024_11_05,
            [
                TEXT,
                {
                    "type": "text",
                    "text": "[audio content (audio/wav) omitted: protocol revision 2024-11-05 "
                    "cannot carry audio]",
                },
                {"type": "text", "text": "Resource link: file:///report.pdf (report)"},
            ],
            False,
        ),
        (
            V2025_03_26,
            [TEXT, AUDIO, {"type": "text", "text": "Resource link: file:///report.pdf (report)"}],
            False,
        ),
        (V2025_06_18, [TEXT, AUDIO, LINK], True),
        (V2025_11_25, [TEXT, AUDIO, LINK], True),
    ],
)
def test_tools_call_result_is_adapted_for_revision(
    version: str, content: list[dict[str, Any]], structured: bool
) -> None:
    client, server = connect(version)
    rid = client.send_request("tools/call", {"name": "get_weather"})
    pump(client, server)
    full = {"content": [TEXT, AUDIO, LINK], "structuredContent": {"temp": 21}, "isError": False}
    server.send_result(rid, full)
    expected: dict[str, Any] = {"content": content, "isError": False}
    if structured:
        expected["structuredContent"] = {"temp": 21}
    (msg,) = wire(server)
    assert msg == result(rid, expected)


def test_compat_does_not_touch_unrelated_results() -> None:
    client, server = connect(V2024_11_05)
    rid = client.send_request("ping")
    pump(client, server)  # answered by the connection
    assert pump(server, client) == [ResponseReceived(rid, {})]
    rid = client.send_request("completion/complete", {"ref": {}, "argument": {}})
    pump(client, server)
    value = {"completion": {"values": ["a"], "total": 1, "hasMore": False}}
    server.send_result(rid, value)
    assert wire(server) == [result(rid, value)]
