import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { asins } from '../helpers/pipeline.js';
import { planCountry, plannerDepsOf, type PlannerDeps } from '../../src/scheduler/planner.js';
import { msLeftInDay, sustainableRate } from '../../src/quota/daily-usage.js';
import { productModel } from '../../src/models/product.js';
import type { Country } from '../../src/catalog/identifiers.js';

/**
 * The day's quota is spread over the day: the planner spends at most the rest of the day's calls
 * over the rest of the day, never the per-second quota until the day's calls are gone; when demand
 * exceeds that, priority 1 goes first and the shortfall is reported (metric and log line).
 */
describe('sustainableRate', () => {
  const quota = { perSecond: 1, perDay: 8_640 };
  it('spreads the day evenly: 8,640 calls a day is 0.1 a second from midnight on', () => {
    expect(msLeftInDay(new Date('2026-11-20T00:00:00Z'))).toBe(86_400_000);
    expect(sustainableRate(quota, 0, new Date('2026-11-20T00:00:00Z'))).toBeCloseTo(0.1, 6);
    expect(sustainableRate(quota, 4_320, new Date('2026-11-20T12:00:00Z'))).toBeCloseTo(0.1, 6);
  });
  it('slows down after a busy morning, never goes past the per-second quota, stops at the day\'s end', () => {
    expect(sustainableRate(quota, 8_000, new Date('2026-11-20T12:00:00Z'))).toBeCloseTo(640 / 43_200, 6);
    expect(sustainableRate({ perSecond: 1, perDay: 1e9 }, 0, new Date('2026-11-20T12:00:00Z'))).toBe(1);
    expect(sustainableRate(quota, 8_640, new Date('2026-11-20T12:00:00Z'))).toBe(0);
    expect(sustainableRate(quota, 9_000, new Date('2026-11-20T23:59:59Z'))).toBe(0);
  });
});

let t: TestContext;
let deps: PlannerDeps;
// Noon UTC: half of the quota's day is left.
const NOON = new Date('2026-11-20T12:00:00Z');
beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP,US', QUOTA_RPS: '10', QUOTA_PER_DAY: '100000', SCHEDULER_HORIZON_S: '45' });
  const { ctx } = t;
  deps = plannerDepsOf(ctx);
  for (const country of ['JP', 'US'] as const) {
    const due = new Date(NOON.getTime() - 3_600_000);
    await productModel(ctx.mongo).insertMany([
      ...asins(`B0DQ${country}1`, 100).map((asin) => ({ country, asin, priority: 1, next_refresh_at: due, created_at: due, status: 'ok' })),
      ...asins(`B0DQ${country}0`, 1_000).map((asin) => ({ country, asin, priority: 0, next_refresh_at: due, created_at: due, status: 'ok' })),
    ]);
  }
});
afterAll(async () => {
  await t?.close();
});

async function shortfall(country: Country): Promise<number | undefined> {
  return (await t.ctx.metrics.budgetShortfall.get()).values.find((v) => v.labels.country === country)?.value;
}

describe('the planner and the daily quota', () => {
  it('spends the rest of the day over the rest of the day; priority 1 first; the shortfall is measured', async () => {
    // JP has used 56,800 of 100,000 by noon: 43,200 left over 43,200 s is 1 call a second, not 10.
    await t.ctx.usage.record('JP', 56_800, NOON);
    const jp = await planCountry(deps, 'JP', NOON);
    expect(jp.budget).toBe(45);
    expect(jp.enqueued).toEqual({ batches: 45, p1: 100, p0: 350 });
    expect(jp.due).toEqual({ p1: 100, p0: 1_000 });
    // 1,100 due against 45 calls × 10 ASINs.
    expect(await shortfall('JP')).toBeCloseTo(1_100 / 450, 3);

    // US has used nothing: 100,000 over 43,200 s is 2.31 a second, still well under 10.
    const us = await planCountry(deps, 'US', NOON);
    expect(us.budget).toBe(Math.floor((100_000 / 43_200) * 45));
    expect(us.enqueued.p1).toBe(100);
  });

  it('plans nothing once the day\'s calls are spent, and starts again the next day', async () => {
    await t.ctx.usage.record('JP', 100_000, NOON);
    const spent = await planCountry(deps, 'JP', NOON);
    expect(spent.budget).toBe(0);
    expect(spent.enqueued.batches).toBe(0);
    await t.ctx.jobs.queue('JP').obliterate({ force: true });
    const nextDay = await planCountry(deps, 'JP', new Date('2026-11-21T00:00:00Z'));
    expect(nextDay.budget).toBeGreaterThan(0);
    expect(nextDay.enqueued.batches).toBe(nextDay.budget);
  });

  it('the day\'s count survives a Redis flush: MongoDB keeps a copy, and the higher count wins', async () => {
    const noon19 = new Date('2026-11-19T12:00:00Z');
    await t.ctx.usage.record('US', 56_800, noon19);
    await t.ctx.usage.settled();
    expect(await t.ctx.usage.used('US', noon19)).toBe(56_800);
    // Redis loses its data (FLUSHALL, or a restart without AOF).
    const keys = await t.ctx.redis.keys(`${t.ctx.redisPrefix}:*`);
    await t.ctx.redis.del(...keys);
    expect(await t.ctx.usage.used('US', noon19)).toBe(56_800);
    // So the planner still spreads what is left: 1 call a second, not 100,000 over half a day.
    expect((await planCountry(deps, 'US', noon19)).budget).toBe(45);
    // Calls after the flush count on both sides; MongoDB's is the higher until Redis catches up.
    await t.ctx.usage.record('US', 6, noon19);
    await t.ctx.usage.settled();
    expect(await t.ctx.usage.used('US', noon19)).toBe(56_806);
  });
});
