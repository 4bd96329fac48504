"""Serving a Streamable HTTP app from the command line: ``Server.run("http")``.

uvicorn serves the ASGI app with the fastest parts it has: the httptools parser and the
uvloop event loop (runtime dependencies of mcpkit where they exist; h11 and asyncio
otherwise). The socket is bound before anything is announced, so the one line written to
stderr — the URL and the parts in use — is true the moment it appears: a client (or a
test) that waits for it can connect at once. Port 0 picks a free port, and the line names
the real one.

uvicorn has no deadline for a request's headers: a client that connects and sends half a
request line (slowloris) holds the connection forever. ``with_header_timeout`` closes a
connection whose request headers are not complete within ``header_timeout`` seconds of
its first byte (or of the connection); bodies have their own deadline in the app
(``HttpOptions.body_timeout``).

SIGTERM/SIGINT drain the app (``transports.http_drain``) inside uvicorn's shutdown, which
alone would wait for every connection to close (an open GET stream: forever), then for
its tasks, and only then run the ASGI lifespan's shutdown. ``draining_server`` stops
accepting and closes idle connections first (uvicorn's first steps), then runs the drain
(GET and listen streams ended, requests in flight answered or cut at its deadline), gives
the responses ``SETTLE`` seconds to be written, aborts the connections of clients that
do not read them, and only then lets uvicorn finish (lifespan shutdown, exit 0). A second
signal cuts at once.
"""

from __future__ import annotations

import asyncio
import importlib.util
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

PARSERS = ("auto", "h11", "httptools")
LOOPS = ("auto", "asyncio", "uvloop")


def _available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def pick_parts(http: str = "auto", loop: str = "auto") -> tuple[str, str]:
    """The (parser, loop) uvicorn will use: the fastest installed when ``auto``, else the
    one asked for (``ValueError`` if it is unknown or not installed)."""
    if http not in PARSERS:
        raise ValueError(f"unknown HTTP parser {http!r}: use one of {', '.join(PARSERS)}")
    if loop not in LOOPS:
        raise ValueError(f"unknown event loop {loop!r}: use one of {', '.join(LOOPS)}")
    if http == "auto":
        http = "httptools" if _available("httptools") else "h11"
    if loop == "auto":
        loop = "uvloop" if sys.platform != "win32" and _available("uvloop") else "asyncio"
    for name in (http, loop):
        if name not in ("h11", "asyncio") and not _available(name):
            raise ValueError(f"{name} is not installed: pip install {name}, or pass 'auto'")
    return http, loop


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


HEADER_TIMEOUT = 10.0
"""Seconds a connection may take to send a request's headers before it is closed."""
SETTLE = 2.0
"""Seconds after the drain for the last responses to be written before the connections
still open (clients that stopped reading) are aborted."""
LAST_RESORT = 5
"""uvicorn's own bound after that (``timeout_graceful_shutdown``): not reached unless a
task of the app ignores everything above."""


def with_header_timeout(protocol: type[Any], timeout: float) -> type[Any]:
    """A subclass of uvicorn's HTTP protocol class ``protocol`` (httptools or h11) that
    closes the connection when a request's headers are not complete ``timeout`` seconds
    after its first byte arrived (or after the connection was made). Other connections
    are not disturbed; one whose request is being answered has no such deadline."""

    class HeaderDeadline(protocol):  # type: ignore[misc]
        _header_timer: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._awaiting_headers():
                if self._header_timer is None:
                    self._arm()
            elif self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().connection_lost(exc)

        def _awaiting_headers(self) -> bool:
            cycle = getattr(self, "cycle", None)
            return cycle is None or bool(cycle.response_complete)

        def _arm(self) -> None:
            self._header_timer = self.loop.call_later(timeout, self._headers_late)

        def _headers_late(self) -> None:
            self._header_timer = None
            transport = getattr(self, "transport", None)
            if self._awaiting_headers() and transport is not None and not transport.is_closing():
                transport.close()

    HeaderDeadline.__name__ = HeaderDeadline.__qualname__ = f"HeaderDeadline{protocol.__name__}"
    return HeaderDeadline


def protocol_class(parser: str, header_timeout: float) -> type[Any]:
    """uvicorn's protocol class for ``parser`` ("httptools" or "h11"), with the deadline."""
    base: type[Any]
    if parser == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        base = HttpToolsProtocol
    else:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        base = H11Protocol
    return with_header_timeout(base, header_timeout)


