/**
 * The catalogue's optional departures from a constant rate per product: products that never
 * change (`stillShare`), and activity that swings over the day and over weeks (`dailySwing`,
 * `weeklySwing`). Whatever they are, `lookup` must answer what `truth` says holds at that instant
 * (bench:adaptive counts the refreshes that do not as mismatches), and without them the catalogue
 * is what it was.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { COUNTRY, mismatches, PARTNER_TAG, toUpstream, truthOf, valueKey } from '../../bench/lib/truth.js';
import type { Country } from '../../src/core/identifiers.js';
import { type CatalogOptions, NEVER_MS, SyntheticCatalog } from '../../src/simulator/catalog.js';
import { unit } from '../../src/simulator/hash.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
/** A Monday, 00:00 UTC. */
const T0 = Date.parse('2026-01-05T00:00:00Z');

const asinAt = (i: number): string => `B0${i.toString(36).toUpperCase().padStart(8, '0')}`;
const catalog = (seed: string, driftMs: number, extra: Partial<CatalogOptions> = {}): SyntheticCatalog =>
  new SyntheticCatalog({ seed, notFoundRate: 0, notAccessibleRate: 0, driftMs, ...extra });

/** The first `count` products whose mean interval lies in [minMs, maxMs]. */
function productsBetween(c: SyntheticCatalog, minMs: number, maxMs: number, count: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const { intervalMs } = c.schedule(COUNTRY, asinAt(i));
    if (intervalMs >= minMs && intervalMs <= maxMs) out.push(asinAt(i));
  }
  return out;
}

