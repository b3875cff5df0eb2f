/**
 * The quota governor's Redis scripts. Each runs atomically, so every process of every machine
 * shares one pace and one day's count per country. Every key a script touches is passed in KEYS and
 * carries its country's hash tag (src/db/redis-keys.ts), so the scripts run unchanged on Redis Cluster.
 *
 * The pace is GCRA (the generic cell rate algorithm, a token bucket kept as one timestamp): `tat`
 * is the theoretical arrival time of the next call; a call may start at max(now, tat − (B − 1)·T)
 * and moves tat to max(tat, start) + T. Over any window of length t that admits at most t/T + B
 * starts. A caller may reserve a start up to `ahead` ms in the future and sleep until it: a permit
 * is then never lost to a late timer, which at high rates would leave the quota unspent.
 *
 * A forced update never waits behind those reservations. A scheduled caller's reservation is kept
 * in the `booked` sorted set until it confirms its start (CONFIRM_START, when its timer fires); a
 * forced update that asks meanwhile takes the earliest one still in the future, and each later
 * booked caller moves one slot on (the last to the next free slot), told so in the `moved` hash
 * when it confirms. So a forced update takes the next slot of its country, booked or not, and the
 * pace stays exactly what it was. A reservation moves once at most: after that, forced updates
 * book the slots after it.
 *
 * Numbers leave Lua as strings: Redis turns a Lua number into an integer, which would truncate
 * fractional milliseconds (a 500/s quota has a 2 ms interval).
 */

/**
 * `now` in ms: ARGV[1] when the caller brings its own clock (tests, the simulated day), else the
 * server's, which every process shares. Redis before 5 must be told to replicate effects, not the
 * script, once a script reads the clock.
 */
const NOW = `
local now = tonumber(ARGV[1])
if not now then
  if redis.replicate_commands then pcall(redis.replicate_commands) end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
`;

/**
 * One ask of a process's line: which of the classes it waits in may take the next start, if any.
 *
 * Classes share the pace by start-time fair queuing: each class has a finish tag F, and the key
 * holds V, the tag of the last start granted. A class that waits claims S = max(V, F); the class
 * with the least S among those waiting in any process (ties: the order of the class table) takes
 * the start, V moves to its S and its F to S + 1/weight. Over time each class that keeps work
 * waiting gets its weight's share of the starts, and a class that had none waiting claims V, so it
 * takes the next start: a share is never a debt, and nothing banks credit while idle.
 *
 * Processes say what they wait in: the `waiting` hash has a field per class and process holding the
 * most urgent rank (lower first: the job's BullMQ priority) of that process's callers and how long
 * the word holds. A process whose best rank in the chosen class is worse than another's waits, so
 * priority-0 refreshes never start while another process holds priority-1 ones, and each class's
 * order holds across processes.
 *
 * The pace's interval is 1/Q plus the country's margin (src/quota/pace-margin.ts), which each
 * start granted shrinks by ARGV 13. While the country's breaker is open (src/quota/breaker.ts) no
 * start is granted but to its probe (ARGV 14).
 *
 * Where the pace is strict (ARGV 15: the interval is that long, or the country has a margin: its
 * upstream answered a call 429 for coming too soon), the next start counts from when the last call
 * actually went as well as from when it was booked: `sent` is a second GCRA over the confirmed
 * starts (CONFIRM_START), so a call whose timer fired late pushes the next one back instead of
 * reaching a one-call bucket less than an interval after it. Elsewhere a late timer costs nothing:
 * the booked starts alone keep the pace, and a deeper bucket absorbs the lateness.
 *
 * KEYS: 1 tat, 2 the classes' tags (hash: V, F:<class>), 3 the day's hash (total, spent, and a
 * field per class with a day limit of its own), 4 waiting (hash: <class>|<process> → rank|expiry),
 * 5 booked (sorted set: reservation id by start), 6 moved (hash: reservation id → its new start),
 * 7 the pace (hash: m the margin ms, since/n the run of 429s), 8 the breaker (hash, see breaker-scripts.ts),
 * 9 sent (the theoretical arrival of the next call, by the confirmed starts and SENT_LATE).
 * ARGV: 1 now ms ('' = the server's clock), 2 interval T ms, 3 burst B, 4 ahead ms, 5 day key TTL ms,
 * 6 how long a process's word holds (ms), 7 the process id, 8 the caller's classes and their best
 * ranks ('class=rank,…'), 10 how long a free start waits for the process whose class claims it
 * before another takes it (ms), 9 the class table in tie order
 * ('class:weight:limit of the day's total:own day field:own day limit:fair;…', own field '' when
 * none; fair '1' for a class queued fairly by account, whose callers' rank 0 means an account that had
 * nothing queued in it), 11 the class whose callers take booked starts and book the next free
 * slot however far it is (forced updates), 12 the id a reservation of this ask would have, 13 the
 * margin's shrink per start (ms), 14 '1' when the ask is the breaker's probe, 15 the interval (ms)
 * from which the pace is strict without a margin, 16 the least margin (ms) its peers' suggest
 * (pace-margin.ts's peerMarginMs), which the country's own is paced at if it is less.
 * Returns one of:
 *   {'ok', class, delay ms, total, own count, start, booked, margin, run, learnt}  a start `delay` ms from
 *                                                    now for a caller of `class`; booked '1' when the caller
 *                                                    must confirm it (CONFIRM_START) before it calls
 *                                                    (every start in the future);
 *                                                    the margin it was paced at, and run '1' while
 *                                                    the country's last calls were answered 429
 *   {'refused', probe at, reason}                     the breaker is open: no start before its probe
 *   {'wait', ms, 'rate' | 'share' | 'priority'}      ask again in `ms` ('share': another class goes
 *                                                    first; 'priority': another process's caller in
 *                                                    the same class is more urgent)
 *   {'day', class, 'cap' | 'share' | 'spent', total}  the day has no call left for `class`
 *   {'seed'}                                          the day's count is unknown here (a new day, or Redis lost it)
 */
