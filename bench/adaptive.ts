/**
 * The refresh policies against fixed intervals (`npm run bench:adaptive`), at equal calls: for each
 * drift (the catalogue's mean change interval) and seed, the same catalogue and simulated day run
 * under fixed intervals (every product at the interval that spends exactly the calls: the even
 * share) and under adaptive scheduling with each REFRESH_OBJECTIVE (priority 0's interval, the
 * maximum wait, is --p0-interval). The scheduler runs in memory with the product's own functions
 * (lib/policy-sim.ts); the figures compare its refreshes with the catalogue's ground truth
 * (lib/truth.ts): changes observed, their delay, the share of time the stored value was the true
 * one (freshness), and the priorities' gaps. Targets are read on priority 0's products in the
 * second half of the day (the first is the cold start: every product is new and due at once).
 *
 * `--sweep` adds the frontier for the first drift and seed: freshness against changes seen for
 * fixed, each objective and `balanced` at weights 0 to 1, printed and drawn (bench/results/
 * adaptive-frontier.svg, with vega-lite).
 *
 * Flags (BENCH_ADAPTIVE_* variables under `npm run bench`): --p0, --p1, --p0-interval,
 * --p1-interval, --min-interval, --drift (a list), --still, --daily-swing, --weekly-swing, --fastest, --rate,
 * --step, --hours, --seed (a list), --sweep, --error-days (a list: the posteriors' error after
 * each, on one longer balanced run of the 24 h drift and the first seed; empty to skip),
 * --features (none, weak, strong: how far the catalogue's rates follow its products' rank,
 * category and offers), --groups (yes: the priors learn from those features,
 * src/scheduling/rate-groups.ts) and --known-rates (yes: each objective runs again with every
 * product's true rate for its estimate, so the figures split the gap to the bound between the
 * estimator and the rest of the scheduler).
 */
import { writeFile, mkdir } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { loadConfig, type Config } from '../config/env.js';
import { generateAppKey } from '../config/app-key.js';
import { NEVER_MS, SyntheticCatalog } from '../src/simulator/catalog.js';
import { tunePolicy, type RateCount } from '../src/scheduling/tune-policy.js';
import { MAX_ITEMS_PER_CALL } from '../src/upstream/port.js';
import { RATE_FEATURES } from '../src/core/rate-levels.js';
import { parseBenchArgs, type BenchOptions } from './lib/args.js';
import { runMain, type Infra } from './lib/infra.js';
import { figure, report, round, RESULTS_DIR, type BenchResult, type Figure } from './lib/result.js';
import { asinOf } from './lib/seed.js';
import { durationMs, parseAdaptiveArgs, type AdaptiveParams } from './lib/adaptive-params.js';
import { simulatePolicy, type SimRun } from './lib/policy-sim.js';
import { frontierSvg, type FrontierPoint } from './lib/frontier-svg.js';
import {
  HOUR_MS,
  mismatches,
  p0MaxGapMs,
  p1Gaps,
  START,
  truthOf,
  windowFigures,
  type ProductTruth,
  type WindowFigures,
} from './lib/truth.js';

const OBJECTIVES = ['changes', 'balanced', 'freshness'] as const;
type Mode = 'fixed' | (typeof OBJECTIVES)[number];

interface ModeFigures {
  readonly mode: Mode;
  readonly weight: number | null;
  /**
   * Priority 0's figures in the second half: the products the objectives choose for, and those the
   * bound is computed for. Priority 1 is refreshed alike in every mode (its gaps are read apart), and
   * its changes counted in would pull every ratio to fixed's towards 1.
   */
  readonly second: WindowFigures;
  /** Every product's, over the whole run. */
  readonly whole: WindowFigures;
  readonly p1Late: number;
  readonly p1MaxGapS: number;
  readonly p0MaxGapH: number;
  readonly mismatches: number;
  readonly run: SimRun;
}

function configOf(p: AdaptiveParams, mode: Mode, p0IntervalMs: number, balance?: number): Config {
  return loadConfig({
    NODE_ENV: 'test',
    MONGODB_URI: 'mongodb://127.0.0.1:1/unused',
    APP_KEY: generateAppKey(),
    COUNTRIES: 'JP',
    SCHEDULING: mode === 'fixed' ? 'fixed' : 'adaptive',
    REFRESH_OBJECTIVE: mode === 'fixed' ? 'balanced' : mode,
    ...(balance === undefined ? {} : { REFRESH_BALANCE: String(balance) }),
    REFRESH_INTERVAL_P0: `${Math.round(p0IntervalMs)}ms`,
    REFRESH_INTERVAL_P1: p.p1Interval,
    REFRESH_MIN_INTERVAL: p.minInterval,
    LOG_LEVEL: 'silent',
  });
}

