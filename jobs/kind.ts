import type { z } from 'zod';
import type { JobsOptions } from 'bullmq';
import type { Config } from '../config/env.js';
import type { Country } from '../src/core/identifiers.js';
import type { QuotaClass } from '../src/core/quota-classes.js';
import type { RetryPolicy } from '../config/retry.js';
import type { JobContext, JobRun } from './context.js';
import type { GlobalQueueName } from './queue-names.js';

/**
 * Where a kind's jobs wait: in a queue of their country, where the country's upstream quota paces
 * them (`country`), or in one queue for every country, apart from every upstream queue (`global`).
 */
export type QueueScope = 'country' | 'global';

/**
 * A kind of job, whole: its payload, where and how urgently it runs, how it retries, what it does,
 * and what happens when it cannot. The worker's processor and the producer are built from the list
 * of kinds (jobs/queues.ts).
 */
export interface CountryJobKind<N extends string = string, S extends z.ZodType<{ country: Country }> = z.ZodType<{ country: Country }>> {
  readonly name: N;
  readonly scope: 'country';
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

/** One attempt of a global job: who it is, and how many attempts it has had and has in all. */
export interface JobAttempt {
  readonly id: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly attempts: number;
}

/**
 * A kind of job whose queue serves every country (a delivery): no upstream call, so no quota class,
 * country pause or quota day. Its worker runs `run` with the dependencies `D` its role gives it.
 */
export interface GlobalJobKind<N extends string = string, S extends z.ZodType = z.ZodType, D = never> {
  readonly name: N;
  readonly scope: 'global';
  readonly queue: GlobalQueueName;
  /** What one job is called in logs and errors ("delivery"). */
  readonly noun: string;
  /** Parsed by the producer before the payload reaches Redis and by the worker when it takes it. */
  readonly payload: S;
  /** Its jobs' attempts, backoff and retention: the queue's defaults. */
  jobOptions(config: Pick<Config, 'alerts'>): JobsOptions;
  /** Its worker: jobs at once per process, the delay before retry k, and the bound of one attempt. */
  worker(config: Pick<Config, 'alerts'>): {
    concurrency: number;
    /** BullMQ's custom backoff strategy: it is handed the attempt's error, so an answer can ask for a longer wait. */
    backoff: (attemptsMade: number, type?: string, err?: Error) => number;
    attemptMs: number;
  };
  run(deps: D, data: z.output<S>, attempt: JobAttempt): Promise<unknown>;
  /** After the last attempt failed, with the job as Redis holds it (its payload may not parse). */
  onFinalFailure?(deps: D, job: { readonly id: string | undefined; readonly data: unknown }, err: Error): Promise<void>;
}

/** A kind of job, of either scope. */
export type JobKind = CountryJobKind | GlobalJobKind<string, z.ZodType, never>;

/** Keeps each kind's literal name and payload schema in its type, for the registry's maps. */
export function defineJob<const N extends string, S extends z.ZodType<{ country: Country }>>(
  kind: Omit<CountryJobKind<N, S>, 'scope'>,
): CountryJobKind<N, S> {
  return { ...kind, scope: 'country' };
}

/** A global kind, its literal name and payload schema kept in its type. */
export function defineGlobalJob<const N extends string, S extends z.ZodType, D>(
  kind: Omit<GlobalJobKind<N, S, D>, 'scope'>,
): GlobalJobKind<N, S, D> {
  return { ...kind, scope: 'global' };
}
