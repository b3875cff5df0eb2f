/**
 * Chart renders an account may cause a minute, counted in Redis so that every api process spends
 * from one count. A render is what costs (a worker thread's time); an answer from a cache costs
 * nothing and is not counted. The window is fixed: it starts at the first render counted and lasts a
 * minute, and Retry-After says when it ends.
 */
import type { Redis } from '../db/redis.js';
import { giveBackToWindows, takeFromWindows } from '../db/window-counters.js';
import { sharedTag } from '../db/redis-keys.js';
import { TooManyRequestsError } from '../core/errors.js';

const WINDOW_MS = 60_000;

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
    const taken = await takeFromWindows(this.redis, [{ key: renderBudgetKey(this.prefix, userId), limit: this.perMinute, ms: WINDOW_MS }]);
    if (!taken.ok) {
      throw new TooManyRequestsError(
        `This account has had its ${this.perMinute} charts of this minute drawn; charts drawn before are still answered.`,
        taken.retryAfterMs / 1000,
      );
    }
  }

  /** Gives back a render taken for a chart that was then not drawn (the render queue was full). */
  async giveBack(userId: string): Promise<void> {
    if (this.perMinute === 0) return;
    await giveBackToWindows(this.redis, [renderBudgetKey(this.prefix, userId)]);
  }
}
