import { describe, expect, it } from 'vitest';
import { FRESH_STATE, firesOn, holdsNow, judge, type AlertRule, type ArmState } from '../../src/alerts/rules/triggers.js';
import { changeOf, type Point, type PriorState } from '../../src/catalog/history.js';
import type { UpstreamItem } from '../../src/core/product.js';
import { loadConfig } from '../../config/env.js';
import { deliveryJobOptions, deliveryBackoff } from '../../jobs/deliver.js';
import { configProblems } from '../helpers/config.js';

const at = new Date('2026-11-24T00:00:00Z');
const point = (patch: Partial<Point> = {}): Point => ({
  at,
  price: 1000,
  currency: 'JPY',
  availability: 'in_stock',
  buybox: true,
  rank: 100,
  ...patch,
});
const rule = (kind: AlertRule['kind'], patch: Partial<AlertRule> = {}): AlertRule => ({ kind, price: null, percent: null, ...patch });

describe('firesOn', () => {
  it('price_below: when the price goes below the threshold, not while it stays there', () => {
    const below = rule('price_below', { price: 900 });
    expect(firesOn(below, { before: point(), after: point({ price: 899 }) })).toBe(true);
    expect(firesOn(below, { before: point(), after: point({ price: 900 }) })).toBe(false);
    expect(firesOn(below, { before: point({ price: 850 }), after: point({ price: 800 }) })).toBe(false);
    expect(firesOn(below, { before: null, after: point({ price: 800 }) })).toBe(true);
    expect(firesOn(below, { before: point({ price: null }), after: point({ price: 800 }) })).toBe(true);
    expect(firesOn(below, { before: point(), after: point({ price: null }) })).toBe(false);
  });

  it('price_drop: at least the percent against the last point, in one currency', () => {
    const drop = rule('price_drop', { percent: 10 });
    expect(firesOn(drop, { before: point(), after: point({ price: 900 }) })).toBe(true);
    expect(firesOn(drop, { before: point(), after: point({ price: 901 }) })).toBe(false);
    expect(firesOn(drop, { before: point(), after: point({ price: 1100 }) })).toBe(false);
    expect(firesOn(drop, { before: null, after: point({ price: 1 }) })).toBe(false);
    expect(firesOn(drop, { before: point({ currency: 'USD' }), after: point({ price: 1 }) })).toBe(false);
    expect(firesOn(drop, { before: point({ price: null }), after: point({ price: 1 }) })).toBe(false);
  });

  it('back_in_stock: from any other availability to in stock', () => {
    const back = rule('back_in_stock');
    expect(firesOn(back, { before: point({ availability: 'out_of_stock' }), after: point() })).toBe(true);
    expect(firesOn(back, { before: point({ availability: 'preorder' }), after: point() })).toBe(true);
    expect(firesOn(back, { before: point(), after: point({ price: 1 }) })).toBe(false);
    expect(firesOn(back, { before: null, after: point() })).toBe(false);
  });

  it('any_change: every change with a state before it', () => {
    expect(firesOn(rule('any_change'), { before: point(), after: point({ rank: 101 }) })).toBe(true);
    expect(firesOn(rule('any_change'), { before: null, after: point() })).toBe(false);
  });
});

