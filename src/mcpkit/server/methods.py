"""The MCP methods a server answers: method name -> a function of (session, request).

A function returns an awaitable of the result: ``Ready`` (the result now) when no user
code has to wait (listings, lookups, argument errors, tools that never wait: answered
inline, no task), a coroutine when it may (the session runs it in a task of its own, so a
cancellation stops exactly that request). Requests the
protocol core answers itself (``initialize``, ``ping``, ``logging/setLevel``,
``server/discover``) never get here.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from ..protocol.connection import NotificationReceived, RequestReceived
from ..protocol.errors import InvalidParams, MethodNotFound, ResourceNotFound
from ..protocol.versions import LATEST_STATEFUL
from ..session import HandlerResult, Ready, Session
from .context import Context
from .middleware import (
    Middleware,
    NotifyNext,
    Request,
    compose,
    compose_notifications,
    entry,
    terminal_of,
)
from .mrtr import StateSeal
from .peers import LISTEN_FLAGS, Peers
from .registry import Completer, Layers, Registry
from .resources import Resource, ResourceTemplate, check_uri
from .visibility import shows

if TYPE_CHECKING:
    from .app import Server
    from .task_calls import TaskCalls
    from .task_methods import TaskMethods
    from .task_runs import TaskManager

JSON = dict[str, Any]
Handler = Callable[[Session, RequestReceived], HandlerResult]

TASK_METHODS = ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update")
"""Answered by ``task_methods.TaskMethods``, loaded with the rest of the task machinery on
the first request that needs it (a server with no task tool never loads it, issue #28)."""


class Methods:
    """Answers a session's requests and notifications from a server's registries."""

    def __init__(self, server: Server, registry: Registry, peers: Peers,
                 seal: StateSeal, tasks: TaskManager | None = None) -> None:
        """``tasks``: where this table's tasks live (None: ``server.tasks``, made on first
        use)."""
        self._server = server  # what each request's Context carries
        self._registry = registry
        self._peers = peers
        self._seal = seal
        self._task_manager = tasks
        self._task_work: tuple[TaskCalls, TaskMethods] | None = None
        self._plain: dict[str, Handler] | None = None  # the table before middleware
        self._notify_chain: NotifyNext | None = None
        self._table: dict[str, Handler] = {
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/templates/list": self._templates_list,
            "resources/read": self._resources_read,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "prompts/list": self._prompts_list,
            "prompts/get": self._prompts_get,
            "completion/complete": self._complete,
            "subscriptions/listen": self._listen,
        }
        self._table.update(dict.fromkeys(TASK_METHODS, self._task_method))

    def _tasks(self) -> tuple[TaskCalls, TaskMethods]:
        """The task machinery over this table's task manager, made (and imported) on
        first use; the manager's changes are announced to the peers from then on (no
        task exists before: only this machinery makes them)."""
        if self._task_work is None:
            from .task_calls import TaskCalls
            from .task_methods import TaskMethods

            manager = self._server.tasks if self._task_manager is None else self._task_manager
            calls, methods = TaskCalls(manager, self._seal), TaskMethods(manager)
            if manager.on_change is None:  # (tables over one manager: the first one sets it)
                peers = self._peers
                manager.on_change = lambda run: peers.task_changed(
                    run.task_id, lambda: methods.notice(run))
            self._task_work = (calls, methods)
        return self._task_work

    def _task_method(self, session: Session, event: RequestReceived) -> HandlerResult:
        return self._tasks()[1].table[event.method](session, event)

    def on_request(self, session: Session, event: RequestReceived) -> HandlerResult:
        """The session's request handler."""
        handler = self._table.get(event.method)
        if handler is None:
            raise MethodNotFound(f"Method not found: '{event.method}' is not supported.")
        return handler(session, event)

    def on_notification(self, session: Session, event: NotificationReceived) -> Any:
        """The session's notification handler: the middleware chain when one hooks
        notifications, else ``_notified``."""
        if self._notify_chain is not None:
            return self._notify_chain(Request(self._server, session, event))
        return self._notified(session, event)

    def _notified(self, session: Session, event: NotificationReceived) -> Any:
        """``roots/list_changed`` calls the server's ``on_roots_changed``; the rest need
        nothing from the server."""
        callback = self._server.on_roots_changed
        if event.method == "notifications/roots/list_changed" and callback:
            # Not a request: no id, so what the callback sends belongs to no client
            # request (over HTTP it goes on the GET stream).
            return callback(Context(self._server, session, None, method=event.method))
        return None

    async def _plain_notification(self, request: Request) -> None:
        """The innermost link of the notification chain."""
        event = request.event
        assert isinstance(event, NotificationReceived)
        outcome = self._notified(request.session, event)
        if inspect.isawaitable(outcome):
            await outcome

    def _sealed(self, event: RequestReceived, ctx: Context, work: HandlerResult
                ) -> HandlerResult:
        """``work`` as the request's handler: as is on a stateful session (MRTR input
        requests are a 2026-07-28 mechanism, so a stateful request never enters mrtr.py),
        otherwise through ``StateSeal.run``."""
        if event.stateless is None:
            return work
        return self._seal.run(event, ctx, work)

    def _context(self, session: Session, event: RequestReceived) -> Context:
        """The handler's ``Context``; a stateless request's carries its MRTR answers."""
        if event.stateless is None:
            return Context(self._server, session, event)
        return Context(self._server, session, event,
                       self._seal.answers(event, event.origin.principal))

    # ------------------------------------------------------------------ tools

    def _tools_list(self, session: Session, event: RequestReceived) -> HandlerResult:
        rev = event.revision
        newest = event.stateless is None and rev is not None and rev.version == LATEST_STATEFUL
        return Ready(self._registry.tools_page(event.params, cached=newest,
                                               layers=self._layers(session)))

    def _tools_list_unserialized(self, session: Session, event: RequestReceived
                                 ) -> HandlerResult:
        """``tools/list`` with ``tools`` a list (what middleware read), never the serialized
        pages the plain path serves the newest stateful revision from."""
        return Ready(self._registry.tools_page(event.params, cached=False,
                                               layers=self._layers(session)))

    def _tools_call(self, session: Session, event: RequestReceived) -> HandlerResult:
        # The hot path: every lookup written out, no extra calls.
        name = _name(event)
        registry = self._registry
        tool = registry.tools.get(name)
        ruled = registry.visibility is not None or session.visibility is not None
        if tool is None or (ruled and not self._shown(session, "tool", tool)):
            raise self._unknown_tool(session, name)
        arguments = event.params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise _not_an_object()
        invalid = tool.invalid_arguments(arguments)
        if invalid is not None:
            return self._refuse_arguments(session, event, invalid)
        ctx = self._context(session, event)
        if tool.task is not None or "task" in event.params:  # task_calls.py decides
            return self._tasks()[0].call(session, event, tool, arguments, ctx)
        return self._sealed(event, ctx, tool.call(arguments, ctx))

    def use_middleware(self, middleware: list[Middleware]) -> None:
        """Put the chain of ``middleware`` in place of each handler it hooks (see
        ``middleware.py``), from the plain handlers; an empty list restores them. Methods
        no middleware hooks keep their plain handler; no extra step is added to them."""
        if self._plain is None:
            self._plain = dict(self._table)
        server = self._server
        self._table = dict(self._plain)
        for method, handler in self._plain.items():
            if method == "tools/list":  # middleware get the tools as a list, not bytes
                handler = self._tools_list_unserialized
            chain = compose(middleware, method, terminal_of(handler))
            if chain is not None:
                self._table[method] = entry(server, chain)
        self._notify_chain = compose_notifications(middleware, self._plain_notification)

    def _layers(self, session: Session) -> Layers:
        return self._registry.layers(session.visibility)

    def _shown(self, session: Session, kind: str, item: Any) -> bool:
        layers = self._layers(session)
        return layers is None or shows(layers, kind, item)

    def _unknown_tool(self, session: Session, name: str) -> InvalidParams:
        registry = self._registry
        tools = registry.visible("tool", registry.tools, self._layers(session))
        return InvalidParams(
            f"Unknown tool: '{name[:100]}'. Available tools: "
            f"{_names([t.name for t in tools])}. Call tools/list for their schemas.",
            {"name": name[:100]},
        )

    def _refuse_arguments(self, session: Session, event: RequestReceived,
                          invalid: JSON) -> HandlerResult:
        """Arguments that fail the schema: the ``isError`` result ``invalid`` from
        2025-11-25 on, ``InvalidParams`` (raised) before."""
        rev = event.revision
        if rev is not None and not rev.has("tool_input_errors"):
            raise InvalidParams(invalid["content"][0]["text"])
        return Ready(invalid)

    # ------------------------------------------------------------------ resources

    def _resources_list(self, session: Session, event: RequestReceived) -> HandlerResult:
        registry = self._registry
        items = [r.definition() for r in registry.visible(
            "resource", registry.resources, self._layers(session))]
        return Ready(registry.page(event.params, items, "resources"))

    def _templates_list(self, session: Session, event: RequestReceived) -> HandlerResult:
        registry = self._registry
        items = [t.definition() for t in registry.visible(
            "template", registry.templates, self._layers(session))]
        return Ready(registry.page(event.params, items, "resourceTemplates"))

    def _resources_read(self, session: Session, event: RequestReceived) -> HandlerResult:
        uri = check_uri(event.params.get("uri"))
        ctx = self._context(session, event)
        registry, layers = self._registry, self._layers(session)
        resource = registry.find("resource", registry.resources, uri, layers)
        if resource is not None:
            return self._sealed(event, ctx, _read_static(resource, ctx))
        for template in registry.visible("template", registry.templates, layers):
            values = template.match(uri)
            if values is not None:
                return self._sealed(event, ctx, _read_template(template, uri, values, ctx))
        raise ResourceNotFound(
            f"Resource not found: {uri[:200]}. Call resources/list and "
            "resources/templates/list to see what this server offers.",
            {"uri": uri},
        )

    def _subscribe(self, session: Session, event: RequestReceived) -> HandlerResult:
        self._peers.subscribe(session, check_uri(event.params.get("uri")))
        return Ready({})

    def _unsubscribe(self, session: Session, event: RequestReceived) -> HandlerResult:
        self._peers.unsubscribe(session, check_uri(event.params.get("uri")))
        return Ready({})

    def _listen(self, session: Session, event: RequestReceived) -> HandlerResult:
        """``subscriptions/listen`` (2026-07-28): acknowledge, then stream the change
        notifications the client asked for until it ends the request."""
        wanted = event.params.get("notifications")
        if not isinstance(wanted, dict):
            raise InvalidParams("Invalid params: subscriptions/listen needs 'notifications' "
                                "(an object of the notification kinds to receive).")
        honoured: JSON = {k: True for k in LISTEN_FLAGS.values() if wanted.get(k) is True}
        uris = wanted.get("resourceSubscriptions")
        if isinstance(uris, list) and uris:
            honoured["resourceSubscriptions"] = [u for u in uris if isinstance(u, str)][:1000]
        ids = wanted.get("taskIds")
        if isinstance(ids, list) and ids:  # the tasks extension's notifications/tasks
            watched = self._tasks()[1].watchable(session, event, ids)
            if not isinstance(watched, list):  # some known only to the shared store
                return self._listen_later(session, event, honoured, watched)
            honoured["taskIds"] = watched
        return self._peers.listen(session, event.id, honoured)

    async def _listen_later(self, session: Session, event: RequestReceived, honoured: JSON,
                            watched: Awaitable[list[str]]) -> JSON:
        honoured["taskIds"] = await watched
        return await self._peers.listen(session, event.id, honoured)

    # ------------------------------------------------------------------ prompts

    def _prompts_list(self, session: Session, event: RequestReceived) -> HandlerResult:
        registry = self._registry
        items = [p.definition() for p in registry.visible(
            "prompt", registry.prompts, self._layers(session))]
        return Ready(registry.page(event.params, items, "prompts"))

    def _prompts_get(self, session: Session, event: RequestReceived) -> HandlerResult:
        name = _name(event)
        registry, layers = self._registry, self._layers(session)
        prompt = registry.find("prompt", registry.prompts, name, layers)
        if prompt is None:
            shown = registry.visible("prompt", registry.prompts, layers)
            raise InvalidParams(f"Unknown prompt: '{name[:100]}'. Available prompts: "
                                f"{_names([p.name for p in shown])}.")
        args = prompt.check(event.params.get("arguments"))
        ctx = self._context(session, event)
        return self._sealed(event, ctx, prompt.render(args, ctx))

    # ------------------------------------------------------------------ completions

    def _complete(self, session: Session, event: RequestReceived) -> HandlerResult:
        params = event.params
        ref = params.get("ref")
        argument = params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise InvalidParams("Invalid params: completion/complete needs 'ref' and 'argument'.")
        kind = ref.get("type")
        arg_name = argument.get("name")
        value = argument.get("value", "")
        if not isinstance(arg_name, str) or not isinstance(value, str):
            raise InvalidParams("Invalid params: 'argument' needs string 'name' and 'value'.")
        registry, layers = self._registry, self._layers(session)
        if kind == "ref/prompt":
            key = ref.get("name")
            prompt = registry.find("prompt", registry.prompts, key, layers)
            if prompt is None:
                raise InvalidParams(f"Invalid params: unknown prompt {key!r}.")
            if arg_name not in prompt.names:
                raise InvalidParams(
                    f"Invalid params: prompt {key!r} has no argument {arg_name!r}."
                )
        elif kind == "ref/resource":
            key = ref.get("uri")
            if registry.find("template", registry.templates, key, layers) is None and (
                    registry.find("resource", registry.resources, key, layers) is None):
                raise InvalidParams(f"Invalid params: unknown resource template {key!r}.")
        else:
            raise InvalidParams(
                "Invalid params: 'ref.type' must be 'ref/prompt' or 'ref/resource'."
            )
        assert isinstance(key, str)
        found = registry.completers.get((kind, key, arg_name))
        if found is None:
            return Ready({"completion": {"values": [], "total": 0, "hasMore": False}})
        completer, context_param = found
        context = params.get("context")
        ctx_args = context.get("arguments") if isinstance(context, dict) else None
        if isinstance(ctx_args, dict) and not all(isinstance(v, str) for v in ctx_args.values()):
            raise InvalidParams("Invalid params: 'context.arguments' maps argument names to "
                                "their string values; send strings only.")
        extra = {} if context_param is None else {
            context_param: self._context(session, event)}
        return _complete(completer, value, ctx_args if isinstance(ctx_args, dict) else {},
                         extra)


def _not_an_object() -> InvalidParams:
    return InvalidParams("Invalid params: tools/call 'arguments' must be an object.")


def _name(event: RequestReceived) -> str:
    """The ``name`` a tools/call or prompts/get request must give."""
    name = event.params.get("name")
    if not isinstance(name, str):
        raise InvalidParams(f"Invalid params: {event.method} needs 'name' (string).")
    return name


def _names(names: Iterable[str]) -> str:
    """The first 50 of ``names``, for an error naming what exists."""
    return ", ".join(itertools.islice(names, 50)) or "none"


def _with_hints(result: JSON, item: Resource | ResourceTemplate, ctx: Context) -> JSON:
    """Per-resource caching hints on a 2026-07-28 read (the server's defaults otherwise)."""
    if ctx.stateless is not None:
        if item.cache_ttl_ms is not None:
            result["ttlMs"] = item.cache_ttl_ms
        if item.cache_scope is not None:
            result["cacheScope"] = item.cache_scope
    return result


async def _read_static(resource: Resource, ctx: Context) -> JSON:
    return _with_hints({"contents": await resource.read(ctx)}, resource, ctx)


async def _read_template(
    template: ResourceTemplate, uri: str, values: dict[str, str], ctx: Context
) -> JSON:
    return _with_hints({"contents": await template.read(uri, values, ctx)}, template, ctx)


async def _complete(completer: Completer, value: str, context: dict[str, Any],
                    extra: dict[str, Context]) -> JSON:
    """Run ``completer`` (with its ``Context`` in ``extra`` when it takes one); at most 100
    values are sent, ``total``/``hasMore`` tell the rest."""
    out = completer(value, context, **extra)
    if isinstance(out, Coroutine):
        out = await out
    values = [str(v) for v in (out or [])]
    return {
        "completion": {
            "values": values[:100],
            "total": len(values),
            "hasMore": len(values) > 100,
        }
    }
