import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, testEnv, uniqueName, type TestContext } from '../helpers/context.js';
import { loadConfig } from '../../config/env.js';
import { productModel } from '../../src/models/product.js';
import { watchModel } from '../../src/models/watch.js';
import { eanImportModel } from '../../src/models/ean-import.js';
import { recordCountryAnswer } from '../../src/watch/ean-imports.js';
import { HttpError, DailyUpdateLimitError } from '../../src/core/errors.js';
import { assertForcedUpdateTaken, forcedUpdateKey, takeForcedUpdate } from '../../src/accounts/limits.js';

/** A valid EAN-13 from its first 12 digits. */
function ean13(first12: string): string {
  const sum = [...first12].reduce((s, d, i) => s + Number(d) * (i % 2 === 0 ? 1 : 3), 0);
  return `${first12}${(10 - (sum % 10)) % 10}`;
}

let capped: TestContext;
let open: TestContext;
beforeAll(async () => {
  [capped, open] = await Promise.all([
    createTestContext({
      COUNTRIES: 'JP,US',
      ACCOUNT_MAX_WATCHES: '3',
      ACCOUNT_MAX_P1_WATCHES: '2',
      ACCOUNT_MAX_PENDING_EAN: '2',
      ACCOUNT_MAX_UPDATES_PER_DAY: '3',
    }),
    createTestContext({
      COUNTRIES: 'JP,US',
      ACCOUNT_MAX_WATCHES: '0',
      ACCOUNT_MAX_P1_WATCHES: '0',
      ACCOUNT_MAX_PENDING_EAN: '0',
      ACCOUNT_MAX_UPDATES_PER_DAY: '0',
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([capped?.close(), open?.close()]);
});

async function account(t: TestContext, name: string): Promise<{ id: string; auth: Record<string, string> }> {
  const user = await t.ctx.users.create({ name, email: `${uniqueName(name.toLowerCase())}@example.com` });
  return { id: user.user._id.toHexString(), auth: { Authorization: `Bearer ${user.token}` } };
}

/** What a refused request must leave as it was: the account's entries and every product. */
async function snapshot(t: TestContext) {
  const watches = await watchModel(t.ctx.mongo).find().sort({ _id: 1 }).select({ key: 1, priority: 1, updated_at: 1 }).lean();
  const products = await productModel(t.ctx.mongo)
    .find()
    .sort({ _id: 1 })
    .select({ asin: 1, country: 1, priority: 1, next_refresh_at: 1 })
    .lean();
  return { watches, products };
}

describe('config', () => {
  it('defaults to caps a single user never hits', () => {
    expect(loadConfig(testEnv()).accounts).toEqual({
      maxWatches: 10_000,
      maxP1Watches: 1_000,
      maxPendingEan: 20,
      maxUpdatesPerDay: 500,
      maxAlerts: 1_000,
      maxAlertsPerProduct: 10,
      maxEndpoints: 50,
      maxBrowseWatches: 100,
      maxEanPerDay: 1_000,
      maxCrawlPagesPerDay: 2_000,
    });
    expect(capped.config.accounts).toMatchObject({
      maxWatches: 3,
      maxP1Watches: 2,
      maxPendingEan: 2,
      maxUpdatesPerDay: 3,
      maxAlerts: 1_000,
    });
  });
});

describe('ACCOUNT_MAX_WATCHES', () => {
  it('refuses a new ASIN past the cap with 422 on asin, changing nothing; re-posting an entry still works', async () => {
    const { auth } = await account(capped, 'Hoarder');
    for (const asin of ['B0CAPW0001', 'B0CAPW0002', 'B0CAPW0003'])
      await capped.http.post('/api/watch/asin').set(auth).send({ asin }).expect(201);
    // Browse nodes are not ASIN entries: they do not count.
    await capped.http.post('/api/watch/browse').set(auth).send({ browse: '4242' }).expect(201);

    const before = await snapshot(capped);
    const res = await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPW0004' });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      message: 'You may watch at most 3 ASINs (ACCOUNT_MAX_WATCHES).',
      errors: { asin: ['You may watch at most 3 ASINs (ACCOUNT_MAX_WATCHES).'] },
    });
    expect(await snapshot(capped)).toEqual(before);
    expect(await productModel(capped.ctx.mongo).countDocuments({ asin: 'B0CAPW0004' })).toBe(0);

    // An entry the account has may change priority at the cap, both ways.
    const up = await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPW0002', priority: 1 });
    expect(up.status).toBe(200);
    expect(up.body.data.priority).toBe(1);
    expect((await productModel(capped.ctx.mongo).findOne({ asin: 'B0CAPW0002', country: 'JP' }).lean())!.priority).toBe(1);
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPW0002', priority: 0 }).expect(200);

    // Room again once one goes.
    await capped.http.delete('/api/watch/asin/B0CAPW0001').set(auth).expect(200);
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPW0004' }).expect(201);
  });

  it('counts per account: another account is not affected', async () => {
    const { auth } = await account(capped, 'Neighbour');
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPW0001' }).expect(201);
  });

  it('names both caps when a new priority-1 entry passes both', async () => {
    const { auth } = await account(capped, 'Both');
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0BOTH0001', priority: 1 }).expect(201);
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0BOTH0002', priority: 1 }).expect(201);
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0BOTH0003' }).expect(201);
    const res = await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0BOTH0004', priority: 1 });
    expect(res.status).toBe(422);
    expect(res.body.errors.asin).toEqual(['You may watch at most 3 ASINs (ACCOUNT_MAX_WATCHES).']);
    expect(res.body.errors.priority).toEqual(['You may watch at most 2 ASINs at priority 1 (ACCOUNT_MAX_P1_WATCHES).']);
    expect(res.body.message).toContain('ACCOUNT_MAX_WATCHES');
  });

  it('lets an EAN import add only the found ASINs that fit, without failing', async () => {
    const { id } = await account(capped, 'Importer');
    const userId = new Types.ObjectId(id);
    const service = capped.ctx.watches;
    expect(await service.watchFoundAsins(userId, ['B0FOUND001', 'B0FOUND002'])).toEqual([]);
    // One already watched (no room needed), then two fresh ones for one free slot.
    expect(await service.watchFoundAsins(userId, ['B0FOUND002', 'B0FOUND003', 'B0FOUND004'])).toEqual(['B0FOUND004']);
    const keys = (await watchModel(capped.ctx.mongo).find({ user_id: userId }).lean()).map((w) => w.key).sort();
    expect(keys).toEqual(['B0FOUND001', 'B0FOUND002', 'B0FOUND003']);
    expect(await productModel(capped.ctx.mongo).countDocuments({ asin: 'B0FOUND004' })).toBe(0);
    expect(await service.watchFoundAsins(userId, ['B0FOUND005'])).toEqual(['B0FOUND005']);
  });
});

describe('ACCOUNT_MAX_P1_WATCHES', () => {
  it('refuses adding or raising to priority 1 past the cap with 422 on priority, changing nothing', async () => {
    const { auth } = await account(capped, 'Eager');
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPP0001', priority: 1 }).expect(201);
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPP0002', priority: 1 }).expect(201);
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPP0003', priority: 0 }).expect(201);

    const before = await snapshot(capped);
    const raise = await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPP0003', priority: 1 });
    expect(raise.status).toBe(422);
    expect(raise.body).toEqual({
      message: 'You may watch at most 2 ASINs at priority 1 (ACCOUNT_MAX_P1_WATCHES).',
      errors: { priority: ['You may watch at most 2 ASINs at priority 1 (ACCOUNT_MAX_P1_WATCHES).'] },
    });
    expect(await snapshot(capped)).toEqual(before);

    // Re-sending priority 1 for an entry that has it is no raise.
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPP0002', priority: 1 }).expect(200);
    // Lowering one makes room for the other.
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPP0001', priority: 0 }).expect(200);
    const ok = await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPP0003', priority: 1 });
    expect(ok.status).toBe(200);
    expect(ok.body.data.priority).toBe(1);
  });

  it('refuses a new priority-1 entry past the cap while the watch cap has room', async () => {
    const { auth } = await account(capped, 'Eager2');
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPQ0001', priority: 1 }).expect(201);
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPQ0002', priority: 1 }).expect(201);
    const res = await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPQ0003', priority: 1 });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.errors)).toEqual(['priority']);
    expect(await watchModel(capped.ctx.mongo).countDocuments({ key: 'B0CAPQ0003' })).toBe(0);
    // At priority 0 it fits.
    await capped.http.post('/api/watch/asin').set(auth).send({ asin: 'B0CAPQ0003' }).expect(201);
  });
});

describe('ACCOUNT_MAX_PENDING_EAN', () => {
  it('answers 429 with Retry-After past the cap, starts nothing, and keeps answering pending imports', async () => {
    const { auth } = await account(capped, 'Scanner');
    const [a, b, c] = ['490000000001', '490000000002', '490000000003'].map(ean13) as [string, string, string];
    const first = await capped.http.post('/api/watch/ean').set(auth).send({ ean: a }).expect(202);
    await capped.http.post('/api/watch/ean').set(auth).send({ ean: b }).expect(202);

    const imports = eanImportModel(capped.ctx.mongo);
    const importsBefore = await imports.countDocuments();
    const jobsBefore = await capped.ctx.jobs.queue('JP').getJobCountByTypes('prioritized', 'waiting');
    const refused = await capped.http.post('/api/watch/ean').set(auth).send({ ean: c });
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.body).toEqual({
      message: 'You may have at most 2 EAN imports pending (ACCOUNT_MAX_PENDING_EAN); try again when one has finished.',
    });
    expect(await imports.countDocuments()).toBe(importsBefore);
    expect(await capped.ctx.jobs.queue('JP').getJobCountByTypes('prioritized', 'waiting')).toBe(jobsBefore);

    // A code already pending is not a new import: answered as before, at the cap.
    const again = await capped.http.post('/api/watch/ean').set(auth).send({ ean: a });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ created: false, data: { id: first.body.data.id } });

    // Another account has its own count.
    const other = await account(capped, 'Scanner2');
    await capped.http.post('/api/watch/ean').set(other.auth).send({ ean: c }).expect(202);

    // Once an import ends, there is room again.
    const id = first.body.data.id as string;
    await recordCountryAnswer(capped.ctx.mongo, id, 'JP', 'not_found', []);
    await recordCountryAnswer(capped.ctx.mongo, id, 'US', 'not_found', []);
    expect((await imports.findById(id).lean())!.status).toBe('not_found');
    const now = await capped.http.post('/api/watch/ean').set(auth).send({ ean: c });
    expect(now.status).toBe(202);
    expect(now.body.created).toBe(true);
  });
});

