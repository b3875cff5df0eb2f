/**
 * Each country's upstream quota (which the quota governor and the planner's budget follow) and how
 * its classes of work share it. Parsed by loadConfig (env.ts).
 */
import { z } from 'zod';
import { decimal, duration, int, timeZone } from './parsers.js';
import { COUNTRY_CODES, type Country } from './countries.js';
import type { ClassShares } from './quota-classes.js';

const perSecond = decimal(0.01, 10_000);
const perDay = int(1, 1_000_000_000);
const burst = int(1, 10_000);

/** Every country the product knows may override the defaults: QUOTA_RPS_<CC>, QUOTA_PER_DAY_<CC>, QUOTA_BURST_<CC>. */
const perCountryShape = Object.fromEntries(
  COUNTRY_CODES.flatMap((c) => [
    [`QUOTA_RPS_${c}`, perSecond.optional().meta({ description: "This country's `QUOTA_RPS`.", unset: '`QUOTA_RPS`' })],
    [`QUOTA_PER_DAY_${c}`, perDay.optional().meta({ description: "This country's `QUOTA_PER_DAY`.", unset: '`QUOTA_PER_DAY`' })],
    [`QUOTA_BURST_${c}`, burst.optional().meta({ description: "This country's `QUOTA_BURST`.", unset: '`QUOTA_BURST`' })],
  ]),
) as unknown as Record<`QUOTA_${'RPS' | 'PER_DAY' | 'BURST'}_${Country}`, z.ZodOptional<z.ZodType<number, string>>>;

export const quotaEnvSchema = z.object({
  QUOTA_RPS: perSecond.default(1).meta({
    description:
      "Each country's upstream requests a second (decimals allowed, such as `0.5`): the quota governor holds every call to it; set it to what your credentials allow.",
  }),
  QUOTA_PER_DAY: perDay.default(8_640).meta({
    description: "Each country's upstream requests a quota day: the governor caps them and the planner spreads them over the day.",
  }),
  QUOTA_BURST: burst
    .default(1)
    .meta({ description: 'Requests that may start at once after an idle spell (1: every start at least 1/Q after the one before).' }),
  ...perCountryShape,
  QUOTA_DAY_TZ: timeZone.default('UTC').meta({ description: 'The IANA time zone whose calendar days `QUOTA_PER_DAY` counts.' }),
  FORCED_SHARE: decimal(0.01, 0.9).default(0.3).meta({
    description:
      "Forced updates' share of each country's quota: at least this share of `QUOTA_RPS` while every class has work, at most this share of `QUOTA_PER_DAY`.",
  }),
  IMPORT_SHARE: decimal(0.01, 0.9).default(0.1).meta({ description: "EAN imports' share, as `FORCED_SHARE`." }),
  CRAWL_SHARE: decimal(0.01, 0.9)
    .default(0.1)
    .meta({ description: "Browse crawls' share, as `FORCED_SHARE`; scheduled refreshes have the rest (the three add up to 0.9 at most)." }),
  FORCED_RESERVE: decimal(0, 0.5).default(0.05).meta({
    description:
      'The share of what is left of the quota day that scheduled work leaves to forced updates (it shrinks to nothing by midnight).',
  }),
  UPSTREAM_BREAKER_WINDOW: duration.pipe(z.number().min(100).max(3_600_000)).default(30_000).meta({
    description:
      "How long every call of a country must be answered 429, at a pace well under Q, before the country's breaker opens ([upstream-states.md](upstream-states.md)).",
    defaultText: '30s',
  }),
  UPSTREAM_BREAKER_PROBE: duration
    .pipe(z.number().min(100).max(3_600_000))
    .default(5_000)
    .meta({ description: "The wait before an open breaker's first probe; each failed probe doubles it.", defaultText: '5s' }),
  UPSTREAM_BREAKER_PROBE_MAX: duration
    .pipe(z.number().min(100).max(86_400_000))
    .default(120_000)
    .meta({ description: 'The most the wait between probes grows to.', defaultText: '2m' }),
});

export interface CountryQuota {
  /** Upstream requests a second: the quota governor's pace. */
  readonly perSecond: number;
  /** Requests that may start at once after an idle spell (1: every start 1/Q after the one before). */
  readonly burst: number;
  /** Upstream requests a quota day (the planner spreads them over the day; the governor caps them). */
  readonly perDay: number;
}

/** The least time between two starts of a country's calls: the one place 1/Q is worked out. */
export function quotaIntervalMs(q: Pick<CountryQuota, 'perSecond'>): number {
  return 1_000 / q.perSecond;
}

export interface QuotaConfig {
  readonly quotas: Readonly<Record<Country, CountryQuota>>;
  /** The quota's calendar day, for QUOTA_PER_DAY. */
  readonly dayTimeZone: string;
  /**
   * Each class's share of a country's calls: the least it gets a second while every class has work
   * (unused shares go to the others), and for all but refresh the most it may spend of the day.
   * Refresh has what the others leave.
   */
  readonly shares: ClassShares;
  /** Share of the rest of the day that the other classes leave to forced updates. */
  readonly forcedReserve: number;
  /** When a country's breaker opens, and how its probes are spaced (src/quota/breaker.ts). */
  readonly breaker: { readonly windowMs: number; readonly probeBaseMs: number; readonly probeMaxMs: number };
}

export function buildQuotaConfig(env: z.infer<typeof quotaEnvSchema>): { config?: QuotaConfig; problems: string[] } {
  const refreshShare = 1 - env.FORCED_SHARE - env.IMPORT_SHARE - env.CRAWL_SHARE;
  if (refreshShare < 0.1 - 1e-9) {
    return {
      problems: [
        `FORCED_SHARE + IMPORT_SHARE + CRAWL_SHARE must be at most 0.9, so that scheduled refreshes keep a tenth of the quota (they are ${(1 - refreshShare).toFixed(2)})`,
      ],
    };
  }
  const quotas = Object.fromEntries(
    COUNTRY_CODES.map((c) => [
      c,
      Object.freeze({
        perSecond: env[`QUOTA_RPS_${c}`] ?? env.QUOTA_RPS,
        burst: env[`QUOTA_BURST_${c}`] ?? env.QUOTA_BURST,
        perDay: env[`QUOTA_PER_DAY_${c}`] ?? env.QUOTA_PER_DAY,
      }),
    ]),
  ) as Record<Country, CountryQuota>;
  return {
    problems: [],
    config: Object.freeze({
      quotas: Object.freeze(quotas),
      dayTimeZone: env.QUOTA_DAY_TZ,
      shares: Object.freeze({ forced: env.FORCED_SHARE, import: env.IMPORT_SHARE, refresh: refreshShare, crawl: env.CRAWL_SHARE }),
      forcedReserve: env.FORCED_RESERVE,
      breaker: Object.freeze({
        windowMs: env.UPSTREAM_BREAKER_WINDOW,
        probeBaseMs: env.UPSTREAM_BREAKER_PROBE,
        probeMaxMs: Math.max(env.UPSTREAM_BREAKER_PROBE, env.UPSTREAM_BREAKER_PROBE_MAX),
      }),
    }),
  };
}
