/**
 * bench:adaptive's own flags (lib/args.ts holds the shared ones): flags win over BENCH_ADAPTIVE_*
 * variables, which win over the defaults. `--drift` and `--seed` take lists (one run each);
 * `--sweep` (a bare flag, or `--sweep yes`) adds the frontier.
 */
import { FEATURE_STRENGTHS, type FeatureStrength } from '../../src/simulator/rate-features.js';
import { flagReader, num } from './args.js';

export interface AdaptiveParams {
  /** Priority-0 and priority-1 products. */
  readonly p0: number;
  readonly p1: number;
  /** REFRESH_INTERVAL_P0, REFRESH_INTERVAL_P1, REFRESH_MIN_INTERVAL (durations as the config takes them). */
  readonly p0Interval: string;
  readonly p1Interval: string;
  readonly minInterval: string;
  /** The catalogues' mean change intervals over products (SyntheticCatalog driftMs): one run each. */
  readonly driftsMs: readonly number[];
  /** The catalogue's share of products that never change, and its daily and weekly swings of activity. */
  readonly still: number;
  readonly dailySwing: number;
  readonly weeklySwing: number;
  /** The catalogue's fastest mean change interval (SyntheticCatalog fastestMs). */
  readonly fastestMs: number;
  /** Upstream calls a second (Q). */
  readonly rate: number;
  /** Simulated seconds per planner step; rate × step must be whole (the calls of a step). */
  readonly stepS: number;
  /** Simulated hours. */
  readonly hours: number;
  /** One run per seed and drift. */
  readonly seeds: readonly string[];
  /** How far the catalogue's rates follow the features its answers report (the simulator's SIMULATOR_FEATURES). */
  readonly features: FeatureStrength;
  /** Whether the scheduler's tuning learns priors from those features (`--groups no`: the country's prior alone). */
  readonly groups: boolean;
  /** Whether each objective also runs with the true rates for estimates (the planner's own share of the bound). */
  readonly knownRates: boolean;
  /** Days after which the posteriors' error is read, on a longer balanced run of one drift and seed (none: skipped). */
  readonly errorDays: readonly number[];
  /** `--sweep`: the frontier of freshness against changes seen, for the first drift and seed. */
  readonly sweep: boolean;
}

const SPEC = {
  p0: { env: 'BENCH_ADAPTIVE_P0', def: '2000' },
  p1: { env: 'BENCH_ADAPTIVE_P1', def: '25' },
  'p0-interval': { env: 'BENCH_ADAPTIVE_P0_INTERVAL', def: '6h' },
  'p1-interval': { env: 'BENCH_ADAPTIVE_P1_INTERVAL', def: '10m' },
  'min-interval': { env: 'BENCH_ADAPTIVE_MIN_INTERVAL', def: '5m' },
  drift: { env: 'BENCH_ADAPTIVE_DRIFT', def: '1h,6h,24h,72h' },
  still: { env: 'BENCH_ADAPTIVE_STILL', def: '0.05' },
  'daily-swing': { env: 'BENCH_ADAPTIVE_DAILY_SWING', def: '0.5' },
  'weekly-swing': { env: 'BENCH_ADAPTIVE_WEEKLY_SWING', def: '0.3' },
  fastest: { env: 'BENCH_ADAPTIVE_FASTEST', def: '1m' },
  sweep: { env: 'BENCH_ADAPTIVE_SWEEP', def: 'no' },
  features: { env: 'BENCH_ADAPTIVE_FEATURES', def: 'weak' },
  groups: { env: 'BENCH_ADAPTIVE_GROUPS', def: 'yes' },
  'error-days': { env: 'BENCH_ADAPTIVE_ERROR_DAYS', def: '1,3,7' },
  'known-rates': { env: 'BENCH_ADAPTIVE_KNOWN_RATES', def: 'yes' },
  rate: { env: 'BENCH_ADAPTIVE_RATE', def: '0.025' },
  step: { env: 'BENCH_ADAPTIVE_STEP', def: '120' },
  hours: { env: 'BENCH_ADAPTIVE_HOURS', def: '24' },
  seed: { env: 'BENCH_ADAPTIVE_SEED', def: 'bench-adaptive,seed-2,seed-3' },
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
  // `--sweep` may come bare; parseArgs wants every flag of the spec to carry a value.
  const args = argv.map((a, i) => (a === '--sweep' && (i + 1 === argv.length || argv[i + 1]!.startsWith('--')) ? '--sweep=yes' : a));
  const get = flagReader(SPEC, args, env);
  const p: AdaptiveParams = {
    p0: Math.round(num('p0', get('p0'), 0, 1_000_000)),
    p1: Math.round(num('p1', get('p1'), 0, 100_000)),
    p0Interval: get('p0-interval'),
    p1Interval: get('p1-interval'),
    minInterval: get('min-interval'),
    driftsMs: get('drift')
      .split(',')
      .map((d) => durationMs('drift', d.trim())),
    still: num('still', get('still'), 0, 1),
    dailySwing: num('daily-swing', get('daily-swing'), 0, 0.99),
    weeklySwing: num('weekly-swing', get('weekly-swing'), 0, 0.99),
    fastestMs: durationMs('fastest', get('fastest')),
    rate: num('rate', get('rate'), 0.001, 1_000),
    stepS: Math.round(num('step', get('step'), 1, 3_600)),
    hours: num('hours', get('hours'), 1, 24 * 30),
    seeds: get('seed')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
    sweep: ['yes', 'true', '1', ''].includes(get('sweep')),
    features: get('features') as FeatureStrength,
    groups: ['yes', 'true', '1'].includes(get('groups')),
    knownRates: ['yes', 'true', '1'].includes(get('known-rates')),
    errorDays: get('error-days')
      .split(',')
      .map((d) => d.trim())
      .filter(Boolean)
      .map((d) => num('error-days', d, 0.5, 30)),
  };
  if (!FEATURE_STRENGTHS.includes(p.features)) throw new Error(`--features takes ${FEATURE_STRENGTHS.join(', ')} (got ${p.features})`);
  for (const k of ['groups', 'known-rates'] as const)
    if (!['yes', 'true', '1', 'no', 'false', '0'].includes(get(k))) throw new Error(`--${k} takes yes or no (got ${get(k)})`);
  if (p.dailySwing + p.weeklySwing >= 1) throw new Error('--daily-swing + --weekly-swing must be below 1');
  if (p.seeds.length === 0) throw new Error('--seed needs at least one seed');
  for (const k of ['p0-interval', 'p1-interval', 'min-interval'] as const) durationMs(k, get(k));
  const calls = p.rate * p.stepS;
  if (Math.abs(calls - Math.round(calls)) > 1e-9 || Math.round(calls) < 1)
    throw new Error(`--rate × --step must be a whole number of calls a step (got ${p.rate} × ${p.stepS} = ${calls})`);
  if (p.p0 + p.p1 === 0) throw new Error('--p0 and --p1 cannot both be 0');
  if ((p.hours * 3_600) % p.stepS !== 0) throw new Error(`--hours must be a whole number of steps of ${p.stepS} s`);
  return p;
}
