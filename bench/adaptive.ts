/**
 * Adaptive against fixed scheduling (`npm run bench:adaptive`): the same catalogue, quota and
 * simulated clock run twice, once with SCHEDULING=fixed (every product at its priority's interval)
 * and once with SCHEDULING=adaptive (each product's next refresh from its learned change rate, the
 * planner ranking due products by what a refresh is worth), with demand above the quota. The
 * planner's real choice (src/scheduling/pick-due.ts) and the product's real write path
 * (src/catalog/writes.ts, which learns the rate and sets the next refresh) run on a simulated clock;
 * the "upstream" is the synthetic catalogue, read in-process (no HTTP, no queue, no limiter: what is
 * measured is which products the calls go to, not how fast they are made).
 *
 * Each step of `stepS` simulated seconds spends Q × stepS calls of 10 ASINs on the products
 * pickDue returns, and logs what each refresh saw. The figures compare that log with the
 * catalogue's ground truth (`truth`): how many price/availability changes some refresh saw before
 * the next one overwrote them, how late, how much of the time the stored value was the true one,
 * and whether the priority-1 products kept their interval.
 *
 * Adaptive-only flags (they are not among the shared ones of lib/args.ts, so `npm run bench` takes
 * them as BENCH_ADAPTIVE_* environment variables): --p0, --p1, --p0-interval, --p1-interval,
 * --min-interval, --drift, --rate, --step, --hours, --seed.
 * REFRESH_OBJECTIVE and REFRESH_BALANCE in the environment choose the adaptive run's objective
 * (default: the product's).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadConfig, type Config } from '../config/env.js';
import { generateAppKey } from '../config/app-key.js';
import type { ItemOutcome, UpstreamItem } from '../src/catalog/product.js';
import { writeOutcomes } from '../src/catalog/writes.js';
import { productModel } from '../src/models/product.js';
import { pickDue } from '../src/scheduling/pick-due.js';
import { SyntheticCatalog } from '../src/simulator/catalog.js';
import { MAX_ITEMS_PER_CALL } from '../src/upstream/port.js';
import { parseBenchArgs, type BenchOptions } from './lib/args.js';
import { environmentOf, ownDatabase, runMain, withOwnCleanup, type Infra } from './lib/infra.js';
import { figure, report, round, type BenchResult, type Figure } from './lib/result.js';
import { asinOf } from './lib/seed.js';
import { percentile } from './lib/stats.js';
import { durationMs, parseAdaptiveArgs, type AdaptiveParams } from './lib/adaptive-params.js';
import {
  BUCKETS,
  COUNTRY,
  HOUR_MS,
  mismatches,
  p0MaxGapMs,
  p1Gaps,
  PARTNER_TAG,
  START,
  toUpstream,
  truthOf,
  valueKey,
  windowFigures,
  type ProductTruth,
  type RefreshLog,
  type WindowFigures,
} from './lib/truth.js';

const MODES = ['fixed', 'adaptive'] as const;
type Mode = (typeof MODES)[number];

// ---- one mode ---------------------------------------------------------------------------------

interface ModeRun extends RefreshLog {
  readonly mode: Mode;
  readonly config: Config;
  /** Per product (the catalogue's order): refresh times and what each saw. */
  readonly refreshAt: number[][];
  readonly refreshValue: string[][];
  /** Calls spent, in all and in each step; product slots a step left unused (nothing more due). */
  readonly calls: number;
  readonly callsByStep: number[];
  readonly unusedSlots: number;
  /** Refreshes in which the write path saw the value move (what the scheduler learns from). */
  readonly moved: number;
  /** The products' change-rate estimates at the end (per hour; null before a first refresh). */
  readonly estimates: Map<string, number | null>;
  readonly insertS: number;
  readonly wallS: number;
  readonly pickMs: number[];
  readonly writeMs: number[];
}

