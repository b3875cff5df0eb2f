/**
 * bench:scale's flags and the runs they select. Flags win over BENCH_SCALE_* variables, which win
 * over the defaults (the issue's: Q = 1 call/s per country, 1,000 watched ASINs per country, 60 s
 * windows). The parse is strict: a mistyped flag must not start the full quarter-hour run.
 *
 * Runs: the series (`--series`, the first k of COUNTRY_CODES) on the first kind of `--redis` with
 * the first count of `--workers`; then the series' largest count on every other combination, the
 * other kinds of Redis first. Defaults: 2, 4, 8, 21 countries on a single Redis with 2 workers, then
 * 21 on the cluster with 2 and 4 workers, then 21 on a single Redis with 4 workers.
 */
import { COUNTRY_CODES, type Country } from '../../config/countries.js';
import { flagReader, num } from './args.js';

export type RedisKind = 'single' | 'cluster';

export interface ScaleParams {
  /** Watched ASINs A, each tracked in every country of a run, all due at the start. */
  readonly asins: number;
  /** Measured window T once backlogged (s), after the warm-up. */
  readonly seconds: number;
  /** From the first upstream call to the window (s): the first plans, the workers' pace settling. */
  readonly warmupS: number;
  /** Q: calls a second per country, the governor's and the simulator's alike. */
  readonly quota: number;
  /** The product's QUOTA_RPS when it should differ from Q (the simulator's): an investigation knob, Q unless set. */
  readonly productQuota: number;
  /** Simulator latency added to every call (ms). */
  readonly latencyMs: number;
  /** The simulator's bucket depth (calls); null: its default, a second's worth (one call at Q = 1). */
  readonly burst: number | null;
  /** The most each call reaches the simulator's bucket late (ms): network jitter on its own clock. */
  readonly jitterMs: number;
  /**
   * The simulator's scheduling priority (nice, -20…19; 0 leaves it as started). It stands for a
   * service on hosts of its own, whose clock reads a call when it arrives; here it shares two cores
   * with the product, and a call that reaches it while it waits for a core would count late by
   * however long that wait was. A priority ahead of the product's keeps that wait out of the
   * jitter, which is then the product's own path (timers, event loop, HTTP) plus --jitter.
   */
  readonly simNice: number;
  readonly p1Share: number;
  readonly series: readonly number[];
  readonly redis: readonly RedisKind[];
  readonly workers: readonly number[];
  /** Pins each country to one worker process (WORKER_COUNTRIES, round robin) instead of every worker serving every country. */
  readonly pin: boolean;
}

export interface Scenario {
  readonly label: string;
  readonly countries: readonly Country[];
  readonly redis: RedisKind;
  readonly workers: number;
  /** Part of the country series (its CPU per ASIN is compared with the series' smallest). */
  readonly inSeries: boolean;
}

const SPEC = {
  asins: { env: 'BENCH_SCALE_ASINS', def: '1000' },
  seconds: { env: 'BENCH_SCALE_SECONDS', def: '60' },
  warmup: { env: 'BENCH_SCALE_WARMUP', def: '15' },
  quota: { env: 'BENCH_SCALE_QUOTA', def: '1' },
  'product-quota': { env: 'BENCH_SCALE_PRODUCT_QUOTA', def: '' },
  latency: { env: 'BENCH_SCALE_LATENCY_MS', def: '50' },
  burst: { env: 'BENCH_SCALE_BURST', def: '' },
  jitter: { env: 'BENCH_SCALE_JITTER_MS', def: '0' },
  'sim-nice': { env: 'BENCH_SCALE_SIM_NICE', def: '-10' },
  'p1-share': { env: 'BENCH_SCALE_P1_SHARE', def: '0.2' },
  series: { env: 'BENCH_SCALE_SERIES', def: '2,4,8,21' },
  redis: { env: 'BENCH_SCALE_REDIS', def: 'single,cluster' },
  workers: { env: 'BENCH_SCALE_WORKERS', def: '2,4' },
  pin: { env: 'BENCH_SCALE_PIN', def: 'no' },
} as const;

type Key = keyof typeof SPEC;

export function parseScaleArgs(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): ScaleParams {
  const get = flagReader(SPEC, argv, env, true);
  const list = (k: Key): string[] => [
    ...new Set(
      get(k)
        .split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
  const redis = list('redis').map((r) => {
    if (r !== 'single' && r !== 'cluster') throw new Error(`--redis takes single and/or cluster (got ${r})`);
    return r as RedisKind;
  });
  const pin = get('pin').toLowerCase();
  if (!['yes', 'no', 'true', 'false'].includes(pin)) throw new Error(`--pin takes yes or no (got ${pin})`);
  const p: ScaleParams = {
    asins: Math.round(num('asins', get('asins'), 10, 100_000)),
    seconds: num('seconds', get('seconds'), 5, 3_600),
    warmupS: num('warmup', get('warmup'), 0, 600),
    quota: Math.round(num('quota', get('quota'), 1, 100)),
    productQuota: num('product-quota', get('product-quota') || get('quota'), 0.01, 100),
    latencyMs: Math.round(num('latency', get('latency'), 0, 10_000)),
    burst: get('burst') ? Math.round(num('burst', get('burst'), 1, 100_000)) : null,
    jitterMs: Math.round(num('jitter', get('jitter'), 0, 10_000)),
    simNice: Math.round(num('sim-nice', get('sim-nice'), -20, 19)),
    p1Share: num('p1-share', get('p1-share'), 0, 1),
    series: list('series').map((s) => Math.round(num('series', s, 1, COUNTRY_CODES.length))),
    redis,
    workers: list('workers').map((w) => Math.round(num('workers', w, 1, 16))),
    pin: pin === 'yes' || pin === 'true',
  };
  if (!p.series.length || !p.redis.length || !p.workers.length) throw new Error('--series, --redis and --workers each need a value');
  return p;
}

function scenario(k: number, redis: RedisKind, workers: number, inSeries: boolean): Scenario {
  return { label: `${k} countries, ${redis}, ${workers} workers`, countries: COUNTRY_CODES.slice(0, k), redis, workers, inSeries };
}

export function scenariosOf(p: ScaleParams): Scenario[] {
  const [r0, ...otherRedis] = p.redis as [RedisKind, ...RedisKind[]];
  const [w0, ...otherWorkers] = p.workers as [number, ...number[]];
  const top = Math.max(...p.series);
  return [
    ...[...p.series].sort((a, b) => a - b).map((k) => scenario(k, r0, w0, true)),
    ...otherRedis.flatMap((r) => p.workers.map((w) => scenario(top, r, w, false))),
    ...otherWorkers.map((w) => scenario(top, r0, w, false)),
  ];
}

/** Seconds of backlog each country's A products give at 10 ASINs a call and Q calls a second. */
export function backlogSeconds(p: ScaleParams): number {
  return p.asins / (10 * p.quota);
}
