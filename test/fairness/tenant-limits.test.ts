import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mongoose, { Types } from 'mongoose';
import { createTestContext, uniqueName, type TestContext } from '../helpers/context.js';
import { asins } from '../helpers/pipeline.js';
import { productModel } from '../../src/models/product.js';
import { watchModel } from '../../src/models/watch.js';
import { eanImportModel } from '../../src/models/ean-import.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { planCrawls } from '../../src/scheduling/crawls.js';
import { addDaily, usedDaily } from '../../src/accounts/limits.js';
import { quotaDayOf } from '../../src/quota/quota-day.js';
import { eanCheckDigit } from '../../src/simulator/codes.js';
import { countryTag } from '../../src/db/redis-keys.js';

/**
 * What one account may pile up, and what it may not take from the others: the caps' refusals
 * (nothing half written), the crawl's payer, the planner's budget that imports and crawls never
 * stall, and each account's share of a plan when the country is short of quota.
 */
let t: TestContext;
beforeAll(async () => {
  t = await createTestContext({
    COUNTRIES: 'JP',
    QUOTA_RPS: '1',
    QUOTA_PER_DAY: '100000000',
    SCHEDULER_HORIZON_S: '10',
    SCHEDULER_COALESCE: '0',
    ACCOUNT_MAX_BROWSE_WATCHES: '2',
    ACCOUNT_MAX_EAN_PER_DAY: '2',
    ACCOUNT_MAX_CRAWL_PAGES_PER_DAY: '5',
  });
});
afterAll(async () => {
  await t?.close();
});

async function account(name: string): Promise<{ id: Types.ObjectId; auth: Record<string, string> }> {
  const { user, token } = await t.ctx.users.create({ name, email: `${uniqueName(name)}@example.com` });
  return { id: user._id, auth: { Authorization: `Bearer ${token}` } };
}

const ean = (i: number): string => {
  const body = `4901234${String(i).padStart(5, '0')}`;
  return body + eanCheckDigit(body);
};

describe('caps on what an account piles up', () => {
  it('ACCOUNT_MAX_BROWSE_WATCHES: a new node past it is 422 and writes nothing; a node it has is still 200', async () => {
    const a = await account('browser');
    await t.http.post('/api/watch/browse').set(a.auth).send({ browse: '100001' }).expect(201);
    await t.http.post('/api/watch/browse').set(a.auth).send({ browse: '100002' }).expect(201);
    const refused = await t.http.post('/api/watch/browse').set(a.auth).send({ browse: '100003' });
    expect(refused.status).toBe(422);
    expect(refused.body.errors.browse[0]).toMatch(/at most 2 browse nodes \(ACCOUNT_MAX_BROWSE_WATCHES\)/);
    expect(await watchModel(t.ctx.mongo).countDocuments({ user_id: a.id, kind: 'browse' })).toBe(2);
    await t.http.post('/api/watch/browse').set(a.auth).send({ browse: '100002' }).expect(200);
    // Another account is not held to this one's count.
    const b = await account('other-browser');
    await t.http.post('/api/watch/browse').set(b.auth).send({ browse: '100003' }).expect(201);
  });

  it('ACCOUNT_MAX_EAN_PER_DAY: one import more is 429 with Retry-After to the next quota day, and nothing is written or queued', async () => {
    const a = await account('importer');
    for (const i of [1, 2])
      expect(
        (
          await t.http
            .post('/api/watch/ean')
            .set(a.auth)
            .send({ ean: ean(i) })
        ).status,
      ).toBe(202);
    const refused = await t.http
      .post('/api/watch/ean')
      .set(a.auth)
      .send({ ean: ean(3) });
    expect(refused.status).toBe(429);
    expect(refused.body.message).toMatch(/at most 2 EAN imports a day \(ACCOUNT_MAX_EAN_PER_DAY\)/);
    const day = quotaDayOf(Date.now(), 'UTC');
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil((day.end - Date.now()) / 1_000) + 1);
    expect(await eanImportModel(t.ctx.mongo).countDocuments({ user_id: a.id })).toBe(2);
    expect(await t.ctx.jobs.queue('JP', 'import').getJobCountByTypes('prioritized', 'waiting')).toBe(2);
    // The same code asked again while pending answers its import and spends nothing more.
    expect(
      (
        await t.http
          .post('/api/watch/ean')
          .set(a.auth)
          .send({ ean: ean(1) })
      ).body.created,
    ).toBe(false);
    expect(await usedDaily(t.ctx.redis, t.ctx.redisPrefix, a.id.toHexString(), 'ean', day.key)).toBe(2);
    await t.ctx.jobs.queue('JP', 'import').obliterate({ force: true });
  });
});