async function simulate(
  inf: Infra,
  mode: Mode,
  p: AdaptiveParams,
  catalog: SyntheticCatalog,
  truths: readonly ProductTruth[],
): Promise<ModeRun> {
  const db = await ownDatabase(inf, `sw_bench_adaptive_${mode}`);
  const config = loadConfig({
    NODE_ENV: 'test',
    MONGODB_URI: db.uri,
    APP_KEY: generateAppKey(),
    COUNTRIES: COUNTRY,
    SCHEDULING: mode,
    REFRESH_INTERVAL_P0: p.p0Interval,
    REFRESH_INTERVAL_P1: p.p1Interval,
    REFRESH_MIN_INTERVAL: p.minInterval,
    // The objective under test, as the product reads it (default: the product's own).
    ...(process.env.REFRESH_OBJECTIVE ? { REFRESH_OBJECTIVE: process.env.REFRESH_OBJECTIVE } : {}),
    ...(process.env.REFRESH_BALANCE ? { REFRESH_BALANCE: process.env.REFRESH_BALANCE } : {}),
    LOG_LEVEL: 'silent',
  });
  const products = productModel(db.conn);
  await products.createIndexes();
  const t0 = performance.now();
  const start = new Date(START);
  const CHUNK = 2_000;
  for (let i = 0; i < truths.length; i += CHUNK) {
    await products.insertMany(
      truths.slice(i, i + CHUNK).map((t) => ({
        country: COUNTRY,
        asin: t.asin,
        priority: t.priority,
        next_refresh_at: start,
        created_at: start,
        status: 'pending' as const,
      })),
      { ordered: false },
    );
  }
  const insertS = (performance.now() - t0) / 1_000;

  const index = new Map(truths.map((t, i) => [t.asin, i]));
  const refreshAt: number[][] = truths.map(() => []);
  const refreshValue: string[][] = truths.map(() => []);
  const callsPerStep = Math.round(p.rate * p.stepS);
  const stepMs = p.stepS * 1_000;
  const end = START + p.hours * HOUR_MS;
  const callsByStep: number[] = [];
  const pickMs: number[] = [];
  const writeMs: number[] = [];
  let calls = 0;
  let unusedSlots = 0;
  let moved = 0;
  const started = performance.now();
  for (let t = START; t < end; t += stepMs) {
    const now = new Date(t);
    const a = performance.now();
    const picked = await pickDue(db.conn, config, COUNTRY, callsPerStep * MAX_ITEMS_PER_CALL, now);
    const b = performance.now();
    pickMs.push(b - a);
    unusedSlots += callsPerStep * MAX_ITEMS_PER_CALL - picked.length;
    const batches: string[][] = [];
    for (let i = 0; i < picked.length; i += MAX_ITEMS_PER_CALL) batches.push(picked.slice(i, i + MAX_ITEMS_PER_CALL).map((d) => d.asin));
    callsByStep.push(batches.length);
    calls += batches.length;
    // The batches of a step hold distinct products, so their writes may overlap.
    const results = await Promise.all(
      batches.map((asins) => {
        const items: UpstreamItem[] = [];
        const outcomes: Record<string, ItemOutcome> = {};
        for (const asin of asins) {
          const l = catalog.lookup(COUNTRY, asin, t, PARTNER_TAG);
          if (l.kind !== 'found') throw new Error(`${asin} is not found in the simulator`);
          const item = toUpstream(l.item);
          items.push(item);
          outcomes[asin] = 'found';
          const k = index.get(asin);
          if (k === undefined) throw new Error(`pickDue returned ${asin}, which the benchmark did not seed`);
          refreshAt[k]!.push(t);
          refreshValue[k]!.push(valueKey(item.price, item.availability));
        }
        return writeOutcomes(db.conn, config, COUNTRY, items, outcomes, { now });
      }),
    );
    writeMs.push(performance.now() - b);
    for (const r of results) moved += r.moved;
    if ((t + stepMs - START) % (4 * HOUR_MS) === 0)
      console.log(
        `adaptive[${mode}]: ${round((t + stepMs - START) / HOUR_MS, 1)} h simulated, ${calls} calls, ${round((performance.now() - started) / 1_000, 1)} s`,
      );
  }
  const wallS = (performance.now() - started) / 1_000;
  // Only change_rate is read: how the scheduler keeps its evidence is its own business.
  const docs = await products
    .find({ country: COUNTRY })
    .select({ asin: 1, change_rate: 1 })
    .lean<{ asin: string; change_rate?: number | null }[]>();
  const estimates = new Map(docs.map((d) => [d.asin, d.change_rate ?? null]));
  return { mode, config, refreshAt, refreshValue, calls, callsByStep, unusedSlots, moved, estimates, insertS, wallS, pickMs, writeMs };
}

