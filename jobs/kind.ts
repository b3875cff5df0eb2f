import type { z } from 'zod';
import type { Connection } from 'mongoose';
import type { Redis } from '../src/db/redis.js';
import type { RefreshPolicies } from '../src/scheduling/policy-store.js';
import type { Config } from '../config/env.js';
import type { Country } from '../src/core/identifiers.js';
import type { Logger } from '../src/logger.js';
import type { Metrics } from '../src/core/metrics.js';
import type { QuotaGovernor } from '../src/quota/governor.js';
import type { QuotaClass } from '../src/core/quota-classes.js';
import type { UpstreamPort } from '../src/upstream/port.js';
import type { WatchService } from '../src/watch/service.js';
import type { JobProducer } from './queues.js';
import type { RetryPolicy } from '../config/retry.js';
import type { AlertService } from '../src/alerts/service.js';
import type { DeliveryQueue } from '../src/alerts/delivery-queue.js';
import type { FairTags } from '../src/fairness/fair-tags.js';
import type { AccountWeights } from '../src/accounts/weights.js';

/**
 * What jobs, their producers and the planner use of the application's context. The context is
 * built once at start-up (src/app/context.ts) and is this and more; nothing builds a second one.
 */
export interface JobContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly mongo: Connection;
  /** Fail-fast commands (the planner's credit, nudges, locks). */
  readonly redis: Redis;
  readonly redisPrefix: string;
  readonly jobs: JobProducer;
  readonly quota: QuotaGovernor;
  readonly metrics: Metrics;
  readonly watches: WatchService;
  readonly alerts: AlertService;
  /** Where a batch's changes become alert deliveries. */
  readonly deliveries: DeliveryQueue;
  /** Start tags of fair queuing between accounts (src/fairness/fair-tags.ts). */
  readonly fair: FairTags;
  /** Each account's weight in that fair sharing. */
  readonly weights: AccountWeights;
  /** The countries' tuned refresh policies: a refresh sets priority 0's next refresh from them. */
  readonly policies: RefreshPolicies;
}

/** What one run of a job has besides the context: who it is, and its country's upstream. */
export interface JobRun {
  readonly id: string | undefined;
  /** The job's country's upstream; each request takes a permit in the lane and priority of the kind. */
  readonly upstream: UpstreamPort;
  readonly log: Logger;
}

/**
 * A kind of job, whole: its payload, where and how urgently it runs, how it retries, what it does,
 * and what happens when it cannot. The worker's processor and the producer are built from the list
 * of kinds (jobs/registry.ts).
 */
export interface JobKind<N extends string = string, S extends z.ZodType<{ country: Country }> = z.ZodType<{ country: Country }>> {
  readonly name: N;
  /** Parsed by the producer before the payload reaches Redis and by the worker when it takes it. */
  readonly payload: S;
  /**
   * Its class: the country's queue it goes to, and whose share of the quota its calls take
   * (src/core/quota-classes.ts). Jobs of the classes shared fairly between accounts (FAIR_CLASSES) carry
   * their account and start tag.
   */
  readonly cls: QuotaClass;
  /** BullMQ priority in its queue (lower runs first), for a job queued without an account. */
  readonly priority: number;
  /** A priority that depends on the payload (else `priority`). */
  priorityFor?(data: z.output<S>): number;
  readonly retry: RetryPolicy;
  run(ctx: JobContext, data: z.output<S>, run: JobRun): Promise<unknown>;
  /**
   * The day's upstream quota is spent: `fail` ends the job now (a client waits for it); otherwise
   * the job waits, delayed to the next quota day, after this says so where its owner reads it.
   */
  readonly whenDaySpent: 'fail' | ((ctx: JobContext, data: z.output<S>, until: Date) => Promise<void>);
  /** After the last attempt failed (or the failure was unrecoverable). */
  onFinalFailure?(ctx: JobContext, data: z.output<S>, err: Error): Promise<void>;
}

/** Keeps each kind's literal name and payload schema in its type, for the registry's maps. */
export function defineJob<const N extends string, S extends z.ZodType<{ country: Country }>>(kind: JobKind<N, S>): JobKind<N, S> {
  return kind;
}