describe('browse crawls: who pays, and ACCOUNT_MAX_CRAWL_PAGES_PER_DAY', () => {
  it("charges a node's crawl to the watcher with pages left, and holds a node none of whose watchers has any until the next quota day", async () => {
    const spent = await account('spent-crawler');
    const fresh = await account('fresh-crawler');
    await t.http.post('/api/watch/browse').set(spent.auth).send({ browse: '200001' }).expect(201);
    await t.http.post('/api/watch/browse').set(fresh.auth).send({ browse: '200001' }).expect(201);
    await t.http.post('/api/watch/browse').set(spent.auth).send({ browse: '200002' }).expect(201);
    const day = quotaDayOf(Date.now(), 'UTC');
    await addDaily(t.ctx.redis, t.ctx.redisPrefix, spent.id.toHexString(), 'crawl-pages', day.key, 5);

    const crawls = t.ctx.jobs.queue('JP', 'crawl');
    await crawls.obliterate({ force: true });
    await watchModel(t.ctx.mongo).updateMany(
      { kind: 'browse', key: mongoose.trusted({ $nin: ['200001', '200002'] }) },
      { $set: { next_crawl_at: new Date(Date.now() + 86_400_000) } },
    );
    expect(await planCrawls(t.ctx)).toBe(1);
    const [job] = await crawls.getJobs(['prioritized', 'waiting']);
    expect(job!.data).toMatchObject({ nodeId: '200001', fair: { account: fresh.id.toHexString() } });
    const held = await watchModel(t.ctx.mongo).findOne({ kind: 'browse', key: '200002' }).lean();
    expect(held?.crawl_waiting_until?.getTime()).toBe(day.end);
    expect(held?.next_crawl_at?.getTime()).toBe(day.end);
    // Planned nodes are claimed: a second pass plans nothing again.
    expect(await planCrawls(t.ctx)).toBe(0);
    await crawls.obliterate({ force: true });
  });
});

describe('the planner', () => {
  it('plans its budget whatever imports, crawls and delayed refreshes are queued', async () => {
    const list = asins('B0NSTL', 20);
    await productModel(t.ctx.mongo).insertMany(
      list.map((asin) => ({
        country: 'JP',
        asin,
        priority: 1,
        next_refresh_at: new Date(Date.now() - 1_000),
        created_at: new Date(),
        status: 'ok',
      })),
    );
    const user = (await account('stall')).id.toHexString();
    for (let i = 0; i < 30; i++) {
      await t.ctx.jobs.add('ean.resolve', { country: 'JP', importId: new Types.ObjectId().toHexString(), userId: user, ean: ean(100 + i) });
      await t.ctx.jobs.add('browse.crawl', { country: 'JP', nodeId: String(300_000 + i) });
    }
    await t.ctx.jobs.add('refresh.p0', { country: 'JP', asins: ['B0DELAYED1'] }, { delay: 60_000 });
    await t.ctx.redis.del(`${countryTag(t.ctx.redisPrefix, 'JP')}:plan:credit`);
    const plan = await planCountry(t.ctx, 'JP');
    expect(plan.queued).toBe(0);
    expect(plan.budget).toBe(10);
    expect(plan.enqueued.p1).toBe(20);
    await Promise.all((['import', 'crawl', 'refresh'] as const).map((c) => t.ctx.jobs.queue('JP', c).obliterate({ force: true })));
    await productModel(t.ctx.mongo).deleteMany({ asin: mongoose.trusted({ $in: list }) });
  });

  it("short of quota, gives each account its share of a pass before the global order: one account's backlog does not push the others' products out", async () => {
    const heavy = await account('heavy-refresh');
    const light = await Promise.all(['light-a', 'light-b', 'light-c'].map((n) => account(n)));
    // The light accounts watch as users do: their products' owners come from their watches.
    const lightAsins = light.map((l, i) => asins(`B0LT${i}`, 5));
    for (const [i, l] of light.entries()) for (const asin of lightAsins[i]!) await t.ctx.watches.watchAsin(l.id, asin, 1);
    const owned = await productModel(t.ctx.mongo).findOne({ asin: lightAsins[0]![0] }).lean();
    expect(owned?.owners.map(String)).toEqual([light[0]!.id.toHexString()]);
    await productModel(t.ctx.mongo).updateMany(
      { asin: mongoose.trusted({ $in: lightAsins.flat() }) },
      { $set: { next_refresh_at: new Date(Date.now() - 60_000) } },
    );
    // The heavy account's 300 priority-1 products, all more overdue than the light ones.
    const heavyAsins = asins('B0HVY', 300);
    await productModel(t.ctx.mongo).insertMany(
      heavyAsins.map((asin, i) => ({
        country: 'JP',
        asin,
        priority: 1,
        owners: [heavy.id],
        next_refresh_at: new Date(Date.now() - 3_600_000 + i),
        created_at: new Date(),
        status: 'ok',
      })),
    );
    await t.ctx.redis.del(`${countryTag(t.ctx.redisPrefix, 'JP')}:plan:credit`);
    const plan = await planCountry(t.ctx, 'JP');
    // 10 calls of 10: 100 products of 315 due. The global order alone (most overdue first) would take the heavy account's only.
    expect(plan.enqueued).toMatchObject({ batches: 10, p1: 100 });
    const jobs = await t.ctx.jobs.queue('JP', 'refresh').getJobs(['prioritized', 'waiting']);
    const planned = jobs.flatMap((j) => (j.data as { asins: string[] }).asins);
    expect(planned).toEqual(expect.arrayContaining(lightAsins.flat()));
    expect(planned.filter((a) => a.startsWith('B0HVY'))).toHaveLength(85);
    // The heavy account's products past its share wait behind every batch in share: the queue its
    // backlog fills does not delay the light accounts' products.
    const lightBatches = jobs.filter((j) => (j.data as { asins: string[] }).asins.some((a) => a.startsWith('B0LT')));
    const overBatches = jobs.filter((j) => (j.data as { over?: boolean }).over === true);
    expect(lightBatches.map((j) => j.priority)).toEqual(lightBatches.map(() => 1));
    expect(overBatches.length).toBeGreaterThan(0);
    for (const j of overBatches) {
      expect(j.priority).toBe(2);
      expect((j.data as { asins: string[] }).asins.every((a) => a.startsWith('B0HVY'))).toBe(true);
    }
    await t.ctx.jobs.queue('JP', 'refresh').obliterate({ force: true });
  });
});
