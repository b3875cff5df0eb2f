/**
 * Change-aware scheduling, part 1: each simulated product moves at its own, heavy-tailed rate
 * (SIMULATOR_DRIFT_MS is the mean interval over products), and `GET /__truth` tells when a
 * product's price or availability changed, as the client reads them through getItems.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Country } from '../../src/core/identifiers.js';
import type { Availability, Price } from '../../src/core/product.js';
import { findAsins, ManualClock, startHarness, type SimHarness } from './helpers.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SEED = 'truth-test';

interface TruthBody {
  country: Country;
  asin: string;
  since: number;
  until: number;
  mean_interval_ms: number;
  changes: { at: number; price: Price | null; availability: Availability }[];
  truncated: boolean;
}

const open: SimHarness[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((h) => h.close()));
});

async function harness(extra: Record<string, string> = {}, clock?: ManualClock): Promise<SimHarness> {
  const h = await startHarness({ SIMULATOR_SEED: SEED, SIMULATOR_DRIFT_MS: String(HOUR), ...extra }, clock);
  open.push(h);
  return h;
}

async function get(h: SimHarness, query: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${h.sim.url}/__truth?${query}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function truth(h: SimHarness, country: Country, asin: string, since?: number, until?: number): Promise<TruthBody> {
  const q = new URLSearchParams({ country, asin });
  if (since !== undefined) q.set('since', String(since));
  if (until !== undefined) q.set('until', String(until));
  const { status, body } = await get(h, q.toString());
  expect(status, JSON.stringify(body)).toBe(200);
  return body as unknown as TruthBody;
}

/** ASINs B0 + 8 base-36 digits, counting up (existing or not: every ASIN has a schedule). */
const asinAt = (i: number): string => `B0${i.toString(36).toUpperCase().padStart(8, '0')}`;

const quantile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

describe('per-product change rates', () => {
  it('SIMULATOR_DRIFT_MS is the mean interval over products, and the intervals are heavy-tailed', async () => {
    const h = await harness();
    const intervals = Array.from({ length: 10_000 }, (_, i) => h.sim.catalog.schedule('JP', asinAt(i)).intervalMs).sort((a, b) => a - b);
    const mean = intervals.reduce((a, b) => a + b, 0) / intervals.length;
    expect(Math.abs(mean / HOUR - 1)).toBeLessThan(0.05);
    // Within [max(1 s, driftMs / 1000), 3 * driftMs].
    expect(intervals[0]).toBeGreaterThanOrEqual(3_600);
    expect(intervals.at(-1)).toBeLessThanOrEqual(3 * HOUR);
    // Most products change rarely (the median near the mean), a few every few minutes.
    expect(quantile(intervals, 0.5)).toBeGreaterThan(0.6 * mean);
    expect(quantile(intervals, 0.1)).toBeLessThan(0.05 * mean);
    expect(quantile(intervals, 0.03)).toBeLessThan(60_000);
    const rates = intervals.map((m) => 1 / m); // descending, as intervals ascend
    const total = rates.reduce((a, b) => a + b, 0);
    const top = rates.slice(0, rates.length / 10).reduce((a, b) => a + b, 0);
    expect(top / total).toBeGreaterThan(0.4);
  });

  it('counts the changes /__truth reports: the top tenth of products by rate make a large share of them', async () => {
    const h = await harness();
    const now = h.clock.t;
    const asins = findAsins(h.sim, 'US', 'found', 200);
    const counts: number[] = [];
    for (const asin of asins) {
      const t = await truth(h, 'US', asin, now - DAY, now);
      const { intervalMs } = h.sim.catalog.schedule('US', asin);
      expect(t.mean_interval_ms).toBe(intervalMs);
      // About one change per mean interval (changes start at slot boundaries, a quarter of the slots).
      const { slotMs, phaseMs } = h.sim.catalog.schedule('US', asin);
      const expected = DAY / intervalMs;
      if (expected >= 50 && !t.truncated) {
        expect(t.changes.length).toBeGreaterThan(0.7 * expected);
        expect(t.changes.length).toBeLessThan(1.3 * expected);
      }
      for (const c of t.changes) {
        expect(c.at).toBeGreaterThanOrEqual(now - DAY);
        expect(c.at).toBeLessThanOrEqual(now);
        expect((c.at + phaseMs) % slotMs).toBe(0);
      }
      counts.push(t.changes.length);
    }
    counts.sort((a, b) => b - a);
    const total = counts.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(200 * 24); // more than one change per product-hour on average
    expect(counts.slice(0, counts.length / 10).reduce((a, b) => a + b, 0) / total).toBeGreaterThan(0.35);
    // Most products change less often than the average product-rate.
    expect(counts[Math.floor(counts.length / 2)]!).toBeLessThan(total / counts.length);
  });

  it('is deterministic: the same seed gives the same truth, another seed another', async () => {
    const a = await harness();
    const b = await harness({}, new ManualClock(a.clock.t));
    const c = await harness({ SIMULATOR_SEED: `${SEED}-other` }, new ManualClock(a.clock.t));
    const asins = [...findAsins(a.sim, 'JP', 'found', 5), 'B0D1234567'];
    const of = async (h: SimHarness) => Promise.all(asins.map((asin) => truth(h, 'JP', asin)));
    const [ta, tb, tc] = await Promise.all([of(a), of(b), of(c)]);
    expect(tb).toEqual(ta);
    expect(tc).not.toEqual(ta);
    expect(tc.map((t) => t.mean_interval_ms)).not.toEqual(ta.map((t) => t.mean_interval_ms));
  });
});

