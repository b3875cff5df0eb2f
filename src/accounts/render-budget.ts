/**
 * Chart renders an account may cause a minute, counted in Redis so that every api process spends
 * from one count. A render is what costs (a worker thread's time); an answer from a cache costs
 * nothing and is not counted. The window is fixed: it starts at the first render counted and lasts a
 * minute, and Retry-After says when it ends.
 */
import { evalScript, type Redis } from '../db/redis.js';
import { sharedTag } from '../db/redis-keys.js';
import { TooManyRequestsError } from '../errors/index.js';

const WINDOW_MS = 60_000;

/**
 * Counts one render unless the window's count is at the limit; a refused render counts nothing.
 * KEYS: 1 the counter. ARGV: 1 limit, 2 window ms. Returns {1, count} or {0, ms left in the window}.
 */
const TAKE_SCRIPT = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used >= tonumber(ARGV[1]) then
  local left = redis.call('PTTL', KEYS[1])
  if left < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    left = tonumber(ARGV[2])
  end
  return {0, left}
end
used = redis.call('INCR', KEYS[1])
if used == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {1, used}
`;

export function renderBudgetKey(prefix: string, userId: string): string {
  return `${sharedTag(prefix, 'accounts')}:${userId}:chart-renders`;
}

export class RenderBudget {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    /** Renders a minute per account; 0: no cap (nothing is counted). */
    readonly perMinute: number,
  ) {}

  /** Spends one render of the account's minute, or throws 429 with the seconds until the window ends. */
  async take(userId: string): Promise<void> {
    if (this.perMinute === 0) return;
    const [ok, n] = (await evalScript(this.redis, TAKE_SCRIPT, 1, renderBudgetKey(this.prefix, userId), this.perMinute, WINDOW_MS)) as [
      number,
      number,
    ];
    if (ok !== 1) {
      throw new TooManyRequestsError(
        `This account has had its ${this.perMinute} charts of this minute drawn; charts drawn before are still answered.`,
        n / 1000,
      );
    }
  }

  /** Gives back a render taken for a chart that was then not drawn (the render queue was full). */
  async giveBack(userId: string): Promise<void> {
    if (this.perMinute === 0) return;
    const key = renderBudgetKey(this.prefix, userId);
    // Only while its window lasts: a counter that expired meanwhile stays gone.
    await evalScript(this.redis, `if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end return 0`, 1, key);
  }
}
