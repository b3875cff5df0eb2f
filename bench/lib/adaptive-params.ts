/**
 * bench:adaptive's own flags (lib/args.ts holds the shared ones): flags win over BENCH_ADAPTIVE_*
 * variables, which win over the defaults.
 */
import { flagReader, num } from './args.js';

export interface AdaptiveParams {
  /** Priority-0 and priority-1 products. */
  readonly p0: number;
  readonly p1: number;
  /** REFRESH_INTERVAL_P0, REFRESH_INTERVAL_P1, REFRESH_MIN_INTERVAL (durations as the config takes them). */
  readonly p0Interval: string;
  readonly p1Interval: string;
  readonly minInterval: string;
  /** The catalogue's mean change interval over products (SyntheticCatalog driftMs). */
  readonly driftMs: number;
  /** Upstream calls a second (Q). */
  readonly rate: number;
  /** Simulated seconds per planner step; rate × step must be whole (the calls of a step). */
  readonly stepS: number;
  /** Simulated hours. */
  readonly hours: number;
  readonly seed: string;
}

const SPEC = {
  p0: { env: 'BENCH_ADAPTIVE_P0', def: '8000' },
  p1: { env: 'BENCH_ADAPTIVE_P1', def: '100' },
  'p0-interval': { env: 'BENCH_ADAPTIVE_P0_INTERVAL', def: '2h' },
  'p1-interval': { env: 'BENCH_ADAPTIVE_P1_INTERVAL', def: '10m' },
  'min-interval': { env: 'BENCH_ADAPTIVE_MIN_INTERVAL', def: '5m' },
  drift: { env: 'BENCH_ADAPTIVE_DRIFT', def: '24h' },
  rate: { env: 'BENCH_ADAPTIVE_RATE', def: '0.1' },
  step: { env: 'BENCH_ADAPTIVE_STEP', def: '60' },
  hours: { env: 'BENCH_ADAPTIVE_HOURS', def: '24' },
  seed: { env: 'BENCH_ADAPTIVE_SEED', def: 'bench-adaptive' },
} as const;

const DURATION = /^(\d+)(ms|s|m|h|d)?$/;
export function durationMs(name: string, v: string): number {
  const m = DURATION.exec(v);
  if (!m) throw new Error(`--${name} must be a duration such as 30s, 15m, 2h or 1d (got ${JSON.stringify(v)})`);
  return Number(m[1]) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? 'ms') as 'ms'];
}

/**
 * This benchmark's own flags; the shared ones (lib/args.ts) are left to parseBenchArgs, so the
 * parse is not strict. Flags win over BENCH_ADAPTIVE_* variables, which win over the defaults.
 */
export function parseAdaptiveArgs(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): AdaptiveParams {
  const get = flagReader(SPEC, argv, env);
  const p: AdaptiveParams = {
    p0: Math.round(num('p0', get('p0'), 0, 1_000_000)),
    p1: Math.round(num('p1', get('p1'), 0, 100_000)),
    p0Interval: get('p0-interval'),
    p1Interval: get('p1-interval'),
    minInterval: get('min-interval'),
    driftMs: durationMs('drift', get('drift')),
    rate: num('rate', get('rate'), 0.001, 1_000),
    stepS: Math.round(num('step', get('step'), 1, 3_600)),
    hours: num('hours', get('hours'), 1, 24 * 30),
    seed: get('seed'),
  };
  for (const k of ['p0-interval', 'p1-interval', 'min-interval'] as const) durationMs(k, get(k));
  const calls = p.rate * p.stepS;
  if (Math.abs(calls - Math.round(calls)) > 1e-9 || Math.round(calls) < 1)
    throw new Error(`--rate × --step must be a whole number of calls a step (got ${p.rate} × ${p.stepS} = ${calls})`);
  if (p.p0 + p.p1 === 0) throw new Error('--p0 and --p1 cannot both be 0');
  if ((p.hours * 3_600) % p.stepS !== 0) throw new Error(`--hours must be a whole number of steps of ${p.stepS} s`);
  return p;
}
