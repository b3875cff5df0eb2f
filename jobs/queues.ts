import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Country } from '../src/catalog/identifiers.js';
import type { Logger } from '../src/logger.js';
import { JOB_PRIORITY, parseJob, type JobInput, type JobName } from './registry.js';

/** One queue per country for every upstream call of that country (no `:` in BullMQ names). */
export function queueName(country: Country): string {
  return `upstream-${country}`;
}

/** The job states an operator counts (metrics, `queues:status`): pending, running and finished. */
export const JOB_STATES = ['wait', 'prioritized', 'active', 'delayed', 'failed', 'completed'] as const;

/**
 * Defaults for every job: transient failures retry with exponential backoff and jitter; finished
 * jobs are kept within bounds (completed briefly, failed longer, for Bull Board and post-mortems).
 */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 },
  removeOnComplete: { age: 3_600, count: 1_000 },
  removeOnFail: { age: 7 * 86_400, count: 10_000 },
};

/**
 * Adds jobs to the country queues. Payloads are parsed against the registry before they reach Redis.
 * Built on the api's fail-fast Redis connection, so an add while Redis is away throws at once and the
 * route answers 503 instead of hanging.
 */
export class JobProducer {
  readonly #queues = new Map<Country, Queue>();

  constructor(
    private readonly connection: Redis,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {}

  queue(country: Country): Queue {
    let q = this.#queues.get(country);
    if (!q) {
      q = new Queue(queueName(country), { connection: this.connection, prefix: this.prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS });
      q.on('error', (err) => this.logger.warn({ err: { message: err.message }, queue: queueName(country) }, 'queue error'));
      this.#queues.set(country, q);
    }
    return q;
  }

  async add<N extends JobName>(name: N, data: JobInput<N>, opts: Omit<JobsOptions, 'priority'> = {}): Promise<string> {
    const payload = parseJob(name, data);
    const job = await this.queue(payload.country).add(name, payload, { ...opts, priority: JOB_PRIORITY[name] });
    return job.id!;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#queues.values()].map((q) => q.close()));
    this.#queues.clear();
  }
}
