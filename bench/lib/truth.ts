/**
 * bench:adaptive's figures: the simulator's ground truth of each product, and what a refresh log
 * saw of it (changes observed, delays, time current, gaps), by product speed.
 */
import type { Country } from '../../src/core/identifiers.js';
import type { Availability, Price, UpstreamItem } from '../../src/core/product.js';
import type { SyntheticCatalog } from '../../src/simulator/catalog.js';
import { normalizeItem } from '../../src/upstream/creators/normalize.js';
import { readItems } from '../../src/upstream/creators/read.js';
import { rateLevelsOf, type RateLevels } from '../../src/core/rate-levels.js';
import { percentile } from './stats.js';
import { round } from './result.js';

export const COUNTRY: Country = 'JP';
export const HOUR_MS = 3_600_000;
export const PARTNER_TAG = 'shelfwatch-22';
/** A Monday, 00:00 UTC: both modes start here. */
export const START = Date.parse('2026-01-05T00:00:00Z');

/** What one mode's run logged, as the figures read it. */
export interface RefreshLog {
  /** Per product (the catalogue's order): refresh times and what each saw. */
  readonly refreshAt: number[][];
  readonly refreshValue: string[][];
  /** Calls spent in each step. */
  readonly callsByStep: number[];
  /** The products' change-rate estimates at the end (per hour; null before a first refresh). */
  readonly estimates: Map<string, number | null>;
}

/** What the scheduler compares (price amount, currency, availability), as one string. */
export function valueKey(price: Price | null, availability: Availability): string {
  return `${price?.amount ?? '-'}|${price?.currency ?? '-'}|${availability}`;
}

/** A wire item as our client reads and normalises it. */
export function toUpstream(item: Record<string, unknown>): UpstreamItem {
  const [read] = readItems([item], []);
  if (!read) throw new Error(`the simulator's item ${String(item.asin)} did not read`);
  return normalizeItem(read);
}

export interface ProductTruth {
  readonly asin: string;
  readonly priority: 0 | 1;
  /** The product's change interval in the catalogue (ms). */
  readonly intervalMs: number;
  /** What the first answer told of it that may predict its rate (src/scheduling/rate-groups.ts). */
  readonly levels: RateLevels;
  /** The value at the start, then each change in [start, end) with its new value. */
  readonly v0: string;
  readonly at: number[];
  readonly values: string[];
}

export function truthOf(catalog: SyntheticCatalog, asin: string, priority: 0 | 1, start: number, end: number): ProductTruth {
  const first = catalog.lookup(COUNTRY, asin, start, PARTNER_TAG);
  if (first.kind !== 'found') throw new Error(`${asin} is not found in the simulator`);
  const it = toUpstream(first.item);
  const t = catalog.truth(COUNTRY, asin, start, end - 1, 1_000_000);
  if (t.kind !== 'found') throw new Error(`${asin} has no truth`);
  if (t.truncated) throw new Error(`${asin}: the truth over the run is truncated`);
  return {
    asin,
    priority,
    intervalMs: t.meanIntervalMs,
    levels: rateLevelsOf(it),
    v0: valueKey(it.price, it.availability),
    at: t.changes.map((c) => c.at),
    values: t.changes.map((c) => valueKey(c.price, c.availability)),
  };
}

