import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { productModel } from '../../src/models/product.js';
import { watchModel } from '../../src/models/watch.js';
import { eanImportModel } from '../../src/models/ean-import.js';

let t: TestContext;
let auth: Record<string, string>;
let auth2: Record<string, string>;
beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP,US', REFRESH_INTERVAL_P1: '1h', REFRESH_INTERVAL_P0: '1d' });
  const a = await t.ctx.users.create({ name: 'Watcher', email: 'watcher@example.com' });
  const b = await t.ctx.users.create({ name: 'Watcher 2', email: 'watcher2@example.com' });
  auth = { Authorization: `Bearer ${a.token}` };
  auth2 = { Authorization: `Bearer ${b.token}` };
});
afterAll(async () => {
  await t?.close();
});

const products = () => productModel(t.ctx.mongo);

describe('POST /api/watch/asin', () => {
  it('adds an ASIN (201), upper-cased, tracked in every configured country and due now', async () => {
    const before = Date.now();
    const res = await t.http.post('/api/watch/asin').set(auth).send({ asin: 'b00abcdef1' });
    expect(res.status).toBe(201);
    expect(res.body.created).toBe(true);
    expect(res.body.data).toMatchObject({ type: 'asin', asin: 'B00ABCDEF1', priority: 0 });
    const docs = await products().find({ asin: 'B00ABCDEF1' }).sort({ country: 1 }).lean();
    expect(docs.map((d) => d.country)).toEqual(['JP', 'US']);
    for (const d of docs) {
      expect(d.priority).toBe(0);
      expect(d.status).toBe('pending');
      expect(d.next_refresh_at!.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(d.next_refresh_at!.getTime()).toBeLessThanOrEqual(Date.now());
    }
  });

  it('changes the priority of an existing entry (200) and moves the next refresh time', async () => {
    const asin = 'B00PRIO001';
    expect((await t.http.post('/api/watch/asin').set(auth).send({ asin: asin })).status).toBe(201);
    // As if the worker had refreshed it a minute ago at priority 0: next in a day.
    const attempted = new Date(Date.now() - 60_000);
    await products().updateMany(
      { asin: asin },
      { $set: { last_attempt_at: attempted, next_refresh_at: new Date(attempted.getTime() + 86_400_000), status: 'ok' } },
    );

    const res = await t.http.post('/api/watch/asin').set(auth).send({ asin: asin, priority: 1 });
    expect(res.status).toBe(200);
    expect(res.body.created).toBe(false);
    expect(res.body.data.priority).toBe(1);
    for (const d of await products().find({ asin: asin }).lean()) {
      expect(d.priority).toBe(1);
      expect(d.next_refresh_at!.getTime()).toBe(attempted.getTime() + 3_600_000);
    }
    expect(await watchModel(t.ctx.mongo).countDocuments({ key: asin })).toBe(1);
  });

  it('takes the highest priority among watchers, and stops refreshing when nobody watches', async () => {
    const asin = 'B00SHARED1';
    await t.http.post('/api/watch/asin').set(auth).send({ asin, priority: 1 }).expect(201);
    await t.http.post('/api/watch/asin').set(auth2).send({ asin, priority: 0 }).expect(201);
    expect((await products().findOne({ asin, country: 'JP' }).lean())!.priority).toBe(1);

    await t.http.delete(`/api/watch/asin/${asin}`).set(auth).expect(200);
    const after = (await products().findOne({ asin, country: 'JP' }).lean())!;
    expect(after.priority).toBe(0);
    expect(after.next_refresh_at).not.toBeNull();

    await t.http.delete(`/api/watch/asin/${asin.toLowerCase()}`).set(auth2).expect(200);
    const gone = await products().find({ asin }).lean();
    expect(gone).toHaveLength(2); // the catalogue record stays
    for (const d of gone) {
      expect(d.priority).toBeNull();
      expect(d.next_refresh_at).toBeNull();
    }
  });

  it.each([
    [{}, 'asin', 'The asin field is required.'],
    [{ asin: 'B00SHORT' }, 'asin', 'The asin field must be 10 letters or digits.'],
    [{ asin: 'B00ABCDEF12' }, 'asin', 'The asin field must be 10 letters or digits.'],
    [{ asin: 'B00ABC-EF1' }, 'asin', 'The asin field must be 10 letters or digits.'],
    [{ asin: 1234567890 }, 'asin', 'The asin field must be a string.'],
    [{ asin: { $gt: '' } }, 'asin', 'The asin field must be a string.'],
    [{ asin: ['B00ABCDEF1'] }, 'asin', 'The asin field must be a string.'],
    [{ asin: 'B00ABCDEF1', priority: 2 }, 'priority', 'The priority field must be 0 or 1.'],
    [{ asin: 'B00ABCDEF1', priority: 'high' }, 'priority', 'The priority field must be 0 or 1.'],
  ])('refuses %j with 422 on %s and changes nothing', async (body, field, message) => {
    const count = await watchModel(t.ctx.mongo).countDocuments();
    const res = await t.http.post('/api/watch/asin').set(auth).send(body);
    expect(res.status).toBe(422);
    expect(res.body.errors[field]).toEqual([message]);
    expect(res.body.message).toBe(message);
    expect(await watchModel(t.ctx.mongo).countDocuments()).toBe(count);
  });
});

describe('DELETE /api/watch/asin/{asin}', () => {
  it('answers 404 when the user does not watch it, 422 for a malformed ASIN', async () => {
    const res = await t.http.delete('/api/watch/asin/B0NOTWATCH').set(auth);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ message: 'The ASIN is not in your watchlist.' });
    expect((await t.http.delete('/api/watch/asin/short').set(auth)).status).toBe(422);
  });

  it("cannot remove another user's entry", async () => {
    await t.http.post('/api/watch/asin').set(auth).send({ asin: 'B0MINE0001' }).expect(201);
    expect((await t.http.delete('/api/watch/asin/B0MINE0001').set(auth2)).status).toBe(404);
    expect(await watchModel(t.ctx.mongo).countDocuments({ key: 'B0MINE0001' })).toBe(1);
  });
});