describe('0 turns every cap off', () => {
  it('accepts entries, priority-1 entries and imports past what the small caps allow', async () => {
    const { id, auth } = await account(open, 'Unbounded');
    for (let i = 1; i <= 5; i++)
      await open.http
        .post('/api/watch/asin')
        .set(auth)
        .send({ asin: `B0OPEN000${i}`, priority: 1 })
        .expect(201);
    for (let i = 1; i <= 4; i++)
      await open.http
        .post('/api/watch/ean')
        .set(auth)
        .send({ ean: ean13(`49100000000${i}`) })
        .expect(202);
    expect(await watchModel(open.ctx.mongo).countDocuments({ kind: 'asin', priority: 1 })).toBe(5);
    const take = await takeForcedUpdate(open.ctx.redis, open.ctx.redisPrefix, id, '2024-01-01', open.config.accounts.maxUpdatesPerDay);
    expect(take).toEqual({ ok: true, used: 0 });
    expect(await open.ctx.redis.exists(forcedUpdateKey(open.ctx.redisPrefix, id, '2024-01-01'))).toBe(0);
  });
});

describe('takeForcedUpdate (ACCOUNT_MAX_UPDATES_PER_DAY)', () => {
  const prefix = () => `${capped.ctx.redisPrefix}:${uniqueName('upd')}`;

  it('counts up to the limit, refuses past it without spending, and expires the day', async () => {
    const p = prefix();
    const redis = capped.ctx.redis;
    expect(await takeForcedUpdate(redis, p, 'u1', '2024-05-01', 3)).toEqual({ ok: true, used: 1 });
    expect(await takeForcedUpdate(redis, p, 'u1', '2024-05-01', 3)).toEqual({ ok: true, used: 2 });
    expect(await takeForcedUpdate(redis, p, 'u1', '2024-05-01', 3)).toEqual({ ok: true, used: 3 });
    expect(await takeForcedUpdate(redis, p, 'u1', '2024-05-01', 3)).toEqual({ ok: false, used: 3, limit: 3 });
    expect(await takeForcedUpdate(redis, p, 'u1', '2024-05-01', 3)).toEqual({ ok: false, used: 3, limit: 3 });
    const key = `{${p}:accounts}:u1:updates:2024-05-01`;
    expect(forcedUpdateKey(p, 'u1', '2024-05-01')).toBe(key);
    expect(await redis.get(key)).toBe('3');
    const ttl = await redis.ttl(key);
    expect(ttl).toBeGreaterThan(86_400);
    expect(ttl).toBeLessThanOrEqual(2 * 86_400);
    // Another day and another account count apart.
    expect(await takeForcedUpdate(redis, p, 'u1', '2024-05-02', 3)).toEqual({ ok: true, used: 1 });
    expect(await takeForcedUpdate(redis, p, 'u2', '2024-05-01', 3)).toEqual({ ok: true, used: 1 });
    // A higher limit (configuration changed) lets the account go on from its count.
    expect(await takeForcedUpdate(redis, p, 'u1', '2024-05-01', 4)).toEqual({ ok: true, used: 4 });
  });

  it('grants exactly the limit to concurrent calls', async () => {
    const p = prefix();
    const results = await Promise.all(Array.from({ length: 20 }, () => takeForcedUpdate(capped.ctx.redis, p, 'u1', '2024-05-01', 5)));
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    expect(
      results
        .filter((r) => r.ok)
        .map((r) => r.used)
        .sort((x, y) => x - y),
    ).toEqual([1, 2, 3, 4, 5]);
    expect(await capped.ctx.redis.get(forcedUpdateKey(p, 'u1', '2024-05-01'))).toBe('5');
  });

  it('turns a refusal into a 429 HttpError naming the variable, with Retry-After', async () => {
    const p = prefix();
    const limit = capped.config.accounts.maxUpdatesPerDay;
    for (let i = 0; i < limit; i++) assertForcedUpdateTaken(await takeForcedUpdate(capped.ctx.redis, p, 'u1', '2024-05-01', limit), 100);
    const refused = await takeForcedUpdate(capped.ctx.redis, p, 'u1', '2024-05-01', limit);
    let thrown: unknown;
    try {
      assertForcedUpdateTaken(refused, 3_600.4);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(HttpError);
    expect(thrown).toBeInstanceOf(DailyUpdateLimitError);
    expect(thrown).toMatchObject({
      status: 429,
      message: 'You may force at most 3 updates a day (ACCOUNT_MAX_UPDATES_PER_DAY).',
      headers: { 'Retry-After': '3601' },
    });
  });
});
