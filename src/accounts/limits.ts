import { evalScript, type Redis } from '../db/redis.js';
import { DailyUpdateLimitError } from '../core/errors.js';
import { sharedTag } from '../db/redis-keys.js';

export type DailyTake = { ok: true; used: number } | { ok: false; used: number; limit: number };

/** What an account's daily counters count. */
export type DailyCounter = 'updates' | 'ean' | 'crawl-pages';

/** A day's counter outlives its day by one, so a day boundary in any time zone finds it still set. */
const COUNTER_TTL_S = 2 * 86_400;

/**
 * Counts and, when over the limit, gives back in one script: no other request can see (and be
 * refused because of) a count that a refused request raised and has not yet lowered.
 * KEYS: 1 the counter. ARGV: 1 limit, 2 TTL s, 3 amount.
 */
const TAKE_SCRIPT = `
local used = redis.call('INCRBY', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[2])
if used > tonumber(ARGV[1]) then
  return {0, redis.call('DECRBY', KEYS[1], ARGV[3])}
end
return {1, used}
`;

export function dailyKey(prefix: string, userId: string, counter: DailyCounter, day: string): string {
  return `${sharedTag(prefix, 'accounts')}:${userId}:${counter}:${day}`;
}

export function forcedUpdateKey(prefix: string, userId: string, day: string): string {
  return dailyKey(prefix, userId, 'updates', day);
}

/**
 * Spends `amount` of the account's daily allowance of `counter` for `day` (the quota day's key, so
 * it renews with the quota), shared by every process through Redis. A refused take spends
 * nothing. `limit` 0 means no cap: nothing is counted and Redis is not asked.
 */
export async function takeDaily(
  redis: Redis,
  prefix: string,
  userId: string,
  counter: DailyCounter,
  day: string,
  limit: number,
  amount = 1,
): Promise<DailyTake> {
  if (limit === 0) return { ok: true, used: 0 };
  const [ok, used] = (await evalScript(redis, TAKE_SCRIPT, 1, dailyKey(prefix, userId, counter, day), limit, COUNTER_TTL_S, amount)) as [
    number,
    number,
  ];
  return ok === 1 ? { ok: true, used } : { ok: false, used, limit };
}

/**
 * Counts `amount` against the account's `counter` of `day` without a limit: work already under way,
 * or (a negative amount) what a take spent for work that then did not happen.
 */
export async function addDaily(
  redis: Redis,
  prefix: string,
  userId: string,
  counter: DailyCounter,
  day: string,
  amount = 1,
): Promise<void> {
  const key = dailyKey(prefix, userId, counter, day);
  await redis.multi().incrby(key, amount).expire(key, COUNTER_TTL_S).exec();
}

/** What each account has used of `counter` on `day`, in one round trip (0 where nothing was counted). */
export async function usedDailyMany(
  redis: Redis,
  prefix: string,
  userIds: readonly string[],
  counter: DailyCounter,
  day: string,
): Promise<Map<string, number>> {
  if (userIds.length === 0) return new Map();
  const values = await redis.mget(...userIds.map((u) => dailyKey(prefix, u, counter, day)));
  return new Map(userIds.map((u, i) => [u, Number(values[i] ?? 0)]));
}

/** What the account has used of `counter` on `day` (0 when nothing was counted). */
export async function usedDaily(redis: Redis, prefix: string, userId: string, counter: DailyCounter, day: string): Promise<number> {
  return Number((await redis.get(dailyKey(prefix, userId, counter, day))) ?? 0);
}

/** Spends one of the account's forced updates of `day` (ACCOUNT_MAX_UPDATES_PER_DAY). */
export function takeForcedUpdate(redis: Redis, prefix: string, userId: string, day: string, limit: number): Promise<DailyTake> {
  return takeDaily(redis, prefix, userId, 'updates', day, limit);
}

/** Throws the 429 when `take` was refused; the caller says when the next day begins (seconds). */
export function assertForcedUpdateTaken(take: DailyTake, retryAfterSeconds: number): asserts take is Extract<DailyTake, { ok: true }> {
  if (!take.ok) throw new DailyUpdateLimitError(take.limit, retryAfterSeconds);
}