export const TAKE_PERMIT = `
${NOW}if ARGV[14] ~= '1' and redis.call('EXISTS', KEYS[8]) == 1 then
  local b = redis.call('HMGET', KEYS[8], 'probe_at', 'reason')
  return {'refused', b[1] or '0', b[2] or 'refused'}
end
local pace = redis.call('HMGET', KEYS[7], 'm', 'since')
local learnt = tonumber(pace[1] or '0')
local margin = math.max(learnt, tonumber(ARGV[16]))
local interval = tonumber(ARGV[2]) + margin
local burst = tonumber(ARGV[3])
local ahead = tonumber(ARGV[4])
local me = ARGV[7]
local holds = tonumber(ARGV[6])

local order = {}
local info = {}
for entry in string.gmatch(ARGV[9], '[^;]+') do
  local name, w, limit, field, own, fresh = string.match(entry, '^([^:]+):([^:]+):([^:]+):([^:]*):([^:]+):([01])$')
  table.insert(order, name)
  info[name] = { w = tonumber(w), limit = tonumber(limit), field = field, own = tonumber(own), fresh = fresh == '1' }
end
local mine = {}
local first = nil
for name, rank in string.gmatch(ARGV[8], '([^=,]+)=([^,]+)') do
  mine[name] = tonumber(rank)
  if first == nil then first = name end
end

local fields = {'total', 'spent'}
for _, name in ipairs(order) do
  if info[name].field ~= '' then table.insert(fields, info[name].field) end
end
local got = redis.call('HMGET', KEYS[3], unpack(fields))
if not got[1] then return {'seed'} end
local total = tonumber(got[1])
if got[2] then return {'day', first, 'spent', tostring(total)} end
local counts = {}
for i = 3, #fields do counts[fields[i]] = tonumber(got[i] or '0') end
local function dayLeft(name)
  local c = info[name]
  if total >= c.limit then return 'cap' end
  if c.field ~= '' and counts[c.field] >= c.own then return 'share' end
  return nil
end
for _, name in ipairs(order) do
  if mine[name] then
    local why = dayLeft(name)
    if why then return {'day', name, why, tostring(total)} end
  end
end

local others = {}
local all = redis.call('HGETALL', KEYS[4])
for i = 1, #all, 2 do
  local f = all[i]
  local v = all[i + 1]
  local sep = string.find(f, '|', 1, true)
  local name = string.sub(f, 1, sep - 1)
  local proc = string.sub(f, sep + 1)
  local vsep = string.find(v, '|', 1, true)
  local rank = tonumber(string.sub(v, 1, vsep - 1))
  if proc == me or tonumber(string.sub(v, vsep + 1)) < now then
    redis.call('HDEL', KEYS[4], f)
  elseif info[name] and (others[name] == nil or rank < others[name]) then
    others[name] = rank
  end
end
for name, rank in pairs(mine) do
  redis.call('HSET', KEYS[4], name .. '|' .. me, tostring(rank) .. '|' .. string.format('%.4f', now + holds))
end
redis.call('PEXPIRE', KEYS[4], math.ceil(holds * 2))

local vt = redis.call('HGET', KEYS[2], 'V')
local v = tonumber(vt or '0')
local best = nil
local bestS = nil
local bestF = nil
local myBest = nil
local myS = nil
local myF = nil
for _, name in ipairs(order) do
  if (mine[name] or others[name]) and not dayLeft(name) then
    local f = tonumber(redis.call('HGET', KEYS[2], 'F:' .. name) or '0')
    local s = math.max(v, f)
    -- A class queued fairly by account whose most urgent caller has rank 0 holds the job of an
    -- account that had nothing queued in it: it claims V like a class that was idle, so that one
    -- account's backlog of forced updates does not hold another's first one behind its turns.
    local rank = mine[name] or others[name]
    if others[name] and others[name] < rank then rank = others[name] end
    if info[name].fresh and rank <= 0 then s = v end
    if best == nil or s < bestS - 1e-9 then
      best = name
      bestS = s
      bestF = f
    end
    if mine[name] and (myBest == nil or s < myS - 1e-9) then
      myBest = name
      myS = s
      myF = f
    end
  end
end

local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local strict = tonumber(ARGV[2]) >= tonumber(ARGV[15]) or margin > 0
local sent = 0
if strict then sent = tonumber(redis.call('GET', KEYS[9]) or '0') end
local base = math.max(tat, sent)
local start = math.max(now, base - (burst - 1) * interval)
-- How long the next start has been free (negative: how long until it is).
local free = now - (base - (burst - 1) * interval)
local late = tonumber(ARGV[10])
if others[best] and mine[best] and others[best] < mine[best] then
  return {'wait', tostring(math.max(1, late - free)), 'priority'}
end
if not mine[best] then
  -- Another process's class goes first; it should take the start when it comes. If it has not
  -- within the grace of ARGV 10 (its event loop lags, its word outlived its callers), the start goes to this
  -- process's best class instead of being lost: a share is a claim, not a hole in the pace.
  if free <= late then return {'wait', tostring(math.max(1, late - free)), 'share'} end
  best = myBest
  bestS = myS
  bestF = myF
end

-- Reservations whose start has come are the callers' own now.
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
local booked = '0'
local nextTat = math.max(tat, start) + interval
if best == ARGV[11] then
  local held = redis.call('ZRANGE', KEYS[5], 0, -1, 'WITHSCORES')
  -- A reservation is moved on once at most (marked '<id>#' in moved): one that was moved keeps its
  -- new start, so a stream of forced updates cannot push a scheduled caller back again and again,
  -- which would starve it for as long as the stream lasts.
  local ids = {}
  local slots = {}
  for i = 1, #held, 2 do
    if redis.call('HEXISTS', KEYS[6], held[i] .. '#') == 0 then
      ids[#ids + 1] = held[i]
      slots[#slots + 1] = tonumber(held[i + 1])
    end
  end
  if #ids > 0 then
    -- Take the earliest movable reservation's start; each movable one moves to the next one's, the
    -- last to the free slot this ask would have had.
    slots[#slots + 1] = start
    start = slots[1]
    for k = 1, #ids do
      local to = string.format('%.4f', slots[k + 1])
      redis.call('ZADD', KEYS[5], to, ids[k])
      redis.call('HSET', KEYS[6], ids[k], to, ids[k] .. '#', '1')
    end
    redis.call('PEXPIRE', KEYS[6], math.ceil(burst * interval + 60000))
  -- With none to move, it books the next free slot at once when it is within an interval (nobody
  -- books further ahead): from its first ask on, no other caller can take that slot.
  elseif start - now > math.max(ahead, interval) then
    return {'wait', tostring(start - now - math.max(ahead, interval)), 'rate'}
  end
  -- Kept out of the booked set (nothing moves a forced update), it still confirms when it goes.
  if start - now >= 1 then booked = '1' end
else
  if start - now > ahead then return {'wait', tostring(start - now - ahead), 'rate'} end
  if start - now >= 1 then
    redis.call('ZADD', KEYS[5], string.format('%.4f', start), ARGV[12])
    redis.call('PEXPIRE', KEYS[5], math.ceil(burst * interval + 60000))
    booked = '1'
  end
end

redis.call('SET', KEYS[1], string.format('%.4f', nextTat), 'PX', math.ceil(burst * interval + 60000))
-- A start that is now goes now: it is its own confirmation.
if strict and booked == '0' then
  redis.call('SET', KEYS[9], string.format('%.4f', math.max(sent, now) + interval), 'PX', math.ceil(burst * interval + 60000))
end
-- The class is charged from wherever its tag stood: a start taken out of turn delays its backlog.
redis.call('HSET', KEYS[2], 'V', string.format('%.6f', bestS), 'F:' .. best, string.format('%.6f', math.max(bestS, bestF) + 1 / info[best].w))
redis.call('PEXPIRE', KEYS[2], ARGV[5])
total = redis.call('HINCRBY', KEYS[3], 'total', 1)
local ownCount = 0
if info[best].field ~= '' then ownCount = redis.call('HINCRBY', KEYS[3], info[best].field, 1) end
redis.call('PEXPIRE', KEYS[3], ARGV[5])
if learnt > 0 then
  redis.call('HSET', KEYS[7], 'm', string.format('%.4f', math.max(0, learnt - tonumber(ARGV[13]))))
end
local run = '0'
if pace[2] then run = '1' end
return {'ok', best, tostring(start - now), tostring(total), tostring(ownCount), string.format('%.4f', start), booked, string.format('%.4f', margin), run, string.format('%.4f', learnt)}
`;

