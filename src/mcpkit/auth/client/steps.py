"""The steps of the client OAuth flow, and its bounded JSON exchange.

What: the flow (``oauth``) is a pure generator. It yields *steps* and is sent
their outcome:

- an ``httpx.Request``: the MCP request itself, answered with its ``httpx.Response``
  unread (an SSE stream stays a stream);
- :class:`Fetch`: a request to a metadata, registration or token endpoint, answered
  with its ``httpx.Response`` read whole by the pump, up to a size limit and within a
  deadline (``accept-encoding: identity``, so the limit is on what is decoded);
- :class:`Interact`: the user-facing part, answered with the URL the browser was
  redirected back to;
- :class:`Exclusive`: "one authorization at a time", answered with ``None`` once the
  pump holds its lock (kept until the flow ends);
- :class:`Call`: run a caller's function (a subject token provider, sync or async),
  answered with what it returned (``AuthorizationFailed`` naming it when it raised, or
  when an async one overran its ``timeout``).

:func:`exchange_json` is the sub-flow for one JSON exchange: it follows redirects only
within the origin asked (a client that followed them itself must have ended in that
origin) and decodes
a JSON object.

:class:`AddressGuard` holds every :class:`Fetch` of a flow to the address rule of
``addresses`` (no private, loopback or link-local address the MCP server is not on): the
pumps pass each fetch's request through :meth:`AddressGuard.guard` before sending it
(its host, and a hook on the address its connection reaches), :meth:`AddressGuard.check`
its response, and :meth:`AddressGuard.learn` the MCP server's own responses.

Why: httpx drives ``httpx.Auth`` flows with a synchronous and an asynchronous pump; the
flow stays free of I/O so both work, and the pumps own the parts that differ (reading a
body, waiting for a user, locking).

Failure modes: :func:`exchange_json` does not raise for what a server answers: a
redirect to another origin, too many redirects, a body that is not a JSON object come
back as :class:`Fetched` with ``document=None`` and ``problem`` saying why, so
discovery can move on to the next URL. A body over the size limit or slower than the
deadline makes the pump raise :class:`~mcpkit.protocol.errors.AuthorizationFailed`
(the whole request fails); a transport error (no connection, a timeout) surfaces as
httpx raises it. A fetch the address rule refuses raises ``AuthorizationFailed`` naming
the URL and the reason, before the request is sent (or, for a pooled connection, before
its answer is read).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import anyio
import httpx
import orjson

from ...protocol.errors import AuthorizationFailed
from ..addresses import HostClass, classify_address, classify_host, refusal
from ..urls import origin_of

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_BYTES = 1 << 20
MAX_REDIRECTS = 3


@dataclass(frozen=True)
class Fetch:
    """An auxiliary request; the pump reads its body (``max_bytes``, ``timeout``)."""

    request: httpx.Request
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class Fetched:
    """The outcome of :func:`exchange_json`: the last response (``None`` after too many
    redirects), its JSON object, or why there is none."""

    response: httpx.Response | None
    document: dict[str, Any] | None = None
    problem: str | None = None

    @property
    def status(self) -> int | None:
        return None if self.response is None else self.response.status_code


@dataclass(frozen=True)
class Interact:
    """Show ``url`` to the user; the answer is the URL redirected back to."""

    url: str


@dataclass(frozen=True)
class Exclusive:
    """Take the flow's lock (one authorization at a time per auth object)."""


@dataclass(frozen=True)
class Call:
    """Run ``function`` in the pump (see the module docstring); ``what`` names it in
    errors, which carry the exception's type and message, never its return value."""

    function: Callable[[], Any]
    what: str
    timeout: float = DEFAULT_TIMEOUT

    def _failed(self, exc: Exception) -> AuthorizationFailed:
        if isinstance(exc, AuthorizationFailed):
            return exc
        if isinstance(exc, TimeoutError):
            return AuthorizationFailed(f"{self.what} did not answer within {self.timeout} s")
        return AuthorizationFailed(f"{self.what} failed: {type(exc).__name__}: "
                                   f"{str(exc)[:200]}")

    async def _finish(self, value: Awaitable[Any]) -> Any:
        with anyio.fail_after(self.timeout):
            return await value

    def run_sync(self) -> Any:
        """The outcome in a thread without an event loop (``anyio.run`` for an async
        function)."""
        try:
            value = self.function()
            return anyio.run(self._finish, value) if inspect.isawaitable(value) else value
        except Exception as exc:
            raise self._failed(exc) from None

    async def run_async(self) -> Any:
        """The outcome in an event loop."""
        try:
            value = self.function()
            return await self._finish(value) if inspect.isawaitable(value) else value
        except Exception as exc:
            raise self._failed(exc) from None


Step = httpx.Request | Fetch | Interact | Exclusive | Call
Flow = Generator[Step, Any, Any]


def _same_origin(a: str, b: str) -> bool:
    try:
        return origin_of(a) == origin_of(b)
    except ValueError:
        return False


