import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { writeOutcomes } from '../../src/catalog/writes.js';
import { productModel } from '../../src/models/product.js';
import { pickDue } from '../../src/scheduling/due.js';
import { tuneCountry } from '../../src/scheduling/tune-country.js';
import { RefreshPolicies } from '../../src/scheduling/policy-store.js';
import { countryTag } from '../../src/db/redis-keys.js';
import { posteriorRate, WINDOW } from '../../src/scheduling/change-rate.js';
import { hoursToPrice } from '../../src/scheduling/refresh-objective.js';
import type { UpstreamItem } from '../../src/core/product.js';

/**
 * Change-aware scheduling on the real write path and the planner's real choice, on MongoDB, with
 * the clock in the test's hands (writeOutcomes and pickDue take `now`).
 */
const MIN = 60_000;
const HOUR = 60 * MIN;
let adaptive: TestContext;
let fixed: TestContext;
const T0 = Date.UTC(2026, 10, 24, 0, 0, 0);

beforeAll(async () => {
  const env = { COUNTRIES: 'JP', REFRESH_INTERVAL_P1: '1h', REFRESH_INTERVAL_P0: '24h', REFRESH_MIN_INTERVAL: '5m' };
  adaptive = await createTestContext({ ...env, SCHEDULING: 'adaptive' });
  fixed = await createTestContext({ ...env, SCHEDULING: 'fixed' });
});

afterAll(async () => {
  await adaptive?.close();
  await fixed?.close();
});

const item = (asin: string, amount: number): UpstreamItem => ({
  asin,
  title: 'x',
  brand: null,
  image: null,
  url: null,
  eans: [],
  price: { amount, currency: 'JPY' },
  availability: 'in_stock',
  buyBox: true,
  salesRank: 10,
  browseNodes: [],
  offers: 1,
  raw: null,
});

/** A priority-0 product's fields for a tuning to read: refreshed an hour before `now`, due an hour after. */
const seenAnHourAgo = (now: number) => ({
  last_attempt_at: new Date(now - HOUR),
  updated_at: new Date(now - HOUR),
  price: { amount: 1000, currency: 'JPY' },
  availability: 'in_stock',
  next_refresh_at: new Date(now + HOUR),
  created_at: new Date(T0),
});

async function watched(t: TestContext, asin: string, priority: 0 | 1): Promise<void> {
  await productModel(t.ctx.mongo).create({ country: 'JP', asin, priority, next_refresh_at: new Date(T0), created_at: new Date(T0) });
}

/** Refreshes `asin` at its scheduled time `n` times, its price moving each time or never; the intervals used. */
async function refreshOnSchedule(t: TestContext, asin: string, n: number, moves: boolean): Promise<number[]> {
  const products = productModel(t.ctx.mongo);
  const intervals: number[] = [];
  let now = T0;
  for (let i = 0; i < n; i++) {
    await writeOutcomes(
      t.ctx.mongo,
      t.ctx.config,
      'JP',
      [item(asin, moves ? 1000 + i : 1000)],
      { [asin]: 'found' },
      { now: new Date(now) },
    );
    const p = (await products.findOne({ country: 'JP', asin }).lean())!;
    intervals.push(p.next_refresh_at!.getTime() - now);
    now = p.next_refresh_at!.getTime();
  }
  return intervals;
}

describe('SCHEDULING=fixed', () => {
  it('keeps every product at its priority’s interval, moving or not', async () => {
    await watched(fixed, 'B0FIXMOVE1', 0);
    await watched(fixed, 'B0FIXMOVE2', 1);
    expect(new Set(await refreshOnSchedule(fixed, 'B0FIXMOVE1', 5, true))).toEqual(new Set([24 * HOUR]));
    expect(new Set(await refreshOnSchedule(fixed, 'B0FIXMOVE2', 5, false))).toEqual(new Set([HOUR]));
  });
});