function figuresOf(
  mode: Mode,
  run: SimRun,
  truths: readonly ProductTruth[],
  p: AdaptiveParams,
  lateMs: number,
  weight: number | null,
): ModeFigures {
  const end = START + p.hours * HOUR_MS;
  const mid = START + (p.hours / 2) * HOUR_MS;
  const stepMs = p.stepS * 1_000;
  const p1 = p1Gaps(run, truths, end, lateMs);
  return {
    mode,
    weight,
    second: windowFigures(run, truths, mid, end, stepMs, 0),
    whole: windowFigures(run, truths, START, end, stepMs),
    p1Late: p1.late,
    p1MaxGapS: p1.maxGapS,
    p0MaxGapH: p0MaxGapMs(run, truths, end, mid) / HOUR_MS,
    mismatches: truths.reduce((n, tr, k) => n + mismatches(tr, run.refreshAt[k]!, run.refreshValue[k]!), 0),
    run,
  };
}

/**
 * What a scheduler that knew every product's true mean rate could reach (the steady state of the
 * Poisson model, Lagrangian optimum at the same calls, the product's own tuning with the truth for
 * estimates): the most freshness it could add to the even share's; the most changes it could see,
 * as a multiple of the even share's; and the most changes it could see while staying at least as
 * fresh as the even share (the `balanced` corner). Never-changing products count at rate ~0: they
 * are refreshed at priority 0's interval and are always current.
 */
interface Bounds {
  readonly freshness: number;
  readonly changes: number;
  readonly balanced: { readonly weight: number; readonly changes: number } | null;
  /** At freshness's weights 0, 0.1, …, 1: the freshness gain over fixed and the changes ÷ fixed's. */
  readonly frontier: readonly { readonly weight: number; readonly freshnessGain: number; readonly changes: number }[];
}

function boundsOf(truths: readonly ProductTruth[], p: AdaptiveParams, budgetPerHour: number, maxMs: number): Bounds | null {
  const byRate = new Map<number, number>();
  for (const t of truths) if (t.priority === 0) byRate.set(HOUR_MS / t.intervalMs, (byRate.get(HOUR_MS / t.intervalMs) ?? 0) + 1);
  const rates: RateCount[] = [...byRate].map(([rate, count]) => ({ rate: Math.max(rate, 1e-9), count }));
  const at = (weight: number) => tunePolicy({ rates, budgetPerHour, minMs: durationMs('min-interval', p.minInterval), maxMs, weight });
  const fresh = at(1);
  const changes = at(0);
  if (!fresh || !changes) return null;
  const even = fresh.even;
  let balanced: Bounds['balanced'] = null;
  for (let i = 0; i <= 100 && balanced === null; i++) {
    const t = at(i / 100)!;
    if (t.predicted.freshness >= even.freshness) balanced = { weight: i / 100, changes: t.predicted.changesPerHour / even.changesPerHour };
  }
  const frontier = Array.from({ length: 11 }, (_, i) => at(i / 10)).flatMap((t, i) =>
    t
      ? [
          {
            weight: i / 10,
            freshnessGain: t.predicted.freshness - even.freshness,
            changes: t.predicted.changesPerHour / even.changesPerHour,
          },
        ]
      : [],
  );
  return {
    freshness: fresh.predicted.freshness - even.freshness,
    changes: changes.predicted.changesPerHour / even.changesPerHour,
    balanced,
    frontier,
  };
}

/**
 * How far the rates the schedule went by (the posteriors) are from the truth over priority 0's
 * products that change: the median of estimate ÷ true rate (its bias) and the 90th percentile of
 * the factor either way (its spread).
 */
function estimateError(
  truths: readonly ProductTruth[],
  estimates: ReadonlyMap<string, number | null>,
): { median: number; p90: number } | null {
  const ratios: number[] = [];
  for (const t of truths) {
    const e = estimates.get(t.asin);
    if (t.priority !== 0 || e === null || e === undefined || !(e > 0) || !(t.intervalMs < NEVER_MS)) continue;
    ratios.push(e / (HOUR_MS / t.intervalMs));
  }
  if (!ratios.length) return null;
  const at = (v: number[], q: number) => v.sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor(q * v.length))]!;
  return {
    median: at([...ratios], 0.5),
    p90: at(
      ratios.map((r) => Math.max(r, 1 / r)),
      0.9,
    ),
  };
}

