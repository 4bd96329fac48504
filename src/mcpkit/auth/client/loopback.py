"""A :class:`RedirectHandler` for CLIs and desktop apps: a one-shot loopback listener.

What: :class:`LoopbackRedirect` listens on ``http://127.0.0.1:<port>/callback`` (an
ephemeral port by default, or a fixed one for authorization servers that want the exact
registered redirect URI), shows the authorization URL to the user (stderr by default),
opens a browser when the machine has one, and waits for the one ``GET`` of the callback
path. It answers that request with a small page ("you can close this window"), other
paths with 404 (a browser asks for ``/favicon.ico``; a preconnect may send nothing), and
returns the full URL the browser was sent back to. The listener is closed afterwards; a
second authorization (a step-up) binds the same port again.

Why: RFC 8252 §7.3 (OAuth for native apps): a loopback redirect with any port, which
the authorization server must accept; the code never leaves the machine.

How: the socket is bound when the object is made, so ``redirect_uri`` (registered by
dynamic registration before the authorization request is built) names the final port.
Requests are read with a size bound (8 KiB of request line and headers) and a time bound
per connection; nothing else of HTTP is needed. The page never shows a query value
unescaped, and is sent with ``Referrer-Policy: no-referrer`` and ``Cache-Control:
no-store`` so the code does not leak to another site or a cache.

Failure modes: a port that cannot be bound raises
:class:`~mcpkit.protocol.errors.AuthorizationFailed` at construction (naming the port
and what to do); no callback within ``timeout`` seconds raises it from ``authorize``.
"""

from __future__ import annotations

import html
import os
import socket
import sys
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import anyio.to_thread

from ...protocol.errors import AuthorizationFailed
from .authorize import check_authorization_url

MAX_REQUEST_BYTES = 8192
"""Request line and headers of one request to the listener, at most."""

READ_TIMEOUT = 10.0
"""Seconds a connection may take to send its request line and headers."""

MAX_CONNECTIONS = 16
"""Connections served at once; more are closed unanswered."""


def announce_on_stderr(url: str) -> None:
    """The default way to show the authorization URL: on stderr, alone on its line."""
    sys.stderr.write("Open this URL in a browser to authorize:\n\n"
                     f"    {url}\n\nWaiting for the browser to come back...\n")
    sys.stderr.flush()


