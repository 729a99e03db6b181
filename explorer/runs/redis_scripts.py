"""The Lua scripts :class:`~explorer.runs.redis_store.RedisStore` runs for the steps that read and write several keys.

Redis runs a script atomically, so servers sharing one Redis never interleave these steps: a save that evicts the
least recently used recordings until the total fits the budget (:data:`SAVE`), a load that counts as a use
(:data:`LOAD`), forgetting a recording with its size and use entries (:data:`DROP`), a value read only within its
limit (:data:`GET_BOUNDED`), a channel read from a cursor within the read limit (:data:`READ`), and a write to a
channel's companion key only while the channel lives (:data:`IF_CHANNEL`). A script checks a value's size inside
Redis (``STRLEN``, or the length of each list item) so that one over its limit is never sent, and treats a key of the
wrong kind as damaged. The comment above each says its ``KEYS`` and ``ARGV``, in the order the store passes them,
and what it returns; the keys themselves are described in :mod:`explorer.runs.redis_store`.
"""

from __future__ import annotations

__all__ = ["DROP", "GET_BOUNDED", "IF_CHANNEL", "LOAD", "READ", "SAVE"]

# KEYS: recording, used, size, clock; ARGV: key, value, nbytes, budget, recording-key prefix.
SAVE = """
redis.call('SET', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[4]), ARGV[1])
local sizes, total = redis.call('HVALS', KEYS[3]), 0
for _, size in ipairs(sizes) do total = total + tonumber(size) end
while total > tonumber(ARGV[4]) do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not oldest then break end
  total = total - tonumber(redis.call('HGET', KEYS[3], oldest) or '0')
  redis.call('DEL', ARGV[5] .. oldest)
  redis.call('HDEL', KEYS[3], oldest)
  redis.call('ZREM', KEYS[2], oldest)
end
"""
# KEYS: recording, used, size, clock; ARGV: key, size limit. A load is a use; a recording gone from Redis is
# forgotten; one of the wrong kind or over the limit is deleted unread (its size is returned instead of it).
LOAD = """
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'string' and redis.call('STRLEN', KEYS[1]) <= tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[4]), ARGV[1])
  return redis.call('GET', KEYS[1])
end
local size = kind == 'string' and redis.call('STRLEN', KEYS[1]) or -1
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if kind == 'none' then return false end
return size
"""
# KEYS: recording, used, size; ARGV: key. Forget a recording.
DROP = """
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
"""
# KEYS: a string key; ARGV: size limit. Its value, false when missing, or (deleted unread) its size or -1 when it
# is over the limit or not a string.
GET_BOUNDED = """
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return false end
local size = kind == 'string' and redis.call('STRLEN', KEYS[1]) or -1
if size < 0 or size > tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1])
  return size
end
return redis.call('GET', KEYS[1])
"""
# KEYS: channel; ARGV: cursor, update limit, read limit. {length, 0, values from the cursor while their total stays
# within the read limit (one at least)}; {length, size, {}} when the first is over the update limit; {-1, -1, {}}
# for a key that is not a list; {0, 0, {}} for none.
READ = """
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return {0, 0, {}} end
if kind ~= 'list' then return {-1, -1, {}} end
local n, values, total = redis.call('LLEN', KEYS[1]), {}, 0
for _, value in ipairs(redis.call('LRANGE', KEYS[1], ARGV[1], -1)) do
  if #value > tonumber(ARGV[2]) then
    if #values == 0 then return {n, #value, {}} end
    break
  end
  if #values > 0 and total + #value > tonumber(ARGV[3]) then break end
  total = total + #value
  values[#values + 1] = value
end
return {n, 0, values}
"""
# KEYS: channel, target. Writes to a channel's companion key only while the channel lives, and lets it expire
# with the channel. ARGV[1] = 'zadd' (ARGV[2] score, ARGV[3] member) or 'set' (ARGV[2] value).
IF_CHANNEL = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
if ARGV[1] == 'zadd' then redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3]) else redis.call('SET', KEYS[2], ARGV[2]) end
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
"""
