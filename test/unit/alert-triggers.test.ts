import { describe, expect, it } from 'vitest';
import { firesOn, type AlertRule } from '../../src/alerts/triggers.js';
import { changeOf, type Point, type PriorState } from '../../src/catalog/history.js';
import type { UpstreamItem } from '../../src/catalog/product.js';
import { loadConfig } from '../../config/env.js';
import { deliveryJobOptions, webhookBackoff } from '../../src/alerts/delivery-queue.js';
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

describe('WEBHOOK_RETRY_SCHEDULE', () => {
  it("is Standard Webhooks' schedule by default: 8 attempts over about 27 hours", () => {
    const { alerts } = loadConfig({});
    expect(alerts.retryScheduleMs).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(alerts.attempts).toBe(8);
    const span = alerts.retryScheduleMs.reduce((a, b) => a + b, 0);
    expect(span).toBe(((27 * 60 + 35) * 60 + 5) * 1_000);
  });

  it('gives the delay before each retry in order, and no retry past the schedule', () => {
    const backoff = webhookBackoff(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '50ms, 2s,1m' }).alerts.retryScheduleMs);
    expect([1, 2, 3, 4].map(backoff)).toEqual([50, 2_000, 60_000, -1]);
  });

  it('makes jobs of that many attempts, kept past the whole schedule', () => {
    const config = loadConfig({ WEBHOOK_RETRY_SCHEDULE: '10h,10h,10h,10h,10h' });
    const opts = deliveryJobOptions(config);
    expect(opts.attempts).toBe(6);
    expect(opts.backoff).toEqual({ type: 'webhook-schedule' });
    expect((opts.removeOnComplete as { age: number }).age).toBe((50 + 24) * 3_600);
  });

  it.each(['x', '5s,,5m', '8d', '0', '5s;5m'])('refuses %j', (value) => {
    expect(configProblems({ WEBHOOK_RETRY_SCHEDULE: value })).toEqual([expect.stringMatching(/^WEBHOOK_RETRY_SCHEDULE /)]);
  });
});