/**
 * A call was answered 429 soon after its slot: the run of 429s goes on (or starts now), and the
 * margin grows by the step times the call's place in the run, plus the grant's shrink it undoes
 * (capped at ARGV 3): pace-margin.ts's nextMargin, from the margin the call was paced at (its
 * peers' when that was more).
 * KEYS: 1 the pace. ARGV: 1 now ms ('' = the server's clock), 2 step ms, 3 cap ms, 4 TTL ms,
 * 5 the shrink per start ms, 6 the peers' margin ms.
 * Returns {margin, ms since the run began, calls in the run}.
 */
export const PACE_THROTTLED = `
${NOW}local since = tonumber(redis.call('HGET', KEYS[1], 'since') or tostring(now))
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
local was = math.max(tonumber(redis.call('HGET', KEYS[1], 'm') or '0'), tonumber(ARGV[6]))
local m = math.min(tonumber(ARGV[3]), was + tonumber(ARGV[2]) * n + tonumber(ARGV[5]))
redis.call('HSET', KEYS[1], 'm', string.format('%.4f', m), 'since', string.format('%.4f', since))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {string.format('%.4f', m), string.format('%.4f', now - since), tostring(n)}
`;

/**
 * A caller whose start has come confirms it right before it calls: the start is its own from now
 * on, unless a forced update took it meanwhile and moved the reservation on, or (where the pace is
 * strict) the last call went out later than booked and this one would follow it by less than the
 * interval. Then it is moved to the first start the confirmed calls allow.
 * KEYS: 1 booked, 2 moved, 3 sent, 4 the pace. ARGV: 1 now ms ('' = the server's clock), 2 the
 * reservation id, 3 interval 1/Q ms, 4 burst, 5 the interval from which the pace is strict without a margin,
 * 6 the peers' margin (as TAKE_PERMIT's ARGV 16).
 * Returns {'go', now} where the pace is strict (the time the start is counted from), {'go'} elsewhere,
 * or {'moved', delay ms, start}: sleep `delay` ms and confirm again.
 */
