import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { until } from '../helpers/until.js';
import { productModel } from '../../src/models/product.js';
import { orderedSearchKeys } from '../../src/search/ordered-keys.js';
import { productRecordSchema } from '../../src/core/product.js';

let t: TestContext;
let auth: Record<string, string>;
const base = new Date('2026-01-10T00:00:00Z').getTime();

/** Products as the workers would have written them. */
async function seed(): Promise<void> {
  const docs = [];
  for (let i = 0; i < 12; i++) {
    for (const country of ['JP', 'US'] as const) {
      const title = i % 3 === 0 ? `Wireless Mouse model ${i}` : i % 3 === 1 ? `ワイヤレス キーボード ${i}` : `USB Cable (1.5m) ${i}`;
      docs.push({
        country,
        asin: `B0WORLD${String(i).padStart(3, '0')}`,
        ean: [i === 5 ? '4901234567894' : `49000000${String(i).padStart(4, '0')}0`].slice(0, 1),
        title,
        brand: 'Acme',
        price: { amount: 1000 + i, currency: country === 'JP' ? 'JPY' : 'USD' },
        availability: 'in_stock',
        sales_rank: 10 + i,
        browse_nodes: [{ id: '2127209051', name: 'Accessories' }],
        search_keys: orderedSearchKeys(title, 'Acme'),
        status: 'ok',
        priority: 0,
        created_at: new Date(base + i * 86_400_000),
        updated_at: new Date(base + (12 - i) * 3_600_000 + (country === 'JP' ? 1 : 0)),
        last_attempt_at: new Date(base),
        next_refresh_at: new Date(base + 86_400_000),
      });
    }
  }
  // One pending product (watched, never fetched): not in lists, but readable by ASIN.
  docs.push({ country: 'JP', asin: 'B0PENDING1', created_at: new Date(), status: 'pending', priority: 0, next_refresh_at: new Date() });
  await productModel(t.ctx.mongo).insertMany(docs);
}

beforeAll(async () => {
  // Pages made afresh for every request: these tests read what they have just written.
  t = await createTestContext({ COUNTRIES: 'JP,US', APP_TIMEZONE: 'Asia/Tokyo', WORLD_PAGE_TTL: '0' });
  const { token } = await t.ctx.users.create({ name: 'Reader', email: 'reader@example.com' });
  auth = { Authorization: `Bearer ${token}` };
  await seed();
});
afterAll(async () => {
  await t?.close();
});

