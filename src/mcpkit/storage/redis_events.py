"""SSE event logs in Redis Streams: a client resumes on whichever instance it reaches.

Each session has one Redis Stream (``<prefix>e:{sid}``), one counter
(``<prefix>n:{sid}``) and the size of the data it holds (``<prefix>eb:{sid}``). ``append``
runs one Lua script: it counts the event (``INCR``), adds it with the entry id ``<seq>-0``
and its stream id and data as fields, drops the oldest entries while the log holds more
than ``max_events`` events or ``max_bytes`` bytes of data (an event bigger than
``max_bytes`` is not kept) and renews the keys' ``ttl``. Event ids are
``"<stream>_<seq>"`` as in the other stores, so ``replay`` reads the one entry the client
named (it must exist and be of that stream: else None) and everything after it with one
``XRANGE`` each, in one round trip, and keeps that stream's events: exactly once, in
order, on any instance. ``follow`` waits for the events a stream gets next (a resumed
stream whose handler runs on another instance). Calls raise ``StoreUnavailable`` when
Redis cannot be reached.
"""

from __future__ import annotations

from typing import Any

from .events import DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS, parse_event_id
from .redis_link import RedisLink

APPEND = """
local seq = redis.call('INCR', KEYS[1])
redis.call('XADD', KEYS[2], seq .. '-0', 's', ARGV[2], 'd', ARGV[3])
local size = redis.call('INCRBY', KEYS[3], string.len(ARGV[3]))
local count = redis.call('XLEN', KEYS[2])
local max_events, max_bytes = tonumber(ARGV[1]), tonumber(ARGV[5])
while count > 0 and (count > max_events or size > max_bytes) do
  local oldest = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)[1]
  redis.call('XDEL', KEYS[2], oldest[1])
  size = size - string.len(oldest[2][4])
  count = count - 1
end
if size < 0 or count == 0 then size = 0 end
redis.call('SET', KEYS[3], size, 'PX', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return seq
"""


class RedisEventStore:
    """Events in Redis Streams, at most ``max_events`` and ``max_bytes`` bytes of event
    data per session (oldest dropped first), kept ``ttl`` seconds after the session's
    last event."""

    shared = True

    def __init__(self, link: RedisLink | str, *, max_events: int = DEFAULT_MAX_EVENTS,
                 max_bytes: int = DEFAULT_MAX_BYTES, ttl: float = 3600.0) -> None:
        self.link = link if isinstance(link, RedisLink) else RedisLink(link)
        if max_events < 1 or max_bytes < 1 or ttl <= 0:
            raise ValueError("max_events and max_bytes must be at least 1 and ttl "
                             "positive seconds")
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.ttl_ms = int(ttl * 1000)
        self._append = self.link.script(APPEND)

    def _keys(self, session_id: str) -> tuple[str, str, str]:
        return (self.link.key("n", session_id, tag=session_id),
                self.link.key("e", session_id, tag=session_id),
                self.link.key("eb", session_id, tag=session_id))

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        keys = list(self._keys(session_id))
        seq = await self.link.run("store an SSE event", lambda r: self._append(
            keys, [self.max_events, stream_id, data, self.ttl_ms, self.max_bytes]))
        return f"{stream_id}_{int(seq)}"

    async def replay(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        parsed = parse_event_id(last_event_id)
        if parsed is None:
            return None
        stream, seq = parsed
        log = self._keys(session_id)[1]

        async def read(r: Any) -> list[Any]:
            pipe = r.pipeline(transaction=False)
            pipe.xrange(log, f"{seq}-0", f"{seq}-0")
            pipe.xrange(log, f"({seq}-0", "+")
            return list(await pipe.execute())

        named, after = await self.link.run("read SSE events", read)
        if not named or named[0][1].get(b"s") != stream.encode():
            return None  # never issued in this session, another stream's, or evicted
        out = [(f"{stream}_{int(eid.split(b'-')[0])}", fields[b"d"])
               for eid, fields in after if fields.get(b"s") == stream.encode()]
        return stream, out

    async def follow(self, session_id: str, stream_id: str, after: int
                     ) -> tuple[int, list[tuple[str, bytes]]]:
        """(the last event number read, ``stream_id``'s events after event number
        ``after``), waiting up to half the link's timeout for the first one to come."""
        log = self._keys(session_id)[1]
        block = max(1, int(self.link.timeout * 500))
        got: Any = await self.link.run("read new SSE events", lambda r: r.xread(
            {log: f"{after}-0"}, count=100, block=block))
        last, out = after, list[tuple[str, bytes]]()
        for _name, entries in got or ():
            for eid, fields in entries:
                last = int(eid.split(b"-")[0])
                if fields.get(b"s") == stream_id.encode():
                    out.append((f"{stream_id}_{last}", fields[b"d"]))
        return last, out

    async def drop(self, session_id: str) -> None:
        keys = self._keys(session_id)
        await self.link.run("drop SSE events", lambda r: r.delete(*keys))
