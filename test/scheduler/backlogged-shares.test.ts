import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { asins } from '../helpers/pipeline.js';
import { productModel } from '../../src/models/product.js';
import { userModel } from '../../src/models/user.js';
import { planCountry, refreshCallsOf } from '../../src/scheduling/planner.js';
import { countryTag } from '../../src/db/redis-keys.js';

/**
 * A pass may have the budget for everything due while the refresh queue drains slower than Q (the
 * other classes take their part of the pace). When the queue holds more than the class ran since
 * the last pass, the pass shares what it ran by account, and a heavy account's excess is queued
 * over its share, behind the light accounts' batches; otherwise nobody is over.
 */
let t: TestContext;
beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP', QUOTA_RPS: '10', QUOTA_PER_DAY: '100000000', SCHEDULER_COALESCE: '0' });
});
afterAll(async () => {
  await t?.close();
});

interface Planned {
  readonly asins: string[];
  readonly over?: true;
}

async function seed(): Promise<{ light: string[]; heavy: string[] }> {
  const made = await userModel(t.ctx.mongo).insertMany(
    Array.from({ length: 3 }, (_, i) => ({
      name: `backlog-${i}`,
      email: `backlog-${i}-${new Types.ObjectId().toHexString()}@backlog.example.com`,
      token_hash: new Types.ObjectId().toHexString(),
      token_cipher: 'x',
    })),
  );
  const [a, b, h] = made.map((u) => u._id);
  const past = Date.now() - 60_000;
  const owned = (owner: Types.ObjectId, list: string[], from: number) =>
    list.map((asin, i) => ({
      country: 'JP',
      asin,
      priority: 0,
      owners: [owner],
      next_refresh_at: new Date(from + i),
      created_at: new Date(),
      status: 'ok',
    }));
  const lightA = asins('B0BLGA', 5);
  const lightB = asins('B0BLGB', 5);
  const heavy = asins('B0BLGH', 300);
  // The heavy account's products are the most overdue: the global order alone would take them first.
  await productModel(t.ctx.mongo).insertMany([...owned(h!, heavy, past - 60_000), ...owned(a!, lightA, past), ...owned(b!, lightB, past)]);
  return { light: [...lightA, ...lightB], heavy };
}

/** `n` batches of other products waiting in the refresh queue from earlier passes. */
async function queueWaiting(n: number): Promise<void> {
  const waiting = asins('B0WAIT', n * 10);
  await t.ctx.jobs.addBulk(
    Array.from({ length: n }, (_, i) => ({
      name: 'refresh.p0' as const,
      data: { country: 'JP' as const, asins: waiting.slice(i * 10, i * 10 + 10), due: Date.now() },
      opts: { jobId: `refresh-waiting-${i}` },
    })),
  );
}

/** The planner's memory of its last pass: just now, with credit for 100 calls, `calls` refresh calls ago. */
async function ranSinceLastPass(calls: number): Promise<void> {
  const ran = refreshCallsOf(await t.ctx.quota.day('JP'));
  await t.ctx.redis.hset(
    `${countryTag(t.ctx.redisPrefix, 'JP')}:plan:credit`,
    'credit',
    '100',
    'at',
    String(Date.now()),
    'ran',
    String(ran - calls),
  );
}

async function plannedJobs(): Promise<Planned[]> {
  const jobs = await t.ctx.jobs.queue('JP', 'refresh').getJobs(['prioritized', 'waiting']);
  return jobs.map((j) => j.data as Planned).filter((d) => d.asins.every((x) => !x.startsWith('B0WAIT')));
}

afterEach(async () => {
  await t.ctx.jobs.queue('JP', 'refresh').obliterate({ force: true });
  await productModel(t.ctx.mongo).deleteMany({});
  await userModel(t.ctx.mongo).deleteMany({});
});

describe('account shares of a backlogged refresh queue', () => {
  it('queues a heavy account past what the class ran since the last pass over its share, the light accounts in share', async () => {
    const { light, heavy } = await seed();
    // Four batches still wait from earlier passes, and 3 refresh calls ran since the last pass.
    await queueWaiting(4);
    await ranSinceLastPass(3);

    const plan = await planCountry(t.ctx, 'JP');
    expect(plan.enqueued).toEqual({ batches: 31, p1: 0, p0: 310 });
    const jobs = await plannedJobs();
    const inShare = jobs.filter((j) => !j.over).flatMap((j) => j.asins);
    const over = jobs.filter((j) => j.over).flatMap((j) => j.asins);
    // 3 calls' 30 slots by three accounts of weight 1: the light ones' 5 and 5 (all they have
    // due) and the heavy one's 20 most overdue; its other 280 products run behind them.
    expect(inShare.sort()).toEqual([...light, ...heavy.slice(0, 20)].sort());
    expect(over).toHaveLength(280);
    expect(over.every((x) => x.startsWith('B0BLGH'))).toBe(true);
  });

  it('marks nobody over when the queue holds no more than the class ran since the last pass', async () => {
    await seed();
    await queueWaiting(1);
    await ranSinceLastPass(3);

    const plan = await planCountry(t.ctx, 'JP');
    expect(plan.enqueued).toEqual({ batches: 31, p1: 0, p0: 310 });
    expect((await plannedJobs()).filter((j) => j.over)).toEqual([]);
  });
});
