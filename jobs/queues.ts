/**
 * A country job's way through its queue: the one list of job kinds and what is derived from it
 * (the payload schema, scope, class, queue and priority of each job name), the producer that adds
 * jobs at their priority, and the processor that runs each one a worker takes, asking its permits at
 * the rank that priority gives (a global kind's queue is global-queue.ts). Both ends parse the
 * payload against its kind, because data in Redis is untyped at rest (written by an older version,
 * or by hand). Each kind lives, whole, in its own module; the BullMQ workers that call the
 * processor are started and drained in workers/.
 */
import { DelayedError, Queue, UnrecoverableError as BullUnrecoverable, type Job, type JobsOptions } from 'bullmq';
import type { z } from 'zod';
import type { Redis } from '../src/db/redis.js';
import type { Country } from '../src/core/identifiers.js';
import type { Logger } from '../src/logger.js';
import { InvalidJobPayloadError, JobTimeoutError, PermitWaitTimeoutError, UpstreamRefusingError } from '../src/core/errors.js';
import type { QuotaClass } from '../src/core/quota-classes.js';
import { DEFAULT_RETRY, FORCED_RETRY } from '../config/retry.js';
import { queueName, queuePrefix } from './queue-names.js';
import type { FairTags } from '../src/fairness/fair-tags.js';
import { fairLane, isFairClass, type AccountRef, type Fair } from '../src/fairness/fair-classes.js';
import type { PermitScopes } from '../src/quota/permit-scope.js';
import type { UpstreamPort } from '../src/upstream/port.js';
import type { CountryJobKind, JobKind } from './kind.js';
import type { JobContext } from './context.js';
import { failureAction } from './failure.js';
import { runCutOff } from './cut-off.js';
import { browseCrawlJob } from './browse-crawl.js';
import { eanResolveJob } from './ean-resolve.js';
import { refreshP0Job, refreshP1Job } from './refresh.js';
import { forcedUpdateJob } from './forced-update.js';
import { deliveryJob } from './deliver.js';

export const JOB_KINDS = [forcedUpdateJob, eanResolveJob, refreshP1Job, refreshP0Job, browseCrawlJob, deliveryJob] as const;

type Kind = (typeof JOB_KINDS)[number];
export type JobName = Kind['name'];
/** The kinds whose jobs wait in a queue of their country. */
export type CountryJobName = Extract<Kind, { scope: 'country' }>['name'];
type KindOf<N extends JobName> = Extract<Kind, { name: N }>;
/** What a worker gets (defaults applied). */
export type JobPayload<N extends JobName> = z.output<KindOf<N>['payload']>;
/** What a producer gives. */
export type JobInput<N extends JobName> = z.input<KindOf<N>['payload']>;

export const JOB_NAMES: readonly JobName[] = JOB_KINDS.map((k) => k.name);
export const COUNTRY_JOB_NAMES: readonly CountryJobName[] = JOB_KINDS.flatMap((k) => (k.scope === 'country' ? [k.name] : []));

const byName = new Map<string, JobKind>(JOB_KINDS.map((k) => [k.name, k as unknown as JobKind]));

export function isJobName(name: string): name is JobName {
  return byName.has(name);
}

/** A job of a country's queue, as the country's processor runs it. */
export function isCountryJobName(name: string): name is CountryJobName {
  return byName.get(name)?.scope === 'country';
}

/** The kind of a country job name, as the processor runs it. */
export function kindOf(name: CountryJobName): CountryJobKind {
  return byName.get(name) as CountryJobKind;
}

/** BullMQ priority of a job queued without an account, from its name and payload: 1 is the most urgent. */
export function priorityOf<N extends CountryJobName>(name: N, data?: JobPayload<N>): number {
  const kind = kindOf(name);
  return data !== undefined && kind.priorityFor ? kind.priorityFor(data as { country: Country }) : kind.priority;
}

/** A job's class: its queue, and whose share of the quota its calls take (src/core/quota-classes.ts). */
export function classOf(name: CountryJobName): QuotaClass {
  return kindOf(name).cls;
}

/** Parses a payload against a kind's schema; throws InvalidJobPayloadError naming the job. */
export function parsePayload<S extends z.ZodType>(kind: { readonly name: string; readonly payload: S }, data: unknown): z.output<S> {
  const result = kind.payload.safeParse(data);
  if (!result.success)
    throw new InvalidJobPayloadError(`invalid ${kind.name} payload: ${result.error.issues.map((i) => i.message).join('; ')}`);
  return result.data;
}

/** Parses a payload for `name`; throws InvalidJobPayloadError naming the job. */
export function parseJob<N extends JobName>(name: N, data: unknown): JobPayload<N> {
  return parsePayload(byName.get(name)!, data) as JobPayload<N>;
}