describe('availability, Buy Box and sales rank', () => {
  it('out_of_stock: from in stock to any other availability', () => {
    const out = rule('out_of_stock');
    expect(firesOn(out, { before: point(), after: point({ availability: 'out_of_stock', price: null }) })).toBe(true);
    expect(firesOn(out, { before: point(), after: point({ availability: 'backorder' }) })).toBe(true);
    expect(firesOn(out, { before: point({ availability: 'preorder' }), after: point({ availability: 'out_of_stock' }) })).toBe(false);
    expect(firesOn(out, { before: null, after: point({ availability: 'out_of_stock' }) })).toBe(false);
    expect(holdsNow(out, { before: null, after: point({ availability: 'out_of_stock' }) })).toBe(true);
    expect(holdsNow(out, { before: null, after: point() })).toBe(false);
  });

  it('buybox_change: the price becomes or stops being the Buy Box winner’s, between two prices', () => {
    const bb = rule('buybox_change');
    expect(firesOn(bb, { before: point(), after: point({ buybox: false, price: 1050 }) })).toBe(true);
    expect(firesOn(bb, { before: point({ buybox: false }), after: point() })).toBe(true);
    expect(firesOn(bb, { before: point(), after: point({ price: 900 }) })).toBe(false);
    // A stock-out is not a Buy Box change.
    expect(firesOn(bb, { before: point(), after: point({ buybox: false, price: null, availability: 'out_of_stock' }) })).toBe(false);
    expect(firesOn(bb, { before: null, after: point() })).toBe(false);
  });

  it('rank_below: into the band (rank at most the alert’s) from outside it, not again while it stays', () => {
    const top = rule('rank_below', { rank: 100 });
    expect(firesOn(top, { before: point({ rank: 150 }), after: point({ rank: 100 }) })).toBe(true);
    expect(firesOn(top, { before: point({ rank: null }), after: point({ rank: 5 }) })).toBe(true);
    expect(firesOn(top, { before: null, after: point({ rank: 5 }) })).toBe(true);
    expect(firesOn(top, { before: point({ rank: 90 }), after: point({ rank: 50 }) })).toBe(false);
    expect(firesOn(top, { before: point({ rank: 150 }), after: point({ rank: 101 }) })).toBe(false);
    expect(firesOn(top, { before: point({ rank: 150 }), after: point({ rank: null }) })).toBe(false);
    expect(holdsNow(top, { before: null, after: point({ rank: 99 }) })).toBe(true);
  });

  it('rank_above: out of the band, from within it; a band is the two kinds on one rank', () => {
    const out = rule('rank_above', { rank: 100 });
    expect(firesOn(out, { before: point({ rank: 100 }), after: point({ rank: 101 }) })).toBe(true);
    expect(firesOn(out, { before: point({ rank: 120 }), after: point({ rank: 300 }) })).toBe(false);
    expect(firesOn(out, { before: point({ rank: 50 }), after: point({ rank: null }) })).toBe(false);
    expect(firesOn(out, { before: null, after: point({ rank: 500 }) })).toBe(false);
    expect(holdsNow(out, { before: null, after: point({ rank: 500 }) })).toBe(true);
    // Ranks 80 → 150 → 60 → 70 → 120: each edge fires once per crossing.
    const ranks = [80, 150, 60, 70, 120];
    const top = rule('rank_below', { rank: 100 });
    const crossings = ranks.slice(1).map((r, i) => {
      const change = { before: point({ rank: ranks[i]! }), after: point({ rank: r }) };
      return [firesOn(top, change), firesOn(out, change)];
    });
    expect(crossings).toEqual([
      [false, true],
      [true, false],
      [false, false],
      [false, true],
    ]);
  });
});

describe('price_rise and absolute thresholds', () => {
  it('price_rise: at least the percent against the last point, in one currency', () => {
    const rise = rule('price_rise', { percent: 10 });
    expect(firesOn(rise, { before: point(), after: point({ price: 1100 }) })).toBe(true);
    expect(firesOn(rise, { before: point(), after: point({ price: 1099 }) })).toBe(false);
    expect(firesOn(rise, { before: point(), after: point({ price: 900 }) })).toBe(false);
    expect(firesOn(rise, { before: null, after: point({ price: 5000 }) })).toBe(false);
    expect(firesOn(rise, { before: point({ currency: 'USD' }), after: point({ price: 5000 }) })).toBe(false);
    expect(firesOn(rule('price_rise', { percent: 150 }), { before: point(), after: point({ price: 2500 }) })).toBe(true);
  });

  it('amount: a drop or rise of at least that many minor units', () => {
    const drop = rule('price_drop', { amount: 150 });
    expect(firesOn(drop, { before: point(), after: point({ price: 850 }) })).toBe(true);
    expect(firesOn(drop, { before: point(), after: point({ price: 851 }) })).toBe(false);
    expect(firesOn(drop, { before: point(), after: point({ price: 1200 }) })).toBe(false);
    expect(firesOn(drop, { before: point({ price: null }), after: point({ price: 1 }) })).toBe(false);
    const rise = rule('price_rise', { amount: 150 });
    expect(firesOn(rise, { before: point(), after: point({ price: 1150 }) })).toBe(true);
    expect(firesOn(rise, { before: point(), after: point({ price: 1149 }) })).toBe(false);
    expect(firesOn(rise, { before: point(), after: point({ price: 500 }) })).toBe(false);
  });

  it('a sequence of prices: each step judged against the one before', () => {
    const prices = [1000, 950, 900, 1000, 1200, 1150];
    const steps = (r: AlertRule) =>
      prices.slice(1).map((p, i) => firesOn(r, { before: point({ price: prices[i]! }), after: point({ price: p }) }));
    expect(steps(rule('price_drop', { amount: 50 }))).toEqual([true, true, false, false, true]);
    expect(steps(rule('price_rise', { amount: 100 }))).toEqual([false, false, true, true, false]);
    expect(steps(rule('price_rise', { percent: 20 }))).toEqual([false, false, false, true, false]);
  });
});