describe('SCHEDULING=adaptive', () => {
  it('refreshes a product that moves every time sooner and sooner, down to REFRESH_MIN_INTERVAL', async () => {
    await watched(adaptive, 'B0ADAPFAST', 0);
    const intervals = await refreshOnSchedule(adaptive, 'B0ADAPFAST', 12, true);
    expect(intervals[1]!).toBeLessThan(intervals[0]!);
    expect(intervals.at(-1)).toBe(5 * MIN);
    const p = (await productModel(adaptive.ctx.mongo).findOne({ asin: 'B0ADAPFAST' }).lean())!;
    // One observation per refresh after the first, the oldest leaving past WINDOW.
    expect(p.rate_obs).toHaveLength(Math.min(intervals.length - 1, WINDOW));
    expect(p.change_rate!).toBeGreaterThan(6);
  });

  it('refreshes a still product later and later, up to its priority’s interval and never past it', async () => {
    await watched(adaptive, 'B0ADAPSTL0', 0);
    await watched(adaptive, 'B0ADAPSTL1', 1);
    const p0 = await refreshOnSchedule(adaptive, 'B0ADAPSTL0', 8, false);
    expect(p0[2]!).toBeGreaterThan(p0[1]!);
    expect(p0.at(-1)).toBe(24 * HOUR);
    const p1 = await refreshOnSchedule(adaptive, 'B0ADAPSTL1', 8, false);
    expect(Math.max(...p1)).toBe(HOUR);
    expect(p1.at(-1)).toBe(HOUR);
  });

  it('shows the estimate on the record: changes_per_day and next_at', async () => {
    const { token } = await adaptive.ctx.users.create({ name: 'r', email: 'rate@example.com' });
    const res = await adaptive.http.get('/api/world/asin/B0ADAPFAST?country=JP').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    const p = (await productModel(adaptive.ctx.mongo).findOne({ asin: 'B0ADAPFAST' }).lean())!;
    expect(res.body.data[0].refresh.changes_per_day).toBe(Number((p.change_rate! * 24).toPrecision(3)));
    expect(res.body.data[0].refresh.next_at).toEqual(expect.any(String));
  });

  it('plans priority 1 first, then priority 0 past its interval, then by the chance its value moved: new products, then fast ones, then slow ones', async () => {
    const t = adaptive;
    const products = productModel(t.ctx.mongo);
    await products.deleteMany({});
    const now = T0 + 10 * 24 * HOUR;
    const doc = (asin: string, priority: 0 | 1, perHour: number | null, lastAgoMs: number | null, dueAgoMs: number) => ({
      country: 'JP',
      asin,
      priority,
      change_rate: perHour,
      last_attempt_at: lastAgoMs === null ? null : new Date(now - lastAgoMs),
      next_refresh_at: new Date(now - dueAgoMs),
      created_at: new Date(T0),
    });
    await products.insertMany([
      doc('B0PLANP1SL', 1, 0.01, HOUR, 1), // priority 1, hardly moves: still first
      doc('B0PLANSLOW', 0, 0.02, 30 * HOUR, 6 * HOUR), // slow, seen 30 h ago: past priority 0's 24 h
      doc('B0PLANSLO2', 0, 0.02, 20 * HOUR, 2 * HOUR), // slow, seen 20 h ago: gain(0.4) ≈ 0.06
      doc('B0PLANFAST', 0, 12, 10 * MIN, 1), // fast, just due: 1 - e^-2 ≈ 0.86
      doc('B0PLANMID0', 0, 0.5, 2 * HOUR, HOUR), // 1 - e^-1 ≈ 0.63
      doc('B0PLANNEW0', 0, null, null, 1), // never refreshed: nothing known, first
      doc('B0PLANLATE', 0, 50, 1, -HOUR), // not due yet: never picked
    ]);
    const picked = await pickDue(t.ctx.mongo, t.ctx.config, 'JP', 10, new Date(now));
    // No policy tuned yet: ranked by changes seen, gain(λτ).
    expect(picked.map((p) => p.asin)).toEqual(['B0PLANP1SL', 'B0PLANSLOW', 'B0PLANNEW0', 'B0PLANFAST', 'B0PLANMID0', 'B0PLANSLO2']);
    expect((await pickDue(t.ctx.mongo, t.ctx.config, 'JP', 4, new Date(now))).map((p) => p.asin)).toEqual([
      'B0PLANP1SL',
      'B0PLANSLOW',
      'B0PLANNEW0',
      'B0PLANFAST',
    ]);
    // A freshness policy (gain(λτ)/(λ τ_u)) turns the order of the rest round: the slowest is worth
    // the most to the catalogue's freshness (0.51 against 0.088 and 0.008), the fastest is given up.
    const fresh = await pickDue(t.ctx.mongo, t.ctx.config, 'JP', 10, new Date(now), { weight: 1, evenHours: 6 });
    expect(fresh.map((p) => p.asin)).toEqual(['B0PLANP1SL', 'B0PLANSLOW', 'B0PLANNEW0', 'B0PLANSLO2', 'B0PLANMID0', 'B0PLANFAST']);
    // The same products under fixed scheduling: priority 1, then the most overdue.
    const fixedOrder = await pickDue(t.ctx.mongo, fixed.ctx.config, 'JP', 10, new Date(now));
    expect(fixedOrder.map((p) => p.asin)).toEqual(['B0PLANP1SL', 'B0PLANSLOW', 'B0PLANSLO2', 'B0PLANMID0', 'B0PLANFAST', 'B0PLANNEW0']);
  });

  it('takes the products whose wait reached 90 % of priority 0’s interval first, so still products never wait past it', async () => {
    const t = adaptive;
    const products = productModel(t.ctx.mongo);
    await products.deleteMany({});
    const now = T0 + 20 * 24 * HOUR;
    const doc = (asin: string, perHour: number, lastAgoMs: number, dueAgoMs: number) => ({
      country: 'JP',
      asin,
      priority: 0,
      change_rate: perHour,
      last_attempt_at: new Date(now - lastAgoMs),
      next_refresh_at: new Date(now - dueAgoMs),
      created_at: new Date(T0),
    });
    const fast = Array.from({ length: 12 }, (_, i) => doc(`B0RSVFAST${i.toString(36).toUpperCase()}`, 12, 10 * MIN, 1));
    // Still ones: worth little next to the fast ones; three of them seen 21.6 h (90 % of 24 h) ago or more.
    const still = Array.from({ length: 15 }, (_, i) =>
      doc(`B0RSVSTIL${i.toString(36).toUpperCase()}`, 0.001, (10 + i) * HOUR, (1 + i) * MIN),
    );
    await products.insertMany([...fast, ...still]);
    const picked = (await pickDue(t.ctx.mongo, t.ctx.config, 'JP', 10, new Date(now))).map((p) => p.asin);
    expect(picked).toHaveLength(10);
    expect(picked.slice(0, 3)).toEqual(['B0RSVSTILE', 'B0RSVSTILD', 'B0RSVSTILC']);
    expect(picked.slice(3).filter((a) => !a.startsWith('B0RSVFAST'))).toEqual([]);
  });

  it('tunes the country’s policy from the estimates, and a refresh sets the next one from it', async () => {
    const t = adaptive;
    const products = productModel(t.ctx.mongo);
    await products.deleteMany({});
    const now = T0 + 30 * 24 * HOUR;
    await products.insertMany(
      Array.from({ length: 200 }, (_, i) => ({
        country: 'JP',
        asin: `B0TUNE${String(i).padStart(4, '0')}`,
        priority: 0,
        // Every 10 minutes to every 20 days.
        change_rate: 6 / 1.05 ** i,
        ...seenAnHourAgo(now),
      })),
    );
    // 0.001 calls a second: 36 refreshes an hour for 200 products, an even interval of 5.6 h.
    const tuned = (await tuneCountry(t.ctx, 'JP', 0.001, now))!;
    expect(tuned.evenHours).toBeCloseTo(200 / 36, 6);
    expect(tuned.weight).toBeGreaterThan(0);
    expect(tuned.price).toBeGreaterThan(0);
    const stored = (await t.ctx.policies.read('JP', now))!;
    expect(stored).toMatchObject({ price: tuned.price, weight: tuned.weight, evenHours: tuned.evenHours, at: now });
    // The distribution it was tuned from, kept as the prior of every product's posterior.
    expect(stored.prior!.reduce((n, r) => n + r.count, 0)).toBe(200);
    // Within TUNE_EVERY_MS the stored one stands.
    expect((await tuneCountry(t.ctx, 'JP', 0.5, now + 60_000))!.price).toBe(tuned.price);

    for (const asin of ['B0TUNE0010', 'B0TUNE0100']) {
      await writeOutcomes(t.ctx.mongo, t.ctx.config, 'JP', [item(asin, 1001)], { [asin]: 'found' }, { now: new Date(now), policy: stored });
      const p = (await products.findOne({ country: 'JP', asin }).lean())!;
      // The schedule goes by the posterior, the country's estimates as prior; the record keeps the estimate.
      expect(p.sched_rate).toBeCloseTo(posteriorRate(p.rate_obs, stored.prior!)!, 12);
      expect(p.sched_rate).not.toBe(p.change_rate);
      const wanted = Math.round(Math.min(24 * HOUR, Math.max(5 * MIN, hoursToPrice(stored, p.sched_rate!) * HOUR)));
      expect(p.next_refresh_at!.getTime() - now).toBe(wanted);
    }
  });

  it('learns what sales rank says of the rate, and a best seller’s posterior starts faster', async () => {
    const t = adaptive;
    const products = productModel(t.ctx.mongo);
    await products.deleteMany({});
    const now = T0 + 40 * 24 * HOUR;
    // Best sellers (rank 10–99) change every 20 min to 2 h, the long tail (100,000+) every 1 to 5 days;
    // category says nothing (both halves in each).
    const levels = (i: number) => ({ rank: i % 2 ? 'r1' : 'r5', category: i % 4 < 2 ? 'Toys' : 'Books', offers: 'o2', price: 'p6' });
    await products.insertMany(
      Array.from({ length: 400 }, (_, i) => ({
        country: 'JP',
        asin: `B0RANK${String(i).padStart(4, '0')}`,
        priority: 0,
        change_rate: i % 2 ? 3 / (1 + (i % 37) / 6) : 1 / (24 + (i % 41) * 2.4),
        // Estimates that rest on enough looks to be learnt from (FIT_MIN_LOOKS).
        rate_obs: Array.from({ length: 6 }, () => ({ hours: 1, changed: false })),
        rate_levels: levels(i),
        ...seenAnHourAgo(now),
      })),
    );
    const tuned = (await tuneCountry(t.ctx, 'JP', 0.001, now))!;
    const stored = (await t.ctx.policies.read('JP', now))!;
    expect(stored.groups).toEqual(tuned.groups);
    const { effects, explained } = stored.groups!;
    expect(effects.rank.r1!).toBeGreaterThan(1);
    expect(effects.rank.r5!).toBeLessThan(-1);
    expect(explained.rank).toBeGreaterThan(0.5);
    expect(explained.category).toBeLessThan(0.05);

    // Two new products, one a best seller, each seen once unchanged an hour after its first look.
    const rates: number[] = [];
    for (const [asin, salesRank] of [
      ['B0NEWBEST1', 42],
      ['B0NEWTAIL1', 420_000],
    ] as const) {
      const answer = { ...item(asin, 1000), salesRank, browseNodes: [{ id: '1', name: 'Toys' }], offers: 2 };
      await products.create({ country: 'JP', asin, priority: 0, next_refresh_at: new Date(now), created_at: new Date(now) });
      await writeOutcomes(t.ctx.mongo, t.ctx.config, 'JP', [answer], { [asin]: 'found' }, { now: new Date(now), policy: stored });
      await writeOutcomes(t.ctx.mongo, t.ctx.config, 'JP', [answer], { [asin]: 'found' }, { now: new Date(now + HOUR), policy: stored });
      const p = (await products.findOne({ country: 'JP', asin }).lean())!;
      expect(p.rate_levels).toMatchObject({ rank: salesRank < 100 ? 'r1' : 'r5', category: 'Toys', offers: 'o2' });
      rates.push(p.sched_rate!);
    }
    // The same looks, different answers: the best seller's schedule goes by a rate many times the tail's.
    expect(rates[0]! / rates[1]!).toBeGreaterThan(5);

    // A model a process cannot read leaves the rest of the policy standing.
    const prefix = `swt_groups_${Date.now().toString(36)}`;
    const own = new RefreshPolicies(t.ctx.redis, prefix);
    await own.write('JP', { ...tuned, boost: 1 }, now);
    const key = `${countryTag(prefix, 'JP')}:refresh:policy`;
    await t.ctx.redis.hset(key, 'groups', JSON.stringify({ mean: 'fast' }));
    const read = (await own.read('JP', now, true))!;
    await t.ctx.redis.del(key);
    expect(read.price).toBe(tuned.price);
    expect(read.groups).toBeUndefined();
  });
});
