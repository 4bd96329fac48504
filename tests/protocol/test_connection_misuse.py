"""Misuse of a ``Connection`` by its caller raises ``LocalProtocolError`` and changes
nothing; races the peer is entitled to (it cancels a request we are answering) do not.

Helpers come from ``test_connection`` (a client and a server wired back to back).
"""

from __future__ import annotations

import pytest

from mcpkit import LocalProtocolError as PublicLocalProtocolError
from mcpkit.protocol.conn_base import _CANCELLED_KEPT
from mcpkit.protocol.connection import RequestReceived
from mcpkit.protocol.errors import InvalidParams, LocalProtocolError, MCPError, ProtocolError
from mcpkit.protocol.lifecycle import State

from .test_connection import (
    connect,
    make_client,
    make_server,
    notification,
    ready_server,
    request,
    result,
    send,
    wire,
)


def test_local_protocol_error_is_an_mcp_error_and_a_value_error() -> None:
    assert PublicLocalProtocolError is LocalProtocolError
    assert issubclass(LocalProtocolError, MCPError)
    assert issubclass(LocalProtocolError, ValueError)  # what these misuses raised before
    assert not issubclass(LocalProtocolError, ProtocolError)  # never sent to the peer


def test_answering_a_request_never_received_raises() -> None:
    server = ready_server()
    for answer in (lambda: server.send_result(99, {}),
                   lambda: server.send_error(99, InvalidParams("x"))):
        with pytest.raises(LocalProtocolError, match="99"):
            answer()
    assert server.data_to_send() == b""


def test_answering_twice_raises_and_sends_once() -> None:
    server = ready_server()
    send(server, request(5, "tools/list"))
    assert server.send_result(5, {"tools": []}) is True
    with pytest.raises(LocalProtocolError, match="already answered"):
        server.send_result(5, {"tools": []})
    assert wire(server) == [result(5, {"tools": []})]


def test_a_late_answer_to_a_cancelled_request_is_dropped_quietly() -> None:
    server = ready_server()
    send(server, request(5, "tools/call", {"name": "slow"}))
    send(server, notification("notifications/cancelled", {"requestId": 5}))
    assert server.send_result(5, {"content": []}) is False
    assert server.send_error(5, InvalidParams("late")) is False
    assert server.data_to_send() == b""


def test_a_reused_id_after_cancellation_is_answered_normally() -> None:
    server = ready_server()
    send(server, request(5, "tools/list"))
    send(server, notification("notifications/cancelled", {"requestId": 5}))
    assert send(server, request(5, "tools/list")) == [RequestReceived(5, "tools/list", {})]
    assert server.send_result(5, {"tools": []}) is True
    assert wire(server) == [result(5, {"tools": []})]
    with pytest.raises(LocalProtocolError):
        server.send_result(5, {"tools": []})


def test_cancelled_ids_are_remembered_up_to_a_bound() -> None:
    server = ready_server()
    total = _CANCELLED_KEPT + 10
    for rid in range(total):
        send(server, request(rid, "tools/list"),
             notification("notifications/cancelled", {"requestId": rid}))
    assert server.send_result(total - 1, {}) is False  # recent: dropped quietly
    with pytest.raises(LocalProtocolError):
        server.send_result(0, {})  # long forgotten
    assert server.data_to_send() == b""


def test_requests_before_the_handshake_allows_them_raise() -> None:
    client = make_client()
    with pytest.raises(LocalProtocolError, match="handshake state new"):
        client.send_request("tools/list")
    assert client.data_to_send() == b""
    server = make_server()
    with pytest.raises(LocalProtocolError, match="only a client"):
        server.start_handshake()


def test_initialized_notification_out_of_turn_raises() -> None:
    client, _ = connect()
    with pytest.raises(LocalProtocolError, match="notifications/initialized"):
        client.send_notification("notifications/initialized")
    with pytest.raises(LocalProtocolError, match="notifications/initialized"):
        make_client().send_notification("notifications/initialized")
    assert client.data_to_send() == b""
    assert client.state is State.READY


def test_filtered_notifications_still_return_false() -> None:
    """Not misuse: a server announces changes to every session, each keeps what its
    peer can take (here: no session yet, and a capability not declared)."""
    assert make_server().send_notification("notifications/tools/list_changed") is False
    _, server = connect(server_caps={"tools": {}})
    assert server.send_notification("notifications/tools/list_changed") is False


def test_a_progress_token_in_use_raises_and_changes_nothing() -> None:
    client, _ = connect()
    meta = {"_meta": {"progressToken": "t"}}
    first = client.send_request("tools/call", {"name": "a", **meta})
    client.data_to_send()
    with pytest.raises(LocalProtocolError, match="already in use"):
        client.send_request("tools/call", {"name": "b", **meta})
    assert client.data_to_send() == b""
    assert client.send_request("ping") == first + 1  # no id was used up


def test_unknown_log_level_raises() -> None:
    _, server = connect()
    with pytest.raises(LocalProtocolError, match="unknown log level"):
        server.send_log("loud", "x")


def test_restoring_an_unknown_revision_raises_a_value_error_too() -> None:
    server = make_server()
    with pytest.raises(LocalProtocolError, match="1999-01-01"):
        server.restore({"version": "1999-01-01"})
    with pytest.raises(ValueError):  # what transports catch
        server.restore({})
    assert server.revision is None and server.state is State.NEW


def test_cancel_request_races_return_false() -> None:
    client, server = connect()
    rid = client.send_request("tools/list")
    server.receive_data(client.data_to_send())
    server.send_result(rid, {"tools": []})
    client.receive_data(server.data_to_send())
    assert client.cancel_request(rid) is False  # answered first: not an error
    assert client.data_to_send() == b""
