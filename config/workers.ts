/**
 * The queue side of the environment: worker sizing, the scheduler's ticks and the forced update's
 * wait. Parsed by loadConfig (env.ts).
 */
import { z } from 'zod';
import cron from 'node-cron';
import { duration, int } from './parsers.js';
import { DEFAULT_RETRY, retrySpanMs } from './retry.js';
import { COUNTRY_CODES, countryList, type Country } from './countries.js';
import type { QuotaConfig } from './quota.js';

const cronExpr = z
  .string()
  .refine((v) => cron.validate(v), 'must be a cron expression (node-cron, seconds optional)')
  .meta({ type: 'cron expression' });

export const workersEnvSchema = z.object({
  WORKER_CONCURRENCY: int(1, 200).optional().meta({
    description: 'Jobs one worker process runs at once per country: enough calls in flight to use the quota (CPU count plays no part).',
    unset: "2 × the country's `QUOTA_RPS`, at least 2, at most 50",
  }),
  /** The countries whose queues this worker process serves (a subset of COUNTRIES); unset, all of them. */
  WORKER_COUNTRIES: countryList.optional().meta({
    description:
      'The countries whose queues a worker process serves (a comma list within `COUNTRIES`); every country needs a worker somewhere, the api and scheduler ignore it.',
    unset: 'all of `COUNTRIES`',
  }),
  WORKER_LOCK_MS: int(5_000, 600_000)
    .default(30_000)
    .meta({ description: "BullMQ's job lock (ms): another worker takes the job of a killed one after this." }),
  WORKER_SHUTDOWN_MS: duration.pipe(z.number().min(100).max(600_000)).default(8_000).meta({
    description: 'How long a stopping worker lets active jobs finish before closing anyway (they are retried).',
    defaultText: '8s',
  }),
  WORKER_JOB_TIMEOUT: duration
    .pipe(z.number().min(1_000).max(3_600_000))
    .default(120_000)
    .meta({ description: 'A job attempt still running after this fails with `JobTimeoutError` and is retried.', defaultText: '2m' }),
  SCHEDULER_REFRESH_CRON: cronExpr.default('*/15 * * * * *').meta({
    description: 'The planning ticks (node-cron, seconds allowed); the api also nudges the scheduler when a watch makes products due.',
  }),
  SCHEDULER_BROWSE_CRON: cronExpr
    .default('*/10 * * * *')
    .meta({ description: 'The ticks that enqueue crawls of watched browse nodes not crawled within `BROWSE_INTERVAL`.' }),
  SCHEDULER_HORIZON_S: int(1, 3_600).default(45).meta({
    description:
      'The queue holds at most this many seconds of planned work (the backlog stays in MongoDB); keep it at least the tick period (3 ticks is good).',
  }),
  SCHEDULER_COALESCE: z
    .literal('0')
    .transform(() => 0)
    .or(duration.pipe(z.number().max(600_000)))
    .default(2_000)
    .meta({
      type: 'duration or 0',
      description: 'A part-filled batch waits until its products have been due this long, for more to fill it (`0`: never waits).',
      defaultText: '2s',
    }),
  SCHEDULER_LEASE: duration.pipe(z.number().min(1_000)).optional().meta({
    description:
      "How long planned products stay claimed (a job lost with Redis is planned again after it); shorter than a refresh job's retries is refused outside `NODE_ENV=test`.",
    unset: 'the refresh retry schedule + 1 min (11.5 min)',
  }),
  BROWSE_INTERVAL: duration
    .pipe(z.number().min(60_000))
    .default(86_400_000)
    .meta({ description: 'How often a watched browse node is crawled.', defaultText: '1d' }),
  UPDATE_WAIT: duration
    .pipe(z.number().min(100).max(600_000))
    .default(30_000)
    .meta({ description: 'How long `/api/world/update` waits for its job before answering 202.', defaultText: '30s' }),
});

export interface WorkersConfig {
  /** Jobs one worker process runs at once per country: enough to keep the governor's permits used. */
  concurrency(country: Country): number;
  /** The countries whose queues this process's workers take jobs from: the rest are other processes' to serve. */
  readonly countries: readonly Country[];
  readonly lockMs: number;
  readonly shutdownMs: number;
  /** A job still running after this fails with JobTimeoutError and is retried. */
  readonly jobTimeoutMs: number;
  readonly scheduler: {
    readonly refreshCron: string;
    readonly browseCron: string;
    /** The planner enqueues what the quota can serve in this many seconds, no more. */
    readonly horizonS: number;
    readonly browseIntervalMs: number;
    /**
     * How long planned products stay claimed: a job lost with Redis is planned again after it. At
     * least a refresh job's whole retry schedule, so no late attempt overlaps a second claim.
     */
    readonly leaseMs: number;
    /** A pass leaves a part-filled batch in MongoDB until its oldest product has waited this long. */
    readonly coalesceMs: number;
  };
  readonly updateWaitMs: number;
}

export function buildWorkersConfig(
  env: z.infer<typeof workersEnvSchema>,
  quota: Pick<QuotaConfig, 'quotas'>,
  nodeEnv = 'production',
  countries: readonly Country[] = COUNTRY_CODES,
): { config?: WorkersConfig; problems: string[] } {
  const problems: string[] = [];
  const foreign = env.WORKER_COUNTRIES?.filter((c) => !countries.includes(c)) ?? [];
  if (foreign.length) problems.push(`WORKER_COUNTRIES names ${foreign.join(', ')}, which COUNTRIES (${countries.join(',')}) does not`);
  // A minute beyond the retry schedule covers the wait in the queue before the first attempt.
  const minLease = retrySpanMs(DEFAULT_RETRY, env.WORKER_JOB_TIMEOUT) + 60_000;
  // Tests shorten the lease to see it end within seconds; a deployment may not.
  if (env.SCHEDULER_LEASE !== undefined && env.SCHEDULER_LEASE < minLease && nodeEnv !== 'test') {
    problems.push(
      `SCHEDULER_LEASE must be at least ${Math.ceil(minLease / 1_000)}s: a refresh job's retries (${DEFAULT_RETRY.attempts} attempts of up to WORKER_JOB_TIMEOUT each, with backoff) must end before its products can be claimed again`,
    );
  }
  if (problems.length) return { problems };
  return {
    problems,
    config: Object.freeze({
      // A call takes a few hundred ms, so a worker needs about rps × latency jobs in flight to use
      // the whole quota; twice the rate leaves room for slow answers. CPU count plays no part.
      concurrency: (country: Country) =>
        env.WORKER_CONCURRENCY ?? Math.min(50, Math.max(2, Math.ceil(quota.quotas[country].perSecond * 2))),
      countries: Object.freeze([...(env.WORKER_COUNTRIES ?? countries)]),
      lockMs: env.WORKER_LOCK_MS,
      shutdownMs: env.WORKER_SHUTDOWN_MS,
      jobTimeoutMs: env.WORKER_JOB_TIMEOUT,
      scheduler: Object.freeze({
        refreshCron: env.SCHEDULER_REFRESH_CRON,
        browseCron: env.SCHEDULER_BROWSE_CRON,
        horizonS: env.SCHEDULER_HORIZON_S,
        browseIntervalMs: env.BROWSE_INTERVAL,
        leaseMs: env.SCHEDULER_LEASE ?? minLease,
        coalesceMs: env.SCHEDULER_COALESCE,
      }),
      updateWaitMs: env.UPDATE_WAIT,
    }),
  };
}