describe('POST /api/watch/ean', () => {
  it('records an import and enqueues one resolve job per country; a second call starts none', async () => {
    const res = await t.http.post('/api/watch/ean').set(auth).send({ ean: '4901234567894' });
    expect(res.status).toBe(202);
    expect(res.body.created).toBe(true);
    const id = res.body.data.id as string;
    expect(res.body.data).toMatchObject({ ean: '4901234567894', status: 'queued', asins: [] });
    for (const country of ['JP', 'US'] as const) {
      const job = await t.ctx.jobs.queue(country, 'import').getJob(`ean-${id}-${country}`);
      expect(job?.name).toBe('ean.resolve');
      expect(job?.data).toMatchObject({ country, ean: '4901234567894', importId: id });
    }

    const again = await t.http.post('/api/watch/ean').set(auth).send({ ean: '4901234567894' });
    expect(again.status).toBe(202);
    expect(again.body.created).toBe(false);
    expect(again.body.data.id).toBe(id);
    expect(await eanImportModel(t.ctx.mongo).countDocuments({ ean: '4901234567894' })).toBe(1);
    expect(await t.ctx.jobs.queue('JP', 'import').getJobCountByTypes('prioritized', 'waiting')).toBe(1);

    const status = await t.http.get(`/api/watch/ean/${id}`).set(auth);
    expect(status.status).toBe(200);
    expect(status.body.data.countries).toEqual([
      { country: 'JP', status: 'queued', asins: [], waiting_until: null },
      { country: 'US', status: 'queued', asins: [], waiting_until: null },
    ]);
    expect((await t.http.get(`/api/watch/ean/${id}`).set(auth2)).status).toBe(404);
    expect((await t.http.get('/api/watch/ean/not-an-id').set(auth)).status).toBe(404);
  });

  it.each([
    [{}, 'The ean field is required.'],
    [{ ean: '4901234567890' }, 'The ean field must be 13 digits with a valid EAN-13 check digit.'],
    [{ ean: '490123456789' }, 'The ean field must be 13 digits with a valid EAN-13 check digit.'],
    [{ ean: 4901234567894 }, 'The ean field must be a string of 13 digits.'],
    [{ ean: { $ne: null } }, 'The ean field must be a string of 13 digits.'],
  ])('refuses %j with 422', async (body, message) => {
    const res = await t.http.post('/api/watch/ean').set(auth).send(body);
    expect(res.status).toBe(422);
    expect(res.body.errors.ean).toEqual([message]);
  });
});