/** First index i with xs[i] >= v (xs sorted). */
function lowerBound(xs: readonly number[], v: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

interface Tally {
  products: number;
  changes: number;
  observed: number;
  delaysS: number[];
  currentMs: number;
  windowMs: number;
  refreshes: number;
}

const emptyTally = (): Tally => ({ products: 0, changes: 0, observed: 0, delaysS: [], currentMs: 0, windowMs: 0, refreshes: 0 });

/** One product's part of the figures over [from, end): changes from `from` on, time current, refreshes. */
function tallyProduct(tr: ProductTruth, refT: readonly number[], refV: readonly string[], from: number, end: number, into: Tally): void {
  into.products++;
  const n = tr.at.length;
  for (let i = lowerBound(tr.at, from); i < n; i++) {
    const a = tr.at[i]!;
    const until = i + 1 < n ? tr.at[i + 1]! : end;
    into.changes++;
    const j = lowerBound(refT, a);
    if (j < refT.length && refT[j]! < until) {
      into.observed++;
      into.delaysS.push((refT[j]! - a) / 1_000);
    }
  }
  into.refreshes += refT.length - lowerBound(refT, from);
  // Time current: merge the truth's changes and the refreshes from `from` to `end`.
  let ti = 0;
  let truthNow = tr.v0;
  while (ti < n && tr.at[ti]! <= from) truthNow = tr.values[ti++]!;
  let ri = 0;
  let known: string | null = null;
  while (ri < refT.length && refT[ri]! <= from) known = refV[ri++]!;
  let cur = from;
  while (cur < end) {
    const next = Math.min(ti < n ? tr.at[ti]! : Infinity, ri < refT.length ? refT[ri]! : Infinity, end);
    if (known !== null && known === truthNow) into.currentMs += next - cur;
    cur = next;
    while (ti < n && tr.at[ti]! <= cur) truthNow = tr.values[ti++]!;
    while (ri < refT.length && refT[ri]! <= cur) known = refV[ri++]!;
  }
  into.windowMs += end - from;
}

/** Refreshes whose value is not the truth's at that instant: 0 unless the benchmark is wrong. */
export function mismatches(tr: ProductTruth, refT: readonly number[], refV: readonly string[]): number {
  let bad = 0;
  for (let j = 0; j < refT.length; j++) {
    const i = lowerBound(tr.at, refT[j]! + 1) - 1; // last change at or before the refresh
    if ((i < 0 ? tr.v0 : tr.values[i]!) !== refV[j]) bad++;
  }
  return bad;
}

/** By true change interval: where the changes are, and where each mode spends its refreshes. */
export const BUCKETS: { readonly name: string; readonly maxMs: number }[] = [
  { name: '< 1 h', maxMs: HOUR_MS },
  { name: '1-4 h', maxMs: 4 * HOUR_MS },
  { name: '4-12 h', maxMs: 12 * HOUR_MS },
  { name: '12-48 h', maxMs: 48 * HOUR_MS },
  { name: '>= 48 h', maxMs: Infinity },
];
const bucketOf = (intervalMs: number): number => BUCKETS.findIndex((b) => intervalMs < b.maxMs);

export interface WindowFigures {
  readonly changes: number;
  readonly observed: number;
  readonly observedShare: number;
  readonly medianDelayS: number | null;
  readonly p90DelayS: number | null;
  readonly currentShare: number;
  readonly refreshes: number;
  readonly calls: number;
  readonly byBucket: Record<string, unknown>[];
}

export function windowFigures(
  run: RefreshLog,
  truths: readonly ProductTruth[],
  from: number,
  end: number,
  stepMs: number,
  priority?: 0 | 1,
): WindowFigures {
  const all = emptyTally();
  const buckets = BUCKETS.map(emptyTally);
  const rates: { est: number[]; truth: number[]; ratio: number[] }[] = BUCKETS.map(() => ({ est: [], truth: [], ratio: [] }));
  truths.forEach((tr, k) => {
    if (priority !== undefined && tr.priority !== priority) return;
    const b = bucketOf(tr.intervalMs);
    tallyProduct(tr, run.refreshAt[k]!, run.refreshValue[k]!, from, end, all);
    tallyProduct(tr, run.refreshAt[k]!, run.refreshValue[k]!, from, end, buckets[b]!);
    const est = run.estimates.get(tr.asin);
    const truth = HOUR_MS / tr.intervalMs;
    if (est !== null && est !== undefined) {
      rates[b]!.est.push(est);
      rates[b]!.ratio.push(est / truth);
    }
    rates[b]!.truth.push(truth);
  });
  const firstStep = Math.ceil((from - START) / stepMs);
  return {
    changes: all.changes,
    observed: all.observed,
    observedShare: all.changes ? all.observed / all.changes : 0,
    medianDelayS: percentile(all.delaysS, 50),
    p90DelayS: percentile(all.delaysS, 90),
    currentShare: all.windowMs ? all.currentMs / all.windowMs : 0,
    refreshes: all.refreshes,
    calls: run.callsByStep.slice(firstStep).reduce((x, y) => x + y, 0),
    byBucket: BUCKETS.map((bk, i) => {
      const t = buckets[i]!;
      return {
        bucket: bk.name,
        products: t.products,
        changes: t.changes,
        observed: t.observed,
        refreshes: t.refreshes,
        refreshShare: all.refreshes ? round(t.refreshes / all.refreshes, 3) : 0,
        /** Refreshes that observed a change (each observes at most one). */
        productive: t.refreshes ? round(t.observed / t.refreshes, 3) : 0,
        currentShare: t.windowMs ? round(t.currentMs / t.windowMs, 3) : 0,
        trueRatePerH: round(percentile(rates[i]!.truth, 50) ?? 0, 3),
        estRatePerH: rates[i]!.est.length ? round(percentile(rates[i]!.est, 50)!, 3) : null,
        estOverTrue: rates[i]!.ratio.length ? round(percentile(rates[i]!.ratio, 50)!, 2) : null,
      };
    }),
  };
}

/** Gaps between a priority-1 product's refreshes, from the start and to the end included. */
export function p1Gaps(run: RefreshLog, truths: readonly ProductTruth[], end: number, lateMs: number) {
  let maxGap = 0;
  let late = 0;
  let gaps = 0;
  truths.forEach((tr, k) => {
    if (tr.priority !== 1) return;
    let prev = START;
    for (const r of [...run.refreshAt[k]!, end]) {
      const gap = r - prev;
      gaps++;
      if (gap > maxGap) maxGap = gap;
      if (gap > lateMs) late++;
      prev = r;
    }
  });
  return { maxGapS: maxGap / 1_000, late, gaps };
}

/**
 * The largest gap between a priority-0 product's refreshes that ends at or after `from` (the end
 * counts as a refresh; with `from` at the start, the wait from the start to the first refresh too).
 */
export function p0MaxGapMs(run: RefreshLog, truths: readonly ProductTruth[], end: number, from = START): number {
  let max = 0;
  truths.forEach((tr, k) => {
    if (tr.priority !== 0) return;
    let prev = START;
    for (const r of [...run.refreshAt[k]!, end]) {
      if (r >= from) max = Math.max(max, r - prev);
      prev = r;
    }
  });
  return max;
}
