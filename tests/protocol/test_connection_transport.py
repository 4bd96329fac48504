"""What a message-level transport (the HTTP client) gets from a ``Connection``: outgoing
records that say what they carry, abandoning a request whose answer cannot come, and
starting a lost session again on the same revision. No event loop, as in
``test_connection``, whose helpers are reused."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcpkit.protocol.connection import HandshakeFailed, ResponseReceived, SessionStarted
from mcpkit.protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    InvalidParams,
    LocalProtocolError,
)
from mcpkit.protocol.jsonrpc import id_in_use
from mcpkit.protocol.lifecycle import State
from mcpkit.protocol.versions import V2025_06_18, V2025_11_25

from .test_connection import (
    SERVER_CAPS,
    connect,
    error,
    make_client,
    notification,
    ready_client,
    ready_server,
    request,
    result,
    send,
    wire,
)


def init_result(version: str = V2025_11_25, **extra: Any) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": SERVER_CAPS,
            "serverInfo": {"name": "raw", "version": "0"}, **extra}


# ---------------------------------------------------------------------------- Outgoing


def test_outgoing_says_what_it_carries_without_reading_data() -> None:
    client, server = connect()
    params = {"name": "add", "arguments": {"a": 1}}
    rid = client.send_request("tools/call", params)
    assert client.cancel_request(rid, "no longer needed")
    client.send_notification("notifications/roots/list_changed")
    request_out, cancel_out, note_out = client.messages_to_send()
    assert (request_out.method, request_out.id, request_out.params) == ("tools/call", rid, params)
    assert orjson.loads(request_out.data) == request(rid, "tools/call", params)
    assert (cancel_out.method, cancel_out.id) == ("notifications/cancelled", None)
    assert cancel_out.params == {"requestId": rid, "reason": "no longer needed"}
    assert (note_out.method, note_out.id, note_out.params) == (
        "notifications/roots/list_changed", None, None)
    # an answer names no method: it is ``related`` to the request it ends
    ping = server.send_request("ping")
    client.receive_data(server.data_to_send())
    (answer,) = client.messages_to_send()
    assert (answer.method, answer.id, answer.related, answer.final) == (None, None, ping, True)


def test_an_error_answer_carries_its_code_and_a_result_none() -> None:
    # (what a Streamable HTTP stateless answer's status is decided by)
    server = ready_server()
    send(server, request(1, "tools/list"), request(2, "no/such"), request(1, "tools/list"))
    send(server, request(3, "tools/list"))
    server.send_error(1, InvalidParams("Invalid params: no."))
    server.send_result(3, {"tools": []})
    outs = {(out.related, orjson.loads(out.data).get("error", {}).get("message")): out.error
            for out in server.messages_to_send()}
    assert outs == {
        (2, "Method not found: 'no/such' does not exist in protocol revision 2025-11-25."):
            METHOD_NOT_FOUND,  # refused by the connection
        (1, id_in_use(1).message): INVALID_REQUEST,  # refused by the connection
        (1, "Invalid params: no."): INVALID_PARAMS,  # answered by the handler
        (3, None): None,
    }


# ---------------------------------------------------------------------------- abandon


def test_abandoned_request_is_forgotten_and_its_late_answer_ignored() -> None:
    client = ready_client()
    rid = client.send_request("tools/list", {"_meta": {"progressToken": "t"}})
    wire(client)
    assert client.abandon_request(rid) == "tools/list"
    assert client.abandon_request(rid) is None  # no longer pending
    assert wire(client) == []  # nothing is sent to the peer
    assert send(client, result(rid, {"tools": []})) == []
    # its progress token is free again
    client.send_request("tools/list", {"_meta": {"progressToken": "t"}})


def test_abandoning_the_first_initialize_ends_the_handshake() -> None:
    client = make_client()
    rid = client.start_handshake()
    assert client.abandon_request(rid) == "initialize"
    assert client.state is State.CLOSED


# ---------------------------------------------------------------------------- renewal


def test_renewal_offers_the_negotiated_revision_and_updates_the_peer() -> None:
    client = ready_client(V2025_06_18)
    first = client.send_request("tools/list")
    wire(client)
    rid = client.start_renewal()
    (init,) = wire(client)
    assert init == request(rid, "initialize", {
        "protocolVersion": V2025_06_18, "capabilities": client.capabilities,
        "clientInfo": client.info})
    assert client.state is State.READY  # other requests go on meanwhile
    client.send_request("ping")
    wire(client)
    caps = {"tools": {}}
    events = send(client, result(rid, {**init_result(V2025_06_18), "capabilities": caps,
                                       "instructions": "new session"}))
    assert [type(e) for e in events] == [SessionStarted]
    assert client.peer_capabilities == caps and client.peer_instructions == "new session"
    assert wire(client) == [notification("notifications/initialized")]
    assert client.state is State.READY
    # a request of the old session is still pending and may be answered
    assert send(client, result(first, {"tools": []})) == [ResponseReceived(first, {"tools": []})]


def test_renewal_on_another_revision_fails_and_closes() -> None:
    client = ready_client(V2025_06_18)
    rid = client.start_renewal()
    wire(client)
    (event,) = send(client, result(rid, init_result(V2025_11_25)))
    assert isinstance(event, HandshakeFailed) and V2025_11_25 in event.reason
    assert client.state is State.CLOSED
    assert wire(client) == []


def test_refused_renewal_fails_and_closes() -> None:
    client = ready_client()
    rid = client.start_renewal()
    wire(client)
    (event,) = send(client, error(rid, INTERNAL_ERROR, "no more sessions"))
    assert isinstance(event, HandshakeFailed) and "no more sessions" in event.reason
    assert client.state is State.CLOSED


def test_abandoned_renewal_leaves_the_session_as_it_was() -> None:
    client = ready_client()
    rid = client.start_renewal()
    assert client.abandon_request(rid) == "initialize"
    assert client.state is State.READY


@pytest.mark.parametrize("when", ["new", "initializing", "closed", "server"])
def test_renewal_needs_a_ready_client(when: str) -> None:
    client, server = connect()
    conn = server if when == "server" else client if when == "closed" else make_client()
    if when == "initializing":
        conn.start_handshake()
    elif when == "closed":
        conn.fail_pending()
    conn.messages_to_send()
    with pytest.raises(LocalProtocolError):
        conn.start_renewal()
    assert conn.messages_to_send() == []  # nothing was queued
