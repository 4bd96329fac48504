"""Rate-limit token buckets in Redis, shared by every instance of a deployment.

``RedisBuckets`` is a ``BucketStore`` (``mcpkit.server.limits``): ``take`` runs one Lua
script, so reading, refilling and drawing a bucket is atomic however many instances call
at once. The clock is Redis's own (``TIME``), one for every instance, so no server's clock
skew refills or drains a bucket. A bucket is a hash (tokens, when counted) under
``<prefix>b:<key>`` that expires once it would be full again (a full bucket is the same as
none), so idle callers cost no memory. ``StoreUnavailable`` when Redis cannot be reached.
"""

from __future__ import annotations

from .redis_link import RedisLink

TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local cost, rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = burst
if b[1] then
  tokens = math.min(burst, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * rate)
end
local wait = 0
if tokens >= cost then tokens = tokens - cost else wait = (cost - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return tostring(wait)
"""


class RedisBuckets:
    """Token buckets in Redis (see the module docstring)."""

    def __init__(self, link: RedisLink | str) -> None:
        self.link = link if isinstance(link, RedisLink) else RedisLink(link)
        self._take = self.link.script(TAKE)

    async def take(self, key: str, cost: float, rate: float, burst: float) -> float:
        name = self.link.key("b", key)
        wait = await self.link.run("draw from a rate-limit bucket", lambda r: self._take(
            [name], [repr(float(cost)), repr(float(rate)), repr(float(burst))]))
        return float(wait)
