"""Session records in Redis: any instance of a deployment serves any session.

A record (``SessionStore``) is one JSON string per session under ``<prefix>s:{sid}`` that
expires ``ttl`` seconds after its last use: ``touch`` renews it and reads it back (one
script: ``GET`` and ``PEXPIRE``; the renewals of one loop turn share a pipeline,
``redis_batch``) at a session's first request on an instance and then at most once per
``recheck`` seconds; a DELETE or a change another instance saved (the log level, the
handshake's end) also reaches every holder at once over the bus. The store is a
``SharedSecret`` as well (the key sealing MRTR ``requestState``, kept in Redis). Calls
raise ``StoreUnavailable`` when Redis cannot be reached (see ``redis_link``).
"""

from __future__ import annotations

import json
from typing import Any

from .redis_batch import ScriptBatch
from .redis_link import RedisLink
from .sessions import Record

RECHECK = 1.0
"""Seconds an instance trusts its last renewal of a session by default (see ``__init__``)."""

TOUCH = """
local v = redis.call('GET', KEYS[1])
if v then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return v
"""


class RedisSessionStore:
    """Session records in Redis, expiring ``ttl`` seconds after their last use."""

    shared = True  # instances sharing this store see each other's sessions

    def __init__(self, link: RedisLink | str, *, ttl: float = 3600.0,
                 recheck: float = RECHECK) -> None:
        """``recheck``: seconds an instance that renewed a session trusts that renewal
        before renewing (and re-reading) it again. A DELETE or a change made elsewhere
        reaches the holders at once over the bus (``ENDED``, ``CHANGED``), so the window
        only matters when a bus message is lost or the record is edited behind mcpkit's
        back; 0 checks the record on every request (one Redis round trip each)."""
        self.link = link if isinstance(link, RedisLink) else RedisLink(link)
        if ttl <= 0:
            raise ValueError(f"ttl must be positive seconds, got {ttl!r}")
        if not 0 <= recheck < ttl:
            raise ValueError(f"recheck must be seconds from 0 to below ttl ({ttl}), "
                             f"got {recheck!r}")
        self.ttl_ms = int(ttl * 1000)
        self.recheck = float(recheck)
        self._touch = ScriptBatch(self.link, TOUCH)

    def _key(self, session_id: str) -> str:
        return self.link.key("s", session_id, tag=session_id)

    def secret(self) -> bytes:
        """The 32-byte key every instance on this Redis seals ``requestState`` with."""
        return self.link.secret()

    async def save(self, session_id: str, record: Record) -> None:
        data = json.dumps(record)
        key = self._key(session_id)
        await self.link.run("save the session", lambda r: r.set(key, data, px=self.ttl_ms))

    async def load(self, session_id: str) -> Record | None:
        key = self._key(session_id)
        raw: Any = await self.link.run("load the session", lambda r: r.get(key))
        return _decode(raw)

    async def touch(self, session_id: str) -> Record | None:
        """The record, its expiry renewed; None when it is gone (deleted or expired)."""
        key = self._key(session_id)
        raw: Any = await self.link.run("renew the session",
                                       lambda r: self._touch([key], [self.ttl_ms]))
        return _decode(raw)

    async def delete(self, session_id: str) -> None:
        key = self._key(session_id)
        await self.link.run("delete the session", lambda r: r.delete(key))


def _decode(raw: Any) -> Record | None:
    """A stored record, or None (absent, or not a JSON object: no session)."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None

