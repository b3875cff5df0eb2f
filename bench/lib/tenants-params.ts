/**
 * bench:tenants' own flags (lib/args.ts holds the shared ones: --quota, --latency, --countries):
 * flags win over BENCH_TENANTS_* variables, which win over the defaults. The defaults fit the
 * whole benchmark (two runs and the fairness phase) in about 15 minutes on 2 cores.
 */
import { flagReader, num } from './args.js';
import { durationMs } from './adaptive-params.js';

export interface TenantsParams {
  /** From the scheduler's start to the measured window: first refreshes, the heavy load ramping up (s). */
  readonly warmupS: number;
  /** The measured window of each run, without and with the heavy account (s). */
  readonly windowS: number;
  /** The fairness phase that follows the window of the run with the heavy account (s). */
  readonly fairS: number;
  /** Light accounts, and each one's priority-1 and priority-0 ASINs. */
  readonly lights: number;
  readonly lightP1: number;
  readonly lightP0: number;
  /** Forced updates a second of all light accounts together (each of one light account's ASINs). */
  readonly lightUpdateRate: number;
  /** The heavy account's weight (`users:weight`) in the run with it. */
  readonly heavyWeight: number;
  /** Light accounts that keep ACCOUNT_MAX_PENDING_EAN imports pending beside the heavy one in the fairness phase. */
  readonly fairLights: number;
  /** REFRESH_INTERVAL_P1, REFRESH_INTERVAL_P0, REFRESH_MIN_INTERVAL (durations as the config takes them). */
  readonly p1Interval: string;
  readonly p0Interval: string;
  readonly minInterval: string;
  /** SIMULATOR_DRIFT_MS: the mean interval between a product's changes, over products. */
  readonly driftMs: number;
  readonly scheduling: 'adaptive' | 'fixed';
}

const SPEC = {
  warmup: { env: 'BENCH_TENANTS_WARMUP', def: '60' },
  window: { env: 'BENCH_TENANTS_WINDOW', def: '150' },
  'fair-seconds': { env: 'BENCH_TENANTS_FAIR_SECONDS', def: '90' },
  lights: { env: 'BENCH_TENANTS_LIGHTS', def: '99' },
  'light-p1': { env: 'BENCH_TENANTS_LIGHT_P1', def: '3' },
  'light-p0': { env: 'BENCH_TENANTS_LIGHT_P0', def: '7' },
  'light-update-rate': { env: 'BENCH_TENANTS_LIGHT_UPDATE_RATE', def: '1.5' },
  'heavy-weight': { env: 'BENCH_TENANTS_HEAVY_WEIGHT', def: '2' },
  'fair-lights': { env: 'BENCH_TENANTS_FAIR_LIGHTS', def: '4' },
  'p1-interval': { env: 'BENCH_TENANTS_P1_INTERVAL', def: '60s' },
  'p0-interval': { env: 'BENCH_TENANTS_P0_INTERVAL', def: '120s' },
  'min-interval': { env: 'BENCH_TENANTS_MIN_INTERVAL', def: '20s' },
  drift: { env: 'BENCH_TENANTS_DRIFT', def: '2m' },
  scheduling: { env: 'BENCH_TENANTS_SCHEDULING', def: 'adaptive' },
} as const;

/**
 * This benchmark's own flags; the shared ones are left to parseBenchArgs, so the parse is not
 * strict (as adaptive-params.ts does).
 */
export function parseTenantsArgs(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): TenantsParams {
  const get = flagReader(SPEC, argv, env);
  for (const k of ['p1-interval', 'p0-interval', 'min-interval'] as const) durationMs(k, get(k));
  const scheduling = get('scheduling');
  if (scheduling !== 'adaptive' && scheduling !== 'fixed') throw new Error(`--scheduling must be adaptive or fixed (got ${scheduling})`);
  const p: TenantsParams = {
    warmupS: num('warmup', get('warmup'), 10, 3_600),
    windowS: num('window', get('window'), 20, 3_600),
    fairS: num('fair-seconds', get('fair-seconds'), 20, 3_600),
    lights: Math.round(num('lights', get('lights'), 1, 10_000)),
    lightP1: Math.round(num('light-p1', get('light-p1'), 1, 1_000)),
    lightP0: Math.round(num('light-p0', get('light-p0'), 0, 1_000)),
    lightUpdateRate: num('light-update-rate', get('light-update-rate'), 0, 100),
    heavyWeight: num('heavy-weight', get('heavy-weight'), 0.01, 1_000),
    fairLights: Math.round(num('fair-lights', get('fair-lights'), 1, 1_000)),
    p1Interval: get('p1-interval'),
    p0Interval: get('p0-interval'),
    minInterval: get('min-interval'),
    driftMs: durationMs('drift', get('drift')),
    scheduling,
  };
  if (p.fairLights > p.lights) throw new Error(`--fair-lights (${p.fairLights}) cannot exceed --lights (${p.lights})`);
  return p;
}

/** The flags lib/args.ts knows: parseBenchArgs is strict, so it gets only these (and their values). */
const SHARED = new Set([
  'seconds',
  'asins',
  'quota',
  'p1-share',
  'latency',
  'countries',
  'sizes',
  'due',
  'ticks',
  'api-seconds',
  'connections',
  'api-products',
  'rates',
]);

/** The shared flags of `argv`, each `--name value` or `--name=value`; this benchmark's own go to parseTenantsArgs. */
export function sharedArgs(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) continue;
    const [name, value] = arg.slice(2).split('=', 2);
    const takesNext = value === undefined && i + 1 < argv.length && !argv[i + 1]!.startsWith('--');
    if (SHARED.has(name!)) out.push(arg, ...(takesNext ? [argv[i + 1]!] : []));
    if (takesNext) i++;
  }
  return out;
}
