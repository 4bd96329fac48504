"""The options of a Streamable HTTP endpoint, declared once: ``HttpOptions``.

Each option is a field of ``HttpOptions`` with its type, its default and what it does;
nothing else writes them out. ``Server.asgi_app(path, **options)`` and
``Server.run("http", **options)`` take them by name (typed by ``HttpKeywords``, the same
fields as keyword arguments) and build one ``HttpOptions`` from them; the app
(``http_server.StreamableHTTPApp``) reads them from it. The object is frozen: building
an app, or serving it, never changes the options it was given (stores named by
``store`` are resolved into a copy). ``tests/test_server_options.py`` holds the entry
points and ``HttpKeywords`` to these fields, defaults included.

A leaf module (no import at run time beyond the standard library), so a command-line
parser can read the defaults without loading the HTTP stack.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:
    from ..storage.events import EventStore
    from ..storage.redis_stores import RedisStores
    from ..storage.sessions import SessionStore

from .http_defaults import DRAIN, MAX_STREAM_BUFFER, PATH, STALL_TIMEOUT

__all__ = ["HttpKeywords", "HttpOptions"]


@dataclass(frozen=True, kw_only=True)
class HttpOptions:
    """The options of one Streamable HTTP endpoint, each with a production-minded
    default (docs/http.md). Given by name to ``Server.asgi_app`` and
    ``Server.run("http", ...)``; an unknown name is a ``TypeError``."""

    path: str = PATH
    """The endpoint's path (404 elsewhere, except the legacy SSE paths)."""
    response_mode: Literal["auto", "json", "sse"] = "auto"
    """``"auto"`` answers a POST as JSON when the response is the first thing its handler
    produces and as SSE once it sends progress, logs or requests first; ``"json"`` and
    ``"sse"`` always use one."""
    allowed_hosts: Iterable[str] | None = None
    """``Host`` names served (421 otherwise; ``"*"``: any); None: localhost names, any
    port."""
    allowed_origins: Iterable[str] | None = None
    """``Origin`` values accepted (403 otherwise; ``"*"``: any); None: http(s) origins on
    localhost."""
    trusted_proxies: Iterable[str] = ()
    """Client IPs whose ``X-Forwarded-Host``/``Forwarded`` host (and address) is
    believed."""
    max_body: int = 4 * 1024 * 1024
    """Bytes of a POST body (413 past it)."""
    max_sessions: int = 10_000
    """Open sessions (503 to a new one past it; existing ones are unaffected)."""
    session_idle_timeout: float = 3600.0
    """Seconds without a request before a session ends (then 404)."""
    body_timeout: float = 30.0
    """Seconds to receive a whole request body (408 past it)."""
    sweep_interval: float = 1.0
    """Seconds between sweeps for idle sessions, slow bodies and stalled writers."""
    sweep_batch: int = 1000
    """Sessions ended per sweep at most (bounded work per tick)."""
    max_in_flight: int = 4096
    """Requests being answered per session (429 past it)."""
    max_in_flight_total: int = 65536
    """Requests being answered across sessions (503 past it)."""
    retry_ms: int = 1000
    """The SSE ``retry`` field: how long a client waits before reconnecting a broken
    stream."""
    max_stream_buffer: int = MAX_STREAM_BUFFER
    """Bytes one SSE response may hold for a reader slower than the server. A handler's
    progress and logs wait (``await ctx.report_progress``) while a quarter of it is
    unsent; past all of it the response ends and the client resumes with
    ``Last-Event-ID``."""
    stall_timeout: float = STALL_TIMEOUT
    """Seconds a write to a reader that reads nothing may block before its connection is
    cut."""
    enable_get: bool = True
    """Serve the GET stream (405 when False)."""
    allow_delete: bool = True
    """Clients may end their session with DELETE (405 when False)."""
    legacy_sse: bool = True
    """Also serve 2024-11-05 HTTP+SSE clients (at ``legacy_sse_path`` and
    ``legacy_messages_path``)."""
    legacy_sse_path: str = "/sse"
    """Where a 2024-11-05 client opens its SSE stream (GET)."""
    legacy_messages_path: str = "/messages"
    """Where a 2024-11-05 client posts its messages."""
    drain: float = DRAIN
    """Seconds requests in flight get to be answered on SIGTERM (docs/http.md)."""
    health: bool = False
    """Also serve ``GET /health`` (liveness) and ``GET /ready`` (readiness: 503 while
    draining or while Redis or the task store does not answer), without auth
    (``server.routes``; docs/http.md)."""
    event_store: EventStore | None = None
    """Where SSE events wait for a client that resumes (an ``EventStore``); None: in
    memory, one store per app. ``SQLiteEventStore`` survives a restart."""
    session_store: SessionStore | None = None
    """Session records a restarted server takes back (a ``SessionStore``); None: in
    memory, one store per app. A store that is also a ``SharedSecret``
    (``SQLiteSessionStore``) gives the key that seals 2026-07-28 ``requestState``, unless
    ``Server(state_key=...)`` was given."""
    store: str | RedisStores | None = None
    """Run as one of several instances sharing all their state, on Redis
    (``"redis://host:port/db"`` or ``RedisStores``; the ``mcpkit[redis]`` extra): session
    records, SSE event logs, the ``requestState`` key, rate-limit buckets (unless
    ``Server(rate_limit_store=...)`` was given), task records (unless
    ``Server(task_store=...)`` was given; docs/tasks.md), and delivery between instances;
    ``event_store``/``session_store`` given too win over its own. Any instance then
    serves any request of any session (docs/deployment.md). Redis unreachable: 503 with
    ``Retry-After`` to the requests that need it. The server resolves it when it builds
    the app (the transport is given the stores)."""


    def __post_init__(self) -> None:
        """Refuse what would make an endpoint unreachable: with ``legacy_sse``, a legacy
        path equal to ``path`` (one of the two would answer every request for it)."""
        if self.legacy_sse and self.path.rstrip("/") in (
                self.legacy_sse_path.rstrip("/"), self.legacy_messages_path.rstrip("/")):
            raise ValueError(
                f"the legacy SSE paths ({self.legacy_sse_path}, {self.legacy_messages_path})"
                f" must differ from the MCP endpoint's path ({self.path})")

class HttpKeywords(TypedDict, total=False):
    """``HttpOptions``' fields as keyword arguments, for ``**options:
    Unpack[HttpKeywords]`` (``Server.asgi_app``, ``Server.run``): the same names and
    types, no defaults and no docs (those are the fields'). ``path`` is left out: the
    entry points take it as a parameter of their own. mypy checks each key against the
    field when ``HttpOptions(**options)`` is built; ``tests/test_server_options.py``
    checks that every field is here, with the same type."""

    response_mode: Literal["auto", "json", "sse"]
    allowed_hosts: Iterable[str] | None
    allowed_origins: Iterable[str] | None
    trusted_proxies: Iterable[str]
    max_body: int
    max_sessions: int
    session_idle_timeout: float
    body_timeout: float
    sweep_interval: float
    sweep_batch: int
    max_in_flight: int
    max_in_flight_total: int
    retry_ms: int
    max_stream_buffer: int
    stall_timeout: float
    enable_get: bool
    allow_delete: bool
    legacy_sse: bool
    legacy_sse_path: str
    legacy_messages_path: str
    drain: float
    health: bool
    event_store: EventStore | None
    session_store: SessionStore | None
    store: str | RedisStores | None
