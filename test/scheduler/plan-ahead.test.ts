import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mongoose from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { productModel } from '../../src/models/product.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { countryTag } from '../../src/db/redis-keys.js';

/**
 * Under a tuned policy a pass spends what the due products leave of its calls on the products due
 * soonest: a call left unspent is lost. Never one seen within REFRESH_MIN_INTERVAL, one held by a
 * claim or one nobody watches; never under fixed intervals or before a policy is tuned.
 */
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

async function contextOf(scheduling: 'adaptive' | 'fixed'): Promise<TestContext> {
  return createTestContext({
    COUNTRIES: 'JP',
    SCHEDULING: scheduling,
    QUOTA_RPS: '1',
    QUOTA_PER_DAY: '100000000',
    SCHEDULER_HORIZON_S: '10',
    SCHEDULER_COALESCE: '0',
    REFRESH_MIN_INTERVAL: '5m',
  });
}

/** Five due products, three due soon, and three not to take early; returns the soon ones, soonest first. */
async function seed(t: TestContext, now: number): Promise<{ due: string[]; soon: string[]; kept: string[] }> {
  const product = (asin: string, next: number | null, last: number | null, token: string | null = null) => ({
    country: 'JP',
    asin,
    priority: 0,
    next_refresh_at: next === null ? null : new Date(next),
    last_attempt_at: last === null ? null : new Date(last),
    plan_token: token,
    created_at: new Date(now - 2 * HOUR),
    status: 'ok',
  });
  const due = ['B0AHEADD01', 'B0AHEADD02', 'B0AHEADD03', 'B0AHEADD04', 'B0AHEADD05'];
  const soon = ['B0AHEADS01', 'B0AHEADS02', 'B0AHEADS03'];
  const kept = ['B0AHEADK01', 'B0AHEADK02', 'B0AHEADK03'];
  await productModel(t.ctx.mongo).insertMany([
    ...due.map((asin, i) => product(asin, now - MINUTE * (i + 1), now - HOUR)),
    ...soon.map((asin, i) => product(asin, now + HOUR * (i + 1), now - HOUR)),
    // Seen a minute ago; claimed by a forced update; watched by nobody.
    product(kept[0]!, now + 30 * MINUTE, now - MINUTE),
    product(kept[1]!, now + 20 * MINUTE, now - 2 * HOUR, 'forced-claim'),
    product(kept[2]!, null, now - 2 * HOUR),
  ]);
  await t.ctx.redis.del(`${countryTag(t.ctx.redisPrefix, 'JP')}:plan:credit`);
  return { due, soon, kept };
}

async function plannedAsins(t: TestContext): Promise<string[]> {
  const jobs = await t.ctx.jobs.queue('JP', 'refresh').getJobs(['prioritized', 'waiting']);
  return jobs.flatMap((j) => (j.data as { asins: string[] }).asins).sort();
}

describe('calls the due products leave', () => {
  let adaptive: TestContext;
  let fixed: TestContext;
  beforeAll(async () => {
    [adaptive, fixed] = await Promise.all([contextOf('adaptive'), contextOf('fixed')]);
  });
  afterAll(async () => {
    await Promise.all([adaptive?.close(), fixed?.close()]);
  });

  it('go to the products due soonest under a tuned policy, each claimed with a lease', async () => {
    const now = Date.now();
    const { due, soon, kept } = await seed(adaptive, now);
    const untuned = await planCountry(adaptive.ctx, 'JP', new Date(now));
    expect(untuned.enqueued.p0).toBe(5);
    expect(await plannedAsins(adaptive)).toEqual([...due].sort());

    await adaptive.ctx.policies.write('JP', { price: 0.1, weight: 0, evenHours: 1, boost: 1 }, now);
    await adaptive.ctx.redis.del(`${countryTag(adaptive.ctx.redisPrefix, 'JP')}:plan:credit`);
    // Past the minute a process keeps the policy it read (none, at the pass before).
    const later = now + 61_000;
    const plan = await planCountry(adaptive.ctx, 'JP', new Date(later));
    expect(plan.enqueued.p0).toBe(3);
    expect(await plannedAsins(adaptive)).toEqual([...due, ...soon].sort());

    const products = await productModel(adaptive.ctx.mongo)
      .find({ asin: mongoose.trusted({ $in: [...soon, ...kept] }) })
      .lean();
    const byAsin = new Map(products.map((p) => [p.asin, p]));
    for (const asin of soon) {
      expect(byAsin.get(asin)!.plan_token).toEqual(expect.any(String));
      expect(byAsin.get(asin)!.next_refresh_at!.getTime()).toBe(later + adaptive.ctx.config.workers.scheduler.leaseMs);
    }
    expect(byAsin.get(kept[0]!)!.next_refresh_at!.getTime()).toBe(now + 30 * MINUTE);
    expect(byAsin.get(kept[1]!)!.plan_token).toBe('forced-claim');
    expect(byAsin.get(kept[2]!)!.next_refresh_at).toBeNull();
  });

  it('stay unspent under fixed intervals', async () => {
    const now = Date.now();
    const { due } = await seed(fixed, now);
    await fixed.ctx.policies.write('JP', { price: 0.1, weight: 0, evenHours: 1, boost: 1 }, now);
    const plan = await planCountry(fixed.ctx, 'JP', new Date(now));
    expect(plan.enqueued.p0).toBe(5);
    expect(await plannedAsins(fixed)).toEqual([...due].sort());
  });
});