describe('browse nodes', () => {
  it('adds (201, string or integer), re-adds (200), removes (200) and 404s', async () => {
    const first = await t.http.post('/api/watch/browse').set(auth).send({ browse: 465392 });
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({ type: 'browse', browse: '465392', last_crawl_at: null });
    expect((await t.http.post('/api/watch/browse').set(auth).send({ browse: '465392' })).status).toBe(200);
    expect((await t.http.delete('/api/watch/browse/465392').set(auth)).status).toBe(200);
    expect((await t.http.delete('/api/watch/browse/465392').set(auth)).status).toBe(404);
  });

  it.each([[{}], [{ browse: 'abc' }], [{ browse: -5 }], [{ browse: 1.5 }], [{ browse: '' }], [{ browse: { $gt: 0 } }]])(
    'refuses %j with 422',
    async (body) => {
      const res = await t.http.post('/api/watch/browse').set(auth).send(body);
      expect(res.status).toBe(422);
      expect(res.body.errors.browse).toHaveLength(1);
    },
  );
});

describe('GET /api/watch', () => {
  it("lists only the caller's entries, newest first, paged and filterable by type", async () => {
    const { token } = await t.ctx.users.create({ name: 'Lister', email: 'lister@example.com' });
    const me = { Authorization: `Bearer ${token}` };
    for (const asin of ['B0LIST0001', 'B0LIST0002', 'B0LIST0003']) await t.http.post('/api/watch/asin').set(me).send({ asin }).expect(201);
    await t.http.post('/api/watch/browse').set(me).send({ browse: '77' }).expect(201);

    const all = await t.http.get('/api/watch?limit=2').set(me);
    expect(all.status).toBe(200);
    expect(all.body.meta).toMatchObject({ total: 4, per_page: 2, last_page: 2, from: 1, to: 2 });
    expect(all.body.data[0]).toMatchObject({ type: 'browse', browse: '77' });
    expect(all.body.links.next).toMatch(/\/api\/watch\?limit=2&page=2$/);
    const asins = await t.http.get('/api/watch?type=asin').set(me);
    expect(asins.body.data.map((w: { asin: string }) => w.asin)).toEqual(['B0LIST0003', 'B0LIST0002', 'B0LIST0001']);
    expect((await t.http.get('/api/watch?type=ean').set(me)).status).toBe(422);
    expect((await t.http.get(`/api/watch?api_token=${token}&limit=1`).set({})).body.links.next).not.toContain(token);
  });
});

describe('concurrent watch changes', () => {
  it('leave the product with the priority its watchers give it', async () => {
    const asin = 'B0RACE0001';
    const users = await Promise.all(
      Array.from({ length: 6 }, (_, i) => t.ctx.users.create({ name: `Racer ${i}`, email: `racer${i}@example.com` })),
    );
    const headers = users.map((u) => ({ Authorization: `Bearer ${u.token}` }));
    // Everyone adds at once, with mixed priorities; then all but one remove at once.
    await Promise.all(
      headers.map((h, i) =>
        t.http
          .post('/api/watch/asin')
          .set(h)
          .send({ asin, priority: i === 0 ? 1 : 0 })
          .expect(201),
      ),
    );
    expect((await products().find({ asin }).lean()).map((d) => d.priority)).toEqual([1, 1]);
    await Promise.all(headers.slice(0, 5).map((h) => t.http.delete(`/api/watch/asin/${asin}`).set(h).expect(200)));
    expect((await products().find({ asin }).lean()).map((d) => d.priority)).toEqual([0, 0]);
    await t.http.delete(`/api/watch/asin/${asin}`).set(headers[5]!).expect(200);
    expect((await products().find({ asin }).lean()).map((d) => d.priority)).toEqual([null, null]);
  });
});
