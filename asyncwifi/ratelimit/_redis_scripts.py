"""``RedisStore``'s Lua scripts, each atomic, in integer microseconds. ``ACQUIRE`` mirrors
``_log.bound`` and ``_keepalive``: tests/ratelimit/test_rl_lua_mirror.py holds them alike;
``RESERVE`` mirrors ``_volume.grant`` (tests/ratelimit/test_rl_gate.py)."""

from __future__ import annotations

__all__ = ["ACQUIRE", "OBJECTS", "PAUSE", "RESERVE", "TALLY"]

#: every script's clock: ARGV[1] (the client's time, microseconds) or, when empty, Redis' own
_NOW = """
local now = tonumber(ARGV[1])
if ARGV[1] == '' then local t = redis.call('TIME'); now = t[1] * 1000000 + t[2] end
local function us(x) return string.format('%.0f', x) end
local function ttl(span) return math.ceil(span / 1000) + 1000 end
"""

# KEYS: the log (one sorted set, kept for the longest window), pause, high-water mark,
# keep-alive due times. ARGV: now_us|"", member, n, then n x (count, span, pace, checked),
# token|"", horizon_us, then (after an outage) the client's now_us and the fallback's
# admissions: member, time_us pairs. Returns ok, now, retry-at, why (window i, n + 1: the
# pause, n + 2: a kept place), then each window's count.
ACQUIRE = (
    _NOW
    + """
local log, n = KEYS[1], tonumber(ARGV[3])
local function arg(i, j) return tonumber(ARGV[j + 4 * i]) end  -- j: 0 count, 1 span, 2 pace
local function checked(i) return ARGV[3 + 4 * i] == '1' end
local longest = 0
for i = 1, n do longest = math.max(longest, arg(i, 1)) end
for j = 7 + 4 * n, #ARGV, 2 do  -- the fallback's admissions, onto this time line
  redis.call('ZADD', log, us(ARGV[j + 1] - ARGV[6 + 4 * n] + now), ARGV[j])
  redis.call('PEXPIRE', log, ttl(longest))
end
-- time never goes back: a caller whose reading is older than one already used decides and
-- records at the newest time, or its check would miss entries a newer caller pruned
now = math.max(now, tonumber(redis.call('GET', KEYS[3]) or '0') or 0)
redis.call('SET', KEYS[3], us(now), 'PX', ttl(longest))
redis.call('ZREMRANGEBYSCORE', log, '-inf', us(now - longest))
local total, used, wait, why = redis.call('ZCARD', log), {}, now, 0
local function oldest(i, idx)  -- score of the idx-th oldest entry (1-based) of window i
  local r = total - used[i] + idx - 1
  return tonumber(redis.call('ZRANGE', log, r, r, 'WITHSCORES')[2])
end
local function hold(t, w) if t > wait then wait, why = t, w end end
hold(tonumber(redis.call('GET', KEYS[2]) or '0') or 0, n + 1)
for i = 1, n do
  local count, span, pace = arg(i, 0), arg(i, 1), arg(i, 2)
  used[i] = redis.call('ZCOUNT', log, '(' .. us(now - span), '+inf')
  if used[i] >= count then hold(oldest(i, used[i] - count + 1) + span, i) end
  if pace > 0 and used[i] > 0 then hold(oldest(i, used[i]) + pace, i) end
end
-- the keep-alive rule (_keepalive.py): no other open scroll's next request may be left
-- without a place by its due time; a scroll's own request waits, while its due time
-- allows, until its successor will have a place in time
local kkey, token, horizon = KEYS[4], ARGV[4 + 4 * n], tonumber(ARGV[5 + 4 * n])
if wait <= now then
  redis.call('ZREMRANGEBYSCORE', kkey, '-inf', '(' .. us(now))
  local all, others, own = redis.call('ZRANGE', kkey, 0, -1, 'WITHSCORES'), {}, nil
  for j = 1, #all, 2 do
    local due = tonumber(all[j + 1])
    if all[j] == token then own = due else others[#others + 1] = due end
  end
  local function place(m)  -- when the m-th from now on could go; whether waiting helps
    local at, movable = now, true
    for i = 1, n do
      local idx = used[i] + m - arg(i, 0)
      if checked(i) and idx > used[i] then at, movable = math.max(at, now + arg(i, 1)), false
      elseif checked(i) and idx > 0 then at = math.max(at, oldest(i, idx) + arg(i, 1)) end
    end
    return at, movable
  end
  local function short(extra)  -- how many others would find no place by their due time
    local s = 0
    for k = 1, #others do if place(extra + k) > others[k] then s = s + 1 end end
    return s
  end
  if short(1) > short(0) then
    -- ask again when the answer may change: a window's oldest leaves, a due time passes
    local retry = math.huge
    for j = 1, #others do if others[j] > now then retry = math.min(retry, others[j]) end end
    for i = 1, n do
      if checked(i) and used[i] > 0 then retry = math.min(retry, oldest(i, 1) + arg(i, 1))
      elseif checked(i) then retry = math.min(retry, now + arg(i, 1)) end
    end
    wait, why = retry, n + 2
  elseif token ~= '' then
    local at, movable = place(#others + 2)
    local retry = math.min(at - horizon, own or math.huge)
    if movable and retry > now then wait, why = retry, n + 2 end
  end
end
local ok = wait <= now and 1 or 0
if ok == 1 then
  redis.call('ZADD', log, us(now), ARGV[2])
  redis.call('PEXPIRE', log, ttl(longest))
  for i = 1, n do used[i] = used[i] + 1 end
  if token ~= '' then
    redis.call('ZADD', kkey, us(now + horizon), token)
    redis.call('PEXPIRE', kkey, ttl(horizon))
  end
end
return {ok, us(now), us(wait), why, unpack(used)}
"""
)

