/**
 * How each kind of job retries. A refresh's claim on its products (the plan's lease) must outlast
 * its whole retry schedule, or the planner would claim the products again while a late attempt may
 * still call for them; the lease is derived from this schedule (config/workers.ts).
 */
export interface RetryPolicy {
  readonly attempts: number;
  readonly backoff: { readonly type: 'exponential' | 'fixed'; readonly delay: number; readonly jitter?: number };
}

/** Scheduled refreshes, EAN pages and crawl pages: a transient failure backs off exponentially. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 } };

/** A forced update: a client waits, so a few quick tries and then a clear answer. */
export const FORCED_RETRY: RetryPolicy = { attempts: 3, backoff: { type: 'fixed', delay: 500 } };

/** The longest a job may take from its first attempt's start to its last attempt's end. */
export function retrySpanMs(policy: RetryPolicy, jobTimeoutMs: number): number {
  let span = policy.attempts * jobTimeoutMs;
  for (let i = 0; i < policy.attempts - 1; i++) {
    span += policy.backoff.type === 'fixed' ? policy.backoff.delay : policy.backoff.delay * 2 ** i;
  }
  return span;
}
