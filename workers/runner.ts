import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { JobContext } from './context.js';
import { createProcessor } from './processor.js';
import { queueName } from '../jobs/queues.js';
import type { Country } from '../src/catalog/identifiers.js';
import { recordCountryAnswer } from '../src/watch/ean-imports.js';
import { withTimeout } from '../src/db/mongo.js';

export interface RunningWorkers {
  readonly workers: ReadonlyMap<Country, Worker>;
  /** Lets active jobs finish within the deadline, then closes for good (those jobs stall and are retried). */
  close(): Promise<void>;
}

function finallyFailed(job: Job | undefined, err: Error): boolean {
  if (!job) return false;
  return err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
}

/**
 * The limiter for `perSecond` requests a second: one job per 1/Q s rather than Q per second. A
 * fixed window lets Q jobs start together and Q more right after the window turns, which a token
 * bucket upstream (as the real one is) answers with 429s once network jitter reorders arrivals.
 * Evenly spaced starts keep the upstream's bucket nearly full; the extra 1 % absorbs jitter where
 * the bucket holds a single token.
 */
export function limiterFor(perSecond: number): { max: number; duration: number } {
  return { max: 1, duration: Math.max(1, Math.round((1_000 * 1.01) / perSecond)) };
}

/**
 * One BullMQ worker per country queue. The limiter holds the country's per-second quota for every
 * worker process together (BullMQ's limiter is global per queue); concurrency keeps enough calls in
 * flight to use it. Any number of processes may run this on any number of machines.
 */
export async function startWorkers(ctx: JobContext, connection: Redis, prefix: string): Promise<RunningWorkers> {
  const workers = new Map<Country, Worker>();
  const queues: Queue[] = [];
  for (const country of ctx.config.countries) {
    const queue = new Queue(queueName(country), { connection, prefix });
    // Without a listener BullMQ prints connection errors to stderr (QueueBase.emit falls back to
    // console.error); they belong in the log, like the worker's own.
    queue.on('error', (err) => ctx.logger.warn({ country, err: { message: err.message } }, 'queue error'));
    queues.push(queue);
    const stopCountry = async (c: Country, err: Error): Promise<void> => {
      ctx.metrics.countryStopped.set({ country: c }, 1);
      ctx.logger.error({ country: c, err: { name: err.name, message: err.message } },
        `upstream refused ${c} for good: pausing its queue until an operator fixes the credential and runs \`shelfwatch queues:resume --country ${c}\``);
      await queue.pause();
    };
    const processor = createProcessor(ctx, country, stopCountry, (ms) => queue.rateLimit(ms));
    const quota = ctx.workers.quota[country];
    const worker = new Worker(queueName(country), processor, {
      connection,
      prefix,
      concurrency: ctx.workers.concurrency(country),
      limiter: limiterFor(quota.perSecond),
      lockDuration: ctx.workers.lockMs,
      // A job whose worker died (SIGKILL, OOM, lost machine) comes back only when a stalled check
      // finds its lock gone, and it takes two checks (mark, then move). BullMQ checks every 30 s
      // whatever the lock is, so a short WORKER_LOCK_MS still left the batch stuck for up to a
      // minute. Checking once per lock duration bounds the recovery at about twice WORKER_LOCK_MS
      // (30 s when unset, BullMQ's default). Found by test/faults/worker-kill.test.ts.
      stalledInterval: Math.min(30_000, ctx.workers.lockMs),
      autorun: false,
    });
    worker.on('error', (err) => ctx.logger.warn({ country, err: { message: err.message } }, 'worker error'));
    worker.on('completed', (job) => ctx.metrics.jobs.inc({ country, name: job.name, outcome: 'completed' }));
    worker.on('failed', (job, err) => {
      const final = finallyFailed(job, err);
      ctx.metrics.jobs.inc({ country, name: job?.name ?? 'unknown', outcome: final ? 'failed' : 'retry' });
      if (final && job?.name === 'ean.resolve') {
        const data = job.data as { importId?: string };
        if (data.importId) {
          recordCountryAnswer(ctx.mongo, data.importId, country, 'failed', null, err.message).catch((e: Error) =>
            ctx.logger.error({ err: { message: e.message }, jobId: job.id }, 'could not record the failed import'));
        }
      }
    });
    workers.set(country, worker);
    void worker.run();
  }
  await Promise.all([...workers.values()].map((w) => w.waitUntilReady()));
  ctx.logger.info({ countries: ctx.config.countries, concurrency: Object.fromEntries(ctx.config.countries.map((c) => [c, ctx.workers.concurrency(c)])) }, 'workers started');

  let closing: Promise<void> | undefined;
  return {
    workers,
    close() {
      closing ??= (async () => {
        await Promise.all([...workers.values()].map(async (w) => {
          try {
            await withTimeout(w.close(), ctx.workers.shutdownMs, 'worker drain');
          } catch {
            ctx.logger.warn('active jobs did not finish in time: closing anyway (they will be retried after their lock expires)');
            await w.close(true);
          }
        }));
        await Promise.allSettled(queues.map((q) => q.close()));
      })();
      return closing;
    },
  };
}
