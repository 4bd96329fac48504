"""Sessions: a sans-I/O ``Connection`` driven on anyio, for either role.

``dispatch.Session`` turns the connection's events into handler calls and answers;
``pump.BytePump`` moves bytes between a ``ByteStream`` (stdio, memory) and a session;
``interfaces`` declares the handler shape (an awaitable; ``Ready``: a result now) and the
``Output`` a transport implements.
HTTP transports give a session their own ``Output`` and feed it decoded messages.
``telemetry.Telemetry``: OpenTelemetry spans and metrics of the messages (optional).
"""

from typing import TYPE_CHECKING

from ..protocol.errors import RemoteError
from .dispatch import Session
from .interfaces import (
    DEFAULT_DRAIN_TIMEOUT,
    ENDLESS_METHODS,
    HandlerResult,
    Output,
    Principal,
    ProgressCallback,
    Ready,
    RequestHandler,
    SessionNotificationHandler,
)
from .pump import DEFAULT_OUTPUT_BUFFER, BytePump, ByteStream

if TYPE_CHECKING:
    from .telemetry import Telemetry

__all__ = [
    "DEFAULT_DRAIN_TIMEOUT",
    "DEFAULT_OUTPUT_BUFFER",
    "ENDLESS_METHODS",
    "BytePump",
    "ByteStream",
    "HandlerResult",
    "SessionNotificationHandler",
    "Output",
    "Principal",
    "ProgressCallback",
    "Ready",
    "RemoteError",
    "RequestHandler",
    "Session",
    "Telemetry",
]


def __getattr__(name: str) -> object:
    """``Telemetry`` is imported when first asked for: a session without it never loads
    it (issue #28)."""
    if name == "Telemetry":
        from .telemetry import Telemetry

        return Telemetry
    raise AttributeError(f"module 'mcpkit.session' has no attribute {name!r}")