/** `parseJob` for a job of a country's queue, whose payload names its country. */
export function parseCountryJob<N extends CountryJobName>(name: N, data: unknown): JobPayload<N> & { country: Country } {
  return parseJob(name, data) as JobPayload<N> & { country: Country };
}

/** Finished jobs are kept within bounds: completed briefly, failed longer (Bull Board, post-mortems). */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  removeOnComplete: { age: 3_600, count: 1_000 },
  removeOnFail: { age: 7 * 86_400, count: 10_000 },
};

/** Jobs added to a queue by hand (Bull Board, an operator's script) retry as the queue's kinds do. */
function queueDefaults(cls: QuotaClass): JobsOptions {
  return { ...DEFAULT_JOB_OPTIONS, ...(cls === 'forced' ? FORCED_RETRY : DEFAULT_RETRY) };
}

/** A job's priority and retry schedule come from its kind; the caller adds ids and the like. */
function optionsOf(name: CountryJobName, opts: Omit<JobsOptions, 'priority'>, priority: number): JobsOptions {
  const kind = kindOf(name);
  return { attempts: kind.retry.attempts, backoff: { ...kind.retry.backoff }, ...opts, priority };
}

/**
 * Adds jobs to the country queues. Payloads are parsed against the registry before they reach Redis.
 * Built on the api's fail-fast Redis connection, so an add while Redis is away throws at once and the
 * route answers 503 instead of hanging.
 */
export class JobProducer {
  readonly #queues = new Map<string, Queue>();

  constructor(
    private readonly connection: Redis,
    private readonly prefix: string,
    private readonly logger: Logger,
    private readonly fair: FairTags,
  ) {}

  queue(country: Country, cls: QuotaClass = 'refresh'): Queue {
    const name = queueName(country, cls);
    let q = this.#queues.get(name);
    if (!q) {
      q = new Queue(name, {
        connection: this.connection,
        prefix: queuePrefix(this.prefix, country),
        defaultJobOptions: queueDefaults(cls),
      });
      q.on('error', (err) => this.logger.warn({ err: { message: err.message }, queue: name }, 'queue error'));
      this.#queues.set(name, q);
    }
    return q;
  }

  /**
   * Adds a job. A job of a fair class added for an account goes into its queue at that account's
   * fair start tag (src/fairness/fair-tags.ts): its priority puts it behind no more than each other
   * account's fair share of the jobs queued before it.
   */
  async add<N extends CountryJobName>(
    name: N,
    data: JobInput<N>,
    opts: Omit<JobsOptions, 'priority'> = {},
    account?: AccountRef,
  ): Promise<string> {
    return (await this.addJob(name, data, opts, account)).id!;
  }

  /** `add`, answering BullMQ's job (what a caller that waits for it needs), not only its id. */
  async addJob<N extends CountryJobName>(
    name: N,
    data: JobInput<N>,
    opts: Omit<JobsOptions, 'priority'> = {},
    account?: AccountRef,
  ): Promise<Job> {
    const kind = kindOf(name);
    let payload = parseCountryJob(name, data);
    let priority = priorityOf(name, payload);
    const queue = this.queue(payload.country, kind.cls);
    if (account && isFairClass(kind.cls)) {
      const t = await this.fair.tag(fairLane(kind.cls, payload.country), account.id, account.weight, queue);
      priority = t.priority;
      payload = parseCountryJob(name, { ...payload, fair: { account: account.id, tag: t.tag, fresh: t.fresh } });
    }
    return queue.add(name, payload, optionsOf(name, opts, priority));
  }

  /** Adds jobs of one kind and country in one round trip (the planner's batches). */
  async addBulk<N extends CountryJobName>(
    jobs: readonly { name: N; data: JobInput<N>; opts?: Omit<JobsOptions, 'priority'> }[],
  ): Promise<void> {
    const byQueue = new Map<Queue, { name: N; data: unknown; opts: JobsOptions }[]>();
    for (const j of jobs) {
      const payload = parseCountryJob(j.name, j.data);
      const q = this.queue(payload.country, kindOf(j.name).cls);
      if (!byQueue.has(q)) byQueue.set(q, []);
      byQueue.get(q)!.push({ name: j.name, data: payload, opts: optionsOf(j.name, j.opts ?? {}, priorityOf(j.name, payload)) });
    }
    for (const [q, list] of byQueue) await q.addBulk(list);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#queues.values()].map((q) => q.close()));
    this.#queues.clear();
  }
}

/** How soon a job that timed out waiting for its permit is back in its queue. */
const PERMIT_WAIT_RETRY_MS = 1_000;

