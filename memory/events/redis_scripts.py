"""The Lua scripts of `RedisEventStore` (memory/events/redis_store.py, which documents the key layout).

Each script runs atomically on one slot: every key it touches is declared in KEYS and shares the tenant's hash
tag. Numbers cross the Lua boundary as strings (Lua would print microsecond times with 14 digits), and strings
are compared byte by byte (`after`), never with Lua's locale-dependent `<`.
"""

from __future__ import annotations

# Byte order of two strings (Lua's `<` follows the server's locale).
_AFTER = """
local function after(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end
"""
# The score under which retention next looks at an ended session: its end, or its oldest event if older.
_RETAIN = """
local function retain(age, retain_key, member, ended)
  local score = ended
  local first = redis.call('ZRANGE', age, 0, 0, 'WITHSCORES')
  if first[2] and (not score or tonumber(first[2]) < tonumber(score)) then score = first[2] end
  if score then redis.call('ZADD', retain_key, score, member) else redis.call('ZREM', retain_key, member) end
end
"""
# Create the session record (active, started and last seen `at`) or make an ended one active again; move its last
# event time forward to `at`, and list it as active and idle since then.
_TOUCH = """
local function touch(rec, all, active, ended, idle, retain, sid, member, at)
  local status = redis.call('HGET', rec, 'status')
  if not status then
    redis.call('HSET', rec, 'status', 'active', 'started', at, 'last', at, 'events', 0)
    redis.call('ZADD', all, 0, sid)
  elseif status == 'ended' then
    redis.call('HSET', rec, 'status', 'active')
    redis.call('HDEL', rec, 'ended', 'reason')
    redis.call('ZREM', ended, sid)
    redis.call('ZREM', retain, member)
  end
  local last = redis.call('HGET', rec, 'last')
  if tonumber(at) > tonumber(last) then
    last = at
    redis.call('HSET', rec, 'last', last)
  end
  redis.call('ZADD', active, 0, sid)
  redis.call('ZADD', idle, last, member)
end
"""
# KEYS rec ev ids age calls task tasks n:all n:active n:ended idle retain. ARGV id body recorded type call-token
# task-token session member own-result bound-result touch request-key look-up. Returns {id} for a new event, else
# {id, body, result} of the stored event (a retry by id, or by request key when look-up is '1'; or the call a
# result was bound to). The request key is indexed (`q:<key>`, with `k:<id>` / `rk:<call id>` for retention to
# remove it) in the same step; an import ('0') indexes a key only if no event holds it yet.
APPEND = (
    _AFTER
    + _TOUCH
    + """
local rec, ev, ids, age, calls = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, recorded, call, task, sid, member = ARGV[1], ARGV[3], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local function stored(eid) return {eid, redis.call('HGET', ev, eid), redis.call('HGET', ev, 'r:' .. eid)} end
if redis.call('HEXISTS', ev, id) == 1 then return stored(id) end
local prior = redis.call('HGET', ev, 'b:' .. id)
if prior and redis.call('HEXISTS', ev, prior) == 1 then return stored(prior) end
local rq = ARGV[12]
if rq ~= '' then
  local by = redis.call('HGET', ev, 'q:' .. rq)
  if by and redis.call('HEXISTS', ev, by) == 1 then
    if ARGV[13] == '1' then return stored(by) end
    rq = ''
  end
end
local target = false
if ARGV[10] ~= '' and call ~= '' then
  local cid = redis.call('HGET', calls, call)
  if cid and redis.call('HEXISTS', ev, cid) == 1 and redis.call('HEXISTS', ev, 'r:' .. cid) == 0 then target = cid end
end
if target then
  redis.call('HSET', ev, 'r:' .. target, ARGV[10], 'b:' .. id, target, 'rb:' .. target, id)
  if rq ~= '' then redis.call('HSET', ev, 'q:' .. rq, target, 'rk:' .. target, rq) end
else
  redis.call('HSET', ev, id, ARGV[2])
  if rq ~= '' then redis.call('HSET', ev, 'q:' .. rq, id, 'k:' .. id, rq) end
  if ARGV[9] ~= '' then redis.call('HSET', ev, 'r:' .. id, ARGV[9]) end
  redis.call('ZADD', ids, 0, id)
  redis.call('ZADD', age, recorded, id)
  if task ~= '' then
    redis.call('HSET', ev, 't:' .. id, task)
    redis.call('ZADD', KEYS[6], 0, id)
    redis.call('SADD', KEYS[7], task)
  end
  if ARGV[4] == 'tool_call' and call ~= '' then
    redis.call('HSET', ev, 'c:' .. id, call)
    local cur = redis.call('HGET', calls, call)
    if not cur or redis.call('HEXISTS', ev, cur) == 0 or after(id, cur) then redis.call('HSET', calls, call, id) end
  end
end
if ARGV[11] == '1' then
  touch(rec, KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12], sid, member, recorded)
  if not target then redis.call('HINCRBY', rec, 'events', 1) end
elseif redis.call('HGET', rec, 'status') == 'ended' then
  redis.call('ZADD', KEYS[12], 'LT', recorded, member)
end
if target then return stored(target) end
return {id}
"""
)
# Lifecycle scripts: KEYS rec n:all n:active n:ended idle retain age; ARGV session member ...
START = (
    _TOUCH
    + """
touch(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[1], ARGV[2], ARGV[3])
if ARGV[4] == '1' then redis.call('HSET', KEYS[1], 'goal', ARGV[5]) end
return redis.call('HGETALL', KEYS[1])
"""
)
END = (
    _RETAIN
    + """
if redis.call('HGET', KEYS[1], 'status') ~= 'active' then return false end
redis.call('HSET', KEYS[1], 'status', 'ended', 'ended', ARGV[3], 'reason', ARGV[4])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'archive', ARGV[5]) end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], 0, ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[2])
retain(KEYS[7], KEYS[6], ARGV[2], ARGV[3])
return redis.call('HGETALL', KEYS[1])
"""
)
PUT = (
    _RETAIN
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('ZADD', KEYS[2], 0, ARGV[1])
if ARGV[3] == 'active' then
  redis.call('ZADD', KEYS[3], 0, ARGV[1])
  redis.call('ZADD', KEYS[5], ARGV[4], ARGV[2])
else
  redis.call('ZADD', KEYS[4], 0, ARGV[1])
  retain(KEYS[7], KEYS[6], ARGV[2], ARGV[5])
end
return 1
"""
)
MARK = (
    _AFTER
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local cur = redis.call('HGET', KEYS[1], 'through')
if not cur or after(ARGV[1], cur) then redis.call('HSET', KEYS[1], 'through', ARGV[1]) end
return 1
"""
)
RECORDS = """
local out = {}
for i, key in ipairs(KEYS) do out[i] = redis.call('HGETALL', key) end
return out
"""
# Whole-session scripts: KEYS rec ev ids age calls tasks n:all n:active n:ended idle retain task-keys...; ARGV
# session member, the script's own arguments, then task-tokens... (one per task key, last). -1: the session has
# a task the caller did not name.
_TASKS = """
local given, base = {}, #ARGV - #KEYS + 11
for i = 12, #KEYS do given[ARGV[base + i - 11]] = KEYS[i] end
for _, q in ipairs(redis.call('SMEMBERS', KEYS[6])) do if not given[q] then return -1 end end
"""
# Remove one event with its index entries (KEYS ev ids age calls of a whole-session script; `given` of `_TASKS`):
# its task key entry, its call index entry, the retry link of a result bound to it and the request index
# entries that name it. Returns the call id whose call index entry named the event, else nil.
_FORGET = """
local function forget(id)
  local ev = KEYS[2]
  local q = redis.call('HGET', ev, 't:' .. id)
  if q and given[q] then redis.call('ZREM', given[q], id) end
  local c = redis.call('HGET', ev, 'c:' .. id)
  if c and redis.call('HGET', KEYS[5], c) == id then redis.call('HDEL', KEYS[5], c) else c = nil end
  local rb = redis.call('HGET', ev, 'rb:' .. id)
  if rb then redis.call('HDEL', ev, 'b:' .. rb) end
  for _, f in ipairs({'k:', 'rk:'}) do
    local rq = redis.call('HGET', ev, f .. id)
    if rq and redis.call('HGET', ev, 'q:' .. rq) == id then redis.call('HDEL', ev, 'q:' .. rq) end
  end
  redis.call('HDEL', ev, id, 'r:' .. id, 't:' .. id, 'c:' .. id, 'rb:' .. id, 'k:' .. id, 'rk:' .. id)
  redis.call('ZREM', KEYS[3], id)
  redis.call('ZREM', KEYS[4], id)
  return c
end
"""
# ARGV session member; no argument of its own.
DROP = (
    _TASKS
    + """
local events, had = redis.call('ZCARD', KEYS[3]), redis.call('EXISTS', KEYS[1])
for i = 1, 6 do redis.call('DEL', KEYS[i]) end
for i = 12, #KEYS do redis.call('DEL', KEYS[i]) end
for i = 7, 9 do redis.call('ZREM', KEYS[i], ARGV[1]) end
redis.call('ZREM', KEYS[10], ARGV[2])
redis.call('ZREM', KEYS[11], ARGV[2])
return {events, had}
"""
)
# ARGV session member before.
TRIM = (
    _TASKS
    + _RETAIN
    + _FORGET
    + """
if redis.call('HGET', KEYS[1], 'status') ~= 'ended' then
  redis.call('ZREM', KEYS[11], ARGV[2])
  return {0, 0}
end
local old = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. ARGV[3], 'LIMIT', 0, 500)
for _, id in ipairs(old) do forget(id) end
for q, key in pairs(given) do
  if redis.call('EXISTS', key) == 0 then redis.call('SREM', KEYS[6], q) end
end
local ended = redis.call('HGET', KEYS[1], 'ended')
if ended and tonumber(ended) < tonumber(ARGV[3]) then
  redis.call('HDEL', KEYS[1], 'archive')
  if redis.call('ZCARD', KEYS[3]) == 0 then
    for i = 1, 6 do redis.call('DEL', KEYS[i]) end
    redis.call('ZREM', KEYS[7], ARGV[1])
    redis.call('ZREM', KEYS[9], ARGV[1])
    redis.call('ZREM', KEYS[11], ARGV[2])
    return {#old, 1}
  end
  ended = false
end
retain(KEYS[4], KEYS[11], ARGV[2], ended)
return {#old, 0}
"""
)
# ARGV session member probe subject. Removes the events `subject` recorded (those whose body's subject field
# reads `probe`: ',"subject":' + its JSON + ',"request":' as `model.encode_event` writes it) with their index
# entries, as retention does; a call index entry of a removed call falls back to the highest call left with
# that call id. The request index entry of a result the subject recorded that is bound into a call left is
# removed (the result stays with its call). Fixes the record's event count and retention score, and drops the
# session's keys when no event is left. Returns {events removed, 1 if a record went with the last event}.
ERASE = (
    _TASKS
    + _RETAIN
    + _FORGET
    + """
local rec, ev, ids, age, calls = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local probe, subject = ARGV[3], ARGV[4]
-- the last ',"subject":' of a body is its own field: before it only metadata can spell one, and after it come
-- only JSON strings (where every '"' is escaped) and null
local function recorded_by_subject(body)
  local at, from = nil, 1
  while true do
    local found = string.find(body, ',"subject":', from, true)
    if not found then break end
    at, from = found, found + 1
  end
  return at ~= nil and string.sub(body, at, at + #probe - 1) == probe
end
local function of_subject(request)
  local space = string.find(request, ' ', 1, true)
  return space ~= nil and string.sub(request, space + 1) == subject
end
local removed, lost = 0, {}
for _, id in ipairs(redis.call('ZRANGE', ids, 0, -1)) do
  local body = redis.call('HGET', ev, id)
  if body and recorded_by_subject(body) then
    local c = forget(id)
    if c then lost[c] = true end
    removed = removed + 1
  else
    local rq = redis.call('HGET', ev, 'rk:' .. id)
    if rq and of_subject(rq) then
      if redis.call('HGET', ev, 'q:' .. rq) == id then redis.call('HDEL', ev, 'q:' .. rq) end
      redis.call('HDEL', ev, 'rk:' .. id)
    end
  end
end
if removed == 0 then return {0, 0} end
for q, key in pairs(given) do
  if redis.call('EXISTS', key) == 0 then redis.call('SREM', KEYS[6], q) end
end
local left = redis.call('ZRANGE', ids, 0, -1)
if #left == 0 then
  local had = redis.call('EXISTS', rec)
  for i = 1, #KEYS do if i < 7 or i > 11 then redis.call('DEL', KEYS[i]) end end
  for i = 7, 9 do redis.call('ZREM', KEYS[i], ARGV[1]) end
  redis.call('ZREM', KEYS[10], ARGV[2])
  redis.call('ZREM', KEYS[11], ARGV[2])
  return {removed, had}
end
local i = #left
while next(lost) and i > 0 do
  local c = redis.call('HGET', ev, 'c:' .. left[i])
  if c and lost[c] then
    redis.call('HSET', calls, c, left[i])
    lost[c] = nil
  end
  i = i - 1
end
if redis.call('EXISTS', rec) == 1 then
  if redis.call('HINCRBY', rec, 'events', -removed) < 0 then redis.call('HSET', rec, 'events', 0) end
  if redis.call('HGET', rec, 'status') == 'ended' then
    retain(age, KEYS[11], ARGV[2], redis.call('HGET', rec, 'ended'))
  end
end
return {removed, 0}
"""
)
