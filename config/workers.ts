/**
 * The queue side of the environment: each country's upstream quota (which the quota governor and
 * the planner's budget follow), worker sizing, the scheduler's ticks, the forced update's wait,
 * Area B's rate limits and Bull Board's credentials. Parsed by loadConfig (env.ts).
 */
import { z } from 'zod';
import cron from 'node-cron';
import { bool, decimal, duration, int, timeZone } from './parsers.js';
import { DEFAULT_RETRY, retrySpanMs } from './retry.js';
import type { Country } from './countries.js';
import type { ClassShares } from './quota-classes.js';

const cronExpr = z.string().refine((v) => cron.validate(v), 'must be a cron expression (node-cron, seconds optional)');

export const workersEnvSchema = z.object({
  QUOTA_RPS: decimal(0.01, 10_000).default(1),
  QUOTA_PER_DAY: int(1, 1_000_000_000).default(8_640),
  QUOTA_RPS_JP: decimal(0.01, 10_000).optional(),
  QUOTA_RPS_US: decimal(0.01, 10_000).optional(),
  QUOTA_PER_DAY_JP: int(1, 1_000_000_000).optional(),
  QUOTA_PER_DAY_US: int(1, 1_000_000_000).optional(),
  QUOTA_BURST: int(1, 10_000).default(1),
  QUOTA_BURST_JP: int(1, 10_000).optional(),
  QUOTA_BURST_US: int(1, 10_000).optional(),
  QUOTA_DAY_TZ: timeZone.default('UTC'),
  ON_DEMAND_SHARE: decimal(0.01, 0.9).default(0.3),
  IMPORT_SHARE: decimal(0.01, 0.9).default(0.1),
  CRAWL_SHARE: decimal(0.01, 0.9).default(0.1),
  ON_DEMAND_RESERVE: decimal(0, 0.5).default(0.05),
  WORKER_CONCURRENCY: int(1, 200).optional(),
  WORKER_LOCK_MS: int(5_000, 600_000).default(30_000),
  WORKER_SHUTDOWN_MS: duration.pipe(z.number().min(100).max(600_000)).default(8_000),
  WORKER_JOB_TIMEOUT: duration.pipe(z.number().min(1_000).max(3_600_000)).default(120_000),
  SCHEDULER_REFRESH_CRON: cronExpr.default('*/15 * * * * *'),
  SCHEDULER_BROWSE_CRON: cronExpr.default('*/10 * * * *'),
  SCHEDULER_HORIZON_S: int(1, 3_600).default(45),
  SCHEDULER_COALESCE: z
    .literal('0')
    .transform(() => 0)
    .or(duration.pipe(z.number().max(600_000)))
    .default(2_000),
  SCHEDULER_LEASE: duration.pipe(z.number().min(1_000)).optional(),
  BROWSE_INTERVAL: duration.pipe(z.number().min(60_000)).default(86_400_000),
  UPDATE_WAIT: duration.pipe(z.number().min(100).max(600_000)).default(30_000),
  RATE_LIMIT_API: int(0, 1_000_000).default(600),
  RATE_LIMIT_UPDATE: int(0, 1_000_000).default(60),
  RATE_LIMIT_AUTH_FAILURES: int(0, 1_000_000).default(30),
  RATE_LIMIT_READYZ: int(0, 1_000_000).default(600),
  BULL_BOARD_USER: z.string().min(1).optional(),
  BULL_BOARD_PASSWORD: z.string().min(12, 'must be at least 12 characters').optional(),
  BULL_BOARD_READONLY: bool.default(true),
  METRICS_PORT: int(0, 65535).optional(),
  METRICS_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
});

export interface CountryQuota {
  /** Upstream requests a second: the quota governor's pace. */
  readonly perSecond: number;
  /** Requests that may start at once after an idle spell (1: every start 1/Q after the one before). */
  readonly burst: number;
  /** Upstream requests a quota day (the planner spreads them over the day; the governor caps them). */
  readonly perDay: number;
}