describe('GET /api/world', () => {
  it('lists fetched products of every country, newest update first, in the paged envelope', async () => {
    const res = await t.http.get('/api/world').set(auth);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['data', 'links', 'meta']);
    expect(res.body.meta).toMatchObject({ current_page: 1, from: 1, to: 24, total: 24, per_page: 50, last_page: 1 });
    const updated = res.body.data.map((p: { updated_at: string }) => p.updated_at);
    expect([...updated].sort().reverse()).toEqual(updated);
    expect(res.body.data.find((p: { asin: string }) => p.asin === 'B0PENDING1')).toBeUndefined();
    for (const record of res.body.data) expect(productRecordSchema.safeParse(record).success).toBe(true);
    expect(res.body.data[0]).not.toHaveProperty('raw');
    expect(res.body.data[0]).not.toHaveProperty('search_keys');
    // Dates in APP_TIMEZONE: 2026-01-10 12:00 UTC is 21:00 in Tokyo.
    expect(res.body.data[0].updated_at).toBe('2026-01-10 21:00:00');
  });

  it('filters by country and by a comma list; pages keep country and limit', async () => {
    const jp = await t.http.get('/api/world?country=jp&limit=5').set(auth);
    expect(jp.body.meta).toMatchObject({ total: 12, per_page: 5, last_page: 3 });
    expect(jp.body.data.every((p: { country: string }) => p.country === 'JP')).toBe(true);
    expect(jp.body.links.next).toMatch(/\/api\/world\?country=jp&limit=5&page=2$/);
    const both = await t.http.get('/api/world?country=JP,US').set(auth);
    expect(both.body.meta.total).toBe(24);
  });

  it('searches title words, an ASIN or a JAN/EAN exactly', async () => {
    const words = await t.http.get('/api/world').query({ search: 'wireless MOUSE', country: 'JP' }).set(auth);
    expect(words.body.data.map((p: { title: string }) => p.title).sort()).toEqual([
      'Wireless Mouse model 0',
      'Wireless Mouse model 3',
      'Wireless Mouse model 6',
      'Wireless Mouse model 9',
    ]);
    const jp = await t.http.get('/api/world').query({ search: 'キーボード', country: 'JP' }).set(auth);
    expect(jp.body.meta.total).toBe(4);
    const asin = await t.http.get('/api/world').query({ search: 'b0world007' }).set(auth);
    expect(asin.body.data.map((p: { asin: string; country: string }) => `${p.country}:${p.asin}`).sort()).toEqual([
      'JP:B0WORLD007',
      'US:B0WORLD007',
    ]);
    const ean = await t.http.get('/api/world').query({ search: '4901234567894', country: 'US' }).set(auth);
    expect(ean.body.data.map((p: { asin: string }) => p.asin)).toEqual(['B0WORLD005']);
    const literal = await t.http.get('/api/world').query({ search: '(1.5m)' }).set(auth);
    expect(literal.body.meta.total).toBe(8);
    const nothing = await t.http.get('/api/world').query({ search: '.*' }).set(auth);
    expect(nothing.body.meta.total).toBe(0);
  });

  it.each([
    ['country=DE', 'country'],
    ['country=JP,XX', 'country'],
    ['country=JP&country=US', 'country'],
    ['country[$ne]=x&country=JP,', 'country'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['page=0', 'page'],
    ['page=1.5', 'page'],
    [`search=${'a'.repeat(201)}`, 'search'],
    ['search=a&search=b', 'search'],
  ])('answers 422 for %s', async (query, field) => {
    const res = await t.http.get(`/api/world?${query}`).set(auth);
    expect(res.status).toBe(422);
    expect(res.body.errors[field]).toHaveLength(1);
  });

  it('reads its pages from a secondary when there is one fresh enough, a single product from the primary', async () => {
    const reads: { method: string; byAsin: boolean; mode?: string; staleness?: number }[] = [];
    t.ctx.mongo.set('debug', (collection: string, method: string, ...args: unknown[]) => {
      if (collection !== 'products') return;
      const filter = args[0] as Record<string, unknown> | undefined;
      const opts = args.find(
        (a): a is { readPreference?: mongoose.mongo.ReadPreference } => typeof a === 'object' && a !== null && 'readPreference' in a,
      );
      reads.push({
        method,
        byAsin: Boolean(filter && 'asin' in filter),
        mode: opts?.readPreference?.mode,
        staleness: opts?.readPreference?.maxStalenessSeconds,
      });
    });
    try {
      // A page no other test asks for, so that it is read rather than answered from the second's cache.
      await t.http.get('/api/world?country=US&page=2&limit=3').set(auth).expect(200);
      await t.http.get('/api/world/asin/B0WORLD001?country=US').set(auth).expect(200);
    } finally {
      t.ctx.mongo.set('debug', false);
    }
    const lagging = { mode: 'secondaryPreferred', staleness: 90 };
    const list = reads.filter((r) => !r.byAsin);
    const single = reads.filter((r) => r.byAsin && r.method === 'find');
    expect(list.map((r) => r.method)).toEqual(expect.arrayContaining(['find', 'countDocuments']));
    expect(list.every((r) => r.mode === lagging.mode && r.staleness === lagging.staleness)).toBe(true);
    expect(single).toHaveLength(1);
    expect(single[0]!.mode).toBeUndefined();
  });

  it('needs the token', async () => {
    expect((await t.http.get('/api/world')).status).toBe(401);
  });
});