describe('drops and rises against a reference', () => {
  /** A price each day; the reference of day i is the extreme of the prices of the `days` days before it (as windowExtremes answers). */
  function daily(alert: AlertRule, prices: readonly number[], days: number, pick: (xs: number[]) => number) {
    const out: number[] = [];
    prices.forEach((price, i) => {
      if (i === 0) return;
      const reference = pick(prices.slice(Math.max(0, i - days), i));
      const change = { before: point({ price: prices[i - 1]! }), after: point({ price }) };
      if (firesOn(alert, change, reference)) out.push(i);
    });
    return out;
  }
  // 2 % a day from 1000: 980, 960, 941, 922, 904, 886, 868, 851…
  const slide = Array.from({ length: 12 }, (_, i) => Math.round(1000 * 0.98 ** i));

  it('a slide of 2 % a day fires a 10 % drop against the highest of 7 days, once; never against the previous point', () => {
    const highest = rule('price_drop', { percent: 10, reference: 'highest' });
    expect(daily(highest, slide, 7, (xs) => Math.max(...xs))).toEqual([6]);
    expect(daily(rule('price_drop', { percent: 10 }), slide, 7, () => 0)).toEqual([]);
    // After a rebound out of it, a new drop of 10 % fires again.
    expect(daily(highest, [...slide.slice(0, 8), 1000, 890], 7, (xs) => Math.max(...xs))).toEqual([6, 9]);
  });

  it('a rise against the lowest of the window, by amount', () => {
    const lowest = rule('price_rise', { amount: 100, reference: 'lowest' });
    expect(daily(lowest, [1000, 950, 900, 960, 990, 1000, 1010], 3, (xs) => Math.min(...xs))).toEqual([5]);
  });

  it('against a reference: no reference or no price, nothing; a first observation at the move fires', () => {
    const ref = rule('price_drop', { amount: 100, reference: 'at_creation' });
    expect(firesOn(ref, { before: point(), after: point({ price: 800 }) }, null)).toBe(false);
    expect(firesOn(ref, { before: point(), after: point({ price: null }) }, 1000)).toBe(false);
    expect(firesOn(ref, { before: null, after: point({ price: 900 }) }, 1000)).toBe(true);
    expect(firesOn(ref, { before: point({ price: 850 }), after: point({ price: 800 }) }, 1000)).toBe(false);
    expect(firesOn(ref, { before: point({ price: 950 }), after: point({ price: 900 }) }, 1000)).toBe(true);
  });
});

describe('holdsNow (fire_on_create)', () => {
  it('judges the current point, not a crossing', () => {
    const now = { before: point({ price: 850 }), after: point({ price: 800, availability: 'in_stock' }) };
    expect(holdsNow(rule('price_below', { price: 900 }), now)).toBe(true);
    expect(holdsNow(rule('price_below', { price: 800 }), now)).toBe(false);
    expect(holdsNow(rule('back_in_stock'), now)).toBe(true);
    expect(holdsNow(rule('back_in_stock'), { before: null, after: point({ availability: 'out_of_stock' }) })).toBe(false);
    expect(holdsNow(rule('price_drop', { amount: 50 }), now)).toBe(true);
    expect(holdsNow(rule('price_drop', { amount: 51 }), now)).toBe(false);
    expect(holdsNow(rule('price_drop', { percent: 10, reference: 'highest' }), now, 1000)).toBe(true);
    expect(holdsNow(rule('price_drop', { percent: 10, reference: 'highest' }), now, null)).toBe(false);
    expect(holdsNow(rule('any_change'), now)).toBe(false);
  });
});