/** The instants of the product's changes in [since, until]: the range must hold all of them. */
function changeTimes(c: SyntheticCatalog, asin: string, since: number, until: number): number[] {
  const t = c.truth(COUNTRY, asin, since, until, 1_000_000);
  if (t.kind !== 'found') throw new Error(`${asin} is not found`);
  expect(t.truncated).toBe(false);
  return t.changes.map((ch) => ch.at);
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

describe('stillShare', () => {
  it('makes that share of products never change, their offer the same at every instant', () => {
    const c = catalog('drift-still', HOUR, { stillShare: 0.1 });
    const plain = catalog('drift-still', HOUR);
    const asins = Array.from({ length: 2_000 }, (_, i) => asinAt(i));
    const still: string[] = [];
    for (const asin of asins) {
      // One change is enough to tell: every other product changes every 3 h or more often.
      const t = c.truth(COUNTRY, asin, T0, T0 + 30 * DAY, 1);
      if (t.kind !== 'found') throw new Error(`${asin} is not found`);
      if (t.changes.length > 0) continue;
      still.push(asin);
      expect(t.meanIntervalMs).toBe(NEVER_MS);
      expect(c.schedule(COUNTRY, asin).intervalMs).toBe(NEVER_MS);
      expect(c.activity(COUNTRY, asin, T0)).toBe(0);
    }
    // The draw is Binomial(2000, 0.1): a standard deviation of 13.4 products (0.67 %); ±4 of them.
    expect(still.length / asins.length).toBeGreaterThan(0.1 - 4 * 0.0067);
    expect(still.length / asins.length).toBeLessThan(0.1 + 4 * 0.0067);
    // Every product with a finite interval does change, and keeps the pace it has without the option.
    expect(asins.filter((a) => c.schedule(COUNTRY, a).intervalMs === NEVER_MS)).toEqual(still);
    for (const asin of asins.slice(0, 100).filter((a) => !still.includes(a))) {
      expect(c.schedule(COUNTRY, asin)).toEqual(plain.schedule(COUNTRY, asin));
      expect(c.epochAt(COUNTRY, asin, T0 + 5 * DAY)).toBe(plain.epochAt(COUNTRY, asin, T0 + 5 * DAY));
    }

    const instants = [T0 - 400 * DAY, T0, T0 + 1, T0 + 7 * HOUR + 123, T0 + 9 * DAY, T0 + 30 * DAY, T0 + 3_000 * DAY];
    for (const asin of still.slice(0, 50)) {
      const seen = instants.map((t) => c.lookup(COUNTRY, asin, t, PARTNER_TAG));
      for (const s of seen) expect(s).toEqual(seen[0]);
      expect(new Set(instants.map((t) => c.epochAt(COUNTRY, asin, t))).size).toBe(1);
    }

    // NEVER_MS survives JSON (/__truth) and the benchmark's figures: a rate of 0, the last bucket.
    expect(JSON.parse(JSON.stringify({ m: NEVER_MS })).m).toBe(NEVER_MS);
    expect(HOUR / NEVER_MS).toBeLessThan(1e-300);
    expect(NEVER_MS).toBeLessThan(Infinity);
    expect(NEVER_MS - NEVER_MS).toBe(0);
  });
});

describe('dailySwing', () => {
  it('puts most changes in the busy half of the product’s day, and keeps the mean rate', () => {
    const swinging = catalog('drift-daily', HOUR, { dailySwing: 0.6 });
    const steady = catalog('drift-daily', HOUR);
    // Products that change every 1 to 3 h: about 60 to 170 changes each in 7 days.
    const asins = productsBetween(steady, HOUR, 3 * HOUR, 60);
    const since = T0;
    const until = T0 + 7 * DAY - 1; // whole days: the activity averages exactly 1 over them
    let busySwinging = 0;
    let busySteady = 0;
    const counts = { swinging: 0, steady: 0, expected: 0 };
    for (const asin of asins) {
      expect(swinging.schedule(COUNTRY, asin)).toEqual(steady.schedule(COUNTRY, asin));
      // Activity above 1 is the busy half of the product's day (its phase is its own).
      const busy = (t: number): boolean => swinging.activity(COUNTRY, asin, t) > 1;
      const a = changeTimes(swinging, asin, since, until);
      const b = changeTimes(steady, asin, since, until);
      busySwinging += a.filter(busy).length;
      busySteady += b.filter(busy).length;
      counts.swinging += a.length;
      counts.steady += b.length;
      counts.expected += (until - since) / steady.schedule(COUNTRY, asin).intervalMs;
    }
    // With activity 1 + 0.6·cos, the busy half holds (π + 1.2) / 2π = 69 % of the changes; a
    // steady product's changes fall evenly. Over some 6,000 changes the sampling error is under 1 %.
    expect(busySwinging / counts.swinging).toBeGreaterThan(0.65);
    expect(busySwinging / counts.swinging).toBeLessThan(0.73);
    expect(busySteady / counts.steady).toBeGreaterThan(0.47);
    expect(busySteady / counts.steady).toBeLessThan(0.53);
    // The mean rate is kept: about one change per mean interval (a few epochs change nothing a
    // refresh sees), and as many changes as without the swing.
    expect(counts.swinging / counts.expected).toBeGreaterThan(0.9);
    expect(counts.swinging / counts.expected).toBeLessThan(1.1);
    expect(counts.swinging / counts.steady).toBeGreaterThan(0.97);
    expect(counts.swinging / counts.steady).toBeLessThan(1.03);
  });
});

describe('weeklySwing', () => {
  /** Per product, the variance of its change count per week over its mean (1 for a Poisson process). */
  function dispersions(c: SyntheticCatalog, asins: readonly string[], weeks: number): number[] {
    return asins.map((asin) => {
      const perWeek = new Array<number>(weeks).fill(0);
      for (const at of changeTimes(c, asin, T0, T0 + weeks * WEEK - 1)) perWeek[Math.floor((at - T0) / WEEK)]!++;
      const mean = sum(perWeek) / weeks;
      return sum(perWeek.map((n) => (n - mean) ** 2)) / (weeks - 1) / mean;
    });
  }

  it('makes a product busier in some weeks than in others', () => {
    const asins = productsBetween(catalog('drift-weekly', 4 * HOUR), 3 * HOUR, 6 * HOUR, 30);
    const weeks = 8;
    const swinging = dispersions(catalog('drift-weekly', 4 * HOUR, { weeklySwing: 0.5 }), asins, weeks);
    const steady = dispersions(catalog('drift-weekly', 4 * HOUR), asins, weeks);
    const mean = (xs: number[]): number => sum(xs) / xs.length;
    // A steady product's weekly count is binomial over its slots (a change in a quarter of them):
    // dispersion 3/4, under the Poisson 1. A swinging one's weekly means move by up to half their
    // size (less when its period is near a week): for 28 to 56 changes a week, a dispersion of
    // several on average.
    expect(mean(steady)).toBeGreaterThan(0.5);
    expect(mean(steady)).toBeLessThan(1.1);
    expect(mean(swinging)).toBeGreaterThan(2.5);
    expect(mean(swinging)).toBeGreaterThan(2.5 * mean(steady));
  });
});

describe('lookup and truth with every option on', () => {
  it('agree at every instant: at random ones, and on both sides of each change', () => {
    const c = catalog('drift-invariant', 2 * DAY, { stillShare: 0.1, dailySwing: 0.5, weeklySwing: 0.4 });
    const start = T0;
    const end = T0 + 20 * DAY;
    // Intervals from 15 min (slots of 225 s) to 6 days, and still products; the few faster ones
    // would only make the truth long to list.
    const asins = productsBetween(c, 15 * 60_000, Infinity, 200);
    const valueAt = (asin: string, t: number): string => {
      const l = c.lookup(COUNTRY, asin, t, PARTNER_TAG);
      if (l.kind !== 'found') throw new Error(`${asin} is not found`);
      const it = toUpstream(l.item);
      return valueKey(it.price, it.availability);
    };
    let changes = 0;
    let checked = 0;
    let stillProducts = 0;
    for (const [p, asin] of asins.entries()) {
      const tr = truthOf(c, asin, 0, start, end);
      changes += tr.at.length;
      if (tr.intervalMs === NEVER_MS) {
        expect(tr.at).toEqual([]);
        stillProducts++;
      }
      expect(tr.at.every((at, i) => at >= start && at < end && (i === 0 || at > tr.at[i - 1]!))).toBe(true);
      // Twenty random instants, and both sides of twenty changes spread over the list.
      const refT = Array.from({ length: 20 }, (_, j) => start + Math.floor(unit('drift-instants', p, j) * (end - start)));
      const step = Math.max(1, Math.floor(tr.at.length / 20));
      for (let i = 0; i < tr.at.length; i += step) refT.push(tr.at[i]!, tr.at[i]! - 1);
      const at = refT.filter((t) => t >= start).sort((x, y) => x - y);
      const seen = at.map((t) => valueAt(asin, t));
      checked += at.length;
      expect(mismatches(tr, at, seen)).toBe(0);
    }
    // Still products, and a few thousand changes to check against.
    expect(stillProducts).toBeGreaterThan(5);
    expect(changes).toBeGreaterThan(2_000);
    expect(checked).toBeGreaterThan(8_000);
  });
});

describe('without the options', () => {
  const COUNTRIES: Country[] = ['JP', 'US'];
  /** When products change (not what they change to): schedules, epochs, and the truth's instants. */
  function timings(c: SyntheticCatalog): unknown[] {
    const out: unknown[] = [];
    for (let i = 0; i < 60; i++) {
      for (const country of COUNTRIES) {
        const asin = asinAt(i);
        out.push(c.schedule(country, asin));
        for (let j = 0; j < 5; j++) out.push(c.epochAt(country, asin, T0 + j * 7_777_777));
        const t = c.truth(country, asin, T0, T0 + DAY, 30);
        out.push(t.kind === 'found' ? { m: t.meanIntervalMs, at: t.changes.map((ch) => ch.at), truncated: t.truncated } : t.kind);
      }
    }
    return out;
  }
  const options = { seed: 'drift-defaults', notFoundRate: 0.05, notAccessibleRate: 0.05, driftMs: HOUR };

  it('gives what a catalogue without them gives, to the millisecond', () => {
    const absent = new SyntheticCatalog(options);
    const zero = new SyntheticCatalog({ ...options, stillShare: 0, dailySwing: 0, weeklySwing: 0 });
    expect(timings(zero)).toEqual(timings(absent));
    for (let i = 0; i < 20; i++) {
      const asin = asinAt(i);
      expect(zero.truth('JP', asin, T0, T0 + DAY, 30)).toEqual(absent.truth('JP', asin, T0, T0 + DAY, 30));
      expect(zero.lookup('US', asin, T0 + i * HOUR, PARTNER_TAG)).toEqual(absent.lookup('US', asin, T0 + i * HOUR, PARTNER_TAG));
      expect(absent.activity('JP', asin, T0 + i * HOUR)).toBe(1);
    }
    // Recorded from the catalogue before these options existed: a deliberate change of the pace,
    // the slots or the hashes changes it, nothing else should.
    const digest = createHash('sha256')
      .update(JSON.stringify(timings(absent)))
      .digest('hex');
    expect(digest).toBe('09101b53b94ff575f895c14683f4af9ede50d46420306bfa3dd91f8a2394a76f');
  });

  it('refuses options out of range', () => {
    expect(() => new SyntheticCatalog({ ...options, stillShare: 1.5 })).toThrow(RangeError);
    expect(() => new SyntheticCatalog({ ...options, dailySwing: 0.6, weeklySwing: 0.4 })).toThrow(RangeError);
    expect(() => new SyntheticCatalog({ ...options, dailySwing: -0.1 })).toThrow(RangeError);
  });
});
