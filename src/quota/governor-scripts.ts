/**
 * The quota governor's Redis scripts. Each runs atomically, so every process of every machine
 * shares one pace and one day's count per country. Every key a script touches is passed in KEYS and
 * shares the prefix's hash tag, so the scripts run unchanged on Redis Cluster.
 *
 * The pace is GCRA (the generic cell rate algorithm, a token bucket kept as one timestamp): `tat`
 * is the theoretical arrival time of the next call; a call may start at max(now, tat − (B − 1)·T)
 * and moves tat to max(tat, start) + T. Over any window of length t that admits at most t/T + B
 * starts. A caller may reserve a start up to `ahead` ms in the future and sleep until it: a permit
 * is then never lost to a late timer, which at high rates would leave the quota unspent.
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
 * KEYS: 1 tat, 2 on-demand tat, 3 the day's hash (total, od, spent), 4 "scheduled work waits" flag,
 * 5 the most urgent priority each process waits with (field: process id, value: 'priority:expiry').
 * ARGV: 1 now ms ('' = the server's clock), 2 interval T ms, 3 burst B, 4 lane ('s' | 'd'),
 * 5 ahead ms, 6 the lane's limit of the day's total, 7 on-demand limit of the day,
 * 8 on-demand interval ms, 9 on-demand burst, 10 day key TTL ms, 11 waits-flag TTL ms,
 * 12 '1' when scheduled callers wait in the caller's own process, 13 the caller's process id,
 * 14 the caller's priority (BullMQ's: lower first), 15 the most urgent priority waiting in the
 * caller's process, 16 how long that word holds (ms).
 * Returns one of:
 *   {'ok', delay ms, total, od, start} a permit starting `delay` ms from now (`start`: that time on the script's clock)
 *   {'wait', ms, 'rate' | 'share' | 'priority'}  ask again in `ms` ('priority': another process
 *                                     waits with more urgent scheduled work, which goes first)
 *   {'day', total, od, 'cap' | 'share' | 'spent'}
 *   {'seed'}                          the day's count is unknown here (a new day, or Redis lost it)
 */
export const TAKE_PERMIT = `
${NOW}local interval = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local lane = ARGV[4]
local ahead = tonumber(ARGV[5])
local laneLimit = tonumber(ARGV[6])
local odLimit = tonumber(ARGV[7])
local odInterval = tonumber(ARGV[8])
local odBurst = tonumber(ARGV[9])

local day = redis.call('HMGET', KEYS[3], 'total', 'od', 'spent')
if not day[1] then return {'seed'} end
local total = tonumber(day[1])
local od = tonumber(day[2] or '0')
if day[3] then return {'day', tostring(total), tostring(od), 'spent'} end
if total >= laneLimit then return {'day', tostring(total), tostring(od), 'cap'} end
if lane == 'd' and od >= odLimit then return {'day', tostring(total), tostring(od), 'share'} end

-- Scheduled work goes in priority order across processes too: a process whose line holds only
-- less urgent jobs than another's waits, so priority-0 refreshes never overtake priority-1 ones.
if lane == 's' then
  redis.call('HSET', KEYS[5], ARGV[13], ARGV[15] .. ':' .. string.format('%.4f', now + tonumber(ARGV[16])))
  redis.call('PEXPIRE', KEYS[5], math.ceil(tonumber(ARGV[16]) * 2))
  local all = redis.call('HGETALL', KEYS[5])
  local best = nil
  for i = 1, #all, 2 do
    local sep = string.find(all[i + 1], ':', 1, true)
    local p = tonumber(string.sub(all[i + 1], 1, sep - 1))
    if tonumber(string.sub(all[i + 1], sep + 1)) < now then
      redis.call('HDEL', KEYS[5], all[i])
    elseif all[i] ~= ARGV[13] and (best == nil or p < best) then
      best = p
    end
  end
  if best ~= nil and tonumber(ARGV[14]) > best then return {'wait', tostring(interval), 'priority'} end
end

local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local start = math.max(now, tat - (burst - 1) * interval)
local why = 'rate'
local odTat = 0
if lane == 'd' then
  odTat = tonumber(redis.call('GET', KEYS[2]) or '0')
  -- The share binds only while scheduled work waits (here or in another process); otherwise
  -- on-demand work may use all of Q.
  if ARGV[12] == '1' then redis.call('SET', KEYS[4], '1', 'PX', ARGV[11]) end
  if ARGV[12] == '1' or redis.call('EXISTS', KEYS[4]) == 1 then
    local odStart = math.max(now, odTat - (odBurst - 1) * odInterval)
    if odStart > start then
      start = odStart
      why = 'share'
    end
  end
end
if start - now > ahead then
  if lane == 's' then redis.call('SET', KEYS[4], '1', 'PX', ARGV[11]) end
  return {'wait', tostring(start - now - ahead), why}
end
if lane == 's' and start > now then redis.call('SET', KEYS[4], '1', 'PX', ARGV[11]) end

local keep = math.ceil(burst * interval + 60000)
redis.call('SET', KEYS[1], string.format('%.4f', math.max(tat, start) + interval), 'PX', keep)
if lane == 'd' then
  -- Charged even while the share does not bind, so on-demand work cannot bank credit for later.
  redis.call('SET', KEYS[2], string.format('%.4f', math.max(odTat, start) + odInterval), 'PX', math.ceil(odBurst * odInterval + 60000))
  od = redis.call('HINCRBY', KEYS[3], 'od', 1)
end
total = redis.call('HINCRBY', KEYS[3], 'total', 1)
redis.call('PEXPIRE', KEYS[3], ARGV[10])
return {'ok', tostring(start - now), tostring(total), tostring(od), string.format('%.4f', start)}
`;

/**
 * Sets the day's count where Redis has none, from the copy kept in MongoDB; a count already there
 * (another process seeded first, or calls were made) is kept.
 * KEYS: 1 the day's hash. ARGV: 1 total, 2 on-demand, 3 TTL ms.
 */
export const SEED_DAY = `
redis.call('HSETNX', KEYS[1], 'total', ARGV[1])
redis.call('HSETNX', KEYS[1], 'od', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

/**
 * Holds the pace: no start before now + ms (an upstream 429 for the second's quota).
 * KEYS: 1 tat. ARGV: 1 now ms ('' = the server's clock), 2 ms, 3 burst, 4 interval.
 */
export const HOLD = `
${NOW}local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local wanted = now + tonumber(ARGV[2]) + (tonumber(ARGV[3]) - 1) * tonumber(ARGV[4])
if wanted > tat then
  redis.call('SET', KEYS[1], string.format('%.4f', wanted), 'PX', math.ceil(tonumber(ARGV[2]) + 60000))
end
return 1
`;
