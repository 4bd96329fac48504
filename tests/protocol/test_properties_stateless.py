"""2026-07-28 ``requestState``, property-based (``protocol/stateless.py``).

The server seals the answers gathered so far into ``requestState``; the client carries
it back verbatim on its retry. ``open_state`` gives the answers back for the exact
string sealed for this request (method and params, without ``_meta``,
``inputResponses`` and ``requestState``), and refuses anything else, whatever the
client sends, with ``InvalidParams`` only.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from mcpkit.protocol.errors import InvalidParams
from mcpkit.protocol.stateless import open_state, seal_state

KEY = b"k" * 32
text = st.text(max_size=6)
json_values = st.recursive(  # as orjson reads them from a request (64-bit integers)
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
methods = st.sampled_from(["tools/call", "prompts/get", "resources/read"])
params = st.dictionaries(st.sampled_from(["name", "uri", "arguments", "cursor"]), json_values,
                         max_size=3)
answers = st.dictionaries(text, json_values, max_size=3)
_EXTRAS = st.fixed_dictionaries({}, optional={"_meta": json_values,
                                              "inputResponses": json_values,
                                              "requestState": json_values})


def canonical(method: str, p: dict[str, Any]) -> bytes:
    return orjson.dumps([method, p], option=orjson.OPT_SORT_KEYS)


def refused(method: str, p: dict[str, Any], state: Any) -> bool:
    try:
        open_state(KEY, method, p, state)
    except InvalidParams:
        return True
    return False


@given(methods, params, answers, _EXTRAS, _EXTRAS)
def test_a_sealed_state_opens_for_its_request_whatever_its_extras(
    method: str, p: dict[str, Any], got: dict[str, Any], extra: dict[str, Any],
    retry_extra: dict[str, Any],
) -> None:
    state = seal_state(KEY, method, {**p, **extra}, got)
    assert open_state(KEY, method, {**p, **retry_extra}, state) == got


@given(methods, params, answers, st.data())
def test_any_change_to_a_sealed_state_is_refused(
    method: str, p: dict[str, Any], got: dict[str, Any], data: st.DataObject
) -> None:
    state = seal_state(KEY, method, p, got)
    # Anywhere, but often at the last character of either part (its spare bits) with a
    # base64 character, or a character a lax decoder skips.
    at = data.draw(st.sampled_from([len(state) - 1, state.index(".") - 1])
                   | st.integers(0, len(state) - 1))
    char = data.draw(st.sampled_from("ABCDEFGHQRSgw0-_+/=!*. \n") | st.characters(
        codec="utf-8"))
    if char == state[at]:  # not a change; chosen here, not by a filter, because the state
        char = "B" if char == "A" else "A"  # is random: a filter on it makes replays flaky
    edit = data.draw(st.sampled_from(["replace", "insert", "delete"]))
    if edit == "replace":
        changed = state[:at] + char + state[at + 1:]
    elif edit == "insert":
        changed = state[:at] + char + state[at:]
    else:
        changed = state[:at] + state[at + 1:]
    assert refused(method, p, changed)


@given(methods, params, methods, params, answers)
def test_a_state_sealed_for_another_request_is_refused(
    method: str, p: dict[str, Any], other_method: str, other: dict[str, Any],
    got: dict[str, Any],
) -> None:
    state = seal_state(KEY, other_method, other, got)
    same = canonical(method, p) == canonical(other_method, other)  # 1 and 1.0 differ
    assert refused(method, p, state) != same
    assert refused(method, p, seal_state(b"another key", method, p, got))


@given(methods, params, json_values | text.map(lambda t: t + "." + t) | st.text())
def test_anything_a_client_makes_up_is_refused_and_nothing_else_raised(
    method: str, p: dict[str, Any], state: Any
) -> None:
    assert refused(method, p, state)
