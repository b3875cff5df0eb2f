import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mongoose from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { asins } from '../helpers/pipeline.js';
import { productModel } from '../../src/models/product.js';
import { planCountry, STEP_CALLS } from '../../src/scheduling/planner.js';
import { countryTag } from '../../src/db/redis-keys.js';

/**
 * A planning pass with a budget of hundreds of calls is planned in steps: every MongoDB command it
 * sends (counts, picks, the claim and its read-back) touches at most one step's 1,000 products,
 * however large the backlog, and the pass still plans its whole budget.
 */
let t: TestContext;
beforeAll(async () => {
  t = await createTestContext({
    COUNTRIES: 'JP',
    QUOTA_RPS: '25',
    QUOTA_PER_DAY: '100000000',
    SCHEDULER_HORIZON_S: '10',
    SCHEDULER_COALESCE: '0',
  });
});
afterAll(async () => {
  mongoose.set('debug', false);
  await t?.close();
});

/** The largest list or limit in one command's arguments: $in lists, `limit` options, limit() calls. */
function largest(value: unknown, seen = new Set<unknown>()): number {
  if (value === null || typeof value !== 'object' || seen.has(value)) return 0;
  seen.add(value);
  let n = 0;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (k === '$in' && Array.isArray(v)) n = Math.max(n, v.length);
    if (k === 'limit' && typeof v === 'number') n = Math.max(n, v);
    n = Math.max(n, largest(v, seen));
  }
  return n;
}

describe('planning steps', () => {
  it(`plans a budget of 250 calls in steps of ${STEP_CALLS}, no command over 1,001 products, every due product claimed once`, async () => {
    const list = asins('B0STEP', 3_000);
    const past = Date.now() - 60_000;
    await productModel(t.ctx.mongo).insertMany(
      list.map((asin, i) => ({
        country: 'JP',
        asin,
        priority: i < 500 ? 1 : 0,
        next_refresh_at: new Date(past + i),
        created_at: new Date(),
        status: 'ok',
      })),
    );
    const commands: { method: string; size: number }[] = [];
    mongoose.set('debug', (collection: string, method: string, ...args: unknown[]) => {
      if (collection === 'products') commands.push({ method, size: largest(args) });
    });
    await t.ctx.redis.del(`${countryTag(t.ctx.redisPrefix, 'JP')}:plan:credit`);
    const plan = await planCountry(t.ctx, 'JP');
    mongoose.set('debug', false);

    expect(plan.budget).toBe(250);
    expect(plan.enqueued).toEqual({ batches: 250, p1: 500, p0: 2_000 });
    // A bounded count: more is due than a step takes, and that is all a step asks.
    expect(plan.due).toEqual({ p1: 500, p0: STEP_CALLS * 10 + 1 });
    expect(commands.length).toBeGreaterThan(0);
    expect(Math.max(...commands.map((c) => c.size))).toBeLessThanOrEqual(STEP_CALLS * 10 + 1);
    expect(commands.filter((c) => c.method === 'updateMany')).toHaveLength(3);

    const jobs = await t.ctx.jobs.queue('JP', 'refresh').getJobs(['prioritized', 'waiting']);
    const planned = jobs.flatMap((j) => (j.data as { asins: string[] }).asins);
    expect(new Set(planned).size).toBe(2_500);
    expect(planned).toHaveLength(2_500);
    // Priority 1 first: the 500 priority-1 products are in the first step's batches.
    const p1Jobs = jobs.filter((j) => j.name === 'refresh.p1');
    expect(p1Jobs.flatMap((j) => (j.data as { asins: string[] }).asins).sort()).toEqual(list.slice(0, 500).sort());
    const left = await productModel(t.ctx.mongo).countDocuments({
      asin: mongoose.trusted({ $in: list }),
      next_refresh_at: mongoose.trusted({ $lte: new Date() }),
    });
    expect(left).toBe(500);
    await t.ctx.jobs.queue('JP', 'refresh').obliterate({ force: true });
  });
});
