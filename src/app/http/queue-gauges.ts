import type { Config } from '../../../config/env.js';
import type { Country } from '../../core/identifiers.js';
import type { QuotaClass } from '../../core/quota-classes.js';
import type { DeliveryRecords } from '../../alerts/deliveries/records.js';
import type { Metrics } from '../../core/metrics.js';
import { JOB_STATES, QUEUE_CLASSES, queueName } from '../../../jobs/queue-names.js';

/** What the gauges read: the country queues (the job producer, jobs/queues.ts, opens them), deliveries. */
/** What the gauges read of a queue (a BullMQ queue is one). */
export interface CountedQueue {
  getJobCounts(...states: (typeof JOB_STATES)[number][]): Promise<Record<string, number>>;
  getJobs(states: ('prioritized' | 'wait')[], start: number, end: number, asc: boolean): Promise<{ readonly timestamp: number }[]>;
}

export interface QueueGaugeSources {
  readonly config: Pick<Config, 'countries'>;
  readonly jobs: { queue(country: Country, cls: QuotaClass): CountedQueue };
  readonly metrics: Metrics;
  /** The deliveries' queue (jobs/global-queue.ts). */
  readonly deliveryJobs: { readonly queue: Pick<CountedQueue, 'getJobCounts'> };
  readonly deliveries: { readonly records: Pick<DeliveryRecords, 'oldestPending'> };
}

/**
 * Reads the depth of every country queue, and the age of its oldest waiting job, into the gauges.
 * Run on each scrape: the queues are shared by every process, so any process can report them.
 */
export async function refreshQueueGauges(ctx: QueueGaugeSources): Promise<void> {
  await Promise.all([refreshDeliveryGauges(ctx), ...countryQueueGauges(ctx)]);
}

async function refreshDeliveryGauges(ctx: Pick<QueueGaugeSources, 'metrics' | 'deliveryJobs' | 'deliveries'>): Promise<void> {
  const counts = await ctx.deliveryJobs.queue.getJobCounts(...JOB_STATES);
  for (const state of JOB_STATES) ctx.metrics.deliveryJobs.set({ state }, counts[state] ?? 0);
  const oldest = await ctx.deliveries.records.oldestPending();
  ctx.metrics.deliveryOldestPending.set(oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1_000) : 0);
}

function countryQueueGauges(ctx: Pick<QueueGaugeSources, 'config' | 'jobs' | 'metrics'>): Promise<void>[] {
  return ctx.config.countries.flatMap((country) =>
    QUEUE_CLASSES.map(async (cls) => {
      const queue = ctx.jobs.queue(country, cls);
      const kind = queueName(country, cls).split('-')[0]!;
      const counts = await queue.getJobCounts(...JOB_STATES);
      for (const state of JOB_STATES) ctx.metrics.queueJobs.set({ country, queue: kind, state }, counts[state] ?? 0);
      // The next jobs to run (the most urgent first): how long the head of the queue has waited.
      const head = await queue.getJobs(['prioritized', 'wait'], 0, 49, true);
      const oldest = Math.min(...head.filter(Boolean).map((j) => j.timestamp));
      ctx.metrics.queueLag.set({ country, queue: kind }, Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1_000) : 0);
    }),
  );
}
