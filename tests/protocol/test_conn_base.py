"""``Connection`` is composed, not inherited: its fields are exactly those
``ConnectionState`` names, held in its own slots, and its methods are the parts'
functions, its properties too (no base class, no part objects, no forwarding call; a
``tools/call`` walks no code of ``connection.py``: see tests/test_walk.py)."""

from __future__ import annotations

import types

from mcpkit.protocol import answers, conn_base, handshake, inbound, outbound
from mcpkit.protocol.conn_base import ConnectionState
from mcpkit.protocol.connection import Connection
from mcpkit.protocol.lifecycle import Role

PARTS = (answers, conn_base, handshake, inbound, outbound)


def test_connection_inherits_nothing_and_slots_exactly_the_shared_fields() -> None:
    assert Connection.__mro__ == (Connection, object)
    fields = set(ConnectionState.__annotations__)
    assert set(Connection.__slots__) == fields
    conn = Connection(Role.SERVER, info={"name": "s", "version": "1"})
    assert not hasattr(conn, "__dict__")
    for name in fields:  # every field is set by __init__
        getattr(conn, name)


def test_every_method_and_property_is_a_part_function_taken_up_as_is() -> None:
    methods = {name: value for name, value in vars(Connection).items()
               if isinstance(value, types.FunctionType) and not name.startswith("__")}
    methods |= {name: value.fget for name, value in vars(Connection).items()
                if isinstance(value, property)}
    assert {"receive_data", "send_result", "send_request", "start_handshake",
            "data_to_send", "state", "queued"} <= set(methods)
    for name, fn in methods.items():
        part = next(p for p in PARTS if p.__name__ == fn.__module__)
        assert getattr(part, name) is fn, name