/** Called when an upstream error means the country cannot be served until an operator acts. */
export type StopCountry = (country: Country, err: Error) => Promise<void>;

/** Puts the job back as delayed until `at`, without spending one of its attempts. */
async function delayUntil(job: Job, token: string | undefined, at: number): Promise<never> {
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}

/**
 * Runs one job of a country: parses its payload against its kind and runs the kind, under the
 * attempt's deadline. What a failure becomes is failureAction's decision (jobs/failure.ts),
 * carried out here in terms BullMQ understands: a delay that spends no attempt, BullMQ's
 * UnrecoverableError (no retry), or the error itself (a retry with the kind's backoff).
 */
export function createProcessor(ctx: JobContext, country: Country, upstream: UpstreamPort, stopCountry: StopCountry, scopes: PermitScopes) {
  return async (job: Job, token?: string, cancel?: AbortSignal): Promise<unknown> => {
    const log = ctx.logger.child({ jobId: job.id, job: job.name, country, attempt: job.attemptsMade + 1 });
    let kind: CountryJobKind | undefined;
    let data: { country: Country } | undefined;
    try {
      if (!isCountryJobName(job.name)) throw new InvalidJobPayloadError(`unknown job name ${job.name}`);
      kind = kindOf(job.name);
      data = parseJob(job.name, job.data);
      const started = Date.now();
      const fair = (data as { fair?: Fair }).fair;
      // BullMQ keeps extending the lock of a job whose handler never settles (a MongoDB connection
      // black-holed by the network: the driver sets no socket timeout), so without a deadline the
      // job would hold its slot for ever and never be retried. Past it, or when the worker's drain
      // runs out of time, the attempt fails as retryable (jobs/cut-off.ts).
      const ms = ctx.config.workers.jobTimeoutMs;
      const k = kind;
      const d = data;
      // The job asks its permits at its BullMQ priority (a fair class's: its tag over the lane's base),
      // or at 0 when its account had nothing queued, which the governor lets take the class's next
      // start out of turn (src/quota/governor-scripts.ts).
      const rank = fair?.fresh ? 0 : job.priority || kind.priority;
      const state = { waiting: false, started: false };
      const lane = fair ? { lane: fairLane(k.cls, country), tag: fair.tag } : undefined;
      const result = await runCutOff(
        (signal) => scopes.run({ cls: k.cls, rank, signal, fair: lane, state }, () => k.run(ctx, d, { id: job.id, upstream, log })),
        {
          ms,
          cancel,
          // Past its deadline while still waiting for a permit, the job is backlogged, not hung: it
          // goes back to its queue in its place (a 'wait', no attempt spent).
          onTimeout: () =>
            state.waiting
              ? new PermitWaitTimeoutError(
                  `job waited ${ms} ms for its permit (WORKER_JOB_TIMEOUT): back to its queue`,
                  PERMIT_WAIT_RETRY_MS,
                )
              : new JobTimeoutError(`job still running after ${ms} ms (WORKER_JOB_TIMEOUT)`),
        },
      );
      log.debug({ ms: Date.now() - started }, 'job done');
      return result;
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      const decided = failureAction(error, kind);
      switch (decided.action) {
        case 'fail_day_spent':
          ctx.metrics.jobs.inc({ country, name: job.name, outcome: 'quota_day' });
          throw new BullUnrecoverable(error.message);
        case 'wait_next_day':
          ctx.metrics.jobs.inc({ country, name: job.name, outcome: 'quota_day' });
          log.info(
            { until: new Date(decided.until).toISOString() },
            "the day's upstream quota is spent: the job waits for the next quota day",
          );
          if (kind && data && typeof kind.whenDaySpent === 'function') await kind.whenDaySpent(ctx, data, new Date(decided.until));
          return delayUntil(job, token, decided.until);
        case 'wait':
          // A refused country says so once, in its breaker's log line; its jobs only go back to wait.
          if (error instanceof UpstreamRefusingError)
            log.debug({ retryAfterMs: decided.ms }, 'the upstream refuses the country: the job waits');
          else log.warn({ retryAfterMs: decided.ms }, 'upstream throttled again and again: the job waits');
          ctx.metrics.jobs.inc({ country, name: job.name, outcome: 'rate_limited' });
          return delayUntil(job, token, Date.now() + decided.ms);
        case 'stop_country':
          await stopCountry(country, error);
          throw new BullUnrecoverable(error.message);
        case 'fail':
          log.warn({ err: { name: error.name, message: error.message } }, 'job failed for good');
          throw new BullUnrecoverable(error.message);
        case 'retry':
          log.warn({ err: { name: error.name, message: error.message } }, 'job failed; will retry');
          throw error;
      }
    }
  };
}
