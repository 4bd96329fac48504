"""Task records in Redis: every instance of a deployment answers for every task.

Keys (``<prefix>`` is the link's, "mcpkit:"):

- ``t:<id>``: the record (JSON), expiring with the task's ttl (Redis deletes it);
- ``to:<owner>``: the owner's index, a sorted set scored by ``created`` (members are task
  ids, so equal scores order by id: the ``(created, id)`` order of ``tasks/list``); a
  member whose record expired is pruned when a page meets it;
- ``tx``: every task with a ttl scored by its expiry (what ``sweep`` reports);
- ``tr``: a hash task id -> the instance running it, while the task is not terminal;
- ``hb:<instance>``: that instance's heartbeat, renewed every ``heartbeat`` seconds and
  expiring after ``3 * heartbeat``.

A record is written by one script that refuses to overwrite a terminal record (a
terminal status never changes, R25-11.TASKS.6: a cancel racing the handler's end is
decided by whichever write comes first). A task whose running instance stopped (its
heartbeat expired) is reported ``failed`` by whichever instance reads it next (``get``,
``page``), and by ``abandon`` at start-up; a live instance's running tasks are never
touched. Every call is bounded and raises ``StoreUnavailable`` when Redis cannot be
reached (``redis_link``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from typing import Any

from ..protocol.tasks import is_terminal
from .cancels import stop_tasks
from .faults import StoreUnavailable
from .redis_link import RedisLink
from .tasks import TaskRecord, failed_error

log = logging.getLogger("mcpkit.storage")

ORPHANED = ("The server instance running this task stopped before the task finished, so it "
            "did not finish; start the request again.")

# KEYS: record, owner index, expiries, runners, heartbeat
# ARGV: json, px (0: no ttl), created, id, runner ('' when terminal), heartbeat px, expires
PUT = """
local old = redis.call('GET', KEYS[1])
if old then
  local s = cjson.decode(old)['status']
  if s == 'completed' or s == 'failed' or s == 'cancelled' then return 0 end
