/**
 * Completed jobs of the product's queues as they happen, through BullMQ's QueueEvents (the queue's
 * event stream in Redis): which batch refreshed which ASINs, which import page ran for whom. It
 * costs the product nothing (the stream is written anyway) and misses nothing a poll of MongoDB
 * would miss between two looks. The time of an event is its stream entry's id, Redis's clock.
 */
import { QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { onCleanup } from './infra.js';
import type { Country } from '../../src/core/identifiers.js';
import type { QuotaClass } from '../../src/core/quota-classes.js';
import { queueName, queuePrefix } from '../../jobs/queue-names.js';

export interface Completion {
  readonly queue: string;
  readonly jobId: string;
  readonly returnvalue: unknown;
  /** Epoch ms on Redis's clock. */
  readonly at: number;
}

export interface CompletionLog {
  readonly completions: readonly Completion[];
  close(): Promise<void>;
}

/** Starts listening before the jobs run: a QueueEvents sees only events added after it starts. */
/** The completions of the `cls` queue of each country. */
export async function logCompletions(
  redisUrl: string,
  prefix: string,
  cls: QuotaClass,
  countries: readonly Country[],
): Promise<CompletionLog> {
  const completions: Completion[] = [];
  const listeners = countries.map((country) => {
    const queue = queueName(country, cls);
    // QueueEvents blocks on XREAD: a connection of its own, never retrying a command forever.
    const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const events = new QueueEvents(queue, { connection, prefix: queuePrefix(prefix, country) });
    events.on('completed', ({ jobId, returnvalue }: { jobId: string; returnvalue: unknown }, id: string) => {
      completions.push({ queue, jobId, returnvalue, at: Number(id.split('-')[0]) });
    });
    events.on('error', (err) => console.error(`bench: queue events of ${queue}: ${err.message}`));
    return { events, connection };
  });
  await Promise.all(listeners.map((l) => l.events.waitUntilReady()));
  const close = async (): Promise<void> => {
    await Promise.allSettled(listeners.map((l) => l.events.close()));
    for (const l of listeners) l.connection.disconnect();
  };
  onCleanup(`queue events of ${countries.map((c) => queueName(c, cls)).join(', ')}`, close);
  return { completions, close };
}
