import { Queue, UnrecoverableError as BullUnrecoverable, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { createProcessor } from './processor.js';
import type { JobContext } from '../jobs/kind.js';
import { queueName } from '../jobs/queues.js';
import { isJobName, kindOf, parseJob, QUEUE_KINDS, type JobName } from '../jobs/registry.js';
import type { Country } from '../src/catalog/identifiers.js';
import { withTimeout } from '../src/db/mongo.js';
import { once } from '../src/lifecycle/once.js';
import type { UpstreamPort } from '../src/upstream/port.js';

export interface RunningWorkers {
  /** The work queue's worker of each country. */
  readonly workers: ReadonlyMap<Country, Worker>;
  /** The forced updates' worker of each country. */
  readonly updates: ReadonlyMap<Country, Worker>;
  /** Lets active jobs finish within the deadline, then closes for good (those jobs stall and are retried). */
  close(): Promise<void>;
}

function finallyFailed(job: Job | undefined, err: Error): job is Job {
  if (!job) return false;
  return err instanceof BullUnrecoverable || job.attemptsMade >= (job.opts.attempts ?? 1);
}

/** The kind's hook after a job's last attempt; a failure of the hook is logged, not thrown. */
async function afterFinalFailure(ctx: JobContext, job: Job, err: Error): Promise<void> {
  if (!isJobName(job.name)) return;
  const kind = kindOf(job.name);
  if (!kind.onFinalFailure) return;
  try {
    await kind.onFinalFailure(ctx, parseJob(job.name, job.data), err);
  } catch (e) {
    ctx.logger.error({ err: { message: (e as Error).message }, jobId: job.id, job: job.name }, 'the final-failure hook failed');
  }
}

/**
 * One BullMQ worker per country queue (the work queue and the forced updates' queue). The quota
 * governor paces every upstream call of the country for every process together, so the workers
 * have no BullMQ limiter: it would only add a second, coarser pace that leaves the quota unspent.
 * Concurrency keeps enough calls in flight, and waiting for permits, to use the quota. Any number of
 * processes may run this on any number of machines.
 */
export async function startWorkers(
  ctx: JobContext,
  connection: Redis,
  upstream: (country: Country, job: JobName) => UpstreamPort,
  logger = ctx.logger,
): Promise<RunningWorkers> {
  const prefix = ctx.redisPrefix;

  const workers = new Map<Country, Worker>();
  const updates = new Map<Country, Worker>();
  const queues: Queue[] = [];
  for (const country of ctx.config.countries) {
    const countryQueues = QUEUE_KINDS.map((kind) => {
      const queue = new Queue(queueName(country, kind), { connection, prefix });
      // Without a listener BullMQ prints connection errors to stderr (QueueBase.emit falls back to
      // console.error); they belong in the log, like the worker's own.
      queue.on('error', (err) => logger.warn({ country, err: { message: err.message } }, 'queue error'));
      queues.push(queue);
      return queue;
    });
    const stopCountry = async (c: Country, err: Error): Promise<void> => {
      ctx.metrics.countryStopped.set({ country: c }, 1);
      logger.error(
        { country: c, err: { name: err.name, message: err.message } },
        `upstream refused ${c} for good: pausing its queues until an operator fixes the credential and runs \`shelfwatch queues:resume --country ${c}\``,
      );
      await Promise.all(countryQueues.map((q) => q.pause()));
    };
    for (const kind of QUEUE_KINDS) {
      const name = queueName(country, kind);
      const worker = new Worker(
        name,
        createProcessor({ ...ctx, logger }, country, (job) => upstream(country, job), stopCountry),
        {
          connection,
          prefix,
          concurrency: ctx.config.workers.concurrency(country),
          lockDuration: ctx.config.workers.lockMs,
          // A job whose worker died (SIGKILL, OOM, lost machine) comes back only when a stalled check
          // finds its lock gone, and it takes two checks (mark, then move). BullMQ checks every 30 s
          // whatever the lock is, so a short WORKER_LOCK_MS still left the batch stuck for up to a
          // minute. Checking once per lock duration bounds the recovery at about twice WORKER_LOCK_MS
          // (30 s when unset, BullMQ's default).
          stalledInterval: Math.min(30_000, ctx.config.workers.lockMs),
          autorun: false,
        },
      );
      worker.on('error', (err) => logger.warn({ country, queue: name, err: { message: err.message } }, 'worker error'));
      worker.on('completed', (job) => ctx.metrics.jobs.inc({ country, name: job.name, outcome: 'completed' }));
      worker.on('failed', (job, err) => {
        const final = finallyFailed(job, err);
        ctx.metrics.jobs.inc({ country, name: job?.name ?? 'unknown', outcome: final ? 'failed' : 'retry' });
        if (final) void afterFinalFailure(ctx, job, err);
      });
      (kind === 'update' ? updates : workers).set(country, worker);
      void worker.run();
    }
  }
  await Promise.all([...workers.values(), ...updates.values()].map((w) => w.waitUntilReady()));
  logger.info(
    {
      countries: ctx.config.countries,
      concurrency: Object.fromEntries(ctx.config.countries.map((c) => [c, ctx.config.workers.concurrency(c)])),
    },
    'workers started',
  );

  const close = once(async () => {
    await Promise.all(
      [...workers.values(), ...updates.values()].map(async (w) => {
        try {
          await withTimeout(w.close(), ctx.config.workers.shutdownMs, 'worker drain');
        } catch {
          logger.warn('active jobs did not finish in time: closing anyway (they will be retried after their lock expires)');
          await w.close(true);
        }
      }),
    );
    await Promise.allSettled(queues.map((q) => q.close()));
  });
  return { workers, updates, close };
}