end
local px = tonumber(ARGV[2])
if px > 0 then redis.call('SET', KEYS[1], ARGV[1], 'PX', px)
else redis.call('SET', KEYS[1], ARGV[1]) end
local fresh = redis.call('EXISTS', KEYS[2]) == 0
local left = redis.call('PTTL', KEYS[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
if px <= 0 then redis.call('PERSIST', KEYS[2])
elseif fresh or (left >= 0 and left < px) then redis.call('PEXPIRE', KEYS[2], px) end
if px > 0 then redis.call('ZADD', KEYS[3], ARGV[7], ARGV[4]) end
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[4], ARGV[4], ARGV[5])
  redis.call('SET', KEYS[5], '1', 'PX', ARGV[6])
else redis.call('HDEL', KEYS[4], ARGV[4]) end
return 1
"""

# KEYS: runners; ARGV: heartbeat key prefix, task ids -> for each: 1 runner alive, 0 not
ALIVE = """
local out = {}
for i = 2, #ARGV do
  local who = redis.call('HGET', KEYS[1], ARGV[i])
  out[i - 1] = (who and redis.call('EXISTS', ARGV[1] .. who) == 1) and 1 or 0
end
return out
"""


class RedisTaskStore:
    """``TaskStore`` on Redis, shared by the instances of one deployment."""

    def __init__(self, link: RedisLink | str, *, heartbeat: float = 1.0) -> None:
        self.link = link if isinstance(link, RedisLink) else RedisLink(link)
        if heartbeat <= 0:
            raise ValueError(f"heartbeat must be positive seconds, got {heartbeat!r}")
        self.heartbeat = heartbeat
        #: This instance's id (what ``tr`` names as a task's runner).
        self.instance = secrets.token_hex(8)
        self._put = self.link.script(PUT)
        self._alive = self.link.script(ALIVE)
        self._beating: asyncio.Task[None] | None = None
        self._closed = False  # aclose() was called: no heartbeat is started again

    def _key(self, task_id: str) -> str:
        return self.link.key("t", task_id)

    def _index(self, owner: str) -> str:
        return self.link.key("to", owner)

    def _beat_key(self, instance: str) -> str:
        return self.link.key("hb", instance)

    @property
    def _runners(self) -> str:
        return self.link.key("tr", "")

    @property
    def _expiries(self) -> str:
        return self.link.key("tx", "")

    async def _do(self, what: str, command: str, *args: Any, **options: Any) -> Any:
        """One Redis command (a client method's name and arguments), bounded."""
        return await self.link.run(what, lambda r: getattr(r, command)(*args, **options))

    async def write(self, record: TaskRecord) -> bool:
        """``put``; False when the stored record is already terminal (nothing written)."""
        now = time.time()
        expires = record.expires
        px = 0 if expires is None else max(1, int((expires - now) * 1000))
        running = not is_terminal(record.status)
        if running:
            self._beat()
        keys = [self._key(record.task_id), self._index(record.owner), self._expiries,
                self._runners, self._beat_key(self.instance)]
        args = [record.to_json(), px, repr(record.created), record.task_id,
                self.instance if running else "", int(self.heartbeat * 3000),
                repr(expires or 0.0)]
        done: Any = await self.link.run("save the task", lambda r: self._put(keys, args))
        return bool(done)

    async def put(self, record: TaskRecord) -> None:
        await self.write(record)

    async def get(self, task_id: str) -> TaskRecord | None:
        key = self._key(task_id)
        raw: Any = await self.link.run("read the task", lambda r: r.get(key))
        if raw is None:
            return None
        record = TaskRecord.from_json(raw)
        if record.expired(time.time()):
            return None
        return (await self._settle([record]))[0]

    async def runner(self, task_id: str) -> str | None:
        """The instance running ``task_id`` (None: terminal, unknown, or its runner's
        heartbeat stopped)."""
        runners, beat = self._runners, self._beat_key("")

        async def ask(r: Any) -> Any:
            who = await r.hget(runners, task_id)
            return who if who is not None and await r.exists(beat + who.decode()) else None

        who: Any = await self.link.run("find the task's instance", ask)
        return None if who is None else str(who.decode())

    async def _settle(self, records: list[TaskRecord]) -> list[TaskRecord]:
        """``records``, those still running on an instance that stopped now ``failed``."""
        running = [r for r in records if not is_terminal(r.status)]
        if not running:
            return records
        args = [self._beat_key(""), *[r.task_id for r in running]]
        alive: Any = await self.link.run("check the tasks' instances",
                                         lambda r: self._alive([self._runners], args))
        for record, up in zip(running, alive, strict=True):
            if not up:
                await self._orphan(record, ORPHANED)
        return records

    async def _orphan(self, record: TaskRecord, message: str) -> None:
        record.status, record.updated, record.message = "failed", time.time(), message
        record.error, record.inputs = failed_error(message), None
        if not await self.write(record):  # it ended meanwhile: report what is stored
            fresh = await self.get(record.task_id)
            if fresh is not None:
                for name in ("status", "updated", "message", "result", "error"):
                    setattr(record, name, getattr(fresh, name))

    async def page(self, owner: str, after: tuple[float, str] | None, limit: int
                   ) -> list[TaskRecord]:
        index = self._index(owner)
        low = "-inf" if after is None else repr(after[0])
        out: list[TaskRecord] = []
        offset, batch, now = 0, max(limit, 1) + 16, time.time()
        for _ in range(64):  # bounded: each round reads `batch` index entries
            rows: Any = await self._do("list the tasks", "zrangebyscore", index, low, "+inf",
                                       start=offset, num=batch, withscores=True)
            offset += len(rows)
            ids = [m.decode() for m, score in rows
                   if after is None or (score, m.decode()) > after]
            if ids:
                keys = [self._key(i) for i in ids]
                raws: Any = await self._do("read the tasks", "mget", keys)
                gone = [i for i, raw in zip(ids, raws, strict=True) if raw is None]
                if gone:
                    await self._do("prune the task index", "zrem", index, *gone)
                    offset -= len(gone)
                found = [TaskRecord.from_json(raw) for raw in raws if raw is not None]
                out.extend(r for r in found if not r.expired(now))
            if len(out) >= limit or len(rows) < batch:
                break
        return await self._settle(out[:limit])

    async def sweep(self, now: float) -> list[str]:
        expiries = self._expiries

        async def take(r: Any) -> Any:
            ids = await r.zrangebyscore(expiries, "-inf", repr(now), start=0, num=1000)
            if ids:
                await r.zrem(expiries, *ids)
                await r.hdel(self._runners, *ids)
            return ids

        ids: Any = await self.link.run("sweep the tasks", take)
        return [i.decode() for i in ids]

    async def abandon(self, message: str) -> int:
        """Fail the tasks whose running instance stopped (never a live instance's)."""
        runners = self._runners
        entries: Any = await self.link.run("list the running tasks",
                                           lambda r: r.hgetall(runners))
        count = 0
        for task_id in [k.decode() for k in list(entries)[:10_000]]:
            if await self.runner(task_id) is not None:
                continue
            key = self._key(task_id)
            raw: Any = await self._do("read the task", "get", key)
            if raw is None:
                await self._do("forget the task", "hdel", runners, task_id)
                continue
            record = TaskRecord.from_json(raw)
            if not is_terminal(record.status):
                await self._orphan(record, message)
                count += 1
        return count

    # ------------------------------------------------------------------ heartbeat

    def _beat(self) -> None:
        """Keep this instance's heartbeat going (started with its first running task;
        never again once closed: a handler still saving its inputs while the instance
        stops must not leave a heartbeat running, nor keep its tasks alive)."""
        if self._closed:
            return
        if self._beating is None or self._beating.done():
            self._beating = asyncio.get_running_loop().create_task(self._beats())

    async def _beats(self) -> None:
        key, px = self._beat_key(self.instance), int(self.heartbeat * 3000)
        while not self._closed:
            try:
                await self.link.run("renew the heartbeat", lambda r: r.set(key, b"1", px=px))
            except StoreUnavailable as exc:
                log.warning("task heartbeat: %s", exc)
            await asyncio.sleep(self.heartbeat)

    async def aclose(self) -> None:
        """Stop the heartbeat (this instance's running tasks are then orphaned: they end
        with it) and forget it in Redis."""
        self._closed = True
        beating, self._beating = self._beating, None
        if beating is not None:
            await stop_tasks([beating], self.link.timeout * 2 + 1, "task heartbeat")
        key = self._beat_key(self.instance)
        with contextlib.suppress(StoreUnavailable):
            await self.link.run("stop the heartbeat", lambda r: r.delete(key))
