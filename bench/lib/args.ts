/**
 * Options shared by every benchmark: flags (`--seconds 20`) win over environment variables
 * (`BENCH_SECONDS=20`), which win over the defaults. `npm run bench -- --seconds 20` passes
 * the same flags to all four benchmarks, so every script accepts every option and ignores the rest.
 */
import { parseArgs } from 'node:util';

export interface BenchOptions {
  /** Refresh run length T (s). */
  readonly seconds: number;
  /** Watched ASINs N (each tracked in every country). */
  readonly asins: number;
  /** Upstream quota Q, requests a second per country (simulator and workers alike). */
  readonly quota: number;
  /** Share of the watched ASINs at priority 1. */
  readonly p1Share: number;
  /** Simulator latency added to every catalog call (ms); part of the forced-update target. */
  readonly latencyMs: number;
  readonly countries: readonly string[];
  /** Planner benchmark: catalogue sizes and the fixed number of due products. */
  readonly sizes: readonly number[];
  readonly due: number;
  readonly ticks: number;
  /** Planner benchmark: seconds the roles run on each catalogue for their peak memory; 0 skips it. */
  readonly memorySeconds: number;
  /** API benchmark: seconds per endpoint, concurrent connections, catalogue products. */
  readonly apiSeconds: number;
  readonly connections: number;
  readonly apiProducts: number;
  /** Limiter benchmark: the quotas Q (calls a second per country) it measures, one run each. */
  readonly rates: readonly number[];
  /**
   * A MongoDB log with slow-query lines (mongod's, or the stand-in's started with `--slowms`), for
   * the refresh benchmark's count of commands that examined more than 1,000 keys or documents.
   */
  readonly mongoLog: string;
  /** API benchmark: only the endpoints whose names contain one of these words (a profile of one). */
  readonly apiEndpoints: readonly string[];
}

const SPEC = {
  seconds: { env: 'BENCH_SECONDS', def: '60' },
  asins: { env: 'BENCH_ASINS', def: '20000' },
  quota: { env: 'BENCH_QUOTA', def: '10' },
  'p1-share': { env: 'BENCH_P1_SHARE', def: '0.2' },
  latency: { env: 'BENCH_LATENCY_MS', def: '50' },
  countries: { env: 'BENCH_COUNTRIES', def: 'JP,US' },
  sizes: { env: 'BENCH_PLAN_SIZES', def: '10000,100000,1000000' },
  due: { env: 'BENCH_PLAN_DUE', def: '1000' },
  ticks: { env: 'BENCH_PLAN_TICKS', def: '3' },
  'memory-seconds': { env: 'BENCH_MEMORY_SECONDS', def: '30' },
  'api-seconds': { env: 'BENCH_API_SECONDS', def: '10' },
  connections: { env: 'BENCH_CONNECTIONS', def: '10' },
  'api-products': { env: 'BENCH_API_PRODUCTS', def: '10000' },
  rates: { env: 'BENCH_LIMITER_RATES', def: '1,10,20,50,120,300' },
  'mongo-log': { env: 'BENCH_MONGO_LOG', def: '' },
  'api-endpoints': { env: 'BENCH_API_ENDPOINTS', def: '' },
} as const;

type Key = keyof typeof SPEC;

export function num(name: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max)
    throw new Error(`--${name} must be a number from ${min} to ${max} (got ${JSON.stringify(raw)})`);
  return n;
}

export function parseBenchArgs(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): BenchOptions {
  const options = Object.fromEntries(Object.keys(SPEC).map((k) => [k, { type: 'string' as const }]));
  const { values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false });
  const get = (k: Key): string => {
    const v = (values as Record<string, string | undefined>)[k] ?? env[SPEC[k].env];
    return v === undefined || v === '' ? SPEC[k].def : v;
  };
  const list = (k: Key): string[] =>
    get(k)
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  return {
    seconds: num('seconds', get('seconds'), 5, 3_600),
    asins: Math.round(num('asins', get('asins'), 10, 1_000_000)),
    quota: Math.round(num('quota', get('quota'), 1, 1_000)),
    p1Share: num('p1-share', get('p1-share'), 0, 1),
    latencyMs: Math.round(num('latency', get('latency'), 0, 10_000)),
    countries: list('countries').map((c) => c.toUpperCase()),
    sizes: list('sizes').map((s) => Math.round(num('sizes', s, 100, 10_000_000))),
    due: Math.round(num('due', get('due'), 1, 1_000_000)),
    ticks: Math.round(num('ticks', get('ticks'), 1, 100)),
    memorySeconds: num('memory-seconds', get('memory-seconds'), 0, 3_600),
    apiSeconds: num('api-seconds', get('api-seconds'), 1, 600),
    connections: Math.round(num('connections', get('connections'), 1, 1_000)),
    apiProducts: Math.round(num('api-products', get('api-products'), 10, 1_000_000)),
    // Same bounds as QUOTA_RPS (config/workers.ts), which takes decimals.
    rates: list('rates').map((r) => num('rates', r, 0.01, 10_000)),
    mongoLog: get('mongo-log'),
    apiEndpoints: list('api-endpoints'),
  };
}

/** A benchmark's own flags: each `--name` or its variable, else its default. */
export type FlagSpec = Readonly<Record<string, { readonly env: string; readonly def: string }>>;

/**
 * Reads a benchmark's own flags. Flags win over their variables, which win over the defaults.
 * Where the shared flags are left to parseBenchArgs the parse is not strict; a benchmark that takes
 * none of them passes `strict`, so an unknown flag (a typo) fails instead of starting a long run.
 */
export function flagReader<S extends FlagSpec>(
  spec: S,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  strict = false,
): (k: keyof S & string) => string {
  const options = Object.fromEntries(Object.keys(spec).map((k) => [k, { type: 'string' as const }]));
  const { values } = parseArgs({ args: [...argv], options, strict, allowPositionals: !strict });
  return (k) => {
    const v = (values as Record<string, unknown>)[k];
    const raw = typeof v === 'string' ? v : env[spec[k]!.env];
    return raw === undefined || raw === '' ? spec[k]!.def : raw;
  };
}
