/**
 * The country breaker's Redis scripts (src/quota/breaker.ts). One hash per country, present only
 * while the breaker is open: kind and reason, since, probe_at (when the next probe may go),
 * backoff (the wait before the probe after it), probe (the call a probe repeats, as JSON) and
 * paused (the queue classes the breaker paused, which it alone resumes). Times are epoch ms.
 */

/**
 * Opens the breaker unless it is open. KEYS: 1 the breaker. ARGV: 1 now, 2 kind, 3 reason,
 * 4 the first probe's wait ms, 5 the probe call (JSON).
 * Returns {'opened' | 'open', probe_at}: 'opened' to the one caller that opened it.
 */
export const BREAKER_OPEN = `
if redis.call('EXISTS', KEYS[1]) == 1 then return {'open', redis.call('HGET', KEYS[1], 'probe_at')} end
local at = string.format('%d', tonumber(ARGV[1]) + tonumber(ARGV[4]))
redis.call('HSET', KEYS[1], 'kind', ARGV[2], 'reason', ARGV[3], 'since', ARGV[1], 'probe_at', at, 'backoff', ARGV[4], 'probe', ARGV[5])
return {'opened', at}
`;

/**
 * Claims the probe that is due, if one is: its wait doubles (capped) for the one after, so however
 * many processes ask, one call goes out per wait. KEYS: 1 the breaker. ARGV: 1 now, 2 the cap ms.
 * Returns {'closed'}, {'wait', probe_at} or {'probe', the call (JSON), the next probe_at}.
 */
export const BREAKER_CLAIM_PROBE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'closed'} end
local b = redis.call('HMGET', KEYS[1], 'probe_at', 'backoff', 'probe')
local now = tonumber(ARGV[1])
if tonumber(b[1]) > now then return {'wait', b[1]} end
local backoff = math.min(tonumber(ARGV[2]), tonumber(b[2]) * 2)
local at = string.format('%d', now + backoff)
redis.call('HSET', KEYS[1], 'probe_at', at, 'backoff', string.format('%d', backoff))
return {'probe', b[3], at}
`;

/**
 * Records the queue classes the breaker paused, if it is still open. KEYS: 1 the breaker.
 * ARGV: 1 the classes, comma-separated. Returns 1, or 0 when it closed meanwhile.
 */
export const BREAKER_MARK_PAUSED = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'paused', ARGV[1])
return 1
`;

/**
 * Closes the breaker. KEYS: 1 the breaker. Returns {'closed', paused classes, kind, reason, since},
 * or {'none'} when it was not open.
 */
export const BREAKER_CLOSE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'none'} end
local b = redis.call('HMGET', KEYS[1], 'paused', 'kind', 'reason', 'since')
redis.call('DEL', KEYS[1])
return {'closed', b[1] or '', b[2] or '', b[3] or '', b[4] or '0'}
`;
