"""What the client commands say when a server cannot be used: the words a person can act
on, and never a guess passed off as advice.

- An HTTP error status (:func:`explain_http`): what the server said, and what to check —
  the URL's path for a 404/405, the server's log for a 5xx, a login or a token for a
  401/403.
- A redirect (:func:`after_redirect`): mcpkit follows none (it would carry the request
  and its credentials elsewhere), so it says where the redirect points and, when that is
  the same server, tries it once and says what it answered — "use it" only for a URL
  that answered as an MCP server, the server's own words otherwise (a mounted app's 404
  names its endpoint).
- A launched server that failed (:func:`show_stderr_tail`): the last lines it wrote to
  stderr.
"""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import urlsplit

PROBE_SECONDS = 5.0
"""At most this long is spent trying the URL a redirect points to."""


def _transport_error(exc: BaseException) -> Any:
    """The ``TransportError`` in ``exc`` or what caused it (None if there is none)."""
    from ..protocol.errors import TransportError

    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, TransportError):
        seen = seen.__cause__
    return seen


def explain_http(exc: BaseException, sent_token: bool, url: str = "URL",
                 stored: bool = False) -> str | None:
    """What to tell the user when the server answered with an HTTP error status (found in
    ``exc`` or what caused it) and what to do about it, else None. ``stored``: the token
    was a stored login's."""
    seen = _transport_error(exc)
    if seen is None or seen.status is None:
        return None
    if seen.status in (404, 405):
        path = urlsplit(url).path if "://" in url else "?"
        bare = " (this URL has no path; mcpkit run --http serves /mcp)" if path in ("",
                                                                                    "/") else ""
        return f"{exc}; check the URL's path: it must be the server's MCP endpoint{bare}"
    if seen.status >= 500:
        return f"{exc}; the server failed: its log says why"
    if seen.status not in (401, 403):
        return None
    if seen.status == 401 and stored:
        return ("the server refused the stored login's access token (HTTP 401): log in "
                f"again: mcpkit login {url} ({seen})")
    if seen.status == 401 and sent_token:
        return ("the server refused the access token (HTTP 401): it is invalid, expired or "
                f"for another server; get a new one for this server ({seen})")
    if seen.status == 401:
        return ("the server requires authorization (HTTP 401): log in with: mcpkit login "
                f"{url}, or give an access token with --token TOKEN or $MCPKIT_TOKEN ({seen})")
    return ("the server refused this token (HTTP 403): it lacks a scope this needs; get a "
            f"token with the scopes the server names ({seen})")


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, (parts.hostname or "").lower(), port


async def after_redirect(exc: BaseException, url: str, headers: dict[str, str],
                         timeout: float, mode: Any = "stateful") -> str | None:
    """When ``exc`` is a redirect of ``url``: what trying its target once said (None for
    any other error). The target is tried only on the same server (scheme, host and
    port), with the same headers and protocol era, as the command would connect."""
    from ..transports.http_answers import Redirected

    seen = _transport_error(exc)
    if not isinstance(seen, Redirected) or seen.location is None:
        return None
    target = seen.location
    if _origin(target) != _origin(url):
        return f"{target} is on another server, which mcpkit did not try"
    from ..client import Client, Http
    from ..protocol.errors import MCPError

    try:
        async with Client(Http(target, headers=headers or None), mode=mode,
                          timeout=min(timeout, PROBE_SECONDS)):
            pass
    except (MCPError, OSError) as problem:
        said = explain_http(problem, "authorization" in {k.lower() for k in headers},
                            target) or str(problem)
        return f"tried {target}: {said}"
    return f"tried {target}: it answers as an MCP server; use it as the server URL"


def show_stderr_tail(stderr: Any) -> None:
    """The last lines a launched server wrote to stderr: usually why it failed."""
    if stderr is None:
        return
    stderr.seek(0)
    tail = stderr.read().strip().splitlines()[-5:]
    if tail:
        sys.stderr.write("mcpkit: the server's last stderr lines:\n")
        sys.stderr.write("".join(f"  {line}\n" for line in tail))
