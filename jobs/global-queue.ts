import { Queue } from 'bullmq';
import type { z } from 'zod';
import type { Config } from '../config/env.js';
import type { Redis } from '../src/db/redis.js';
import type { Logger } from '../src/logger.js';
import type { GlobalJobKind } from './kind.js';
import { globalQueuePrefix } from './queue-names.js';
import { parsePayload } from './queues.js';

/** One job for a global queue: its id (BullMQ adds an id once), payload and priority. */
export interface GlobalJob<I> {
  readonly jobId: string;
  readonly data: I;
  readonly priority: number;
}

/**
 * Adds jobs of a global kind (deliveries) to its queue, with the kind's attempts, backoff and
 * retention as the queue's defaults, so a job added by hand (Bull Board) retries as the kind's do.
 * Payloads are parsed against the kind before they reach Redis. Built on the api's fail-fast Redis
 * connection, like JobProducer.
 */
export class GlobalJobQueue<S extends z.ZodType> {
  readonly queue: Queue;

  constructor(
    private readonly kind: GlobalJobKind<string, S, never>,
    connection: Redis,
    prefix: string,
    logger: Logger,
    config: Pick<Config, 'alerts'>,
  ) {
    this.queue = new Queue(kind.queue, {
      connection,
      prefix: globalQueuePrefix(prefix, kind.queue),
      defaultJobOptions: kind.jobOptions(config),
    });
    this.queue.on('error', (err) => logger.warn({ err: { message: err.message }, queue: kind.queue }, 'queue error'));
  }

  /** The queue's waiting jobs, as fair tagging reorders them. */
  get waiting(): Queue {
    return this.queue;
  }

  async addBulk(jobs: readonly GlobalJob<z.input<S>>[]): Promise<void> {
    await this.queue.addBulk(
      jobs.map((j) => ({ name: this.kind.name, data: parsePayload(this.kind, j.data), opts: { jobId: j.jobId, priority: j.priority } })),
    );
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
