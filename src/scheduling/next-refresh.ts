import type { Config } from '../../config/env.js';
import { refreshIntervalMs } from './change-rate.js';
import type { RefreshPolicy } from './refresh-objective.js';

/**
 * Why a product's next refresh is being set. Every write of `next_refresh_at` names one of these and
 * takes its time from `nextRefreshAt`, so the policy of when a product is refreshed next lives here
 * alone (a test keeps the writers to it).
 */
export type NextRefresh =
  /** Nobody watches it any more: off the schedule. */
  | { readonly why: 'unwatched' }
  /** A new watch on a product never seen: due at once. */
  | { readonly why: 'first-watched'; readonly now: Date }
  /**
   * Its upstream answer was written (`changeRate`: the estimate the answer left, null when it was
   * not found or not accessible), or its priority changed: one interval of its priority (from its
   * change rate under adaptive scheduling) after its last attempt; at once when it was never tried.
   */
  | {
      readonly why: 'refreshed' | 'reprioritised';
      /** The refresh settings: the priorities' intervals and the scheduling mode. */
      readonly config: Pick<Config, 'refresh'>;
      readonly priority: 0 | 1 | null;
      readonly lastAttemptAt: Date | null;
      readonly changeRate: number | null;
      /** The country's tuned policy (adaptive scheduling), when there is one. */
      readonly policy?: RefreshPolicy | null;
      readonly now: Date;
    }
  /** Claimed by a plan or a forced update: out of the planner's sight until the lease ends. */
  | { readonly why: 'claimed'; readonly until: Date }
  /** A claim given back unrefreshed (the quota day was spent): due again when it was due. */
  | { readonly why: 'given-back'; readonly due: Date };

export function nextRefreshAt(next: NextRefresh): Date | null {
  switch (next.why) {
    case 'unwatched':
      return null;
    case 'first-watched':
      return next.now;
    case 'refreshed':
    case 'reprioritised': {
      if (next.priority === null) return null;
      if (next.lastAttemptAt === null) return next.now;
      return new Date(next.lastAttemptAt.getTime() + refreshIntervalMs(next.config, next.priority, next.changeRate, next.policy ?? null));
    }
    case 'claimed':
      return next.until;
    case 'given-back':
      return next.due;
  }
}