export const CONFIRM_START = `
${NOW}local to = redis.call('HGET', KEYS[2], ARGV[2])
if to then
  redis.call('HDEL', KEYS[2], ARGV[2])
  if tonumber(to) > now then return {'moved', tostring(tonumber(to) - now), to} end
end
local margin = math.max(tonumber(redis.call('HGET', KEYS[4], 'm') or '0'), tonumber(ARGV[6]))
local counted
local interval = tonumber(ARGV[3]) + margin
local burst = tonumber(ARGV[4])
if tonumber(ARGV[3]) >= tonumber(ARGV[5]) or margin > 0 then
  local sent = tonumber(redis.call('GET', KEYS[3]) or '0')
  local earliest = sent - (burst - 1) * interval
  if now < earliest then
    if redis.call('ZSCORE', KEYS[1], ARGV[2]) then redis.call('ZADD', KEYS[1], string.format('%.4f', earliest), ARGV[2]) end
    return {'moved', tostring(earliest - now), string.format('%.4f', earliest)}
  end
  redis.call('SET', KEYS[3], string.format('%.4f', math.max(sent, now) + interval), 'PX', math.ceil(burst * interval + 60000))
  counted = string.format('%.4f', now)
end
redis.call('ZREM', KEYS[1], ARGV[2])
redis.call('HDEL', KEYS[2], ARGV[2] .. '#')
return {'go', counted}
`;