def draining_server(config: Any, drain: Any) -> Any:
    """A ``uvicorn.Server`` for ``config`` whose shutdown runs ``drain`` (a
    ``transports.http_drain.Drain``; None: uvicorn's own shutdown) as the module
    docstring says."""
    import uvicorn

    class DrainingServer(uvicorn.Server):
        _loop: asyncio.AbstractEventLoop | None = None

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            self._loop = asyncio.get_running_loop()
            await super().startup(sockets=sockets)

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if self.should_exit and self._loop is not None:  # the second signal: cut now
                self._loop.call_soon_threadsafe(drain.cut)
            super().handle_exit(sig, frame)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            for server in self.servers:  # stop accepting
                server.close()
            for connection in list(self.server_state.connections):
                connection.shutdown()  # idle: closed now; busy: once its response is sent
            captured = self._captured_signals
            await drain.run(signal.Signals(captured[0]).name if captured else "shutdown")
            state = self.server_state
            for _ in range(int(SETTLE / 0.05)):  # the last responses being written
                if not (state.tasks or state.connections):
                    break
                await asyncio.sleep(0.05)
            for task in list(state.tasks):  # (before the aborts: see _cut_off)
                _cut_off(task)
            for connection in list(state.connections):  # clients that do not read
                transport = getattr(connection, "transport", None)
                if transport is not None:
                    transport.abort()
            await super().shutdown(sockets=sockets)

    return uvicorn.Server(config) if drain is None else DrainingServer(config)


def _cut_off(task: asyncio.Task[Any]) -> None:
    """Mark the request cycle ``task`` runs (uvicorn's ``RequestResponseCycle.run_asgi``)
    as disconnected, so that what it writes next is dropped rather than raised. uvicorn
    marks only the connection's last parsed cycle when the connection is lost; with
    pipelined requests the one running is an earlier one, and its next write on the
    aborted transport raised (uvloop: "the handler is closed"), logged as an exception
    of the app."""
    frame = getattr(task.get_coro(), "cr_frame", None)
    cycle = None if frame is None else frame.f_locals.get("self")
    if cycle is not None and hasattr(cycle, "disconnected"):
        cycle.disconnected = True


def run_http(app: Any, *, host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp",
             http: str = "auto", loop: str = "auto",
             header_timeout: float = HEADER_TIMEOUT) -> None:
    """Serve ``app`` with uvicorn until SIGINT/SIGTERM (a graceful shutdown, exit 0).
    ``header_timeout``: seconds a client may take to send a request's headers. The
    endpoint (``app``, or the app an auth middleware wraps) is drained on the way out
    (see the module docstring).

    uvicorn's own proxy-header handling is off: the app's ``trusted_proxies`` is the one
    place that decides whose ``Forwarded``/``X-Forwarded-*`` headers are believed (for
    the Host check and the address rate limits key anonymous callers by); uvicorn's
    default would rewrite the client address from any loopback peer's headers first."""
    import uvicorn

    parser, loop_impl = pick_parts(http, loop)
    sock = _bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                            http=protocol_class(parser, header_timeout), loop=loop_impl,
                            proxy_headers=False, timeout_graceful_shutdown=LAST_RESORT)
    drain = getattr(app, "drain", None) or getattr(getattr(app, "app", None), "drain", None)
    if drain is not None:
        drain.managed = True  # ordered here, not by signal handlers of its own
    server = draining_server(config, drain)
    sys.stderr.write(f"mcpkit: serving MCP over Streamable HTTP at "
                     f"http://{shown}:{bound_port}{path} (uvicorn, {parser}, {loop_impl})\n")
    sys.stderr.flush()
    with _graceful_signals():
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()


@contextmanager
def _graceful_signals() -> Iterator[None]:
    """While uvicorn runs, SIGINT/SIGTERM mean "shut down gracefully and exit 0".

    uvicorn handles them itself, then re-raises each captured signal through the handler
    that was installed before it started, so that the default action (death by the
    signal, or KeyboardInterrupt) follows the shutdown. The handler installed here takes
    that re-raised signal quietly instead; the previous handlers come back afterwards.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def absorb(signum: int, frame: FrameType | None) -> None:
        pass

    previous = {sig: signal.signal(sig, absorb) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
