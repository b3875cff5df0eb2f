/**
 * Every few seconds, the jobs pending in each country's queues (waiting, prioritized or active): a
 * throughput figure means "while backlogged" only if every look found work.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { onCleanup } from './infra.js';
import { QUOTA_CLASSES } from '../../src/core/quota-classes.js';
import { queueName, queuePrefix } from '../../jobs/queue-names.js';
import type { Country } from '../../src/core/identifiers.js';

export interface BacklogSample {
  readonly t: number;
  /** Jobs waiting, prioritized or active, per country and queue class. */
  readonly jobs: Record<string, Record<string, number>>;
}

export interface BacklogSampler {
  readonly samples: readonly BacklogSample[];
  stop(): Promise<void>;
}

export function sampleBacklog(redisUrl: string, prefix: string, countries: readonly string[], everyMs: number): BacklogSampler {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queues = countries.flatMap((c) =>
    QUOTA_CLASSES.map((cls) => ({
      c,
      cls,
      q: new Queue(queueName(c as Country, cls), { connection, prefix: queuePrefix(prefix, c as Country) }),
    })),
  );
  const close = async (): Promise<void> => {
    await Promise.allSettled(queues.map((x) => x.q.close()));
    connection.disconnect();
  };
  onCleanup('backlog queues', close);
  const samples: BacklogSample[] = [];
  const take = async (): Promise<void> => {
    const jobs: Record<string, Record<string, number>> = {};
    await Promise.all(
      queues.map(async ({ c, cls, q }) => {
        const n = await q.getJobCounts('wait', 'prioritized', 'active');
        (jobs[c] ??= {})[cls] = (n.wait ?? 0) + (n.prioritized ?? 0) + (n.active ?? 0);
      }),
    );
    samples.push({ t: Date.now(), jobs });
  };
  const timer = setInterval(() => void take().catch(() => undefined), everyMs);
  return {
    samples,
    async stop() {
      clearInterval(timer);
      await close();
    },
  };
}