interface CaseResult {
  readonly drift: string;
  readonly seed: string;
  readonly modes: ModeFigures[];
  readonly bounds: Bounds | null;
  readonly truthS: number;
  readonly changes: number;
  /** The objectives run again with every product's true rate for its estimate (--known-rates), else null. */
  readonly known: ModeFigures[] | null;
  /** The balanced run's estimates against the true rates at its end (estimateError). */
  readonly error: { readonly median: number; readonly p90: number } | null;
}

function label(ms: number): string {
  return ms % HOUR_MS === 0 ? `${ms / HOUR_MS}h` : `${ms / 60_000}m`;
}

function catalogOf(p: AdaptiveParams, driftMs: number, seed: string): SyntheticCatalog {
  return new SyntheticCatalog({
    seed,
    notFoundRate: 0,
    notAccessibleRate: 0,
    driftMs,
    stillShare: p.still,
    dailySwing: p.dailySwing,
    weeklySwing: p.weeklySwing,
    fastestMs: p.fastestMs,
    features: p.features,
  });
}

/** Every product's truth from START to `end`: priority 1's first, as the catalogue's order. */
function truthsOf(p: AdaptiveParams, catalog: SyntheticCatalog, end: number): ProductTruth[] {
  return Array.from({ length: p.p1 + p.p0 }, (_, i) => truthOf(catalog, asinOf(i), i < p.p1 ? 1 : 0, START, end));
}

/**
 * The posteriors' error after each of --error-days, on one balanced run of that many days (one
 * drift and seed: a week's truth of the fastest catalogues would take minutes).
 */
function errorOverDays(p: AdaptiveParams, driftMs: number, seed: string): { days: number; median: number; p90: number }[] {
  const days = [...p.errorDays].sort((a, b) => a - b);
  const stepMs = p.stepS * 1_000;
  const last = START + days.at(-1)! * 24 * HOUR_MS;
  const catalog = catalogOf(p, driftMs, seed);
  const truths = truthsOf(p, catalog, last + stepMs);
  const at = days.map((d) => START + d * 24 * HOUR_MS);
  const run = simulatePolicy(truths, {
    config: configOf(p, 'balanced', durationMs('p0-interval', p.p0Interval)),
    start: START,
    end: last + stepMs,
    stepMs,
    rate: p.rate,
    groups: p.groups,
    snapshotsAt: at,
  });
  return days.flatMap((d, i) => {
    const e = estimateError(truths, run.snapshots.get(at[i]!) ?? new Map());
    return e ? [{ days: d, ...e }] : [];
  });
}