describe('GET /api/world/new', () => {
  it('lists products created on or after `since` (in APP_TIMEZONE), newest first', async () => {
    // 2026-01-20 00:00 in Tokyo is 2026-01-19 15:00 UTC: products 10 and 11 were created after it.
    const res = await t.http.get('/api/world/new?since=2026-01-20&country=US').set(auth);
    expect(res.status).toBe(200);
    expect(res.body.data.map((p: { asin: string }) => p.asin)).toEqual(['B0WORLD011', 'B0WORLD010']);
    expect((await t.http.get('/api/world/new?since=2026-02-30').set(auth)).status).toBe(422);
    expect((await t.http.get('/api/world/new?since=yesterday').set(auth)).status).toBe(422);
  });
});

describe('single products', () => {
  it('GET /api/world/asin/{asin}: one record per requested country, pending ones too', async () => {
    const res = await t.http.get('/api/world/asin/b0world001').set(auth);
    expect(res.status).toBe(200);
    expect(res.body.data.map((p: { country: string }) => p.country)).toEqual(['JP', 'US']);
    const us = await t.http.get('/api/world/asin/B0WORLD001?country=US').set(auth);
    expect(us.body.data).toHaveLength(1);
    const pending = await t.http.get('/api/world/asin/B0PENDING1').set(auth);
    expect(pending.body.data[0]).toMatchObject({ asin: 'B0PENDING1', updated_at: null, refresh: { status: 'pending', priority: 0 } });
    expect((await t.http.get('/api/world/asin/B0NOWHERE1').set(auth)).status).toBe(404);
    expect((await t.http.get('/api/world/asin/B0PENDING1?country=US').set(auth)).status).toBe(404);
    expect((await t.http.get('/api/world/asin/short').set(auth)).status).toBe(422);
  });

  it('GET /api/world/ean/{ean}: by JAN/EAN', async () => {
    const res = await t.http.get('/api/world/ean/4901234567894?country=JP').set(auth);
    expect(res.status).toBe(200);
    expect(res.body.data.map((p: { asin: string }) => p.asin)).toEqual(['B0WORLD005']);
    expect((await t.http.get('/api/world/ean/4901234567890').set(auth)).status).toBe(422);
    expect((await t.http.get('/api/world/ean/4006381333931').set(auth)).status).toBe(404);
  });
});

