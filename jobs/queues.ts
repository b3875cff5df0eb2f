import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Country } from '../src/catalog/identifiers.js';
import type { Logger } from '../src/logger.js';
import type { QueueKind } from './kind.js';
import { kindOf, parseJob, queueKindOf, type JobInput, type JobName } from './registry.js';
import { DEFAULT_RETRY, FORCED_RETRY } from '../config/retry.js';

/** A country's queues (no `:` in BullMQ names): `upstream-JP` for most work, `update-JP` for forced updates. */
export function queueName(country: Country, kind: QueueKind = 'work'): string {
  return kind === 'update' ? `update-${country}` : `upstream-${country}`;
}

/** The job states an operator counts (metrics, `queues:status`): pending, running and finished. */
export const JOB_STATES = ['wait', 'prioritized', 'active', 'delayed', 'failed', 'completed'] as const;

/** Finished jobs are kept within bounds: completed briefly, failed longer (Bull Board, post-mortems). */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  removeOnComplete: { age: 3_600, count: 1_000 },
  removeOnFail: { age: 7 * 86_400, count: 10_000 },
};

/** Jobs added to a queue by hand (Bull Board, an operator's script) retry as the queue's kinds do. */
const QUEUE_DEFAULTS: Readonly<Record<QueueKind, JobsOptions>> = {
  work: { ...DEFAULT_JOB_OPTIONS, ...DEFAULT_RETRY },
  update: { ...DEFAULT_JOB_OPTIONS, ...FORCED_RETRY },
};

/** A job's priority and retry schedule come from its kind; the caller adds ids and the like. */
function optionsOf(name: JobName, opts: Omit<JobsOptions, 'priority'>): JobsOptions {
  const kind = kindOf(name);
  return { attempts: kind.retry.attempts, backoff: { ...kind.retry.backoff }, ...opts, priority: kind.priority };
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
  ) {}

  queue(country: Country, kind: QueueKind = 'work'): Queue {
    const name = queueName(country, kind);
    let q = this.#queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.connection, prefix: this.prefix, defaultJobOptions: QUEUE_DEFAULTS[kind] });
      q.on('error', (err) => this.logger.warn({ err: { message: err.message }, queue: name }, 'queue error'));
      this.#queues.set(name, q);
    }
    return q;
  }

  async add<N extends JobName>(name: N, data: JobInput<N>, opts: Omit<JobsOptions, 'priority'> = {}): Promise<string> {
    const payload = parseJob(name, data);
    const job = await this.queue(payload.country, queueKindOf(name)).add(name, payload, optionsOf(name, opts));
    return job.id!;
  }

  /** Adds jobs of one kind and country in one round trip (the planner's batches). */
  async addBulk<N extends JobName>(jobs: readonly { name: N; data: JobInput<N>; opts?: Omit<JobsOptions, 'priority'> }[]): Promise<void> {
    const byQueue = new Map<Queue, { name: N; data: unknown; opts: JobsOptions }[]>();
    for (const j of jobs) {
      const payload = parseJob(j.name, j.data);
      const q = this.queue(payload.country, queueKindOf(j.name));
      if (!byQueue.has(q)) byQueue.set(q, []);
      byQueue.get(q)!.push({ name: j.name, data: payload, opts: optionsOf(j.name, j.opts ?? {}) });
    }
    for (const [q, list] of byQueue) await q.addBulk(list);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#queues.values()].map((q) => q.close()));
    this.#queues.clear();
  }
}
