import { AsyncLocalStorage } from 'node:async_hooks';
import type { QuotaClass } from '../core/quota-classes.js';

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
