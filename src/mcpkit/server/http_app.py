"""A server's Streamable HTTP app (``Server.asgi_app``), from the server's parts and one
``HttpOptions``: ``store=`` is resolved into a copy of the options (the app's stores) and
a bus; the rate-limit buckets and tasks move to Redis with it, and a session store's
shared secret becomes the ``requestState`` key.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..auth.config import Auth
    from ..auth.middleware import BearerAuth
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
    bus, sharing = None, None
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
            server._watch.limiter.store = stores.buckets
        if server._own_task_store:  # unless Server(task_store=...)
            from .task_relay import TaskRelay

            tasks = server.tasks
            tasks.store = stores.tasks
            sharing.relay = tasks.relay = TaskRelay(stores.bus, stores.tasks, tasks)
        lifespan = sharing.scope
    if options.session_store is not None:
        server._seal.share(options.session_store)
    methods = server._methods
    guard = principal_key = None
    if auth is not None:
        from ..auth.middleware import AUTH_STATE_KEY
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
    return app if auth is None else auth.protect(app)


def _link(sharing: Sharing | None, app: StreamableHTTPApp) -> None:
    """Tell the deployment's announcements which sessions this app writes to."""
    if sharing is not None and app.shared is not None:
        sharing.reaches = app.shared.reaches