export interface WorkersConfig {
  readonly quota: Readonly<Record<Country, CountryQuota>>;
  /** The quota's calendar day, for QUOTA_PER_DAY. */
  readonly quotaDayTimeZone: string;
  /**
   * Each class's share of a country's calls: the least it gets a second while every class has work
   * (unused shares go to the others), and for all but refresh the most it may spend of the day.
   * Refresh has what the others leave.
   */
  readonly shares: ClassShares;
  /** Share of the rest of the day that the other classes leave to forced updates. */
  readonly onDemandReserve: number;
  /** Jobs one worker process runs at once per country: enough to keep the governor's permits used. */
  concurrency(country: Country): number;
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
  readonly rateLimit: {
    readonly apiPerMinute: number;
    readonly updatePerMinute: number;
    /** Failed authentications a minute per client address (Area B, Bull Board); 0: not counted. */
    readonly authFailuresPerMinute: number;
    /** /readyz requests a minute per client address, counted in each process; 0: not counted. */
    readonly readyzPerMinute: number;
  };
  readonly bullBoard: { readonly user: string; readonly password: string; readonly readOnly: boolean } | undefined;
  /** Worker and scheduler roles serve /metrics, /healthz and /readyz here when set. */
  readonly metricsPort: number | undefined;
  /** When set, /metrics answers only `Authorization: Bearer <metricsToken>`. */
  readonly metricsToken: string | undefined;
}

export function buildWorkersConfig(
  env: z.infer<typeof workersEnvSchema>,
  nodeEnv = 'production',
): { config?: WorkersConfig; problems: string[] } {
  const problems: string[] = [];
  if ((env.BULL_BOARD_USER === undefined) !== (env.BULL_BOARD_PASSWORD === undefined)) {
    problems.push('BULL_BOARD_USER and BULL_BOARD_PASSWORD must be set together (or neither, to turn Bull Board off)');
  }
  const quota = {
    JP: {
      perSecond: env.QUOTA_RPS_JP ?? env.QUOTA_RPS,
      burst: env.QUOTA_BURST_JP ?? env.QUOTA_BURST,
      perDay: env.QUOTA_PER_DAY_JP ?? env.QUOTA_PER_DAY,
    },
    US: {
      perSecond: env.QUOTA_RPS_US ?? env.QUOTA_RPS,
      burst: env.QUOTA_BURST_US ?? env.QUOTA_BURST,
      perDay: env.QUOTA_PER_DAY_US ?? env.QUOTA_PER_DAY,
    },
  };
  // A minute beyond the retry schedule covers the wait in the queue before the first attempt.
  const minLease = retrySpanMs(DEFAULT_RETRY, env.WORKER_JOB_TIMEOUT) + 60_000;
  // Tests shorten the lease to see it end within seconds; a deployment may not.
  if (env.SCHEDULER_LEASE !== undefined && env.SCHEDULER_LEASE < minLease && nodeEnv !== 'test') {
    problems.push(
      `SCHEDULER_LEASE must be at least ${Math.ceil(minLease / 1_000)}s: a refresh job's retries (${DEFAULT_RETRY.attempts} attempts of up to WORKER_JOB_TIMEOUT each, with backoff) must end before its products can be claimed again`,
    );
  }
  const refreshShare = 1 - env.ON_DEMAND_SHARE - env.IMPORT_SHARE - env.CRAWL_SHARE;
  if (refreshShare < 0.1 - 1e-9) {
    problems.push(
      `ON_DEMAND_SHARE + IMPORT_SHARE + CRAWL_SHARE must be at most 0.9, so that scheduled refreshes keep a tenth of the quota (they are ${(1 - refreshShare).toFixed(2)})`,
    );
  }
  if (problems.length) return { problems };
  return {
    problems,
    config: Object.freeze({
      quota: Object.freeze(quota),
      quotaDayTimeZone: env.QUOTA_DAY_TZ,
      shares: Object.freeze({ ondemand: env.ON_DEMAND_SHARE, import: env.IMPORT_SHARE, refresh: refreshShare, crawl: env.CRAWL_SHARE }),
      onDemandReserve: env.ON_DEMAND_RESERVE,
      // A call takes a few hundred ms, so a worker needs about rps × latency jobs in flight to use
      // the whole quota; twice the rate leaves room for slow answers. CPU count plays no part.
      concurrency: (country: Country) => env.WORKER_CONCURRENCY ?? Math.min(50, Math.max(2, Math.ceil(quota[country].perSecond * 2))),
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
      rateLimit: Object.freeze({
        apiPerMinute: env.RATE_LIMIT_API,
        updatePerMinute: env.RATE_LIMIT_UPDATE,
        authFailuresPerMinute: env.RATE_LIMIT_AUTH_FAILURES,
        readyzPerMinute: env.RATE_LIMIT_READYZ,
      }),
      bullBoard:
        env.BULL_BOARD_USER && env.BULL_BOARD_PASSWORD
          ? Object.freeze({ user: env.BULL_BOARD_USER, password: env.BULL_BOARD_PASSWORD, readOnly: env.BULL_BOARD_READONLY })
          : undefined,
      metricsPort: env.METRICS_PORT,
      metricsToken: env.METRICS_TOKEN,
    }),
  };
}