/**
 * A call went out later than the pace counted it sent (its process's event loop was busy between
 * the start's confirmation and the request): the next start counts from when it went, so that a
 * one-call bucket never sees the next call, which another process may send on time, less than
 * the interval after it.
 * KEYS: 1 sent, 2 the pace. ARGV: 1 when the call went (ms, the server's clock), 2 interval 1/Q ms,
 * 3 burst, 4 the peers' margin (as TAKE_PERMIT's ARGV 16).
 */
export const SENT_LATE = `
local margin = math.max(tonumber(redis.call('HGET', KEYS[2], 'm') or '0'), tonumber(ARGV[4]))
local interval = tonumber(ARGV[2]) + margin
local next = tonumber(ARGV[1]) + interval
if next > tonumber(redis.call('GET', KEYS[1]) or '0') then
  redis.call('SET', KEYS[1], string.format('%.4f', next), 'PX', math.ceil(tonumber(ARGV[3]) * interval + 60000))
end
return 1
`;

/**
 * Sets the day's count where Redis has none, from the copy kept in MongoDB; a count already there
 * (another process seeded first, or calls were made) is kept.
 * KEYS: 1 the day's hash. ARGV: 1 TTL ms, then field, value pairs (`total` first).
 */
export const SEED_DAY = `
for i = 2, #ARGV, 2 do redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`;

/**
 * Holds the pace: no start before now + ms (an upstream 429 for the second's quota). Starts already
 * booked inside the hold are moved past it when they confirm, where the pace is strict.
 * KEYS: 1 tat, 2 sent. ARGV: 1 now ms ('' = the server's clock), 2 ms, 3 burst, 4 interval.
 */
export const HOLD = `
${NOW}local wanted = now + tonumber(ARGV[2]) + (tonumber(ARGV[3]) - 1) * tonumber(ARGV[4])
for _, key in ipairs(KEYS) do
  if wanted > tonumber(redis.call('GET', key) or '0') then
    redis.call('SET', key, string.format('%.4f', wanted), 'PX', math.ceil(tonumber(ARGV[2]) + 60000))
  end
end
return 1
`;
