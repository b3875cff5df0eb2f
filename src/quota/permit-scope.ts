import { AsyncLocalStorage } from 'node:async_hooks';
import type { Country } from '../core/identifiers.js';
import type { QuotaClass } from '../core/quota-classes.js';
import type { QuotaGovernor } from './governor.js';

/**
 * Who an upstream call is for, as the quota governor needs it: the class and rank of the job that
 * makes it, and the signal that ends its wait when the job's deadline passes. The worker runs each
 * job inside its scope; the upstream client's beforeSend hook, deep inside the client, reads it
 * there instead of every port method taking it as an argument.
 */
export interface PermitScope {
  readonly cls: QuotaClass;
  /** Lower goes first within the class: the job's BullMQ priority. */
  readonly rank: number;
  readonly signal: AbortSignal;
  /** A fairly queued job's lane and tag: its first permit is its start in fair queuing (src/fairness/). */
  readonly fair?: { readonly lane: string; readonly tag: number };
  /** The breaker's probe: its call's permit passes the country's open breaker. */
  readonly probe?: boolean;
  /**
   * What the job's calls are doing, for its deadline: waiting for a permit, or past its first. And
   * for the governed port: when the last call left (performance.now()), and whether the next call
   * retries one the upstream answered 429, which takes the next start ahead of the line.
   */
  readonly state: { waiting: boolean; started: boolean; sentAt?: number; retry?: boolean };
}

/** One per worker process, made by the worker role and handed to the runner and the upstream's hook. */
export type PermitScopes = AsyncLocalStorage<PermitScope>;

export function createPermitScopes(): PermitScopes {
  return new AsyncLocalStorage<PermitScope>();
}

/**
 * The upstream client's beforeSend for a country: every HTTP request it sends (a retry after a 401
 * too) first takes the governor's permit in the class and rank of the job it runs in. A call the
 * upstream answered 429 at its slot takes the next start ahead of every other. `onStarted` hears a
 * fairly queued job's first call: only then is it served in fair queuing, not when a worker slot
 * took it (the fair classes' slots hold whole backlogs).
 */
export function permitBeforeSend(
  country: Country,
  governor: Pick<QuotaGovernor, 'permit'>,
  scopes: PermitScopes,
  onStarted: (fair: NonNullable<PermitScope['fair']>) => void,
): () => Promise<void> {
  return async () => {
    const scope = scopes.getStore();
    if (!scope) throw new Error('an upstream call outside a job has no class to take a permit in');
    scope.state.waiting = true;
    const rank = scope.state.retry ? -1 : scope.rank;
    scope.state.retry = false;
    try {
      await governor.permit(country, scope.cls, rank, scope.signal, { probe: scope.probe === true });
    } finally {
      scope.state.waiting = false;
    }
    scope.state.sentAt = performance.now();
    if (scope.fair && !scope.state.started) onStarted(scope.fair);
    scope.state.started = true;
  };
}
