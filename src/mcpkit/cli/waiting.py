"""``--wait SECONDS``: a URL command started right after its server waits for it.

``mcpkit dev server.py &`` (or ``mcpkit run --http ... &``) then ``mcpkit call URL ...``
is how a person tries a server from a shell, and the second command usually runs before
the first listens: the server is still importing. So a URL command that finds nothing
listening (connection refused, and only that: a host name that does not resolve, a
timeout or an HTTP error is no server starting up) tries again every
``STEP`` seconds for up to ``--wait`` seconds (``DEFAULT`` by default; 0: never), saying
once on stderr that it waits. A refused connection means nothing reached a server, so
trying again cannot run anything twice.
"""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import urlsplit

DEFAULT = 10.0
"""Seconds a URL command waits for a server that does not listen yet."""
STEP = 0.2
"""Seconds between two tries."""


def refused(exc: BaseException) -> bool:
    """Whether ``exc`` (``ServerUnreachable``) says that nothing listens there."""
    return "(connection refused)" in str(exc)


def where(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


class Waiting:
    """The ``--wait`` budget of one command, from its first try."""

    def __init__(self, seconds: float, url: str) -> None:
        import anyio

        self.seconds = max(0.0, seconds)
        self.url = url
        self.deadline = anyio.current_time() + self.seconds
        self.told = False

    async def again(self) -> bool:
        """Nothing listened: pause and return True to try again, or False when the time is
        up (the first time, say on stderr that the command waits)."""
        import anyio

        left = self.deadline - anyio.current_time()
        if left <= 0:
            return False
        if not self.told:
            self.told = True
            sys.stderr.write(f"mcpkit: nothing listens on {where(self.url)} yet; waiting up "
                             f"to {self.seconds:g} s for the server (--wait SECONDS)\n")
            sys.stderr.flush()
        await anyio.sleep(min(STEP, left))
        return True

    def said(self) -> str:
        """What to add to the final error once the time is up."""
        return f" (waited {self.seconds:g} s)" if self.told else ""


async def until_listening(url: str, seconds: float) -> None:
    """Wait (at most ``seconds``) until something accepts a TCP connection where ``url``
    points; return at once on anything but a refused connection (the command then meets
    that itself). For commands that connect with their own client (``check``)."""
    import anyio

    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    waiting = Waiting(seconds, url)
    for _ in range(int(waiting.seconds / STEP) + 2):  # bounded in count, too
        try:
            with anyio.fail_after(5):
                stream: Any = await anyio.connect_tcp(host, port)
        except OSError as exc:  # (anyio: "all connection attempts failed" for many addresses)
            nobody = isinstance(exc, ConnectionRefusedError) or (
                "all connection attempts failed" in str(exc).lower())
            if nobody and await waiting.again():
                continue
            return
        except TimeoutError:
            return
        await stream.aclose()
        return
