import { QueueEvents } from 'bullmq';
import type { Country } from '../src/core/identifiers.js';
import type { ForcedUpdateQueue, QueuedUpdate } from '../src/catalog/forced-updates.js';
import { closeRedis, createRedis, type RedisTarget } from '../src/db/redis.js';
import type { AccountRef } from '../src/fairness/fair-classes.js';
import type { Logger } from '../src/logger.js';
import type { JobProducer } from './queues.js';
import { queueName, queuePrefix } from './queue-names.js';

/**
 * The forced updates' queues as src/catalog/forced-updates.ts uses them: jobs added through the
 * job producer, their ends heard on each country's QueueEvents. Each QueueEvents holds a blocking
 * connection of its own, opened on the country's first update.
 */
export class ForcedUpdateJobs implements ForcedUpdateQueue {
  readonly #events = new Map<Country, Promise<QueueEvents>>();
  readonly #closers: (() => Promise<void>)[] = [];

  constructor(
    private readonly jobs: JobProducer,
    private readonly deps: { readonly redisTarget: RedisTarget; readonly redisPrefix: string; readonly logger: Logger },
  ) {}

  async listen(country: Country): Promise<void> {
    await this.eventsOf(country);
  }

  async add(data: { country: Country; asins: string[]; claim: string }, dedupe: string, account: AccountRef): Promise<QueuedUpdate> {
    const events = await this.eventsOf(data.country);
    const job = await this.jobs.addJob('forced.update', data, { deduplication: { id: dedupe } }, account);
    return { id: job.id!, finished: (ms) => job.waitUntilFinished(events, ms) };
  }

  private eventsOf(country: Country): Promise<QueueEvents> {
    let events = this.#events.get(country);
    if (!events) {
      const { redisTarget, redisPrefix, logger } = this.deps;
      const connection = createRedis(redisTarget, 'blocking', logger, `events-${country}`);
      const qe = new QueueEvents(queueName(country, 'forced'), { connection, prefix: queuePrefix(redisPrefix, country) });
      qe.on('error', (err) => logger.warn({ err: { message: err.message }, country }, 'queue events error'));
      this.#closers.push(async () => {
        await qe.close();
        await closeRedis(connection);
      });
      events = qe.waitUntilReady().then(() => qe);
      // A failed start is not kept: the next request tries again.
      events.catch(() => this.#events.delete(country));
      this.#events.set(country, events);
    }
    return events;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.#closers.splice(0).map((close) => close()));
    this.#events.clear();
  }
}
