"""What a ``Client`` talks through, and why a server could not start.

A target is one of three transports, each an object that holds only the options that
apply to it, so an option cannot be given to a transport that would ignore it:

- ``Stdio(command, env=, cwd=, stderr=)``: a subprocess on stdio;
- ``Http(url, headers=, auth=, http_client=)``: Streamable HTTP, a message-level
  transport with a session of its own (``transports.http_client``, loaded only then);
- a ``Server`` object (anything ``Servable``), served in this process over a memory pipe.

``transport_for`` turns the shortcuts ``Client`` also takes (a URL string, a command
string or list, a server) into one of these. A subprocess and the memory pipe are byte
streams, served by the session's ``BytePump``. ``keep_alive`` pings a connection that
may die silently.
"""

from __future__ import annotations

import logging
import os
import shlex
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Never, Protocol, runtime_checkable

import anyio

from ..protocol.errors import ConnectionClosed, MCPError, RequestTimeout
from ..session import ByteStream, Telemetry
from ..transports.memory import memory_pair
from ..transports.process import ProcessStream

if TYPE_CHECKING:
    import httpx

    from ..protocol.connection import Connection

log = logging.getLogger("mcpkit.client")
HTTP_OPTIONS = ("headers", "auth", "http_client")
STDIO_OPTIONS = ("env", "cwd", "stderr")


@runtime_checkable
class Servable(Protocol):
    """What ``Client(server)`` serves in memory: an ``mcpkit.Server`` (the client layer
    does not import the server's, so this names the two methods it uses)."""

    def connection(self) -> Connection: ...

    async def serve(self, stream: ByteStream) -> None: ...


def misplaced(transport: str, options: Mapping[str, Any]) -> TypeError:
    """The ``TypeError`` for ``options`` given where they do not apply, naming the transport
    (or the ``Client``) that takes each."""
    where = []
    for name in options:
        if name in HTTP_OPTIONS:
            where.append(f"{name}= is an option of Http(url, {name}=...)")
        elif name in STDIO_OPTIONS:
            where.append(f"{name}= is an option of Stdio(command, {name}=...)")
        else:
            where.append(f"{name}= is no option of {transport} (a Client option goes to "
                         f"Client(target, {name}=...))")
    return TypeError(f"{transport} does not take {', '.join(map(repr, options))}: "
                     + "; ".join(where))


class Stdio:
    """A server started as a subprocess and spoken to over its stdin/stdout.

    ``command``: a list of arguments, or one shell-style string (split with ``shlex``);
    ``env``: variables added to this process's environment; ``cwd``: its working
    directory; ``stderr``: where its stderr goes (a file, or ``subprocess.DEVNULL``;
    default: this process's stderr). The client starts it on entering and stops it on
    leaving."""

    __slots__ = ("command", "cwd", "env", "stderr")

    def __init__(self, command: str | Sequence[str | os.PathLike[str]], *,
                 env: Mapping[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None,
                 stderr: IO[Any] | int | None = None, **others: Never) -> None:
        if others:
            raise misplaced("Stdio", others)
        if isinstance(command, str):
            command = shlex.split(command)
        elif not isinstance(command, Sequence) or not all(
                isinstance(a, str | os.PathLike) for a in command):
            raise TypeError("Stdio takes a command: a list of strings (or paths) or one "
                            f"shell-style string, not {command!r:.80}")
        if not command:
            raise ValueError("Stdio needs a command to start: it is empty")
        self.command: list[str] = [os.fspath(a) for a in command]
        self.env = dict(env) if env is not None else None
        self.cwd = os.fspath(cwd) if cwd is not None else None
        self.stderr = stderr

    def __repr__(self) -> str:
        return f"Stdio({shlex.join(self.command)!r})"


class Http:
    """A Streamable HTTP endpoint (``http://`` or ``https://``).

    ``headers``: added to every request; ``auth``: an ``httpx.Auth`` applied to every
    request (``mcpkit.auth.OAuth(...)``, a bearer token flow); ``http_client``: an
    ``httpx.AsyncClient`` of your own (proxies, TLS settings), left open."""

    __slots__ = ("auth", "headers", "http_client", "url")

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None,
                 auth: httpx.Auth | None = None, http_client: httpx.AsyncClient | None = None,
                 **others: Never) -> None:
        if others:
            raise misplaced("Http", others)
        if not is_url(url):
            raise ValueError(f"Http needs an http:// or https:// URL, got {url!r}; for a "
                             "command use Stdio(...)")
        self.url = url
        self.headers = dict(headers) if headers else None
        self.auth = auth
        self.http_client = http_client

    def __repr__(self) -> str:
        return f"Http({self.url!r})"


