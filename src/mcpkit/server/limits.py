"""Rate limits of tool calls: the configuration, the token buckets, and the answer.

What: ``RateLimit("60/minute", burst=10)`` says how often one caller may call a tool.
A server-wide limit (``Server(rate_limit=...)``) is one budget per caller shared by every
tool without a limit of its own; a tool's own limit (``@server.tool(rate_limit=...)``) is
a budget per caller for that tool alone (and such a call does not also draw on the
server-wide one); ``rate_limit=None`` on a tool exempts it. Nothing is limited unless
configured: a local stdio client driving thousands of calls a second is legitimate.

The caller (``caller_key``) is the verified token's identity over a protected HTTP
endpoint, else the client's address over HTTP (through ``trusted_proxies`` only), else
one key for everything else: the one peer of a stdio process, or in-memory clients.

Why a token bucket: it allows ``burst`` calls at once and then ``calls`` per ``period``
on average, with O(1) work and two numbers per caller. Refill is continuous, on the
monotonic clock (a wall-clock step neither refills nor drains a bucket).

The answer to a call over the limit is a tool-execution error (``isError: true``) whose
text tells the model which limit it hit and when to retry, with the wait in seconds in
the result's ``_meta`` under ``RETRY_META`` for programs. It travels on every transport
and revision and inside batches, and reaches the model, which can act on it; an HTTP 429
would reach the host as a transport failure instead (and cannot answer one call of a
batch, nor a call over stdio).

Storage is a ``BucketStore``: one operation, ``take(key, cost, rate, burst)``, which
answers 0 (granted, tokens taken) or the seconds to wait (nothing taken), sync or async.
``MemoryBuckets`` is the default; a shared store (Redis with an atomic script) can
implement the same call for several instances. Failure modes: a store that raises makes
the call fail like a server fault (the exception propagates; it is logged by the session).
"""

from __future__ import annotations

import math
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..protocol.record import Record

if TYPE_CHECKING:
    from ..session.interfaces import Principal

JSON = dict[str, Any]

RETRY_META: Final = "dev.mcpkit/retryAfterSeconds"
"""``_meta`` key of a rate-limited result: seconds until a retry can succeed (a number)."""

MAX_CALLS: Final = 1_000_000_000
_PERIODS: Final = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0}
_SPEC = re.compile(r"\s*([0-9]{1,10})\s*/\s*([a-z]+?)s?\s*")


class RateLimit(Record):
    """At most ``calls`` per ``period`` seconds on average, ``burst`` of them at once.

    Written ``RateLimit("60/minute")`` (units: second, minute, hour, day; plural allowed);
    ``burst`` (default: ``calls``) is the bucket's size, the calls one caller may make
    back to back after a quiet spell. ``ValueError`` for anything else: no zero, negative,
    fractional or huge counts, no unknown unit.
    """

    __slots__ = ("burst", "calls", "period", "rate", "unit")

    def __init__(self, spec: str, *, burst: int | None = None) -> None:
        if not isinstance(spec, str):
            raise ValueError(f"a rate limit is written like '60/minute', got {spec!r}")
        match = _SPEC.fullmatch(spec.lower())
        if match is None or match.group(2) not in _PERIODS:
            raise ValueError(
                f"invalid rate limit {spec[:40]!r}: write '<calls>/<unit>' with a unit of "
                "second, minute, hour or day, e.g. '60/minute'")
        calls = int(match.group(1))
        if not 1 <= calls <= MAX_CALLS:
            raise ValueError(f"invalid rate limit {spec[:40]!r}: the number of calls must "
                             f"be between 1 and {MAX_CALLS}")
        if burst is None:
            burst = calls
        if not isinstance(burst, int) or isinstance(burst, bool) or not (
                1 <= burst <= MAX_CALLS):
            raise ValueError(f"invalid burst {burst!r} for rate limit {spec[:40]!r}: a "
                             f"whole number of calls between 1 and {MAX_CALLS}")
        self.calls = calls
        self.unit = match.group(2)
        self.period = _PERIODS[self.unit]
        self.burst = burst
        #: Tokens added per second.
        self.rate = calls / self.period

    def describe(self) -> str:
        """The limit in words: ``"60 calls per minute"``."""
        return f"{self.calls} call{'s' if self.calls != 1 else ''} per {self.unit}"


def as_limit(value: RateLimit | str | None, where: str) -> RateLimit | None:
    """``value`` as a ``RateLimit`` (a string is parsed; None stays None); ``ValueError``
    naming ``where`` it was configured for anything else."""
    if value is None or isinstance(value, RateLimit):
        return value
    if isinstance(value, str):
        try:
            return RateLimit(value)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    raise ValueError(f"{where}: rate_limit must be a RateLimit, a string such as "
                     f"'60/minute', or None; got {type(value).__name__}")


