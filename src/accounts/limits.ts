import type { Redis } from '../db/redis.js';
import { DailyUpdateLimitError } from '../errors/index.js';

export type ForcedUpdateTake = { ok: true; used: number } | { ok: false; used: number; limit: number };

/** A day's counter outlives its day by one, so a day boundary in any time zone finds it still set. */
const COUNTER_TTL_S = 2 * 86_400;

/**
 * Counts and, when over the limit, gives back in one script: no other request can see (and be
 * refused because of) a count that a refused request raised and has not yet lowered.
 */
const TAKE_SCRIPT = `
local used = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
if used > tonumber(ARGV[1]) then
  return {0, redis.call('DECR', KEYS[1])}
end
return {1, used}
`;

export function forcedUpdateKey(prefix: string, userId: string, day: string): string {
  return `${prefix}:acct:${userId}:updates:${day}`;
}

/**
 * Spends one of the account's forced updates of `day` (a date string the caller picks, e.g.
 * YYYY-MM-DD in APP_TIMEZONE), shared by every api process through Redis. A refused call spends
 * nothing. `limit` 0 means no cap: nothing is counted and Redis is not asked.
 */
export async function takeForcedUpdate(
  redis: Redis,
  prefix: string,
  userId: string,
  day: string,
  limit: number,
): Promise<ForcedUpdateTake> {
  if (limit === 0) return { ok: true, used: 0 };
  const [ok, used] = (await redis.eval(TAKE_SCRIPT, 1, forcedUpdateKey(prefix, userId, day), limit, COUNTER_TTL_S)) as [number, number];
  return ok === 1 ? { ok: true, used } : { ok: false, used, limit };
}

/** Throws the 429 when `take` was refused; the caller says when the next day begins (seconds). */
export function assertForcedUpdateTaken(
  take: ForcedUpdateTake,
  retryAfterSeconds: number,
): asserts take is Extract<ForcedUpdateTake, { ok: true }> {
  if (!take.ok) throw new DailyUpdateLimitError(take.limit, retryAfterSeconds);
}
