import type { Worker, Job, Queue } from 'bullmq';
import type { Connection } from 'mongoose';
import type { Country } from '../../src/core/identifiers.js';
import { productModel } from '../../src/models/product.js';
import { createTestContext, type TestContext } from './context.js';
import { runSimulator } from '../../src/app/roles/simulator.js';
import { startWorkerRole } from '../../src/app/roles/worker.js';
import type { RunningSimulator, SimulatorOptions } from '../../src/simulator/server.js';
import type { RunningWorkers } from '../../workers/runner.js';
import type { AppContext } from '../../src/app/context.js';
import { until } from './until.js';

export interface Pipeline extends TestContext {
  readonly sim: RunningSimulator;
  readonly workers: RunningWorkers;
  /** The context, as the planner and the jobs' producers take it. */
  readonly planner: AppContext;
  /** A user and its Authorization header. */
  user(email: string): Promise<{ headers: Record<string, string>; id: string }>;
}

/** Base settings: a generous simulator quota, a planner that only runs when a test calls it. */
export const PIPELINE_ENV: Record<string, string> = {
  COUNTRIES: 'JP',
  QUOTA_RPS: '50',
  QUOTA_PER_DAY: '100000000',
  SIMULATOR_QUOTA_RPS: '50',
  SIMULATOR_QUOTA_PER_DAY: '100000000',
  SIMULATOR_SEED: 'pipeline-test',
  SCHEDULER_REFRESH_CRON: '0 0 1 1 *',
  SCHEDULER_BROWSE_CRON: '0 0 1 1 *',
  WORKER_SHUTDOWN_MS: '5s',
  UPDATE_WAIT: '15s',
  // Tests plan what they made due a moment ago: no waiting for more products to fill a batch.
  SCHEDULER_COALESCE: '0',
};

/** The real app, a real simulator over HTTP and real BullMQ workers, on a database and prefix of their own. */
export async function startPipeline(
  env: Record<string, string> = {},
  simulator?: SimulatorOptions,
  opts: { commandEvents?: boolean } = {},
): Promise<Pipeline> {
  const t = await createTestContext({ ...PIPELINE_ENV, ...env }, opts);
  const sim = await runSimulator(t.ctx.config, t.ctx.logger, t.ctx.resources, simulator);
  const workers = await startWorkerRole(t.ctx, { simulatorUrl: sim.url });
  const planner = t.ctx;
  return {
    ...t,
    sim,
    workers,
    planner,
    async user(email) {
      const { user, token } = await t.ctx.users.create({ name: email, email });
      return { headers: { Authorization: `Bearer ${token}` }, id: user._id.toHexString() };
    },
  };
}

/**
 * Resolves once `count` jobs have completed on the worker. Failures are not awaited but collected:
 * when the wait runs out, the message lists them (attempt and reason), so a CI log says why.
 */
export function completions(worker: Worker, count: number, timeoutMs = 75_000): Promise<Job[]> {
  return new Promise((resolve, reject) => {
    const done: Job[] = [];
    const failures: string[] = [];
    const stop = (): void => {
      clearTimeout(timer);
      worker.off('completed', onDone);
      worker.off('failed', onFailed);
    };
    const timer = setTimeout(() => {
      stop();
      const why = failures.length ? `; failures seen: ${failures.slice(-10).join(' | ')}` : '; no job failed meanwhile';
      reject(new Error(`only ${done.length} of ${count} jobs completed within ${timeoutMs} ms${why}`));
    }, timeoutMs);
    const onDone = (job: Job): void => {
      done.push(job);
      if (done.length >= count) {
        stop();
        resolve(done);
      }
    };
    const onFailed = (job: Job | undefined, err: Error): void => {
      failures.push(`${job?.name ?? '?'} ${job?.id ?? '?'} attempt ${job?.attemptsMade ?? '?'}: ${err.name}: ${err.message}`);
    };
    worker.on('completed', onDone);
    worker.on('failed', onFailed);
  });
}

/**
 * Resolves once `queue` holds `count` completed jobs: for workers started after their jobs were
 * queued, whose first 'completed' events may fire before a listener could be attached to them.
 * Polls, since a count in Redis has no event of its own.
 */
export async function completedInQueue(queue: Queue, count: number, timeoutMs = 75_000): Promise<void> {
  await until(`${count} jobs completed`, async () => (await queue.getCompletedCount()) >= count, timeoutMs, 50);
}

/** `n` distinct well-formed ASINs sharing `prefix` (prefix + zero-padded index, 10 characters). */
export const asins = (prefix: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(10 - prefix.length, '0')}`);

/**
 * Inserts products due a second ago (pending, as a new watch leaves them), for a plan to take.
 * Returns the ASINs.
 */
export async function insertDue(
  mongo: Connection,
  list: readonly string[],
  opts: { country?: Country; priority?: 0 | 1 } = {},
): Promise<string[]> {
  await productModel(mongo).insertMany(
    list.map((asin) => ({
      country: opts.country ?? 'JP',
      asin,
      priority: opts.priority ?? 1,
      next_refresh_at: new Date(Date.now() - 1_000),
      created_at: new Date(),
      status: 'pending',
    })),
  );
  return [...list];
}

/** The context with some of its workers' settings changed, for one planning pass of a test. */
export function withWorkers(
  ctx: AppContext,
  patch: (w: AppContext['config']['workers']) => Partial<AppContext['config']['workers']>,
): AppContext {
  const workers = ctx.config.workers;
  return { ...ctx, config: { ...ctx.config, workers: { ...workers, ...patch(workers) } } };
}

/** `ctx` with some countries' quotas replaced (the rest as configured). */
export function withQuotas(ctx: AppContext, quotas: Partial<AppContext['config']['quota']['quotas']>): AppContext {
  const quota = ctx.config.quota;
  return { ...ctx, config: { ...ctx.config, quota: { ...quota, quotas: { ...quota.quotas, ...quotas } } } };
}