class BucketStore(Protocol):
    """Where token buckets live (see the module docstring)."""

    def take(self, key: str, cost: float, rate: float,
             burst: float) -> float | Awaitable[float]:
        """Take ``cost`` tokens from bucket ``key`` (``burst`` tokens when new, refilled
        at ``rate`` per second up to ``burst``): 0 when they were there (and are taken),
        else the seconds until they will be (nothing taken). Atomic per key."""
        ...


class MemoryBuckets:
    """Token buckets in this process's memory, bounded in number.

    A bucket that has refilled completely is the same as no bucket, so the least
    recently used buckets are dropped once full (a few per new bucket: O(1) per call).
    At ``max_keys`` buckets a new caller gets no bucket of its own: every such caller
    shares one overflow bucket per limit (same rate and size) until full buckets make
    room. A flood of distinct addresses therefore never grows memory past the cap and
    never lifts anyone's limit; the callers already tracked keep their own buckets, and
    new ones share the overflow's allowance while the flood lasts.

    ``clock``: seconds, monotonic (tests inject a fake one).
    """

    __slots__ = ("_buckets", "_clock", "_overflow", "max_keys")

    def __init__(self, *, max_keys: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not isinstance(max_keys, int) or isinstance(max_keys, bool) or max_keys < 1:
            raise ValueError(f"max_keys must be a positive whole number, got {max_keys!r}")
        self.max_keys = max_keys
        self._clock = clock
        # key -> [tokens, when they were counted, when the bucket will be full]
        self._buckets: OrderedDict[str, list[float]] = OrderedDict()
        self._overflow: dict[tuple[float, float], list[float]] = {}

    def __len__(self) -> int:
        """Buckets held (the overflow buckets not counted)."""
        return len(self._buckets)

    def take(self, key: str, cost: float, rate: float, burst: float) -> float:
        now = self._clock()
        buckets = self._buckets
        bucket = buckets.get(key)
        if bucket is not None:
            buckets.move_to_end(key)
        else:
            self._evict(now, 4)
            if len(buckets) < self.max_keys:
                bucket = buckets[key] = [float(burst), now, now]
            else:
                bucket = self._overflow.get((rate, burst))
                if bucket is None:
                    bucket = self._overflow[(rate, burst)] = [float(burst), now, now]
        tokens = min(float(burst), bucket[0] + max(0.0, now - bucket[1]) * rate)
        wait = 0.0
        if tokens >= cost:
            tokens -= cost
        else:
            wait = (cost - tokens) / rate
        bucket[0], bucket[1] = tokens, now
        bucket[2] = now + (burst - tokens) / rate
        return wait

    def _evict(self, now: float, most: int) -> None:
        """Drop up to ``most`` least recently used buckets that are full by ``now``."""
        buckets = self._buckets
        while most and buckets:
            oldest = next(iter(buckets))
            if buckets[oldest][2] > now:
                return
            del buckets[oldest]
            most -= 1


class Limiter:
    """The rate limits of one server: the default, the store, and the answer to a call
    over its limit."""

    __slots__ = ("default", "store")

    def __init__(self, default: RateLimit | None, store: BucketStore) -> None:
        self.default = default
        self.store = store

    def limit_of(self, own: RateLimit | Inherit | None) -> RateLimit | None:
        """The limit a tool's calls are under: its ``own`` (``INHERIT``: the default)."""
        return self.default if isinstance(own, Inherit) else own

    def take(self, tool: str, own: bool, limit: RateLimit,
             caller: str) -> float | Awaitable[float]:
        """Draw one call of ``tool`` by ``caller``: from the tool's bucket when the limit
        is the tool's ``own``, else from the caller's server-wide one."""
        key = f"{tool}\x00{caller}" if own else f"\x00{caller}"
        return self.store.take(key, 1.0, limit.rate, float(limit.burst))


def caller_key(principal: Principal | None, peer: str | None) -> str:
    """Whom a call counts against (see the module docstring): ``id:<identity>``,
    ``ip:<address>`` or ``local``, from the request's ``principal`` and ``peer``."""
    if principal is not None:
        return "id:" + principal.identity
    if peer is not None:
        return "ip:" + peer
    return "local"


def limited_result(tool: str, limit: RateLimit, wait: float) -> JSON:
    """The ``isError`` answer to a call of ``tool`` over ``limit``, ``wait`` seconds before
    one would succeed (rounded up to whole seconds for the model)."""
    seconds = max(1, math.ceil(wait))
    text = (f"Rate limit exceeded for tool '{tool}': at most {limit.describe()}; retry in "
            f"{seconds} s. Calling again sooner fails the same way.")
    return {"content": [{"type": "text", "text": text}], "isError": True,
            "_meta": {RETRY_META: round(wait, 3)}}


class Inherit:
    """The type of ``INHERIT``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "INHERIT"


INHERIT: Final = Inherit()
"""A tool's ``rate_limit`` when none was given: the server-wide one applies."""
