import mongoose from 'mongoose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { asins } from '../helpers/pipeline.js';
import { planCountry } from '../../src/scheduling/planner.js';
import type { JobContext } from '../../jobs/context.js';
import { QuotaGovernor } from '../../src/quota/governor.js';
import { productModel } from '../../src/models/product.js';
import { quotaUsageModel } from '../../src/models/quota-usage.js';
import type { Country } from '../../src/core/identifiers.js';
import { dropKeys } from '../helpers/redis-keys.js';

/**
 * The day's quota is spread over the day: each planning pass spends only the credit accrued since
 * the last one at the sustainable rate (what the day still allows scheduled work, over the rest of
 * the day). Driven here through a simulated day: the planner and a governor on the simulated clock,
 * with the "workers" taking one permit per planned batch and marking its products refreshed.
 */
let t: TestContext;
const DAY = Date.parse('2026-11-20T00:00:00Z');

beforeAll(async () => {
  t = await createTestContext({
    COUNTRIES: 'JP',
    QUOTA_RPS: '1',
    QUOTA_PER_DAY: '1440',
    FORCED_RESERVE: '0.05',
    SCHEDULER_COALESCE: '0',
    SCHEDULER_HORIZON_S: '1800',
  });
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  await productModel(t.ctx.mongo).deleteMany({});
  // The copy of the last test's calls goes out first, or it would land in this test's day.
  await t.ctx.usage.settled();
  await quotaUsageModel(t.ctx.mongo).deleteMany({});
  await dropKeys(t.ctx.redis, t.ctx.redisPrefix);
});

/** A governor and planner on a clock the test moves. */
function simulated(perDay: number): { deps: JobContext; quota: QuotaGovernor; clock: { now: number } } {
  const clock = { now: DAY };
  const q = t.ctx.config.quota;
  const quota = new QuotaGovernor(t.ctx.redis, t.ctx.redisPrefix, {
    quotas: { JP: { perSecond: 1, burst: 1, perDay } },
    dayTimeZone: 'UTC',
    shares: q.shares,
    forcedReserve: q.forcedReserve,
    usage: t.ctx.usage,
    clock: () => clock.now,
  });
  const deps: JobContext = {
    ...t.ctx,
    quota,
    config: { ...t.ctx.config, quota: { ...q, quotas: { ...q.quotas, JP: { perSecond: 1, burst: 1, perDay } } } },
  };
  return { deps, quota, clock };
}

/** Runs the planner every `tickS` over the day; each planned batch takes a permit and is refreshed. Calls made by each hour's end. */
async function runDay(
  perDay: number,
  tickS: number,
  country: Country = 'JP',
): Promise<{ byHour: number[]; p1Late: number; p0Refreshed: number }> {
  const { deps, quota, clock } = simulated(perDay);
  const products = productModel(t.ctx.mongo);
  const byHour: number[] = [];
  let calls = 0;
  let p1Late = 0;
  for (clock.now = DAY; clock.now < DAY + 86_400_000; clock.now += tickS * 1_000) {
    const now = new Date(clock.now);
    await planCountry(deps, country, now);
    const jobs = await t.ctx.jobs.queue(country).getJobs(['prioritized', 'wait']);
    const tick = clock.now;
    for (const job of jobs) {
      const data = job.data as { asins: string[]; due: number };
      // The calls of a tick follow each other at the pace (1/s).
      clock.now += 1_000;
      await quota.permit(country, 'refresh');
      calls++;
      // An hourly product refreshed more than two ticks after it came due was late.
      const rows = await products.find({ country, asin: mongoose.trusted({ $in: data.asins }) }).lean();
      for (const p of rows) if (p.priority === 1 && data.due < clock.now - 2 * tickS * 1_000 - 3_600_000) p1Late++;
      await products.bulkWrite(
        rows.map((p) => ({
          updateOne: {
            filter: { _id: p._id },
            update: {
              $set: {
                next_refresh_at: new Date(clock.now + (p.priority === 1 ? 3_600_000 : 86_400_000)),
                last_attempt_at: now,
                plan_token: null,
              },
            },
          },
        })),
      );
    }
    await t.ctx.jobs.queue(country).obliterate({ force: true });
    clock.now = tick;
    const hour = Math.floor((clock.now - DAY) / 3_600_000);
    byHour[hour] = calls;
  }
  quota.close();
  const p0Refreshed = await products.countDocuments({ country, priority: 0, last_attempt_at: mongoose.trusted({ $ne: null }) });
  return { byHour, p1Late, p0Refreshed };
}