/** The firings of a sequence of prices, one point an hour, judged with the state each step leaves. */
function firings(alert: AlertRule, prices: readonly (number | null)[], hours: readonly number[] = prices.map((_, i) => i)) {
  let state: ArmState = FRESH_STATE;
  let before: Point | null = null;
  const out: number[] = [];
  prices.forEach((price, i) => {
    const after = point({ price, at: new Date(at.getTime() + hours[i]! * 3_600_000) });
    const judged = judge(alert, state, { key: `k${i}`, before, after });
    if (judged.fires) out.push(i);
    state = judged.state;
    before = after;
  });
  return out;
}

describe('re-arming price_below', () => {
  const wobble = [1200, 990, 1010, 995, 1005, 990, 1001, 980];

  it('without options: every crossing fires (as before), and judge keeps no state', () => {
    expect(firings(rule('price_below', { price: 1000 }), wobble)).toEqual([1, 3, 5, 7]);
    const judged = judge(rule('price_below', { price: 1000 }), FRESH_STATE, { key: 'k', before: point(), after: point({ price: 1 }) });
    expect(judged).toEqual({ fires: true, state: FRESH_STATE });
  });

  it('rearm_above: a price wobbling around the threshold fires once, then again after going above threshold + margin', () => {
    const below = rule('price_below', { price: 1000, rearm_above: 50 });
    expect(firings(below, wobble)).toEqual([1]);
    expect(firings(below, [...wobble, 1049, 990, 1050, 990])).toEqual([1, 11]);
    // Staying below, dropping further, or no offer: nothing; the first observation below fires.
    expect(firings(below, [990, 980, null, 970, 1100, 999])).toEqual([0, 5]);
  });

  it('rearm_above 0: re-arms at the threshold, as without it', () => {
    expect(firings(rule('price_below', { price: 1000, rearm_above: 0 }), [1200, 990, 1000, 990])).toEqual([1, 3]);
  });

  it('rearm_after: no second firing within that time of the last; a crossing within it is dropped, not deferred', () => {
    const below = rule('price_below', { price: 1000, rearm_after_ms: 6 * 3_600_000 });
    // One point an hour: the crossings at 3h and 5h are within 6h of the firing at 1h; the one at 7h is not.
    expect(firings(below, wobble)).toEqual([1, 7]);
    // Below since the dropped crossing: nothing when the interval passes.
    expect(firings(below, [1200, 990, 1010, 995, 990, 980], [0, 1, 2, 3, 8, 9])).toEqual([1]);
  });

  it('rearm_above and rearm_after together: both must hold', () => {
    const below = rule('price_below', { price: 1000, rearm_above: 50, rearm_after_ms: 6 * 3_600_000 });
    expect(firings(below, [1200, 990, 1100, 990, 1100, 990], [0, 1, 2, 3, 8, 9])).toEqual([1, 5]);
    expect(firings(below, [1200, 990, 1010, 990, 1010, 990], [0, 1, 2, 20, 21, 40])).toEqual([1]);
  });

  it('the change that fired fires again (a retried batch), and a disarmed state stays disarmed', () => {
    const below = rule('price_below', { price: 1000, rearm_above: 50 });
    const change = { key: 'k1', before: point({ price: 1200 }), after: point({ price: 990 }) };
    const first = judge(below, FRESH_STATE, change);
    expect(first).toEqual({ fires: true, state: { armed: false, last_fired_at: at, last_fired_key: 'k1' } });
    expect(judge(below, first.state, change).fires).toBe(true);
    expect(judge(below, first.state, { ...change, key: 'k2' }).fires).toBe(false);
  });
});