async function runCase(
  p: AdaptiveParams,
  driftMs: number,
  seed: string,
  sweep: boolean,
): Promise<{ res: CaseResult; frontier: FrontierPoint[] }> {
  const end = START + p.hours * HOUR_MS;
  const stepMs = p.stepS * 1_000;
  const catalog = catalogOf(p, driftMs, seed);
  const t0 = performance.now();
  const truths = truthsOf(p, catalog, end);
  const truthS = (performance.now() - t0) / 1_000;
  const p1Ms = durationMs('p1-interval', p.p1Interval);
  const maxMs = durationMs('p0-interval', p.p0Interval);
  // The even share: every priority-0 product at the interval that spends what priority 1 leaves.
  const budgetPerHour = (p.rate * MAX_ITEMS_PER_CALL - p.p1 / (p1Ms / 1_000)) * 3_600;
  const evenMs = (p.p0 / budgetPerHour) * HOUR_MS;
  const lateMs = p1Ms + stepMs;
  const sim = (config: Config, knownRates = false) =>
    simulatePolicy(truths, { config, start: START, end, stepMs, rate: p.rate, groups: p.groups, knownRates });
  const objective = (mode: (typeof OBJECTIVES)[number], knownRates: boolean): ModeFigures => {
    const run = sim(configOf(p, mode, maxMs), knownRates);
    return figuresOf(mode, run, truths, p, lateMs, run.policy?.weight ?? null);
  };
  const modes: ModeFigures[] = [
    figuresOf('fixed', sim(configOf(p, 'fixed', evenMs)), truths, p, lateMs, null),
    ...OBJECTIVES.map((mode) => objective(mode, false)),
  ];
  const known = p.knownRates ? OBJECTIVES.map((mode) => objective(mode, true)) : null;
  const bounds = boundsOf(truths, p, budgetPerHour, maxMs);
  const frontier: FrontierPoint[] = [];
  if (sweep) {
    const fixed = modes[0]!;
    const point = (name: string, f: ModeFigures): FrontierPoint => ({
      name,
      weight: f.weight,
      freshness: round(f.second.currentShare, 4),
      changes: round(f.second.observed / Math.max(1, fixed.second.observed), 4),
    });
    frontier.push(point('fixed', fixed));
    for (const f of modes.slice(1)) frontier.push(point(f.mode === 'balanced' ? 'balanced (auto)' : f.mode, f));
    for (const b of bounds?.frontier ?? [])
      frontier.push({
        name: `knowing the rates, w = ${b.weight}`,
        weight: b.weight,
        freshness: round(fixed.second.currentShare + b.freshnessGain, 4),
        changes: round(b.changes, 4),
        bound: true,
      });
    for (let w = 0; w <= 1.0001; w += 0.1) {
      const weight = round(w, 1);
      const run = sim(configOf(p, 'balanced', maxMs, weight));
      frontier.push(point(`w = ${weight}`, figuresOf('balanced', run, truths, p, lateMs, weight)));
    }
  }
  const changes = truths.reduce((n, t) => n + t.at.length, 0);
  return {
    res: {
      drift: label(driftMs),
      seed,
      modes,
      known,
      bounds,
      truthS,
      changes,
      error: estimateError(truths, modes.find((m) => m.mode === 'balanced')!.run.scheduled),
    },
    frontier,
  };
}

/** A mode's figures as the result's details keep them. */
function modeDetails(m: ModeFigures) {
  return {
    mode: m.mode,
    weight: m.weight,
    second: { ...m.second, byBucket: undefined },
    whole: { ...m.whole, byBucket: undefined },
    byBucketSecond: m.second.byBucket,
    p1Late: m.p1Late,
    p1MaxGapS: round(m.p1MaxGapS, 0),
    p0MaxGapH: round(m.p0MaxGapH, 2),
    calls: m.run.calls,
    unusedSlots: m.run.unusedSlots,
    policy: m.run.policy && {
      price: m.run.policy.price,
      weight: m.run.policy.weight,
      evenHours: m.run.policy.evenHours,
      predicted: m.run.policy.predicted,
      even: m.run.policy.even,
    },
    simS: round(m.run.wallS, 2),
  };
}

const fmt = (v: number | null, digits: number): string => (v === null ? 'n/a' : String(round(v, digits)));

/** One case's objectives against the bound, second half (null where the bound has none). */
interface Shares {
  readonly changes: number | null;
  readonly freshness: number | null;
  readonly freshnessGain: number;
  readonly balancedFreshness: number;
  readonly balancedChanges: number | null;
  readonly errorMedian: number | null;
  readonly errorP90: number | null;
}

/** The shares of one case's runs: its objectives as run, or `known`'s (the true rates for estimates). */
function sharesOf(c: CaseResult, runs: 'estimated' | 'known' = 'estimated'): Shares {
  const objectives = runs === 'known' ? (c.known ?? []) : c.modes;
  const get = (mode: Mode) => objectives.find((m) => m.mode === mode)!;
  const fixed = c.modes[0]!;
  const ratio = (m: ModeFigures) => m.second.observed / Math.max(1, fixed.second.observed);
  const fresh = (m: ModeFigures) => m.second.currentShare - fixed.second.currentShare;
  const b = c.bounds;
  return {
    changes: b ? ratio(get('changes')) / b.changes : null,
    freshness: b && b.freshness > 0 ? fresh(get('freshness')) / b.freshness : null,
    freshnessGain: fresh(get('freshness')),
    balancedFreshness: fresh(get('balanced')),
    balancedChanges: b?.balanced ? ratio(get('balanced')) / b.balanced.changes : null,
    errorMedian: c.error?.median ?? null,
    errorP90: c.error?.p90 ?? null,
  };
}

