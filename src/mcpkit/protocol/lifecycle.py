"""The handshake state machine of the stateful era, written as a literal table.

Invariants:
- Server: only ``initialize`` and ``ping`` before the handshake; after ``initialize`` is
  answered, only ``ping`` (and notifications) until ``notifications/initialized``; a second
  ``initialize`` is refused in every later state.
- Client: only ``ping`` before the ``initialize`` result; then ``notifications/initialized``
  is sent and normal operation starts.
- Anything the table does not list for a state is a protocol error.
"""

from __future__ import annotations

from enum import Enum
from typing import Final


class Role(Enum):
    CLIENT = "client"
    SERVER = "server"

    # Members are singletons compared by identity: hash them by identity too (Enum's own
    # __hash__ is Python code, and these are table keys on every message).
    __hash__ = object.__hash__


class State(Enum):
    NEW = "new"  # nothing exchanged yet
    INITIALIZING = "initializing"  # initialize sent/answered, initialized not yet sent/seen
    READY = "ready"  # normal operation
    CLOSED = "closed"

    __hash__ = object.__hash__  # see Role


# {role: {state: {event: next_state}}}: the events that move the handshake forward.
TRANSITIONS: Final[dict[Role, dict[State, dict[str, State]]]] = {
    Role.SERVER: {
        State.NEW: {"recv:initialize": State.INITIALIZING},
        State.INITIALIZING: {"recv:notifications/initialized": State.READY},
        State.READY: {},
    },
    Role.CLIENT: {
        State.NEW: {"send:initialize": State.INITIALIZING},
        State.INITIALIZING: {"send:notifications/initialized": State.READY},
        State.READY: {},
    },
}

# {role: {state: requests the *peer* may send us in that state}}; None = any.
PEER_REQUESTS_ALLOWED: Final[dict[Role, dict[State, frozenset[str] | None]]] = {
    Role.SERVER: {
        State.NEW: frozenset({"initialize", "ping"}),
        State.INITIALIZING: frozenset({"ping"}),
        State.READY: None,
        State.CLOSED: frozenset(),
    },
    Role.CLIENT: {
        # A server may ping, and may send requests once it has our initialize.
        State.NEW: frozenset({"ping"}),
        State.INITIALIZING: None,
        State.READY: None,
        State.CLOSED: frozenset(),
    },
}

# {role: {state: requests *we* may send in that state}}; None = any.
OWN_REQUESTS_ALLOWED: Final[dict[Role, dict[State, frozenset[str] | None]]] = {
    Role.SERVER: {
        State.NEW: frozenset({"ping"}),
        State.INITIALIZING: frozenset({"ping"}),
        State.READY: None,
        State.CLOSED: frozenset(),
    },
    Role.CLIENT: {
        State.NEW: frozenset({"initialize", "ping"}),
        State.INITIALIZING: frozenset({"ping"}),
        State.READY: None,
        State.CLOSED: frozenset(),
    },
}


class Lifecycle:
    """Tracks one side's handshake state."""

    __slots__ = ("role", "state")

    def __init__(self, role: Role) -> None:
        self.role = role
        self.state = State.NEW

    def advance(self, event: str) -> bool:
        """Apply ``event`` (``"recv:<method>"`` / ``"send:<method>"``); True if it moved."""
        nxt = TRANSITIONS[self.role].get(self.state, {}).get(event)
        if nxt is None:
            return False
        self.state = nxt
        return True

    def peer_may_request(self, method: str) -> bool:
        if method == "initialize" and self.role is Role.SERVER and self.state is not State.NEW:
            return False  # once per session: refused in every later state, READY included
        allowed = PEER_REQUESTS_ALLOWED[self.role][self.state]
        return allowed is None or method in allowed

    def may_request(self, method: str) -> bool:
        allowed = OWN_REQUESTS_ALLOWED[self.role][self.state]
        return allowed is None or method in allowed

    def close(self) -> None:
        self.state = State.CLOSED
