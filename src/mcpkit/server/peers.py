"""Who hears about changes: the live sessions, their resource subscriptions, and the open
``subscriptions/listen`` streams.

A stateful session (stdio, memory, Streamable HTTP, HTTP+SSE) is tracked from the moment
its transport opens it until it ends, and gets every ``list_changed`` plus
``resources/updated`` for the URIs it subscribed to. A listen stream (2026-07-28) gets
only the notifications its request asked for, each tagged with the stream's subscription
id and related to that request (over HTTP it travels on the listen request's response).

Several instances of one deployment (``asgi_app(store="redis://...")``, see ``sharing``):
a change is *announced* to every instance, this one included, and each delivers it to what
it holds: its listen streams, the sessions subscribed here to an updated resource, and
for ``list_changed`` the sessions whose GET stream is open here (``reaches``), so a
session held by several instances hears it once.

What mcpkit keeps about a session is a ``Peer`` of typed slots, never the
``ctx.session_state`` dict its handlers get: a handler may write, overwrite or clear any
key there without touching mcpkit's bookkeeping.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import anyio

from ..protocol.jsonrpc import RequestId
from ..protocol.stateless import SUBSCRIPTION_ID
from ..session import Session

JSON = dict[str, Any]

LISTEN_FLAGS: Final = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}
"""list_changed notification -> the ``subscriptions/listen`` flag that asks for it."""


class Peer:
    """mcpkit's own record of one live stateful session."""

    __slots__ = ("subscriptions",)

    def __init__(self) -> None:
        self.subscriptions: set[str] = set()  # URIs of resources/subscribe


class Peers:
    """The sessions and listen streams a server notifies (see the module docstring)."""

    def __init__(self) -> None:
        self._live: dict[Session, Peer] = {}
        #: Open listen streams: (session, request id) -> what the server agreed to send.
        self.listening: dict[tuple[Session, RequestId], JSON] = {}
        #: Shared deployments: ``announce(kind, value)`` sends a change ("list_changed" and
        #: a method, or "resource_updated" and a URI) to every instance (False: it could
        #: not, deliver here); ``reaches(session)``: whether this instance writes a
        #: ``list_changed`` to that session.
        self.announce: Callable[[str, str], bool] | None = None
        self.reaches: Callable[[Session], bool] | None = None
        #: Called with the URI of every resource update first: a server mounting this
        #: one passes it on with the URI it serves it at (mount.py).
        self.relays: list[Callable[[str], None]] = []
        #: Told the method of every ``list_changed`` delivered here (a list cache).
        self.list_watchers: list[Callable[[str], None]] = []

    def track(self, session: Session, opened: bool) -> None:
        """A transport opened (True) or ended (False) a stateful session."""
        if opened:
            self._live[session] = Peer()
        else:
            self._live.pop(session, None)

    def subscribe(self, session: Session, uri: str) -> None:
        """Send ``session`` the updates of ``uri`` (a session no transport tracks, which
        could never be notified, is not recorded)."""
        peer = self._live.get(session)
        if peer is not None:
            peer.subscriptions.add(uri)

    def unsubscribe(self, session: Session, uri: str) -> None:
        peer = self._live.get(session)
        if peer is not None:
            peer.subscriptions.discard(uri)

    async def listen(self, session: Session, rid: RequestId, honoured: JSON) -> JSON:
        """Acknowledge a listen request with what it will get, then keep it open (its
        notifications are sent by ``list_changed``/``resource_updated``) until the client
        ends it."""
        key = (session, rid)
        self.listening[key] = honoured
        try:
            session.notify("notifications/subscriptions/acknowledged",
                           {"_meta": {SUBSCRIPTION_ID: rid}, "notifications": honoured},
                           related=rid)
            await anyio.sleep_forever()
            return {}  # pragma: no cover - only ends by cancellation
        finally:
            self.listening.pop(key, None)

    def list_changed(self, method: str) -> None:
        """Send ``method`` (a ``notifications/*/list_changed``) to the listen streams that
        asked for it and to every live session (announced to every instance, when
        shared)."""
        if self.announce is not None and self.announce("list_changed", method):
            return
        self.heard_list_changed(method)

    def heard_list_changed(self, method: str, *, sessions: bool = True) -> None:
        """Deliver a ``list_changed`` (announced, or made here) to what this instance
        holds (``sessions=False``: to its watchers and listen streams only)."""
        for watcher in self.list_watchers:
            watcher(method)
        flag = LISTEN_FLAGS.get(method)
        for (session, rid), honoured in list(self.listening.items()):
            if flag is not None and honoured.get(flag):
                session.notify(method, {"_meta": {SUBSCRIPTION_ID: rid}}, related=rid)
        if not sessions:
            return
        reaches = self.reaches
        for session in list(self._live):
            if reaches is None or reaches(session):
                session.notify(method)

    def resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` for ``uri`` to the sessions subscribed
        to it and the listen streams watching it (on every instance, when shared)."""
        for relay in self.relays:
            relay(uri)
        if self.announce is not None and self.announce("resource_updated", uri):
            return
        self.heard_resource_updated(uri)

    def heard_resource_updated(self, uri: str) -> None:
        """Deliver a resource update to the sessions subscribed here and this instance's
        listen streams watching it."""
        for session, peer in list(self._live.items()):
            if uri in peer.subscriptions:
                session.notify("notifications/resources/updated", {"uri": uri})
        for (session, rid), honoured in list(self.listening.items()):
            if uri in honoured.get("resourceSubscriptions", ()):
                session.notify("notifications/resources/updated",
                               {"uri": uri, "_meta": {SUBSCRIPTION_ID: rid}}, related=rid)

    def task_changed(self, task_id: str, params: Callable[[], JSON]) -> None:
        """Send ``notifications/tasks`` (the DetailedTask ``params()``) to the listen
        streams that asked for ``task_id`` (2026-07-28 tasks extension): here at once (in
        order), and announced to the other instances when shared. ``params`` is called
        at most once, and only when a stream here listens or the deployment is shared."""
        built: list[JSON] = []

        def detailed() -> JSON:
            if not built:
                built.append(params())
            return built[0]

        self._deliver_task(task_id, detailed)
        if self.announce is not None:
            self.announce("tasks", json.dumps([task_id, detailed()]))

    def heard_task_changed(self, task_id: str, params: JSON) -> None:
        """Deliver ``notifications/tasks`` announced by another instance to this
        instance's listen streams."""
        self._deliver_task(task_id, lambda: params)

    def _deliver_task(self, task_id: str, detailed: Callable[[], JSON]) -> None:
        """Notify this instance's listen streams that asked for ``task_id``."""
        for (session, rid), honoured in list(self.listening.items()):
            if task_id in honoured.get("taskIds", ()):
                session.notify("notifications/tasks",
                               {**detailed(), "_meta": {SUBSCRIPTION_ID: rid}}, related=rid)
