"""The Lua scripts of ``RedisStore``: each decides and records atomically in Redis.

Times are integer microseconds. ``_ACQUIRE`` mirrors the Python rules of ``_window``
(the sliding-window logs) and ``_keepalive`` (a place kept for each open scroll's next
request); ``tests/ratelimit/test_rl_lua_mirror.py`` holds them to the same decisions.
"""

from __future__ import annotations

__all__ = ["_ACQUIRE", "_MERGE", "_PAUSE"]

#: every script's clock: ARGV[1] (the client's time, microseconds) or, when empty, Redis' own
_NOW = """
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
"""

# KEYS: window sets..., pause key, high-water mark, keep-alive due times.
# ARGV: now_us|"" , member, n, then n x (count, span, pace, checked), token|"", horizon_us
_ACQUIRE = (
    _NOW
    + """
local n = tonumber(ARGV[3])
-- time never goes back: a caller whose reading is older than one already used (it was
-- delayed on its way here) decides and records at the newest time, or its check would
-- miss entries that a newer caller already pruned
local hwm = tonumber(redis.call('GET', KEYS[n + 2]) or '0')
if hwm and hwm > now then now = hwm end
local longest = 0
for i = 1, n do
  local span = tonumber(ARGV[1 + 4 * i])
  if span > longest then longest = span end
end
redis.call('SET', KEYS[n + 2], string.format('%.0f', now), 'PX', math.ceil(longest / 1000) + 1000)
local wait = now
local why = 0
local p = tonumber(redis.call('GET', KEYS[n + 1]) or '0')
if p and p > wait then wait = p; why = n + 1 end
local used = {}
for i = 1, n do
  local key = KEYS[i]
  local count = tonumber(ARGV[4 * i])
  local span = tonumber(ARGV[1 + 4 * i])
  local pace = tonumber(ARGV[2 + 4 * i])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%.0f', now - span))
  local c = redis.call('ZCARD', key)
  if c >= count then
    local e = redis.call('ZRANGE', key, c - count, c - count, 'WITHSCORES')
    local t = tonumber(e[2]) + span
    if t > wait then wait = t; why = i end
  end
  if pace > 0 and c > 0 then
    local e = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    local t = tonumber(e[2]) + pace
    if t > wait then wait = t; why = i end
  end
  used[i] = c
end
-- scroll keep-alive (_keepalive.py, the same rule): an admission may not leave another
-- open scroll's next request without a place by its due time; a scroll's own request
-- waits, while its due time allows, until its successor will have a place in time
local kkey = KEYS[n + 3]
local token = ARGV[4 + 4 * n]
local horizon = tonumber(ARGV[5 + 4 * n])
if wait <= now then
  redis.call('ZREMRANGEBYSCORE', kkey, '-inf', '(' .. string.format('%.0f', now))
  local all = redis.call('ZRANGE', kkey, 0, -1, 'WITHSCORES')
  if #all > 0 or token ~= '' then
    local others, own = {}, nil
    for j = 1, #all, 2 do
      if all[j] == token then own = tonumber(all[j + 1])
      else others[#others + 1] = tonumber(all[j + 1]) end
    end
    -- when the k-th next admission could go (after extra at now), and whether waiting helps
    local function place(k, extra)
      local at, movable = now, true
      for i = 1, n do
        if ARGV[3 + 4 * i] == '1' then
          local span = tonumber(ARGV[1 + 4 * i])
          local idx = used[i] + extra + k - tonumber(ARGV[4 * i])
          if idx > 0 then
            local t = now + span
            if idx <= used[i] then
              local e = redis.call('ZRANGE', KEYS[i], idx - 1, idx - 1, 'WITHSCORES')
              t = tonumber(e[2]) + span
            else
              movable = false
            end
            if t > at then at = t end
          end
        end
      end
      return at, movable
    end
    local function short(extra)
      local s = 0
      for k = 1, #others do
        local at = place(k, extra)
        if at > others[k] then s = s + 1 end
      end
      return s
    end
    if #others > 0 and short(1) > short(0) then
      -- ask again at the next change: a window's oldest admission leaves, a due time passes
      local retry = nil
      for j = 1, #others do
        if others[j] > now and (retry == nil or others[j] < retry) then retry = others[j] end
      end
      local kwhy = 0
      for i = 1, n do
        if ARGV[3 + 4 * i] == '1' then
          local t = now + tonumber(ARGV[1 + 4 * i])
          if used[i] > 0 then
            local e = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
            t = tonumber(e[2]) + tonumber(ARGV[1 + 4 * i])
          end
          if kwhy == 0 then kwhy = i end
          if retry == nil or t < retry then retry = t; kwhy = i end
        end
      end
      wait = retry
      why = kwhy
    elseif token ~= '' then
      local at, movable = place(#others + 1, 1)
      local retry = at - horizon
      if own ~= nil and own < retry then retry = own end
      if movable and retry > now then
        wait = retry
        for i = n, 1, -1 do
          if ARGV[3 + 4 * i] == '1' then why = i end
        end
      end
    end
  end
end
local ok = 0
if wait <= now then
  ok = 1
  for i = 1, n do
    redis.call('ZADD', KEYS[i], string.format('%.0f', now), ARGV[2])
    redis.call('PEXPIRE', KEYS[i], math.ceil(tonumber(ARGV[1 + 4 * i]) / 1000) + 1000)
    used[i] = used[i] + 1
  end
  if token ~= '' then
    redis.call('ZADD', kkey, string.format('%.0f', now + horizon), token)
    redis.call('PEXPIRE', kkey, math.ceil(horizon / 1000) + 1000)
  end
end
local out = {ok, string.format('%.0f', now), string.format('%.0f', wait), why}
for i = 1, n do out[#out + 1] = used[i] end
return out
"""
)

# KEYS: pause key.  ARGV: now_us|"", delay_us
_PAUSE = (
    _NOW
    + """
local untl = now + tonumber(ARGV[2])
local p = tonumber(redis.call('GET', KEYS[1]) or '0')
if untl > p then
  local ttl = math.ceil(tonumber(ARGV[2]) / 1000) + 1000
  redis.call('SET', KEYS[1], string.format('%.0f', untl), 'PX', ttl)
end
return string.format('%.0f', now)
"""
)

# KEYS: window sets.  ARGV: offset_us (client -> Redis time line), n, spans..., then pairs
_MERGE = """
local n = tonumber(ARGV[2])
local off = tonumber(ARGV[1])
for j = 3 + n, #ARGV, 2 do
  local score = string.format('%.0f', tonumber(ARGV[j]) + off)
  for i = 1, n do
    redis.call('ZADD', KEYS[i], score, ARGV[j + 1])
  end
end
for i = 1, n do
  redis.call('PEXPIRE', KEYS[i], math.ceil(tonumber(ARGV[2 + i]) / 1000) + 1000)
end
return 1
"""