# KEYS: pause key.  ARGV: now_us|"", delay_us.
PAUSE = (
    _NOW
    + """
local untl = now + tonumber(ARGV[2])
if untl > tonumber(redis.call('GET', KEYS[1]) or '0') then
  redis.call('SET', KEYS[1], us(untl), 'PX', ttl(tonumber(ARGV[2])))
end
"""
)

# KEYS: the log.  ARGV: now_us|"", span_us.  Returns {"tag": count...} (members token:number:tag)
TALLY = (
    _NOW
    + """
local counts = {}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. us(now - ARGV[2]), '+inf')) do
  local tag = string.match(m, '^[^:]*:[^:]*:(.*)$') or ''
  counts[tag] = (counts[tag] or 0) + 1
end
return cjson.encode(counts)
"""
)

# KEYS: the month's objects (a hash: kind -> count), the day's, the batches added (a hash:
# sender -> the number of its last batch added) and the reservations (a hash: ticket ->
# "kind expiry_us size", see RESERVE).  ARGV: now (unused: the periods are named by the
# caller's clock), the month's and the day's time to live (ms), the sender and the batch's
# number (a sender numbers its batches 1, 2, ... and sends one only once the one before was
# answered: a batch whose number is not above the last one added was added already, its
# answer lost, and is not added again), the number of reservations it settles and their
# tickets (ended in the same step as the counts are added: never both, never neither), then
# kind, count pairs to add (none: a read).  Returns {month, day} as JSON objects.
OBJECTS = """
local drops = tonumber(ARGV[6])
for j = 7, 6 + drops do redis.call('HDEL', KEYS[4], ARGV[j]) end
local first = 7 + drops
local add = #ARGV >= first + 1
if add then
  local last = tonumber(redis.call('HGET', KEYS[3], ARGV[4]) or '0')
  add = tonumber(ARGV[5]) > last
end
if add then
  redis.call('HSET', KEYS[3], ARGV[4], ARGV[5])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  for j = first, #ARGV, 2 do
    redis.call('HINCRBY', KEYS[1], ARGV[j], ARGV[j + 1])
    redis.call('HINCRBY', KEYS[2], ARGV[j], ARGV[j + 1])
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
local function counts(key)
  local flat, out = redis.call('HGETALL', key), {}
  for j = 1, #flat, 2 do out[flat[j]] = tonumber(flat[j + 1]) end
  return cjson.encode(out)
end
return {counts(KEYS[1]), counts(KEYS[2])}
"""

# KEYS: the month's objects (a hash: kind -> count) and the reservations (a hash: ticket ->
# "kind expiry_us size").  ARGV: now_us|"", the ticket, the kind, want, least, the hold's
# time to live (us of the script's clock), then allowance name, count pairs ("all": every
# kind).  Expired reservations (of a process that died) are dropped first; then, as
# _volume.grant: per allowance what is left uncounted, less what the live reservations hold;
# the least of these, if at least `least`, is held (at most `want`).  Returns {size, free,
# the binding allowance's index (1-based among the pairs)}.
RESERVE = (
    _NOW
    + """
local held, total, live = {}, 0, redis.call('HGETALL', KEYS[2])
for j = 1, #live, 2 do
  local kind, expiry, size = string.match(live[j + 1], '^(%S+) (%S+) (%S+)$')
  if tonumber(expiry) <= now then redis.call('HDEL', KEYS[2], live[j])
  else
    held[kind] = (held[kind] or 0) + tonumber(size)
    total = total + tonumber(size)
  end
end
local used, all = {}, 0
local flat = redis.call('HGETALL', KEYS[1])
for j = 1, #flat, 2 do
  used[flat[j]] = tonumber(flat[j + 1])
  all = all + tonumber(flat[j + 1])
end
local kind, want, least = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local avail, free, name = nil, nil, 1
for j = 7, #ARGV, 2 do
  local which = ARGV[j]
  local u, h = used[which] or 0, held[which] or 0
  if which == 'all' then u, h = all, total end
  local left = tonumber(ARGV[j + 1]) - u
  if avail == nil or left - h < avail then avail, name = left - h, (j - 5) / 2 end
  if free == nil or left < free then free = left end
end
avail, free = math.max(0, avail), math.max(0, free)
local size = 0
if avail >= least then
  size = math.min(want, avail)
  local life = tonumber(ARGV[6])
  redis.call('HSET', KEYS[2], ARGV[2], kind .. ' ' .. us(now + life) .. ' ' .. size)
  redis.call('PEXPIRE', KEYS[2], ttl(life))
end
return {size, free, name}
"""
)