describe('changeOf', () => {
  const item = (patch: Partial<UpstreamItem> = {}): UpstreamItem => ({
    asin: 'B0UNIT0001',
    title: null,
    brand: null,
    image: null,
    url: null,
    eans: [],
    price: { amount: 1000, currency: 'JPY' },
    availability: 'in_stock',
    buyBox: true,
    salesRank: 100,
    browseNodes: [],
    offers: 1,
    raw: null,
    ...patch,
  });
  const prior = (patch: Partial<PriorState> = {}): PriorState => ({
    asin: 'B0UNIT0001',
    price: { amount: 1000, currency: 'JPY' },
    availability: 'in_stock',
    buybox: true,
    sales_rank: 100,
    updated_at: at,
    history_at: at,
    ...patch,
  });
  const now = new Date('2026-11-24T01:00:00Z');

  it('is the first observation of a new product, with no state before', () => {
    expect(changeOf('JP', item(), undefined, now)).toEqual({
      country: 'JP',
      asin: 'B0UNIT0001',
      key: 'JP.B0UNIT0001.0',
      before: null,
      after: { at: now, price: 1000, currency: 'JPY', availability: 'in_stock', buybox: true, rank: 100 },
    });
  });

  it('is nothing when no recorded value moved', () => {
    expect(changeOf('JP', item({ title: 'another title' }), prior(), now)).toBeNull();
  });

  it.each([
    ['price', { price: { amount: 999, currency: 'JPY' } }],
    ['currency', { price: { amount: 1000, currency: 'USD' } }],
    ['no offer', { price: null }],
    ['availability', { availability: 'out_of_stock' as const }],
    ['Buy Box', { buyBox: false }],
    ['rank', { salesRank: 101 }],
  ])('is a change when the %s moves, keyed by the point before it', (_what, patch) => {
    const c = changeOf('JP', item(patch), prior(), now)!;
    expect(c.key).toBe(`JP.B0UNIT0001.${at.getTime()}`);
    expect(c.before).toMatchObject({ at, price: 1000, rank: 100 });
  });

  it('gives a product known before it had points its first point, a change only if a value moved', () => {
    expect(changeOf('JP', item(), prior({ history_at: null }), now)).toMatchObject({ before: null, key: 'JP.B0UNIT0001.0' });
    expect(changeOf('JP', item({ salesRank: 5 }), prior({ history_at: null }), now)?.before).toMatchObject({ rank: 100 });
  });
});

describe('DELIVERY_RETRY_SCHEDULE', () => {
  it("is Standard Webhooks' schedule by default: 8 attempts over about 27 hours", () => {
    const { alerts } = loadConfig({});
    expect(alerts.retryScheduleMs).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(alerts.attempts).toBe(8);
    const span = alerts.retryScheduleMs.reduce((a, b) => a + b, 0);
    expect(span).toBe(((27 * 60 + 35) * 60 + 5) * 1_000);
  });

  it('gives the delay before each retry in order, and no retry past the schedule', () => {
    const backoff = deliveryBackoff(loadConfig({ DELIVERY_RETRY_SCHEDULE: '50ms, 2s,1m' }).alerts.retryScheduleMs);
    expect([1, 2, 3, 4].map(backoff)).toEqual([50, 2_000, 60_000, -1]);
  });

  it('makes jobs of that many attempts, kept past the whole schedule', () => {
    const config = loadConfig({ DELIVERY_RETRY_SCHEDULE: '10h,10h,10h,10h,10h' });
    const opts = deliveryJobOptions(config);
    expect(opts.attempts).toBe(6);
    expect(opts.backoff).toEqual({ type: 'webhook-schedule' });
    expect((opts.removeOnComplete as { age: number }).age).toBe((50 + 24) * 3_600);
  });

  it.each(['x', '5s,,5m', '8d', '0', '5s;5m'])('refuses %j', (value) => {
    expect(configProblems({ DELIVERY_RETRY_SCHEDULE: value })).toEqual([expect.stringMatching(/^DELIVERY_RETRY_SCHEDULE /)]);
  });
});
