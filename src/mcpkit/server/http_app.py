"""A server's Streamable HTTP app (``Server.asgi_app``), built without touching the server.

The app is assembled from the server's parts and one ``HttpOptions``. What may differ
from one app of a server to another belongs to that app: the stores it serves with
(``store=`` is resolved into a copy of the options, never into the server), the key that
seals its 2026-07-28 ``requestState`` (its session store's shared secret), and, with
``store=``, the rate-limit buckets, the task manager on Redis and its relay. The
server's own (its limiter's buckets, ``server.tasks``, ``server.state_key``) stay as they
were, so stdio and every other app of the same server are served as before; an app
that keeps nothing of its own uses the server's handler table itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..auth.server.config import Auth
    from ..auth.server.middleware import BearerAuth
    from ..transports.http_options import HttpOptions
    from ..transports.http_server import StreamableHTTPApp
    from .app import Server
    from .sharing import Sharing


def build_app(server: Server, options: HttpOptions, auth: Auth | None
              ) -> StreamableHTTPApp | BearerAuth:
    """``server`` served over Streamable HTTP with ``options``, protected by ``auth``
    when given (see ``Server.asgi_app``)."""
    from ..transports.http_server import StreamableHTTPApp

    lifespan: Callable[[], AbstractAsyncContextManager[Any]] = server.lifespan_scope
    tasks, buckets, bus, sharing = None, None, None, None  # (None: the server's own)
    stores = None
    if options.store is not None:
        from .sharing import Sharing, shared_stores

        stores = shared_stores(options.store, options.session_idle_timeout)
        # event_store/session_store given too win over the shared ones
        events, sessions = options.event_store, options.session_store
        options = replace(options, event_store=stores.events if events is None else events,
                          session_store=stores.sessions if sessions is None else sessions)
        bus = stores.bus
        sharing = Sharing(stores, server._peers, lifespan)
        if server._own_buckets:  # unless Server(rate_limit_store=...)
            buckets = stores.buckets
        if server._own_task_store:  # unless Server(task_store=...)
            from .task_relay import TaskRelay

            tasks = server.tasks.over(stores.tasks)
            sharing.relay = tasks.relay = TaskRelay(stores.bus, stores.tasks, tasks)
        lifespan = sharing.scope
    methods = server._handlers(server._seal.for_store(options.session_store), tasks,
                               buckets)
    guard = principal_key = None
    if auth is not None:
        from ..auth.server.middleware import AUTH_STATE_KEY
        from .protection import ScopeGuard, closing_lifespan

        principal_key = AUTH_STATE_KEY
        lifespan = functools.partial(closing_lifespan, lifespan, auth)
        guard = ScopeGuard(server._registry, auth)
    app = StreamableHTTPApp(
        server.connection,
        on_request=methods.on_request,
        on_notification=methods.on_notification,
        config=options,
        max_batch=server.max_batch,
        principal_key=principal_key,
        bus=bus,
        on_session=server._peers.track,
        lifespan=lifespan,
        param_headers=server.param_headers,
        call_guard=guard,
    )
    _link(sharing, app)
    public = _serve_routes(server, options, app, auth, stores)
    return app if auth is None else auth.protect(app, public)


def _serve_routes(server: Server, options: HttpOptions, app: StreamableHTTPApp,
                  auth: Auth | None, stores: Any) -> Callable[[str], bool] | None:
    """Give ``app`` the server's routes (and ``/health``, ``/ready`` with
    ``options.health``); what a protected app serves without a token. Nothing is
    imported when there is no route."""
    if not server.routes and not options.health:
        return None
    from .routes import check_paths, health_routes, public_matcher, router

    specs = list(server.routes)
    if options.health:
        checks: dict[str, Any] = {}
        if stores is not None:
            checks["redis"] = stores.ready
        task_store = getattr(server._tasks, "store", server._task_store)
        probe = getattr(task_store, "ready", None)  # (a store that can say: SQLite)
        if callable(probe):
            checks["tasks"] = probe
        specs += health_routes(lambda: app.drain.active, checks)
    taken = [options.path]
    if options.legacy_sse:
        taken += [options.legacy_sse_path, options.legacy_messages_path]
    if auth is not None:
        taken += list(auth.resource.well_known_paths)
    check_paths(specs, taken)
    app.routes = router(specs, app.not_found)
    return public_matcher(specs)


def _link(sharing: Sharing | None, app: StreamableHTTPApp) -> None:
    """Tell the deployment's announcements which sessions this app writes to."""
    if sharing is not None and app.shared is not None:
        sharing.reaches = app.shared.reaches