describe('list totals', () => {
  it('a list reuses its total for WORLD_TOTAL_TTL (10 s by default), while its page is read fresh', async () => {
    const url = '/api/world?country=US&limit=1';
    const before = await t.http.get(url).set(auth).expect(200);
    const now = new Date();
    await productModel(t.ctx.mongo).create({
      country: 'US',
      asin: 'B0TOTAL001',
      title: 'Fresh arrival',
      search_keys: orderedSearchKeys('Fresh arrival'),
      status: 'ok',
      priority: 0,
      created_at: now,
      updated_at: now,
      last_attempt_at: now,
      next_refresh_at: new Date(now.getTime() + 86_400_000),
    });
    try {
      const after = await t.http.get(url).set(auth).expect(200);
      expect(after.body.data[0].asin).toBe('B0TOTAL001');
      expect(after.body.meta.total).toBe(before.body.meta.total);
      // A page past the kept total is counted afresh before it answers empty (it may not be past
      // the end any more), so its total is exact, and no data is read.
      const past = await t.http.get('/api/world?country=US&limit=1&page=999').set(auth).expect(200);
      expect(past.body.data).toEqual([]);
      expect(past.body.meta.total).toBe(before.body.meta.total + 1);
      // Another filter is counted afresh.
      const searched = await t.http.get('/api/world?country=US&search=fresh').set(auth).expect(200);
      expect(searched.body.meta.total).toBe(1);
    } finally {
      await productModel(t.ctx.mongo).deleteOne({ asin: 'B0TOTAL001' });
    }
  });

  it('a kept total below what a page shows is counted again; a page that is not full gives the exact total at once', async () => {
    const products = productModel(t.ctx.mongo);
    const at = (i: number) => new Date(Date.now() - i * 1_000);
    const fresh = (asin: string, i: number) => ({
      country: 'JP',
      asin,
      title: `Fresh ${asin}`,
      search_keys: orderedSearchKeys(`Fresh ${asin}`),
      status: 'ok',
      priority: 0,
      created_at: at(i),
      updated_at: at(i),
      last_attempt_at: at(i),
      next_refresh_at: new Date(Date.now() + 86_400_000),
    });
    const added = ['B0TOTAL101', 'B0TOTAL102', 'B0TOTAL103', 'B0TOTAL104'];
    expect((await t.http.get('/api/world?country=JP&limit=4').set(auth).expect(200)).body.meta.total).toBe(12);
    await products.insertMany(added.slice(0, 3).map(fresh));
    try {
      // 12 is kept, but page 7 of 2 is full (items 13 and 14): the kept total is too low, so it is counted again.
      const p7 = await t.http.get('/api/world?country=JP&limit=2&page=7').set(auth).expect(200);
      expect(p7.body.data).toHaveLength(2);
      expect(p7.body.meta).toMatchObject({ total: 15, from: 13, to: 14, last_page: 8 });
      expect(p7.body.links.next).toMatch(/page=8$/);
      // 15 is kept now; a page that is not full ends the list, so it tells the total itself.
      await products.insertMany([fresh('B0TOTAL104', 0)]);
      const whole = await t.http.get('/api/world?country=JP').set(auth).expect(200);
      expect(whole.body.meta).toMatchObject({ total: 16, to: 16, last_page: 1 });
    } finally {
      await products.deleteMany({ asin: mongoose.trusted({ $in: added }) });
    }
  });
});

describe('recent pages (WORLD_PAGE_TTL)', () => {
  it('sends a page it made again, byte for byte, for every user until it is WORLD_PAGE_TTL old, then makes it afresh', async () => {
    const kept = await createTestContext({ COUNTRIES: 'JP,US', WORLD_PAGE_TTL: '1s' });
    try {
      const a = { Authorization: `Bearer ${(await kept.ctx.users.create({ name: 'A', email: 'a@example.com' })).token}` };
      const b = { Authorization: `Bearer ${(await kept.ctx.users.create({ name: 'B', email: 'b@example.com' })).token}` };
      const products = productModel(kept.ctx.mongo);
      const product = (asin: string) => {
        const now = new Date();
        return {
          country: 'JP' as const,
          asin,
          title: asin,
          status: 'ok' as const,
          priority: 0 as const,
          created_at: now,
          updated_at: now,
          next_refresh_at: now,
        };
      };
      await products.create(product('B0RECENT01'));
      // One Host, as behind a proxy: supertest would otherwise listen on a new port for each request.
      const get = (h: Record<string, string>, url = '/api/world?country=JP') =>
        kept.http.get(url).set(h).set('Host', 'w.example').expect(200);
      const first = await get(a);
      expect(first.body.data.map((p: { asin: string }) => p.asin)).toEqual(['B0RECENT01']);
      await products.create(product('B0RECENT02'));
      const again = await get(b);
      expect(again.text).toBe(first.text);
      expect(again.headers.etag).toBe(first.headers.etag);
      // Another list, or another page of it, is made on its own.
      expect((await get(a, '/api/world?country=JP&limit=1')).body.data.map((p: { asin: string }) => p.asin)).toEqual(['B0RECENT02']);
      await until('the page is made afresh', async () => (await get(a)).body.data.length === 2, 5_000, 100);
    } finally {
      await kept.close();
    }
  });
});