def exchange_json(method: str, url: str, *, form: Mapping[str, str] | None = None,
                  json: Mapping[str, Any] | None = None,
                  headers: Mapping[str, str] | None = None,
                  timeout: float = DEFAULT_TIMEOUT,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> Generator[Step, Any, Fetched]:
    """One JSON exchange (see the module docstring). The result has ``document`` set
    when the final answer's body is a JSON object, whatever its status."""
    for _ in range(MAX_REDIRECTS + 1):
        request = httpx.Request(
            method, url, data=dict(form) if form is not None else None,
            json=dict(json) if json is not None else None,
            headers={"accept": "application/json", "accept-encoding": "identity",
                     **(headers or {})},
            extensions={"timeout": httpx.Timeout(timeout).as_dict()})
        response: httpx.Response = yield Fetch(request, max_bytes, timeout)
        if not _same_origin(str(response.url), url):  # a client that follows redirects
            return Fetched(response, None, f"{url} redirected to another origin")
        if response.is_redirect:
            target = urljoin(str(response.url), response.headers.get("location", ""))
            if not _same_origin(target, url):
                return Fetched(response, None, f"{url} redirected to another origin")
            if method != "GET" and response.status_code not in (307, 308):
                return Fetched(response, None, f"{url} redirected a {method}")
            url = target
            continue
        try:
            document = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            return Fetched(response, None, f"{url} answered HTTP {response.status_code}, "
                           "not JSON")
        if not isinstance(document, dict):
            return Fetched(response, None, f"{url} answered no JSON object")
        return Fetched(response, document)
    return Fetched(None, None, f"{url}: more than {MAX_REDIRECTS} redirects")


def _peer(stream: Any) -> str | None:
    """The address a network stream (``response.extensions["network_stream"]``, a
    ``connect_tcp`` trace's return value) is connected to, or None if unknown."""
    try:
        address = stream.get_extra_info("server_addr")
    except (AttributeError, OSError):  # no stream (a mock transport), a closed socket
        return None
    if isinstance(address, tuple) and address and isinstance(address[0], str):
        return address[0]
    return None


@dataclass
class AddressGuard:
    """The address rule (``addresses``) for the fetches of one flow.

    ``server``: the classes of the MCP server, from its URL's host (a name counts as
    public) and, once :meth:`learn` has seen its response, the address it connected to.
    :meth:`guard` checks a fetch's URL before it is sent (literal addresses, ``localhost``
    names) and hooks httpcore's ``trace`` extension so that the address a connection for
    it reached is checked right after the TCP connect, before a byte is sent (names,
    DNS rebinding); :meth:`check` looks again at the connection the response came on (a
    pooled connection opened earlier). A refusal raises ``AuthorizationFailed`` naming
    the URL and the reason. Through an HTTP proxy every connection reaches the proxy:
    the rule then compares the proxy with itself, and the proxy must enforce its own.
    """

    server: set[HostClass] = field(default_factory=set)
    allow_private_networks: bool = False

    @classmethod
    def for_server(cls, url: httpx.URL, *,
                   allow_private_networks: bool = False) -> AddressGuard:
        return cls({classify_host(url.host) or HostClass.PUBLIC}, allow_private_networks)

    def learn(self, response: httpx.Response) -> None:
        """Count the address the MCP server's ``response`` came from as the server's."""
        peer = _peer(response.extensions.get("network_stream"))
        if peer is not None:
            self.server.add(classify_address(peer))

    def _reason(self, url: Any, target: HostClass | None, where: str) -> str | None:
        reason = refusal(target or HostClass.PUBLIC, self.server,
                         allow_private_networks=self.allow_private_networks)
        return None if reason is None else f"refused to fetch {url}: {where} is {reason}"

    def guard(self, request: httpx.Request, *, asynchronous: bool = False) -> httpx.Request:
        """``request`` checked and hooked (see the class docstring)."""
        url = request.url
        problem = self._reason(url, classify_host(url.host), "its host")
        if problem is not None:
            raise AuthorizationFailed(problem)

        def refused(name: str, info: dict[str, Any]) -> tuple[Any, str] | None:
            if name != "connection.connect_tcp.complete":
                return None
            stream = info.get("return_value")
            peer = _peer(stream)
            problem = None if peer is None else self._reason(
                url, classify_address(peer), f"the address it reached, {peer},")
            return None if problem is None else (stream, problem)

        def trace(name: str, info: dict[str, Any]) -> None:
            if (found := refused(name, info)) is not None:
                found[0].close()
                raise AuthorizationFailed(found[1])

        async def atrace(name: str, info: dict[str, Any]) -> None:
            if (found := refused(name, info)) is not None:
                await found[0].aclose()
                raise AuthorizationFailed(found[1])

        request.extensions["trace"] = atrace if asynchronous else trace
        return request

    def check(self, request: httpx.Request, response: httpx.Response) -> None:
        """Refuse ``response`` when its connection reached a refused address."""
        peer = _peer(response.extensions.get("network_stream"))
        problem = None if peer is None else self._reason(
            request.url, classify_address(peer), f"the address it reached, {peer},")
        if problem is not None:
            raise AuthorizationFailed(problem)


def bound(response: httpx.Response, step: Fetch) -> None:
    """Make reading ``response`` raise ``AuthorizationFailed`` past ``step.max_bytes``
    or ``step.timeout`` seconds."""
    response.stream = _Bounded(response.stream, step, str(step.request.url))


class _Bounded(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body stream that stops at a size and a time limit."""

    def __init__(self, inner: Any, step: Fetch, url: str) -> None:
        self._inner = inner
        self._limit = step.max_bytes
        self._timeout = step.timeout
        self._deadline = time.monotonic() + step.timeout
        self._url = url
        self._size = 0

    def _count(self, chunk: bytes) -> bytes:
        self._size += len(chunk)
        if self._size > self._limit:
            raise AuthorizationFailed(f"{self._url} answered more than {self._limit} bytes")
        if time.monotonic() > self._deadline:
            raise AuthorizationFailed(f"{self._url} took more than {self._timeout} s")
        return chunk

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            yield self._count(chunk)

    async def __aiter__(self) -> AsyncGenerator[bytes]:
        async for chunk in self._inner:
            yield self._count(chunk)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()