/** Runs the benchmark (in memory: the infrastructure is not used). */
export async function benchAdaptive(_opts: BenchOptions, _inf?: Infra, params: AdaptiveParams = parseAdaptiveArgs()): Promise<BenchResult> {
  const p = params;
  const startedAt = new Date().toISOString();
  const wall = performance.now();
  const notes: string[] = [];
  const figures: Figure[] = [];
  const cases: CaseResult[] = [];
  let frontier: FrontierPoint[] = [];
  const stepMs = p.stepS * 1_000;
  const maxMs = durationMs('p0-interval', p.p0Interval);
  const p1Ms = durationMs('p1-interval', p.p1Interval);
  for (const [di, driftMs] of p.driftsMs.entries()) {
    for (const [si, seed] of p.seeds.entries()) {
      const { res, frontier: f } = await runCase(p, driftMs, seed, p.sweep && di === 0 && si === 0);
      if (f.length) frontier = f;
      cases.push(res);
      console.log(
        `adaptive: drift ${res.drift}, seed ${seed}: ${res.changes} true changes (truth in ${round(res.truthS, 1)} s), simulated in ${round(
          res.modes.reduce((s, m) => s + m.run.wallS, 0),
          1,
        )} s`,
      );
      const groups = res.modes.find((m) => m.mode === 'balanced')!.run.policy?.groups;
      if (groups)
        console.log(
          `adaptive: drift ${res.drift}, seed ${seed}: share of ln(rate)'s variance the features explain (balanced's last tuning): ${RATE_FEATURES.map(
            (f) => `${f} ${round(groups.explained[f], 3)}`,
          ).join(', ')}; a prior's spread ${round(groups.spread, 3)} of the country's`,
        );
    }
  }

  // The table: one line per case and mode, second half (steady state).
  const rows: string[] = [
    `drift seed            mode       w     changes seen  ÷ fixed  most÷fixed  fresh   −fixed   delay p50 s  p1 late  p0 max gap h  unused slots (second half)`,
  ];
  for (const c of cases) {
    const fixed = c.modes[0]!;
    for (const m of c.modes) {
      const ratio = m.second.observed / Math.max(1, fixed.second.observed);
      const most = Math.min(m.second.changes, m.second.refreshes) / Math.max(1, fixed.second.observed);
      rows.push(
        `${c.drift.padEnd(5)} ${c.seed.padEnd(15)} ${m.mode.padEnd(10)} ${(m.weight === null ? '-' : String(m.weight)).padEnd(5)} ` +
          `${String(m.second.observed).padStart(12)}  ${round(ratio, 2).toFixed(2).padStart(7)}  ${round(most, 2).toFixed(2).padStart(10)}  ` +
          `${m.second.currentShare.toFixed(3)}  ${(m.second.currentShare - fixed.second.currentShare).toFixed(3).padStart(6)}  ` +
          `${String(round(m.second.medianDelayS ?? NaN, 0)).padStart(11)}  ${String(m.p1Late).padStart(7)}  ${m.p0MaxGapH.toFixed(2).padStart(12)}  ${String(m.run.unusedByStep.slice(m.run.unusedByStep.length / 2).reduce((a, b) => a + b, 0)).padStart(12)}`,
      );
    }
    const b = c.bounds;
    if (b)
      rows.push(
        `${c.drift.padEnd(5)} ${c.seed.padEnd(15)} knowing the true rates: freshness +${b.freshness.toFixed(3)}, changes ${b.changes.toFixed(2)}×` +
          (b.balanced ? `, as fresh as fixed ${b.balanced.changes.toFixed(2)}× (w ${b.balanced.weight})` : ''),
      );
  }
  const table = rows.join('\n');

  for (const c of cases) {
    const tag = `${c.drift} ${c.seed}`;
    const get = (mode: Mode) => c.modes.find((m) => m.mode === mode)!;
    const bal = get('balanced');
    const chg = get('changes');
    const fr = get('freshness');
    const fixed = c.modes[0]!;
    figures.push(
      figure(
        `${tag} priority 1 late (all modes)`,
        Math.max(...c.modes.map((m) => m.p1Late)),
        'gaps',
        { op: '==', value: 0, source: 'issue' },
        `gaps over ${p.p1Interval} + one step`,
      ),
      figure(
        `${tag} priority 0 largest gap (all modes)`,
        Math.max(...c.modes.map((m) => m.p0MaxGapH)),
        'h',
        // Rounded up: a gap of exactly the interval and one step meets it.
        { op: '<=', value: Math.ceil(((maxMs + stepMs) / HOUR_MS) * 1e4) / 1e4, source: 'issue' },
        `priority 0's interval ${p.p0Interval} + one step; gaps ending in the second half (the first holds the cold start)`,
      ),
      figure(
        `${tag} median delay, change → observation (balanced)`,
        bal.second.medianDelayS,
        's',
        null,
        `fixed ${round(fixed.second.medianDelayS ?? NaN, 0)} s, changes ${round(chg.second.medianDelayS ?? NaN, 0)} s, freshness ${round(fr.second.medianDelayS ?? NaN, 0)} s`,
      ),
    );
    for (const m of c.modes)
      if (m.mismatches > 0)
        notes.push(`${tag} ${m.mode}: ${m.mismatches} refreshes saw a value the truth does not have then (a benchmark bug)`);
    if (new Set(c.modes.map((m) => m.run.calls)).size > 1)
      notes.push(
        `${tag}: calls differ between modes: ${c.modes.map((m) => `${m.mode} ${m.run.calls}`).join(', ')} (a mode left slots unused)`,
      );
  }

  // The objectives as shares of what a scheduler knowing the true rates reaches at the same calls,
  // per drift: the mean over its seeds, each seed's in the note.
  for (const drift of [...new Set(cases.map((c) => c.drift))]) {
    const ofDrift = cases.filter((c) => c.drift === drift);
    const shares = ofDrift.map((c) => ({ seed: c.seed, ...sharesOf(c) }));
    const knownShares = ofDrift.filter((c) => c.known).map((c) => ({ seed: c.seed, ...sharesOf(c, 'known') }));
    const meanOf = (of: typeof shares, pick: (x: Shares) => number | null): number | null => {
      const v = of.map(pick).filter((x): x is number => x !== null && Number.isFinite(x));
      return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
    };
    const eachOf = (of: typeof shares, pick: (x: Shares) => number | null, digits = 3) =>
      of.map((x) => `${x.seed} ${fmt(pick(x), digits)}`).join(', ');
    const mean = (pick: (x: Shares) => number | null) => meanOf(shares, pick);
    const each = (pick: (x: Shares) => number | null, digits = 3) => eachOf(shares, pick, digits);
    figures.push(
      figure(
        `${drift} changes: share of the bound's changes`,
        mean((x) => x.changes),
        '',
        { op: '>=', value: 0.93, source: 'issue' },
        each((x) => x.changes),
      ),
      figure(
        `${drift} freshness: share of the bound's freshness gain`,
        mean((x) => x.freshness),
        '',
        { op: '>=', value: 0.5, source: 'issue' },
        each((x) => x.freshness),
      ),
      figure(
        `${drift} freshness: freshness − fixed's`,
        mean((x) => x.freshnessGain),
        '',
        { op: '>=', value: 0, source: 'issue' },
        each((x) => x.freshnessGain, 4),
      ),
      figure(
        `${drift} balanced: freshness − fixed's`,
        mean((x) => x.balancedFreshness),
        '',
        { op: '>=', value: -0.002, source: 'issue' },
        each((x) => x.balancedFreshness, 4),
      ),
      figure(
        `${drift} balanced: share of the changes the bound sees as fresh as fixed`,
        mean((x) => x.balancedChanges),
        '',
        { op: '>=', value: 0.85, source: 'issue' },
        each((x) => x.balancedChanges),
      ),
      figure(
        `${drift} estimate ÷ true rate after ${p.hours} h: median`,
        mean((x) => x.errorMedian),
        '',
        null,
        each((x) => x.errorMedian),
      ),
      figure(
        `${drift} estimate ÷ true rate after ${p.hours} h: 90th percentile of the error factor`,
        mean((x) => x.errorP90),
        '×',
        null,
        `max(estimate ÷ truth, truth ÷ estimate) over priority 0's changing products, balanced: ${each((x) => x.errorP90, 2)}`,
      ),
    );
    // What the planner and the tuning reach with a perfect estimator: the rest of the gap is theirs.
    if (knownShares.length) {
      const known = (name: string, pick: (x: Shares) => number | null, digits = 3) =>
        figure(`${drift} ${name}, the true rates for estimates`, meanOf(knownShares, pick), '', null, eachOf(knownShares, pick, digits));
      figures.push(
        known("changes: share of the bound's changes", (x) => x.changes),
        known("freshness: share of the bound's freshness gain", (x) => x.freshness),
        known("balanced: freshness − fixed's", (x) => x.balancedFreshness, 4),
        known('balanced: share of the changes the bound sees as fresh as fixed', (x) => x.balancedChanges),
      );
    }
  }

  if (p.errorDays.length) {
    const driftMs = p.driftsMs.includes(24 * HOUR_MS) ? 24 * HOUR_MS : p.driftsMs[0]!;
    const t = performance.now();
    const errors = errorOverDays(p, driftMs, p.seeds[0]!);
    console.log(
      `adaptive: the posteriors' error over ${Math.max(...p.errorDays)} days, drift ${label(driftMs)}: ${round((performance.now() - t) / 1_000, 1)} s`,
    );
    for (const e of errors)
      figures.push(
        figure(`${label(driftMs)} ${p.seeds[0]} estimate ÷ true rate after ${e.days} d: median`, e.median, '', null, 'balanced, one run'),
        figure(
          `${label(driftMs)} ${p.seeds[0]} estimate ÷ true rate after ${e.days} d: 90th percentile of the error factor`,
          e.p90,
          '×',
          null,
          'balanced, one run',
        ),
      );
  }

  let svgPath: string | null = null;
  if (frontier.length) {
    console.log(`\nfrontier, drift ${cases[0]!.drift}, seed ${cases[0]!.seed} (second half): freshness, changes seen ÷ fixed's`);
    for (const f of frontier) console.log(`  ${f.name.padEnd(28)} ${f.freshness.toFixed(3)}  ${f.changes.toFixed(2)}×`);
    await mkdir(RESULTS_DIR, { recursive: true });
    svgPath = `${RESULTS_DIR}adaptive-frontier.svg`;
    await writeFile(svgPath, await frontierSvg(frontier, `drift ${cases[0]!.drift}, seed ${cases[0]!.seed}, ${p.hours / 2}-${p.hours} h`));
    notes.push(`frontier drawn in ${svgPath}`);
  }
  notes.push(
    `fixed: every priority-0 product every ${round(p.p0 / ((p.rate * MAX_ITEMS_PER_CALL - p.p1 / (p1Ms / 1_000)) * 3_600), 2)} h (the interval that spends the calls); adaptive: priority 0 at most every ${p.p0Interval}, priority 1 at most every ${p.p1Interval}, at least ${p.minInterval} apart`,
    `catalogue: ${p.p0} + ${p.p1} products, ${round(p.still * 100, 1)} % never change, the fastest change every ${label(p.fastestMs)} on average, activity swings ±${p.dailySwing} over the day and ±${p.weeklySwing} over 1-4 weeks; ${p.hours} h from ${new Date(START).toISOString()} in steps of ${p.stepS} s, Q = ${p.rate}`,
    '"knowing the true rates": the steady state of the Poisson model under the Lagrangian optimum at the same calls, each product at its true mean rate (the most any scheduler sees, in expectation); the targets are shares of it. "most÷fixed" in the table: min(changes, refreshes) in the window ÷ fixed\'s observed, a looser bound (a refresh observes at most one change, and no scheduler knows when one happened)',
  );
  const wallS = (performance.now() - wall) / 1_000;
  return {
    name: 'adaptive',
    startedAt,
    environment: { node: process.version },
    parameters: { ...p, driftsMs: p.driftsMs, start: new Date(START).toISOString() },
    figures,
    details: {
      cases: cases.map((c) => ({
        drift: c.drift,
        seed: c.seed,
        truthS: round(c.truthS, 1),
        bounds: c.bounds && {
          freshness: round(c.bounds.freshness, 4),
          changes: round(c.bounds.changes, 3),
          balanced: c.bounds.balanced && { weight: c.bounds.balanced.weight, changes: round(c.bounds.balanced.changes, 3) },
        },
        modes: c.modes.map(modeDetails),
        known: c.known?.map(modeDetails) ?? null,
      })),
      frontier,
      svg: svgPath,
      table,
      wallS: round(wallS, 1),
    },
    notes,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const params = parseAdaptiveArgs();
  // The shared options are not used here; only their defaults and BENCH_* variables are read.
  const opts = parseBenchArgs([]);
  await runMain('adaptive', 3_600_000, async () => {
    const result = await benchAdaptive(opts, undefined, params);
    await report(result, String(result.details.table));
  });
}