async function watched(p1: number, p0: number): Promise<void> {
  const due = new Date(DAY);
  await productModel(t.ctx.mongo).insertMany([
    ...asins('B0DQ1', p1).map((asin) => ({ country: 'JP', asin, priority: 1, next_refresh_at: due, created_at: due, status: 'ok' })),
    ...asins('B0DQ0', p0).map((asin) => ({ country: 'JP', asin, priority: 0, next_refresh_at: due, created_at: due, status: 'ok' })),
  ]);
}

describe('a simulated day with demand above the daily cap', () => {
  it('spends at most 52 % by noon and at least 97 % by midnight; priority 1 keeps its interval', async () => {
    // 288 calls a day (one every 5 minutes). Priority 1: 10 hourly products = 24 calls a day;
    // priority 0: 4,000 daily products = 400 calls a day. Demand is 1.5 times the cap.
    await watched(10, 4_000);
    const day = await runDay(288, 600);
    expect(day.byHour[11]! / 288).toBeLessThanOrEqual(0.52);
    expect(day.byHour[11]! / 288).toBeGreaterThanOrEqual(0.45);
    expect(day.byHour[23]! / 288).toBeGreaterThanOrEqual(0.97);
    expect(day.byHour[23]!).toBeLessThanOrEqual(288);
    expect(day.p1Late).toBe(0);
    expect(day.p0Refreshed).toBeGreaterThan(2_000);
  });

  it('still plans with a cap of 100 calls a day (a fraction of a call per tick is carried)', async () => {
    await watched(0, 5_000);
    const day = await runDay(100, 900);
    expect(day.byHour[5]!).toBeGreaterThan(0);
    expect(day.byHour[23]!).toBeGreaterThanOrEqual(97);
    expect(day.byHour[23]!).toBeLessThanOrEqual(100);
  });
});

describe("the planner against the day's count", () => {
  it('plans nothing once scheduled work has spent its part of the day, and starts again the next day', async () => {
    await watched(10, 100);
    const { deps, quota, clock } = simulated(20);
    clock.now = DAY + 12 * 3_600_000;
    // The whole day at once: 20 permits, less the reserve of forced updates.
    let spent = 0;
    for (;;) {
      try {
        clock.now += 1_000;
        await quota.permit('JP', 'refresh');
        spent++;
      } catch {
        break;
      }
    }
    expect(spent).toBeLessThan(20);
    const plan = await planCountry(deps, 'JP', new Date(clock.now));
    expect(plan.budget).toBe(0);
    expect(plan.due).toBeNull();
    clock.now = DAY + 86_400_000;
    const next = await planCountry(deps, 'JP', new Date(clock.now));
    expect(next.enqueued.batches).toBeGreaterThan(0);
    quota.close();
  });

  it("the day's count survives a Redis flush: the governor starts again from the MongoDB copy", async () => {
    await watched(0, 100);
    const { deps, quota, clock } = simulated(1_000);
    clock.now = DAY + 12 * 3_600_000;
    for (let i = 0; i < 500; i++) {
      clock.now += 1_000;
      await quota.permit('JP', 'refresh');
    }
    await t.ctx.usage.settled();
    await dropKeys(t.ctx.redis, t.ctx.redisPrefix);
    expect((await quota.day('JP')).used).toBe(500);
    // Half the day spent by noon: the rest at the even pace (500 over 43,200 s, a horizon's worth
    // of it now), not 1,000 more.
    const plan = await planCountry(deps, 'JP', new Date(clock.now));
    expect(plan.budget).toBeLessThanOrEqual(Math.ceil((500 / 43_200) * 1_800));
    quota.close();
  });
});
