import { hostname } from 'node:os';
import { Queue, UnrecoverableError as BullUnrecoverable, Worker, type Job } from 'bullmq';
import type { Redis } from '../src/db/redis.js';
import { drainWorkers } from './drain.js';
import { readyOf } from './ready.js';
import type { JobContext } from '../jobs/context.js';
import { QUEUE_CLASSES, queueName, queuePrefix } from '../jobs/queue-names.js';
import { createProcessor, isCountryJobName, kindOf, parseJob } from '../jobs/queues.js';
import type { Country } from '../src/core/identifiers.js';
import type { QuotaClass } from '../src/core/quota-classes.js';
import { isFairClass } from '../src/fairness/fair-classes.js';
import type { PermitScopes } from '../src/quota/permit-scope.js';
import type { UpstreamPort } from '../src/upstream/port.js';

export interface RunningWorkers {
  /** Each country's worker of each class's queue. */
  readonly byClass: ReadonlyMap<Country, ReadonlyMap<QuotaClass, Worker>>;
  /** The refresh queue's worker of each country. */
  readonly workers: ReadonlyMap<Country, Worker>;
  /** The forced updates' worker of each country. */
  readonly updates: ReadonlyMap<Country, Worker>;
  /** The EAN imports' worker of each country. */
  readonly imports: ReadonlyMap<Country, Worker>;
  /** The browse crawls' worker of each country. */
  readonly crawls: ReadonlyMap<Country, Worker>;
  /** Every BullMQ worker started here, for the role's drain (workers/drain.ts). */
  readonly all: readonly Worker[];
  /**
   * Drains every worker at once within `deadlineMs` (WORKER_SHUTDOWN_MS unless told), then closes
   * the queues they use to pause a country. Once: later calls wait for the first.
   */
  close(deadlineMs?: number): Promise<void>;
}

/**
 * Jobs of a class queued fairly by account, run at once per process. They mostly wait for their
 * class's permits, and only a job in a slot has its place in the governor's line: with few slots,
 * one account's backlog would fill them and leave another account's job outside, its fair place
 * counting for nothing until a slot freed. A waiting job costs a promise and a lock renewal.
 */
const FAIR_SLOTS = 100;

function finallyFailed(job: Job | undefined, err: Error): job is Job {
  if (!job) return false;
  return err instanceof BullUnrecoverable || job.attemptsMade >= (job.opts.attempts ?? 1);
}

/** The kind's hook after a job's last attempt; a failure of the hook is logged, not thrown. */
async function afterFinalFailure(ctx: JobContext, job: Job, err: Error): Promise<void> {
  if (!isCountryJobName(job.name)) return;
  const kind = kindOf(job.name);
  if (!kind.onFinalFailure) return;
  try {
    await kind.onFinalFailure(ctx, parseJob(job.name, job.data), err);
  } catch (e) {
    ctx.logger.error({ err: { message: (e as Error).message }, jobId: job.id, job: job.name }, 'the final-failure hook failed');
  }
}

/**
 * One BullMQ worker per country and class (src/core/quota-classes.ts): forced updates, imports, refreshes
 * and crawls each have their queue, so one class's backlog never holds another's workers. The
 * quota governor paces every upstream call of the country for every process together and shares
 * the pace between the classes, so the workers have no BullMQ limiter: it would only add a second,
 * coarser pace that leaves the quota unspent. Concurrency keeps enough calls in flight, and waiting
 * for permits, to use the quota. Any number of processes may run this on any number of machines.
 */
export async function startWorkers(
  ctx: JobContext,
  connection: Redis,
  upstream: (country: Country) => UpstreamPort,
  scopes: PermitScopes,
  logger = ctx.logger,
): Promise<RunningWorkers> {
  const prefix = ctx.redisPrefix;

  const byClass = new Map<Country, Map<QuotaClass, Worker>>();
  const queues: Queue[] = [];
  const readies: Promise<void>[] = [];
  // WORKER_COUNTRIES: a deployment may pin a country's queues to processes of its own.
  for (const country of ctx.config.workers.countries) {
    const countryPrefix = queuePrefix(prefix, country);
    const countryQueues = QUEUE_CLASSES.map((cls) => {
      const queue = new Queue(queueName(country, cls), { connection, prefix: countryPrefix });
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
    const mine = new Map<QuotaClass, Worker>();
    byClass.set(country, mine);
    for (const cls of QUEUE_CLASSES) {
      const name = queueName(country, cls);
      const worker = new Worker(name, createProcessor({ ...ctx, logger }, country, upstream(country), stopCountry, scopes), {
        connection,
        prefix: countryPrefix,
        // Kept on each job as processedBy (Bull Board shows it): which process of which machine ran it.
        name: `${hostname()}:${process.pid}`,
        concurrency: isFairClass(cls)
          ? Math.max(FAIR_SLOTS, ctx.config.workers.concurrency(country))
          : ctx.config.workers.concurrency(country),
        lockDuration: ctx.config.workers.lockMs,
        // A job whose worker died (SIGKILL, OOM, lost machine) comes back only when a stalled check
        // finds its lock gone, and it takes two checks (mark, then move). BullMQ checks every 30 s
        // whatever the lock is, so a short WORKER_LOCK_MS still left the batch stuck for up to a
        // minute. Checking once per lock duration bounds the recovery at about twice WORKER_LOCK_MS
        // (30 s when unset, BullMQ's default).
        stalledInterval: Math.min(30_000, ctx.config.workers.lockMs),
        autorun: false,
      });
      worker.on('error', (err) => logger.warn({ country, queue: name, err: { message: err.message } }, 'worker error'));
      worker.on('completed', (job) => ctx.metrics.jobs.inc({ country, name: job.name, outcome: 'completed' }));
      worker.on('failed', (job, err) => {
        const final = finallyFailed(job, err);
        ctx.metrics.jobs.inc({ country, name: job?.name ?? 'unknown', outcome: final ? 'failed' : 'retry' });
        if (final) void afterFinalFailure(ctx, job, err);
      });
      mine.set(cls, worker);
      readies.push(readyOf(worker));
      void worker.run();
    }
  }
  const all = [...byClass.values()].flatMap((m) => [...m.values()]);
  await Promise.all(readies);
  logger.info(
    {
      countries: ctx.config.workers.countries,
      concurrency: Object.fromEntries(ctx.config.workers.countries.map((c) => [c, ctx.config.workers.concurrency(c)])),
    },
    'workers started',
  );
  const pick = (cls: QuotaClass) => new Map([...byClass].map(([c, m]) => [c, m.get(cls)!]));
  let closing: Promise<void> | undefined;
  return {
    byClass,
    workers: pick('refresh'),
    updates: pick('forced'),
    imports: pick('import'),
    crawls: pick('crawl'),
    all,
    close(deadlineMs = ctx.config.workers.shutdownMs) {
      closing ??= (async () => {
        await drainWorkers(all, deadlineMs, logger);
        await Promise.allSettled(queues.map((q) => q.close()));
      })();
      return closing;
    },
  };
}