Transport = Stdio | Http | Servable
"""What ``Client`` talks through."""
Target = Transport | str | Sequence[str]
"""What ``Client`` takes: a transport, or a shortcut for one (a URL, a command)."""


def is_url(target: object) -> bool:
    """Whether ``target`` names a Streamable HTTP endpoint."""
    return isinstance(target, str) and target.startswith(("http://", "https://"))


def transport_for(target: Target, options: Mapping[str, Any] | None = None) -> Transport:
    """The transport ``target`` names: an ``http(s)://`` string is ``Http``, any other
    string or a list of strings is a ``Stdio`` command, a transport or a server is itself.
    ``TypeError`` for anything else, and for ``options`` a ``Client`` was given that
    belong to a transport."""
    if options:
        raise misplaced("Client", options)
    if isinstance(target, Stdio | Http):
        return target
    if isinstance(target, str):
        return Http(target) if is_url(target) else Stdio(target)
    if isinstance(target, Servable):
        return target
    if isinstance(target, Sequence):
        return Stdio(target)
    raise TypeError(f"Client cannot talk to a {type(target).__name__}: give it a Server, "
                    "Stdio(command), Http(url), a URL or a command")


def client_telemetry(telemetry: bool | Telemetry, transport: Transport) -> Telemetry | None:
    """A client's ``Telemetry``: the one given, a new one for True (its
    ``network.transport``: ``tcp`` for ``Http``, ``pipe`` for ``Stdio``, none in memory),
    None for False."""
    if not isinstance(telemetry, bool):
        return telemetry
    if not telemetry:
        return None
    kind = "tcp" if isinstance(transport, Http) else (
        "pipe" if isinstance(transport, Stdio) else None)
    return Telemetry(transport=kind)


async def open_stream(transport: Stdio | Servable, tg: anyio.abc.TaskGroup) -> ByteStream:
    """A byte stream to a server object (served in ``tg``) or a started ``Stdio`` command.

    Raises ``OSError`` (``FileNotFoundError``, say) when the command cannot be started."""
    if isinstance(transport, Stdio):
        return await ProcessStream.open(transport.command, env=transport.env,
                                        cwd=transport.cwd, stderr=transport.stderr)
    ours, theirs = memory_pair()

    async def serve() -> None:
        try:
            await transport.serve(theirs)
        finally:
            await theirs.aclose()  # Server.serve does not close the stream it is given

    tg.start_soon(serve)
    return ours


async def process_exit(stream: ByteStream | None) -> str | None:
    """After the server's output ended before it answered: its exit status, if ``stream``
    is a subprocess that is gone (it crashed, or the command is not an MCP server)."""
    if not isinstance(stream, ProcessStream):
        return None
    with anyio.move_on_after(1.0):
        status = await stream.process.wait()
        return (f"the server process exited with status {status} before answering "
                f"(command: {shlex.join(stream.command)}); its stderr may say why")
    return None


async def keep_alive(interval: float, timeout: float, ping: Callable[[], Awaitable[None]],
                     closed: Callable[[], bool], close: Callable[[], Awaitable[None]]) -> None:
    """Ping every ``interval`` seconds until ``closed()``; a ping that goes unanswered
    within the request ``timeout`` means the server is gone: the connection is closed
    (``close``), so every pending and later call fails with ``ConnectionClosed`` instead
    of hanging."""
    while True:
        await anyio.sleep(interval)
        if closed():
            return
        try:
            await ping()  # server/discover in 2026-07-28, which has no ping
        except RequestTimeout:
            log.warning("the server did not answer a keep-alive ping within %ss; "
                        "closing the connection", timeout)
            await close()
            return
        except MCPError as exc:
            if not isinstance(exc, ConnectionClosed):  # closed: nothing left to watch
                log.warning("keep-alive pings stopped: %s", exc)
            return