const SCHEDULER_FILES = ['src/scheduling/change-rate.ts', 'src/scheduling/pick-due.ts', 'src/catalog/writes.ts'];

async function codeDigests(): Promise<Record<string, string>> {
  const root = fileURLToPath(new URL('../', import.meta.url));
  const out: Record<string, string> = {};
  for (const f of SCHEDULER_FILES) {
    const text = await readFile(root + f).catch(() => null);
    out[f] = text === null ? 'missing' : createHash('sha256').update(text).digest('hex').slice(0, 12);
  }
  return out;
}

// ---- the benchmark ----------------------------------------------------------------------------

/** Runs the benchmark and removes everything it started and wrote, also when it fails. */
export function benchAdaptive(opts: BenchOptions, inf?: Infra, params: AdaptiveParams = parseAdaptiveArgs()): Promise<BenchResult> {
  return withOwnCleanup(inf, (infra) => measureAdaptive(opts, infra, params));
}

function pct(x: number): string {
  return `${round(100 * x, 1)} %`;
}

async function measureAdaptive(_opts: BenchOptions, inf: Infra, p: AdaptiveParams): Promise<BenchResult> {
  const startedAt = new Date().toISOString();
  const wall = performance.now();
  const notes: string[] = [];
  // The modules were loaded just before: these digests name the scheduler code measured.
  const schedulerCode = await codeDigests();
  const end = START + p.hours * HOUR_MS;
  const mid = START + Math.floor(p.hours / 2) * HOUR_MS;
  const stepMs = p.stepS * 1_000;
  const catalog = new SyntheticCatalog({ seed: p.seed, notFoundRate: 0, notAccessibleRate: 0, driftMs: p.driftMs });
  const t0 = performance.now();
  const truths: ProductTruth[] = [];
  for (let i = 0; i < p.p1 + p.p0; i++) truths.push(truthOf(catalog, asinOf(i), i < p.p1 ? 1 : 0, START, end));
  const truthS = (performance.now() - t0) / 1_000;
  const p0Ms = durationMs('p0-interval', p.p0Interval);
  const p1Ms = durationMs('p1-interval', p.p1Interval);
  const fixedDemand = p.p0 / (p0Ms / 1_000) + p.p1 / (p1Ms / 1_000);
  const supply = p.rate * MAX_ITEMS_PER_CALL;
  const totalChanges = truths.reduce((n, t) => n + t.at.length, 0);
  console.log(
    `adaptive: ${p.p1} priority-1 + ${p.p0} priority-0 products, ${totalChanges} true changes in ${p.hours} h (truth in ${round(truthS, 1)} s); ` +
      `fixed demand ${round(fixedDemand, 3)} products/s against ${round(supply, 3)} (Q ${p.rate} calls/s × ${MAX_ITEMS_PER_CALL})`,
  );
  if (fixedDemand <= supply) notes.push(`fixed demand ${round(fixedDemand, 3)} products/s is NOT above the quota's ${supply}/s`);

  const runs = {} as Record<Mode, ModeRun>;
  for (const mode of MODES) {
    runs[mode] = await simulate(inf, mode, p, catalog, truths);
    const r = runs[mode];
    console.log(`adaptive[${mode}]: ${r.calls} calls in ${round(r.wallS, 1)} s (insert ${round(r.insertS, 1)} s)`);
  }

  const lateMs = p1Ms + stepMs;
  const per = Object.fromEntries(
    MODES.map((mode) => {
      const r = runs[mode];
      return [
        mode,
        {
          whole: windowFigures(r, truths, START, end, stepMs),
          second: windowFigures(r, truths, mid, end, stepMs),
          p0Whole: windowFigures(r, truths, START, end, stepMs, 0),
          p1: p1Gaps(r, truths, end, lateMs),
          mismatches: truths.reduce((n, tr, k) => n + mismatches(tr, r.refreshAt[k]!, r.refreshValue[k]!), 0),
          neverRefreshed: r.refreshAt.filter((x) => x.length === 0).length,
          p0MaxGapH: p0MaxGapMs(r, truths, end) / HOUR_MS,
        },
      ];
    }),
  ) as Record<
    Mode,
    {
      whole: WindowFigures;
      second: WindowFigures;
      p0Whole: WindowFigures;
      p1: ReturnType<typeof p1Gaps>;
      mismatches: number;
      neverRefreshed: number;
      p0MaxGapH: number;
    }
  >;

  // The compact tables.
  const secondLabel = `${Math.floor(p.hours / 2)}-${p.hours} h`;
  console.log(`\nmode      window     changes  observed  share    delay p50 s  p90 s    current  refreshes  calls   p1 max gap s  p1 late`);
  for (const mode of MODES) {
    const f = per[mode];
    for (const [label, w] of [
      [`0-${p.hours} h`, f.whole],
      [secondLabel, f.second],
    ] as const) {
      console.log(
        `${mode.padEnd(9)} ${label.padEnd(10)} ${String(w.changes).padStart(7)}  ${String(w.observed).padStart(8)}  ${pct(w.observedShare).padStart(7)}  ` +
          `${String(round(w.medianDelayS ?? NaN, 0)).padStart(11)}  ${String(round(w.p90DelayS ?? NaN, 0)).padStart(6)}  ${pct(w.currentShare).padStart(7)}  ` +
          `${String(w.refreshes).padStart(9)}  ${String(w.calls).padStart(5)}   ${String(round(f.p1.maxGapS, 0)).padStart(12)}  ${String(f.p1.late).padStart(7)}`,
      );
    }
  }
  console.log(
    `\nby true change interval, ${secondLabel} (steady state): refreshes spent, changes observed, observed/refreshes, median estimated/true rate`,
  );
  console.log(
    `bucket     products  changes  true/h  | fixed: refreshes  observed  prod.  est/true | adaptive: refreshes  observed  prod.  est/true`,
  );
  for (let i = 0; i < BUCKETS.length; i++) {
    const row = (m: Mode) => per[m].second.byBucket[i] as Record<string, number | string | null>;
    const cells = (b: Record<string, number | string | null>, w: number) =>
      `${String(b.refreshes).padStart(w)}  ${String(b.observed).padStart(8)}  ${pct(Number(b.productive)).padStart(6)}  ${String(b.estOverTrue).padStart(8)}`;
    const fx = row('fixed');
    console.log(
      `${String(fx.bucket).padEnd(10)} ${String(fx.products).padStart(8)}  ${String(fx.changes).padStart(7)}  ${String(fx.trueRatePerH).padStart(6)}  | ` +
        `${cells(fx, 16)} | ${cells(row('adaptive'), 19)}`,
    );
  }

  const fx = per.fixed;
  const ad = per.adaptive;
  const ratio = fx.whole.observed ? ad.whole.observed / fx.whole.observed : null;
  const ratioSecond = fx.second.observed ? ad.second.observed / fx.second.observed : null;
  // A refresh observes at most one change and a change is observed at most once: no scheduler,
  // even one that knew every change instant, observes more than min(changes, refreshes).
  const ceiling = (w: WindowFigures, fixedObserved: number) => (fixedObserved ? Math.min(w.changes, w.refreshes) / fixedObserved : null);
  const ceilingWhole = ceiling(ad.whole, fx.whole.observed);
  const ceilingSecond = ceiling(ad.second, fx.second.observed);
  const figures: Figure[] = [
    figure(
      'adaptive_to_fixed_changes_ratio',
      ratio,
      '×',
      { op: '>=', value: 2, source: 'issue' },
      `whole run: ${ad.whole.observed} / ${fx.whole.observed} of ${fx.whole.changes} changes, calls ${runs.adaptive.calls} / ${runs.fixed.calls}`,
    ),
    figure(
      'adaptive_to_fixed_changes_ratio, second half',
      ratioSecond,
      '×',
      { op: '>=', value: 2, source: 'issue' },
      `${secondLabel} (steady state): ${ad.second.observed} / ${fx.second.observed} of ${fx.second.changes} changes`,
    ),
    figure(
      'most any scheduler could reach / fixed',
      ceilingWhole,
      '×',
      null,
      `whole run: min(${ad.whole.changes} changes, ${ad.whole.refreshes} refreshes) / ${fx.whole.observed}; second half ${ceilingSecond === null ? 'n/a' : round(ceilingSecond, 3)}×`,
    ),
    figure(
      'adaptive: share of the most observable',
      Math.min(ad.whole.changes, ad.whole.refreshes) ? ad.whole.observed / Math.min(ad.whole.changes, ad.whole.refreshes) : null,
      '',
      null,
      `fixed ${round(fx.whole.observed / Math.max(1, Math.min(fx.whole.changes, fx.whole.refreshes)), 3)}`,
    ),
    figure(
      'p1_late_adaptive',
      ad.p1.late,
      'gaps',
      { op: '==', value: 0, source: 'issue' },
      `gaps > ${p.p1Interval} + ${p.stepS} s of ${ad.p1.gaps}; largest ${round(ad.p1.maxGapS, 0)} s`,
    ),
    figure('p1_late_fixed', fx.p1.late, 'gaps', null, `of ${fx.p1.gaps}; largest ${round(fx.p1.maxGapS, 0)} s`),
    figure(
      'calls adaptive / fixed',
      runs.fixed.calls ? runs.adaptive.calls / runs.fixed.calls : null,
      '×',
      { op: '==', value: 1, source: 'ours' },
      `${runs.adaptive.calls} / ${runs.fixed.calls} calls; unused product slots ${runs.adaptive.unusedSlots} / ${runs.fixed.unusedSlots}`,
    ),
  ];
  for (const mode of MODES) {
    const f = per[mode];
    for (const [label, w] of [
      ['', f.whole],
      [', second half', f.second],
    ] as const) {
      figures.push(
        figure(`${mode}: changes observed${label}`, w.observed, 'changes', null, `${pct(w.observedShare)} of ${w.changes}`),
        figure(`${mode}: median delay${label}`, w.medianDelayS, 's'),
        figure(`${mode}: p90 delay${label}`, w.p90DelayS, 's'),
        figure(`${mode}: share of time current${label}`, w.currentShare, ''),
        figure(`${mode}: calls spent${label}`, w.calls, 'calls'),
      );
    }
    figures.push(figure(`${mode}: priority-1 largest gap`, f.p1.maxGapS, 's', { op: '<=', value: lateMs / 1_000, source: 'ours' }));
  }

  for (const mode of MODES) {
    if (per[mode].mismatches > 0)
      notes.push(`${mode}: ${per[mode].mismatches} refreshes saw a value the truth does not have at that instant (a benchmark bug)`);
    if (runs[mode].unusedSlots > 0)
      notes.push(`${mode}: ${runs[mode].unusedSlots} product slots went unused (fewer products due than a step's calls hold)`);
  }
  if (ceilingWhole !== null && ceilingWhole < 2)
    notes.push(
      `the 2× target is out of reach for ANY scheduler here: fixed already observes ${pct(fx.whole.observed / fx.whole.changes)} of the ${fx.whole.changes} changes, and at most min(changes, refreshes) = ${Math.min(ad.whole.changes, ad.whole.refreshes)} can be observed (${round(ceilingWhole, 2)}× fixed; second half ${ceilingSecond === null ? 'n/a' : round(ceilingSecond, 2)}×)`,
    );
  if (runs.adaptive.calls !== runs.fixed.calls) notes.push(`calls differ: adaptive ${runs.adaptive.calls}, fixed ${runs.fixed.calls}`);
  else notes.push(`both modes spent the same ${runs.fixed.calls} calls`);
  notes.push(
    `simulated clock from ${new Date(START).toISOString()} for ${p.hours} h in steps of ${p.stepS} s, ${Math.round(p.rate * p.stepS)} calls of ${MAX_ITEMS_PER_CALL} a step; ` +
      `every product due at the start (a cold start: the first hours are learning, hence the second-half figures)`,
  );
  notes.push(
    'a change counts as observed when a refresh falls at or after it and before the product\'s next change; "current": the last refreshed (price, availability) equals the true one; the priority-1 gaps include start → first refresh and last refresh → end',
  );
  const codeAfter = await codeDigests();
  if (SCHEDULER_FILES.some((f) => codeAfter[f] !== schedulerCode[f]))
    notes.push(
      'the scheduler code changed on disk during the run: the figures are those of the code loaded at the start (details.schedulerCode)',
    );
  if (inf.mongoIsEmulator) notes.push(`MongoDB is the CI stand-in (${inf.mongoVersion}): the wall times are the stand-in's`);

  const wallS = (performance.now() - wall) / 1_000;
  return {
    name: 'adaptive',
    startedAt,
    environment: environmentOf(inf),
    parameters: {
      ...p,
      country: COUNTRY,
      start: new Date(START).toISOString(),
      callsPerStep: Math.round(p.rate * p.stepS),
      fixedDemandProductsPerS: round(fixedDemand, 4),
      supplyProductsPerS: supply,
      trueChanges: totalChanges,
    },
    figures,
    details: {
      ...Object.fromEntries(
        MODES.map((mode) => {
          const r = runs[mode];
          const f = per[mode];
          return [
            mode,
            {
              whole: f.whole,
              secondHalf: f.second,
              p0Whole: { ...f.p0Whole, byBucket: undefined },
              p1: { ...f.p1, maxGapS: round(f.p1.maxGapS, 1) },
              neverRefreshed: f.neverRefreshed,
              p0MaxGapH: round(f.p0MaxGapH, 2),
              moved: r.moved,
              calls: r.calls,
              unusedSlots: r.unusedSlots,
              insertS: round(r.insertS, 1),
              wallS: round(r.wallS, 1),
              pickMsP50: round(percentile(r.pickMs, 50) ?? 0, 1),
              pickMsP99: round(percentile(r.pickMs, 99) ?? 0, 1),
              writeMsP50: round(percentile(r.writeMs, 50) ?? 0, 1),
            },
          ];
        }),
      ),
      // Which scheduler code was measured (it is being worked on): a digest of each file.
      schedulerCode,
      truthS: round(truthS, 1),
      wallS: round(wallS, 1),
    },
    notes,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const params = parseAdaptiveArgs();
  // The shared options are not used here; only their defaults and BENCH_* variables are read.
  const opts = parseBenchArgs([]);
  await runMain('adaptive', 3_600_000, async () => report(await benchAdaptive(opts, undefined, params)));
}
