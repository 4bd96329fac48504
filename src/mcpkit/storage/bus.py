"""Delivery between the instances of one deployment that hold the same session.

With a shared session store, a session's pieces can be on several instances at once: the
client's GET stream on one, a handler waiting for an elicitation answer on another, the
POST carrying that answer on a third. A ``SessionBus`` carries a message to every
instance that ``listen``s for that session (each ignores what is not for it):

- ``ANSWER`` + a JSON-RPC response: the answer to a server-to-client request; the
  instance whose connection awaits that id takes it.
- ``NOTIFY`` + a JSON-RPC message: for the session's standalone GET stream; the instance
  holding it open writes it.
- ``ENDED``: the session was deleted; every instance drops its copy at once.
- ``CANCEL`` + a ``notifications/cancelled``: the client cancelled a request of the
  session; the instance running it takes it (behind a balancer the notification's POST
  may reach any instance).
- ``CHANGED`` + the token of the instance that saved it: the session's record changed
  (the log level, the end of the handshake); every other holder reads it again at its
  next request instead of trusting its recent check.

Deployment-wide changes go to ``DEPLOYMENT`` (a channel no session has), heard by every
instance: ``LIST_CHANGED`` + a ``notifications/*/list_changed`` method, ``UPDATED`` + a
resource URI (see ``mcpkit.server.sharing``), ``TASKS`` + JSON ``[origin, task id,
DetailedTask]``: a task's status changed (``notifications/tasks`` for the listen streams
watching it). ``TASK`` + JSON: a ``tasks/update`` or ``tasks/cancel`` carried to the
instance running the task, and its reply (``mcpkit.server.task_relay``).

Delivery is at most once and only to instances listening at the time (Redis pub/sub):
a message for a GET stream no instance holds open is dropped. Memory deployments have no
bus (one process holds everything).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

ANSWER = b"A"
NOTIFY = b"N"
ENDED = b"E"
CANCEL = b"X"
CHANGED = b"C"
LIST_CHANGED = b"L"
UPDATED = b"R"
TASK = b"T"
TASKS = b"K"
DEPLOYMENT = ""
"""The "session id" of deployment-wide messages (no session has an empty id)."""


class SessionBus(Protocol):
    """Messages between instances about one session (see the module docstring)."""

    async def publish(self, session_id: str, message: bytes) -> None:
        """Send ``message`` (a kind byte and its body) to every instance listening."""
        ...

    async def listen(self, session_id: str, deliver: Callable[[bytes], None]) -> None:
        """Call ``deliver`` (on this loop) with each message published for the session,
        from now until ``unlisten``."""
        ...

    async def unlisten(self, session_id: str) -> None:
        """Stop listening for the session."""
        ...


__all__ = ["ANSWER", "CANCEL", "CHANGED", "DEPLOYMENT", "ENDED", "LIST_CHANGED", "NOTIFY",
           "TASK", "TASKS", "UPDATED", "SessionBus"]