def browser_available() -> bool:
    """Whether ``webbrowser`` may find a graphical browser: always on macOS and Windows;
    elsewhere only with a display (over SSH or in a container there is none, and a
    console browser would take over the terminal)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class LoopbackRedirect:
    """Wait for the authorization server's redirect on a loopback port (RFC 8252 §7.3).

    ``port``: 0 (an ephemeral port, the default) or the port of the registered redirect
    URI. ``host``: ``127.0.0.1`` or ``::1``. ``path``: the callback path. ``timeout``:
    seconds to wait for the browser to come back. ``open_browser``: open the URL with
    :mod:`webbrowser` when a browser seems available. ``announce``: called with the
    authorization URL before waiting (default: :func:`announce_on_stderr`).
    """

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1", path: str = "/callback",
                 timeout: float = 300.0, open_browser: bool = True,
                 announce: Callable[[str], None] | None = None) -> None:
        if host not in ("127.0.0.1", "::1"):
            raise ValueError("host must be a loopback address: 127.0.0.1 or ::1")
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be between 0 and 65535 (got {port})")
        if not path.startswith("/") or "?" in path or "#" in path:
            raise ValueError(f"path must be an absolute path such as /callback (got {path!r})")
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        self.host, self.path, self.timeout = host, path, timeout
        self.open_browser = open_browser
        self.announce = announce if announce is not None else announce_on_stderr
        self._port = port
        self._sock: socket.socket | None = None
        self._bind()

    # ------------------------------------------------------------------ the socket

    def _bind(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            if os.name != "nt":  # a quick re-login on a fixed port despite TIME_WAIT
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self._port))
            sock.listen(MAX_CONNECTIONS)
        except OSError as exc:
            sock.close()
            raise AuthorizationFailed(
                f"cannot listen on {self.host} port {self._port} for the authorization "
                f"redirect ({exc.strerror or exc}): another program uses it; stop it, or "
                "pick another port (one the authorization server accepts)") from None
        self._port = int(sock.getsockname()[1])
        self._sock = sock

    @property
    def port(self) -> int:
        """The port listened on (the ephemeral one once bound)."""
        return self._port

    @property
    def redirect_uri(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._port}{self.path}"

    def close(self) -> None:
        """Stop listening (``authorize`` binds again when called later)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> LoopbackRedirect:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the wait

    async def authorize(self, url: str) -> str:
        check_authorization_url(url)
        if self._sock is None:
            self._bind()
        assert self._sock is not None
        sock, self._sock = self._sock, None
        sock.setblocking(False)
        listener = await anyio.abc.SocketListener.from_socket(sock)
        found: list[str] = []
        try:
            self.announce(url)
            with anyio.move_on_after(self.timeout):
                async with anyio.create_task_group() as tasks:
                    if self.open_browser and browser_available():
                        tasks.start_soon(self._open_browser, url)
                    await self._serve(listener, tasks, found)
        finally:
            await listener.aclose()
        if not found:
            raise AuthorizationFailed(
                f"the browser did not come back to {self.redirect_uri} within "
                f"{self.timeout:g} s: open the authorization URL in a browser on this "
                "machine, sign in and approve, then try again (a browser on another "
                "machine cannot reach this loopback address)")
        return found[0]

    @staticmethod
    async def _open_browser(url: str) -> None:
        def launch() -> None:
            import webbrowser

            try:
                webbrowser.open(url, new=1)
            except Exception:  # the URL was shown already; a browser is a bonus
                pass

        await anyio.to_thread.run_sync(launch, abandon_on_cancel=True)

    async def _serve(self, listener: anyio.abc.SocketListener,
                     tasks: anyio.abc.TaskGroup, found: list[str]) -> None:
        limit = anyio.CapacityLimiter(MAX_CONNECTIONS)
        while True:
            stream = await listener.accept()
            if limit.available_tokens < 1:
                await stream.aclose()
                continue
            tasks.start_soon(self._handle, stream, limit, tasks, found)

    async def _handle(self, stream: anyio.abc.SocketStream, limit: anyio.CapacityLimiter,
                      tasks: anyio.abc.TaskGroup, found: list[str]) -> None:
        async with limit, stream:
            target = await _read_request_target(stream)
            if target is None:
                await _respond(stream, 400, "Bad request", "This is not a request this "
                               "listener understands.")
                return
            method, path_and_query = target
            parts = urlsplit(path_and_query)
            if parts.path != self.path:
                await _respond(stream, 404, "Not found", "Nothing here.")
                return
            if method != "GET":
                await _respond(stream, 405, "Method not allowed", "Only GET is answered.")
                return
            if found:  # a second visit of the callback after the first was taken
                await _respond(stream, 410, "Already used", "This sign-in was already "
                               "received; you can close this window.")
                return
            found.append(f"http://{_authority(self.host, self._port)}{path_and_query}")
            query = parse_qs(parts.query)
            if "error" in query:
                reason = " ".join(query["error"][:1] + query.get("error_description", [])[:1])
                await _respond(stream, 200, "Authorization failed",
                               f"The authorization server answered: {reason}. You can close "
                               "this window and return to the terminal.")
            else:
                await _respond(stream, 200, "Authorization received",
                               "You can close this window and return to the terminal.")
            tasks.cancel_scope.cancel()


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _read_request_target(stream: anyio.abc.SocketStream) -> tuple[str, str] | None:
    """(method, request target) of the request on ``stream``, once its headers are in;
    None for a request too large, too slow, closed early or malformed."""
    buffer = b""
    with anyio.move_on_after(READ_TIMEOUT):
        try:
            while b"\r\n\r\n" not in buffer and len(buffer) <= MAX_REQUEST_BYTES:
                buffer += await stream.receive(4096)
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            return None
    head, sep, _ = buffer.partition(b"\r\n\r\n")
    if not sep or len(head) > MAX_REQUEST_BYTES:
        return None
    line = head.split(b"\r\n", 1)[0]
    try:
        method, target, version = line.decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        return None
    if not version.startswith("HTTP/1.") or not target.startswith("/"):
        return None
    return method, target


async def _respond(stream: anyio.abc.SocketStream, status: int, title: str,
                   text: str) -> None:
    """A small HTML page; ``title`` and ``text`` are escaped here."""
    body = ("<!doctype html><html><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(title)}</title></head><body><h1>{html.escape(title)}</h1>"
            f"<p>{html.escape(text)}</p></body></html>").encode()
    head = (f"HTTP/1.1 {status} {title}\r\nContent-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\nCache-Control: no-store\r\n"
            "Referrer-Policy: no-referrer\r\nX-Content-Type-Options: nosniff\r\n"
            "Content-Security-Policy: default-src 'none'\r\n\r\n").encode()
    try:
        with anyio.move_on_after(READ_TIMEOUT):
            await stream.send(head + body)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
