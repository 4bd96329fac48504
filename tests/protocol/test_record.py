"""``Record``, the base of mcpkit's small value classes (``mcpkit.protocol.record``).

Tests everywhere compare events with ``==`` and read them in failure messages, so what a
record promises is checked here on the real ones (``protocol.events``,
``protocol.jsonrpc``): equality field by field and only within one type (an event is
never equal to the envelope with the same fields), a ``repr`` naming every field, no
hash (records are mutable), and copies and pickles that keep every field.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from mcpkit.protocol.events import (
    CancelRequested,
    ProgressReceived,
    RequestReceived,
    ResponseReceived,
    SessionReady,
)
from mcpkit.protocol.jsonrpc import Response


def test_equality_is_field_by_field() -> None:
    assert RequestReceived(7, "tools/list", {}) == RequestReceived(7, "tools/list", {})
    assert RequestReceived(7, "tools/list", {}) != RequestReceived(8, "tools/list", {})
    assert RequestReceived(7, "tools/list", {}) != RequestReceived(7, "tools/list", {"a": 1})
    assert CancelRequested(1, None) != CancelRequested(1, "stop")
    assert SessionReady() == SessionReady()  # no fields: all of them equal


def test_records_of_two_types_are_never_equal() -> None:
    """``ResponseReceived`` and ``Response`` have the same fields (``id``, ``result``)."""
    assert ResponseReceived.__slots__ == Response.__slots__
    assert ResponseReceived(1, {}) != Response(1, {})
    assert Response(1, {}) != ResponseReceived(1, {})
    assert ResponseReceived(1, {}) != (1, {})
    assert [ResponseReceived(1, {})].count(Response(1, {})) == 0


def test_repr_names_every_field() -> None:
    event = ProgressReceived(request_id="tok", progress=0.5, total=1.0, message="half")
    assert repr(event) == ("ProgressReceived(message='half', progress=0.5, "
                           "request_id='tok', total=1.0)")
    assert repr(SessionReady()) == "SessionReady()"


def test_a_record_is_not_hashable() -> None:
    with pytest.raises(TypeError, match="unhashable"):
        hash(ResponseReceived(1, {}))


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copies_keep_every_field(how: str) -> None:
    event = RequestReceived("r-1", "tools/call", {"name": "echo", "arguments": {"x": [1]}})
    if how == "copy":
        twin = copy.copy(event)
    elif how == "deepcopy":
        twin = copy.deepcopy(event)
    else:
        twin = pickle.loads(pickle.dumps(event))
    assert twin == event and twin is not event and type(twin) is RequestReceived
    assert (twin.id, twin.method, twin.params) == (event.id, event.method, event.params)
    if how != "copy":
        twin.params["arguments"]["x"].append(2)
        assert event.params["arguments"]["x"] == [1]  # a deep copy shares nothing
