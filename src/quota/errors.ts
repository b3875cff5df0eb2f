import { RetryableError } from '../errors/index.js';
import type { Country } from '../catalog/identifiers.js';

/** Why the day has no call left for a lane: the cap, the on-demand share of it, or an upstream that said so. */
export type DaySpentReason = 'cap' | 'share' | 'spent';

/**
 * The quota day has no call left for this kind of work (QUOTA_PER_DAY, less what is kept for
 * forced updates, or the on-demand share of it). Retryable, but not before `retryAt`: the start of
 * the next quota day.
 */
export class DayQuotaSpentError extends RetryableError {
  override readonly name = 'DayQuotaSpentError';
  constructor(readonly country: Country, readonly reason: DaySpentReason, readonly retryAt: number) {
    super(reason === 'share'
      ? `the on-demand share of today's upstream quota in ${country} is spent (ON_DEMAND_SHARE); it renews at ${new Date(retryAt).toISOString()}`
      : `today's upstream quota in ${country} is spent${reason === 'spent' ? ' (the upstream said so)' : ' (QUOTA_PER_DAY)'}; it renews at ${new Date(retryAt).toISOString()}`);
  }
}

/** The governor stopped (shutdown) while a call waited for its permit. */
export class GovernorClosedError extends RetryableError {
  override readonly name = 'GovernorClosedError';
}
