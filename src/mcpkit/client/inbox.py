"""What a server sends the client unasked: its requests and its notifications.

``Inbox.answer`` serves the server's requests (sampling, elicitation, roots): the 2025-11-25
task-augmented ones run as tasks of the client (``TaskHost``), the rest are answered by
the caller's ``Handlers``; a method nobody handles is -32601. ``Inbox.notification``
routes each notification to whoever waits for it: the open ``listen`` streams, the task
handles waiting on a status, the log callback, the cached output schemas (forgotten when
the tools change), the cache of list and read results (``cache``: what a change makes
stale) and the caller's ``on_notification``.
"""

from __future__ import annotations

from ..protocol.connection import NotificationReceived, RequestReceived
from ..protocol.errors import MethodNotFound
from ..protocol.tasks import client_accepts
from ..session import HandlerResult, Ready, Session
from .cache import CacheView
from .handlers import Handlers, LogHandler, NotificationHandler
from .listen import Listens
from .results import OutputSchemas
from .task_host import TaskHost
from .tasks import TaskWatchers


class Inbox:
    """The client's side of what the server sends on its own (see the module docstring)."""

    __slots__ = ("cache", "handlers", "listens", "on_log", "on_notification", "outputs",
                 "task_host", "task_watchers")

    def __init__(self, handlers: Handlers, task_host: TaskHost, listens: Listens,
                 task_watchers: TaskWatchers, outputs: OutputSchemas, cache: CacheView,
                 on_log: LogHandler | None, on_notification: NotificationHandler | None
                 ) -> None:
        self.handlers = handlers
        self.task_host = task_host
        self.listens = listens
        self.task_watchers = task_watchers
        self.outputs = outputs
        self.cache = cache
        self.on_log = on_log
        self.on_notification = on_notification

    def answer(self, session: Session, event: RequestReceived) -> HandlerResult:
        """The client's answer to the server's request ``event``."""
        method, params = event.method, event.params
        hosted = self.task_host.answer(session, method, params)
        if hosted is not None:
            return hosted
        answer = self.handlers.answer(method, params)
        if answer is not None and "task" in params and client_accepts(
                session.conn.capabilities, method):
            return Ready(self.task_host.start(session, method, params, answer))
        if answer is None:
            raise MethodNotFound(
                f"Method not found: this client does not handle '{event.method}'.")
        return answer

    async def notification(self, session: Session, event: NotificationReceived) -> None:
        """Route the server's notification ``event`` (see the module docstring)."""
        self.cache.notified(event.method, event.params)  # first: stale before it is told
        self.listens.route(event)
        await self.task_watchers.route(event.method, event.params)
        if event.method == "notifications/message" and self.on_log is not None:
            res = self.on_log(event.params)
            if res is not None:
                await res
        if event.method == "notifications/tools/list_changed":
            self.outputs.forget()
        if self.on_notification is not None:
            res = self.on_notification(event.method, event.params)
            if res is not None:
                await res
