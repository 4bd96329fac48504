"""``Record``: the base of mcpkit's small value classes (events, envelopes, content).

A record lists its fields in ``__slots__`` and assigns them in an ordinary ``__init__``;
this base adds a ``repr`` and field-by-field equality. It replaces ``@dataclass``, whose
class construction (code generated and compiled per class, twice with ``slots=True``)
cost ~0.65 ms a class, about 17 ms of every server's start-up for the ~26 records that
load before the first message is read.
"""

from __future__ import annotations

from typing import Any


class Record:
    """Slots, a ``repr`` naming every field, and equality of same-type records."""

    __slots__: tuple[str, ...] = ()

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass with eq

    def __getstate__(self) -> dict[str, Any]:  # pickle and copy: slots have no __dict__
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
