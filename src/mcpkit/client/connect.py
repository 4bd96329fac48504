"""What a ``Client`` talks through, chosen by its target, and why a server could not start.

A ``Server`` object is served in-process over a memory pipe and a command runs as a
subprocess on stdio: both are byte streams, served by the session's ``BytePump``. An
``http(s)://`` URL is Streamable HTTP, a message-level transport with a session of its
own (``transports.http_client``, loaded only then).
"""

from __future__ import annotations

import shlex
from typing import Any

import anyio

from ..session import ByteStream, Telemetry
from ..transports.memory import memory_pair
from ..transports.process import ProcessStream


def is_url(target: Any) -> bool:
    """Whether ``target`` names a Streamable HTTP endpoint."""
    return isinstance(target, str) and target.startswith(("http://", "https://"))


def client_telemetry(telemetry: bool | Telemetry, target: Any) -> Telemetry | None:
    """A client's ``Telemetry``: the one given, a new one for True (its
    ``network.transport``: ``tcp`` for a URL, ``pipe`` for a command, none in memory),
    None for False."""
    if not isinstance(telemetry, bool):
        return telemetry
    if not telemetry:
        return None
    transport = "tcp" if is_url(target) else (
        "pipe" if isinstance(target, str | list | tuple) else None)
    return Telemetry(transport=transport)


async def open_stream(target: Any, tg: anyio.abc.TaskGroup, *, env: dict[str, str] | None,
                      cwd: str | None, stderr: Any) -> ByteStream:
    """A byte stream to ``target``: a ``Server`` object (served in ``tg``), or a command
    (a list, or one shell-style string) started as a subprocess.

    Raises ``ValueError`` for an empty command and ``OSError`` (``FileNotFoundError``,
    say) when the command cannot be started."""
    if hasattr(target, "serve") and hasattr(target, "connection"):
        ours, theirs = memory_pair()

        async def serve() -> None:
            try:
                await target.serve(theirs)
            finally:
                await theirs.aclose()  # Server.serve does not close the stream it is given

        tg.start_soon(serve)
        return ours
    command = shlex.split(target) if isinstance(target, str) else list(target)
    if not command:
        raise ValueError("empty server command")
    return await ProcessStream.open(command, env=env, cwd=cwd, stderr=stderr)


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
