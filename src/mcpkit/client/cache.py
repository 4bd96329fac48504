"""The client's cache of list and read results (2026-07-28 ``ttlMs`` / ``cacheScope``).

In the stateless revision a server says of each ``tools/list``, ``prompts/list``,
``resources/list``, ``resources/templates/list`` and ``resources/read`` result how long it
stays fresh (``ttlMs``, like HTTP ``max-age``) and who may reuse it (``cacheScope``:
``public``, anyone; ``private``, only the same authorization context). Asking again
within that time costs a round trip for an answer the server has already said will not
change, so ``Client`` keeps it and answers from here (``tools/list`` in a loop of an
agent host is the common case).

The rules, each the safe reading of the specification (``server/utilities/caching``):

- only what the server allowed: a result without a valid ``ttlMs`` (an integer > 0) and
  ``cacheScope``, a handshake-era session (no hints exist there), a result that took
  more than one request (an ``input_required`` round, MRTR, or a resend) are never kept;
- fresh for ``ttlMs`` from receipt, on a monotonic clock; never served after;
- keyed by the server (its URL, or the client itself for a process or an in-memory
  server), the revision spoken, the method and its params (``cursor``, ``uri``); a ``private``
  entry also by the principal: over HTTP a digest of the credentials the requests
  carried (``HttpClientTransport.credentials``: the access token, cookies, API key
  headers), else the client itself, so nothing private passes between credentials;
- ``notifications/*/list_changed`` drop the listing (every page), and
  ``notifications/resources/updated`` the reads of that URI, however they arrive (a
  stateful session, a ``listen`` stream); a result asked for before such a
  notification and answered after it is not kept;
- bounded: at most ``max_entries`` entries and ``max_bytes`` of encoded JSON, the least
  recently used dropped first;
- stored encoded and decoded on each hit, so a caller that changes a result it got
  cannot change what the next caller gets.

``ClientCache`` is the store (one per ``Client`` by default; pass one object to many
clients to share ``public`` results between them); ``CacheView`` is one client's use of
it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

import orjson

from ..protocol.errors import INVALID_PARAMS, RemoteError
from ..protocol.jsonrpc import JSONObject, RequestId
from .connect import Http
from .model import Wire
from .results import all_pages

if TYPE_CHECKING:
    from .client import Client

M = TypeVar("M", bound=Wire)

CACHED: frozenset[str] = frozenset({"tools/list", "prompts/list", "resources/list",
                                    "resources/templates/list", "resources/read"})
"""What the client keeps. ``server/discover`` is cacheable too, but the client asks it
once, on connecting, and ``ping`` must reach the server."""

LISTINGS: dict[str, tuple[str, ...]] = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}
"""The listings each change notification makes stale (templates are resources)."""

UPDATED = "notifications/resources/updated"

_owners = itertools.count(1)


class Key(NamedTuple):
    server: str  # its URL, or the one client that talks to it
    version: str  # the revision spoken
    method: str
    params: bytes  # the params but _meta, as canonical JSON
    principal: str  # "" for a public entry


class _Entry:
    __slots__ = ("data", "deadline", "uri")

    def __init__(self, data: bytes, deadline: float, uri: str | None) -> None:
        self.data = data
        self.deadline = deadline
        self.uri = uri


class ClientCache:
    """Results kept for as long as their server allowed (see the module docstring).

    ``max_entries`` and ``max_bytes`` (of encoded JSON; a larger result is not kept)
    bound it; ``clock`` (seconds, monotonic) is for tests. ``hits`` and ``misses`` count
    the lookups of cacheable requests. Safe to share between clients and threads."""

    def __init__(self, max_entries: int = 512, max_bytes: int = 8 * 1024 * 1024, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("max_entries and max_bytes must be at least 1")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.clock = clock
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.epoch = 0  # +1 at each invalidation: an answer asked for before is not kept

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """The bytes of encoded JSON held."""
        return self._bytes

    def get(self, keys: tuple[Key, ...]) -> JSONObject | None:
        """A fresh copy of the first of ``keys`` held and fresh (an expired one is
        dropped), or None."""
        now = self.clock()
        with self._lock:
            for key in keys:
                entry = self._entries.get(key)
                if entry is None:
                    continue
                if now >= entry.deadline:
                    self._drop(key)
                    continue
                self._entries.move_to_end(key)
                self.hits += 1
                data = entry.data
                break
            else:
                self.misses += 1
                return None
        out: JSONObject = orjson.loads(data)
        return out

    def put(self, key: Key, result: JSONObject, ttl_ms: int, uri: str | None,
            epoch: int) -> bool:
        """Keep ``result`` under ``key`` for ``ttl_ms``, unless an invalidation came
        since ``epoch`` or it is larger than ``max_bytes``; whether it was kept."""
        data = orjson.dumps(result)
        if len(data) > self.max_bytes:
            return False
        deadline = self.clock() + ttl_ms / 1000
        with self._lock:
            if epoch != self.epoch:
                return False
            if key in self._entries:
                self._drop(key)
            self._entries[key] = _Entry(data, deadline, uri)
            self._bytes += len(data)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))
        return True

    def invalidate(self, server: str | None = None, methods: tuple[str, ...] = (),
                   uri: str | None = None, owner: str | None = None) -> int:
        """Drop the entries of ``server`` (None: every server) for ``methods`` (empty:
        all), of ``uri`` when given, or whose server or principal is ``owner``; how many
        were dropped."""
        with self._lock:
            self.epoch += 1
            gone = [key for key, entry in self._entries.items()
                    if (owner is None or owner in (key.server, key.principal))
                    and (server is None or key.server == server)
                    and (not methods or key.method in methods)
                    and (uri is None or entry.uri == uri)]
            for key in gone:
                self._drop(key)
        return len(gone)

    def clear(self) -> None:
        """Drop everything (after switching accounts on one client, say)."""
        self.invalidate()

    def _drop(self, key: Key) -> None:
        self._bytes -= len(self._entries.pop(key).data)


def hints(result: JSONObject) -> tuple[int, bool] | None:
    """``(ttlMs, private)`` when ``result`` may be kept, else None."""
    ttl, scope = result.get("ttlMs"), result.get("cacheScope")
    if type(ttl) is not int or ttl <= 0 or scope not in ("public", "private"):
        return None
    if result.get("resultType", "complete") != "complete":
        return None
    return ttl, scope == "private"


class Send(Protocol):
    """``Client.request`` as the view uses it."""

    def __call__(self, method: str, params: JSONObject | None = None, *,
                 on_sent: Callable[[RequestId], None] | None = None
                 ) -> Awaitable[JSONObject]: ...


class CacheView:
    """One client's use of a ``ClientCache`` (or of none): its keys, when it may use it,
    what its notifications drop.

    ``server``: the server's identity (an HTTP URL; None: one only this client talks
    to); ``version()``: the stateless revision spoken (None: a handshake-era session,
    nothing cached); ``credentials()``: a digest of the credentials sent (None: not
    known yet, or no HTTP); ``send``: the client's ``request``; ``owned``: the store is
    this client's alone."""

    __slots__ = ("credentials", "owned", "owner", "send", "server", "store", "version")

    def __init__(self, store: ClientCache | None, server: str | None,
                 version: Callable[[], str | None], credentials: Callable[[], str | None],
                 send: Send, *, owned: bool = False) -> None:
        self.store = store
        self.owned = owned
        self.owner = f"client:{next(_owners)}"  # this client's own entries
        self.server = server
        self.version = version
        self.credentials = credentials
        self.send = send

    def _principal(self) -> str:
        if self.server is None:
            return self.owner  # the origin is this client's already
        return self.credentials() or self.owner

    async def get(self, method: str, params: JSONObject | None, fresh: bool = False
                  ) -> JSONObject:
        """The result of ``method``: from the cache when it holds a fresh one (unless
        ``fresh``), else from the server, kept when the server allowed it."""
        return (await self._get(method, params, fresh))[0]

    async def _get(self, method: str, params: JSONObject | None, fresh: bool
                   ) -> tuple[JSONObject, bool]:
        """``get``'s result and whether it came from the cache."""
        send, store, version = self.send, self.store, self.version()
        if store is None or version is None or method not in CACHED:
            return await send(method, params), False
        origin = self.server or self.owner
        wire = orjson.dumps({k: v for k, v in (params or {}).items() if k != "_meta"},
                            option=orjson.OPT_SORT_KEYS)
        if not fresh:
            hit = store.get((Key(origin, version, method, wire, self._principal()),
                             Key(origin, version, method, wire, "")))
            if hit is not None:
                return hit, True
        epoch, sends = store.epoch, 0

        def sent(_rid: RequestId) -> None:
            nonlocal sends
            sends += 1

        res = await send(method, params, on_sent=sent)
        allowed = hints(res) if sends == 1 else None  # never an MRTR retry's result
        if allowed is not None:
            ttl, private = allowed
            uri = params.get("uri") if params and method == "resources/read" else None
            key = Key(origin, version, method, wire, self._principal() if private else "")
            store.put(key, res, ttl, uri if isinstance(uri, str) else None, epoch)
        return res, False

    async def pages(self, method: str, key: str, model: type[M], fresh: bool = False
                    ) -> list[M]:
        """Every item of the listing ``method`` (``results.all_pages``), each page through
        the cache; when a cursor a kept page gave is refused (-32602), the listing is
        dropped and read again from the server."""
        cached = False

        async def page(method: str, params: JSONObject | None) -> JSONObject:
            nonlocal cached
            res, hit = await self._get(method, params, fresh)
            cached = cached or hit
            return res

        try:
            return await all_pages(page, method, key, model)
        except RemoteError as exc:
            if not cached or exc.code != INVALID_PARAMS:
                raise
        self.drop((method,))
        fresh = True  # (read by page)
        return await all_pages(page, method, key, model)

    def drop(self, methods: tuple[str, ...], uri: str | None = None) -> None:
        """Drop this server's entries for ``methods`` (of ``uri``, when given)."""
        if self.store is not None:  # (every revision's: what changed changed for all)
            self.store.invalidate(self.server or self.owner, methods, uri)

    def notified(self, method: str, params: dict[str, Any]) -> None:
        """What a notification from the server makes stale (see the module docstring)."""
        if method in LISTINGS:
            self.drop(LISTINGS[method])
        elif method == UPDATED and isinstance(params.get("uri"), str):
            self.drop(("resources/read",), params["uri"])

    def close(self) -> None:
        """The client is leaving: drop everything when the store is its own, else the
        entries no other client can reach (keyed by this client)."""
        if self.store is not None:
            if self.owned:
                self.store.clear()
            else:
                self.store.invalidate(owner=self.owner)


def view_for(cache: bool | ClientCache, client: Client) -> CacheView:
    """``client``'s view of its ``cache=`` (True: a store of its own; False: none): an
    HTTP server is known by its URL (its ``public`` results shared with the other clients
    of it), the principal by the credentials sent (``HttpClientTransport.credentials``),
    unless the caller's own ``http_client`` may add some unseen (a TLS client
    certificate): then by the client."""
    http = client.transport if isinstance(client.transport, Http) else None
    store = ClientCache() if cache is True else (  # (an empty store is falsy)
        cache if isinstance(cache, ClientCache) else None)

    def credentials() -> str | None:
        transport = client.http_transport
        if transport is None or http is None or http.http_client is not None:
            return None
        return transport.credentials

    return CacheView(store, http.url if http else None, lambda: client.stateless.version,
                     credentials, client.request, owned=cache is True)