describe('GET /__truth', () => {
  it('agrees with getItems on both sides of each reported change', async () => {
    const h = await harness();
    const start = h.clock.t;
    // The fastest few of 300 products, and the quick start's product: several changes within 6 h.
    const asins = findAsins(h.sim, 'JP', 'found', 300)
      .sort((x, y) => h.sim.catalog.schedule('JP', x).intervalMs - h.sim.catalog.schedule('JP', y).intervalMs)
      .slice(0, 4);
    asins.push('B0D1234567');
    const jp = h.port('JP');
    const seen = async (asin: string): Promise<{ price: Price | null; availability: Availability }> => {
      const { items } = await jp.getItems([asin]);
      expect(items).toHaveLength(1);
      return { price: items[0]!.price, availability: items[0]!.availability };
    };
    // The clock only moves forward (tokens and quota follow it): walk the changes of all products in time order.
    const events: { at: number; asin: string; before: TruthBody['changes'][number] | undefined; after: TruthBody['changes'][number] }[] =
      [];
    for (const asin of asins) {
      const t = await truth(h, 'JP', asin, start + 1, start + 6 * HOUR);
      expect(t.changes.length).toBeGreaterThan(1);
      t.changes.forEach((c, i) => events.push({ at: c.at, asin, before: t.changes[i - 1], after: c }));
    }
    events.sort((x, y) => x.at - y.at);
    let priceMoves = 0;
    for (const e of events.slice(0, 60)) {
      h.clock.t = e.at - 1;
      const before = await seen(e.asin);
      if (e.before) expect(before).toEqual({ price: e.before.price, availability: e.before.availability });
      expect(before).not.toEqual({ price: e.after.price, availability: e.after.availability });
      h.clock.t = e.at;
      expect(await seen(e.asin)).toEqual({ price: e.after.price, availability: e.after.availability });
      if (e.before && e.before.price?.amount !== e.after.price?.amount) priceMoves++;
    }
    expect(priceMoves).toBeGreaterThan(20);
  });

  it('reports nothing between two changes: getItems answers the same throughout', async () => {
    const h = await harness();
    const start = h.clock.t;
    const asin = 'B0D1234567';
    const t = await truth(h, 'US', asin, start, start + 12 * HOUR);
    expect(t.changes.length).toBeGreaterThan(1);
    const [first, second] = t.changes;
    const us = h.port('US');
    for (const at of [first!.at, Math.floor((first!.at + second!.at) / 2), second!.at - 1]) {
      h.clock.t = at;
      const [item] = (await us.getItems([asin])).items;
      expect({ price: item!.price, availability: item!.availability }).toEqual({ price: first!.price, availability: first!.availability });
    }
  });

  it('defaults to the last 24 h of the simulator clock and lists at most 10,000 changes', async () => {
    const h = await harness();
    const now = h.clock.t;
    const t = await truth(h, 'JP', 'B0D1234567');
    expect([t.since, t.until]).toEqual([now - DAY, now]);
    expect(t.truncated).toBe(false);
    expect(t.changes.length).toBeGreaterThan(0);
    expect(t).toEqual(await truth(h, 'JP', 'b0d1234567', now - DAY, now));
    expect((await truth(h, 'JP', 'B0D1234567', undefined, now)).changes).toEqual(t.changes);
    expect((await truth(h, 'JP', 'B0D1234567', now - DAY)).changes).toEqual(t.changes);

    const fastest = findAsins(h.sim, 'JP', 'found', 300).sort(
      (x, y) => h.sim.catalog.schedule('JP', x).intervalMs - h.sim.catalog.schedule('JP', y).intervalMs,
    )[0]!;
    expect(h.sim.catalog.schedule('JP', fastest).intervalMs).toBeLessThan(HOUR / 60);
    const long = await truth(h, 'JP', fastest, now - 30 * DAY, now);
    expect(long.changes).toHaveLength(10_000);
    expect(long.truncated).toBe(true);
    // The rest follows on from the last one listed.
    const next = await truth(h, 'JP', fastest, long.changes.at(-1)!.at + 1, now);
    expect(next.changes[0]!.at).toBeGreaterThan(long.changes.at(-1)!.at);
    const sorted = long.changes.every((c, i) => i === 0 || c.at > long.changes[i - 1]!.at);
    expect(sorted).toBe(true);
  });

  it('answers 404 for ASINs that are not found or not accessible', async () => {
    const h = await harness();
    for (const kind of ['not_found', 'not_accessible'] as const) {
      const [asin] = findAsins(h.sim, 'US', kind, 1);
      const res = await get(h, `country=US&asin=${asin}`);
      expect(res.status).toBe(404);
      expect(typeof res.body.message).toBe('string');
    }
  });

  it.each([
    ['', 'country'],
    ['asin=B0D1234567', 'country'],
    ['country=JP', 'asin'],
    ['country=GB&asin=B0D1234567', 'country'], // Amazon's code is UK
    ['country=JP&asin=SHORT', 'asin'],
    ['country=JP&asin=B0D1234567&asin=B0D1234568', 'asin'],
    ['country=JP&asin=B0D1234567&since=yesterday', 'since'],
    ['country=JP&asin=B0D1234567&until=-5', 'until'],
    ['country=JP&asin=B0D1234567&since=1.5', 'since'],
    ['country=JP&asin=B0D1234567&since=2000&until=1000', 'since'],
    ['country=JP&asin=B0D1234567&from=1000', 'from'],
  ])('answers 400 with a message for ?%s', async (query, names) => {
    const h = await harness();
    const res = await get(h, query);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body)).toEqual(['message']);
    expect(res.body.message).toContain(names);
  });
});
