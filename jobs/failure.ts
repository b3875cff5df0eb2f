import {
  InvalidJobPayloadError,
  RateLimitedError,
  UnrecoverableError,
  DayQuotaSpentError,
  UpstreamCountryError,
} from '../src/core/errors.js';
import type { CountryJobKind } from './kind.js';

/** What becomes of a job whose attempt threw, decided by the error's class alone. */
export type FailureAction =
  /** The day's quota is spent: fail now (a client waits), or wait as delayed until the next quota day. */
  | { readonly action: 'fail_day_spent' }
  | { readonly action: 'wait_next_day'; readonly until: number }
  /** The upstream's 429 for the second, still there after the port's own tries: wait, no attempt spent. */
  | { readonly action: 'wait'; readonly ms: number }
  /** The credential, the account's eligibility or the configuration is wrong: stop the country until an operator acts. */
  | { readonly action: 'stop_country' }
  /** No retry helps: bad payload, a request the upstream refuses. */
  | { readonly action: 'fail' }
  /** Anything else may pass: retry with the kind's backoff. */
  | { readonly action: 'retry' };

export function failureAction(err: unknown, kind: Pick<CountryJobKind, 'whenDaySpent'> | undefined): FailureAction {
  if (err instanceof DayQuotaSpentError) {
    return !kind || kind.whenDaySpent === 'fail' ? { action: 'fail_day_spent' } : { action: 'wait_next_day', until: err.retryAt };
  }
  // A wait the other side did not say (NaN) is a second: never a job delayed to no time at all.
  if (err instanceof RateLimitedError)
    return { action: 'wait', ms: Number.isFinite(err.retryAfterMs) ? Math.max(1, err.retryAfterMs) : 1_000 };
  if (err instanceof UpstreamCountryError) return { action: 'stop_country' };
  if (err instanceof UnrecoverableError || err instanceof InvalidJobPayloadError) return { action: 'fail' };
  return { action: 'retry' };
}
