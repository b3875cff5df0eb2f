import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { JobContext } from './context.js';
import { createProcessor } from './processor.js';
import { queueName } from '../jobs/queues.js';
import { QUEUE_KINDS } from '../jobs/registry.js';
import type { Country } from '../src/catalog/identifiers.js';
import { recordCountryAnswer } from '../src/watch/ean-imports.js';
import { withTimeout } from '../src/db/mongo.js';

export interface RunningWorkers {
  /** The work queue's worker of each country. */
  readonly workers: ReadonlyMap<Country, Worker>;
  /** The forced updates' worker of each country. */
  readonly updates: ReadonlyMap<Country, Worker>;
  /** Lets active jobs finish within the deadline, then closes for good (those jobs stall and are retried). */
  close(): Promise<void>;
}

function finallyFailed(job: Job | undefined, err: Error): boolean {
  if (!job) return false;
  return err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
}

/**
 * One BullMQ worker per country queue (the work queue and the forced updates' queue). The quota
 * governor paces every upstream call of the country for every process together, so the workers
 * have no BullMQ limiter: it would only add a second, coarser pace that leaves the quota unspent.
 * Concurrency keeps enough calls in flight, and waiting for permits, to use the quota. Any number of
 * processes may run this on any number of machines.
 */
export async function startWorkers(ctx: JobContext, connection: Redis, prefix: string): Promise<RunningWorkers> {
  const workers = new Map<Country, Worker>();
  const updates = new Map<Country, Worker>();
  const queues: Queue[] = [];
  for (const country of ctx.config.countries) {
    const countryQueues = QUEUE_KINDS.map((kind) => {
      const queue = new Queue(queueName(country, kind), { connection, prefix });
      // Without a listener BullMQ prints connection errors to stderr (QueueBase.emit falls back to
      // console.error); they belong in the log, like the worker's own.
      queue.on('error', (err) => ctx.logger.warn({ country, err: { message: err.message } }, 'queue error'));
      queues.push(queue);
      return queue;
    });
    const stopCountry = async (c: Country, err: Error): Promise<void> => {
      ctx.metrics.countryStopped.set({ country: c }, 1);
      ctx.logger.error({ country: c, err: { name: err.name, message: err.message } },
        `upstream refused ${c} for good: pausing its queues until an operator fixes the credential and runs \`shelfwatch queues:resume --country ${c}\``);
      await Promise.all(countryQueues.map((q) => q.pause()));
    };
    for (const kind of QUEUE_KINDS) {
      const name = queueName(country, kind);
      const worker = new Worker(name, createProcessor(ctx, country, stopCountry), {
        connection,
        prefix,
        concurrency: ctx.workers.concurrency(country),
        lockDuration: ctx.workers.lockMs,
        // A job whose worker died (SIGKILL, OOM, lost machine) comes back only when a stalled check
        // finds its lock gone, and it takes two checks (mark, then move). BullMQ checks every 30 s
        // whatever the lock is, so a short WORKER_LOCK_MS still left the batch stuck for up to a
        // minute. Checking once per lock duration bounds the recovery at about twice WORKER_LOCK_MS
        // (30 s when unset, BullMQ's default). Found by test/faults/worker-kill.test.ts.
        stalledInterval: Math.min(30_000, ctx.workers.lockMs),
        autorun: false,
      });
      worker.on('error', (err) => ctx.logger.warn({ country, queue: name, err: { message: err.message } }, 'worker error'));
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
      (kind === 'update' ? updates : workers).set(country, worker);
      void worker.run();
    }
  }
  await Promise.all([...workers.values(), ...updates.values()].map((w) => w.waitUntilReady()));
  ctx.logger.info({ countries: ctx.config.countries, concurrency: Object.fromEntries(ctx.config.countries.map((c) => [c, ctx.workers.concurrency(c)])) }, 'workers started');

  let closing: Promise<void> | undefined;
  return {
    workers,
    updates,
    close() {
      closing ??= (async () => {
        await Promise.all([...workers.values(), ...updates.values()].map(async (w) => {
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
