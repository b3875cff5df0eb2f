import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { productModel } from '../../src/models/product.js';
import { writeFoundItems, writeOutcomes } from '../../src/catalog/writes.js';
import { dealRecordSchema } from '../../src/catalog/deals.js';
import type { UpstreamItem } from '../../src/core/product.js';

let t: TestContext;
let auth: Record<string, string>;
const now = new Date();

/** Products with a drop below their 30-day average of 1 %, 2 %, … 30 % (JP), and a few in US. */
async function seed(): Promise<void> {
  const docs = [];
  for (let i = 1; i <= 30; i++) {
    docs.push({
      country: 'JP',
      asin: `B0DEAL${String(i).padStart(4, '0')}`,
      title: `Deal ${i}`,
      price: { amount: 1000 * i, currency: 'JPY' },
      availability: 'in_stock',
      sales_rank: 100 * i,
      browse_nodes: [{ id: i % 3 === 0 ? '333' : '111', name: null }],
      status: 'ok',
      priority: 0,
      price_days: [],
      price_levels: { avg_30: 2000 * i },
      drop: { avg_30: i, ...(i % 2 === 0 ? { low_7: i / 2 } : {}) },
      created_at: now,
      updated_at: now,
    });
  }
  docs.push({ ...docs[0], country: 'US', asin: 'B0DEALUS01', price: { amount: 500, currency: 'USD' }, drop: { avg_30: 50 } });
  // Not a deal: no drop, in no deals index.
  docs.push({ ...docs[0], asin: 'B0NODEAL01', drop: {} });
  await productModel(t.ctx.mongo).insertMany(docs);
}

beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP,US', APP_TIMEZONE: 'Asia/Tokyo', WORLD_PAGE_TTL: '0' });
  const { token } = await t.ctx.users.create({ name: 'Deals', email: 'deals@example.com' });
  auth = { Authorization: `Bearer ${token}` };
  await seed();
});
afterAll(async () => {
  await t?.close();
});

const asins = (body: { data: { asin: string }[] }) => body.data.map((p) => p.asin);

describe('GET /api/world/deals', () => {
  it('lists a country’s deals by drop, largest first, with the figure they are listed by', async () => {
    const res = await t.http.get('/api/world/deals?country=JP&limit=5').set(auth);
    expect(res.status).toBe(200);
    expect(asins(res.body)).toEqual(['B0DEAL0030', 'B0DEAL0029', 'B0DEAL0028', 'B0DEAL0027', 'B0DEAL0026']);
    expect(res.body.data[0].deal).toEqual({ basis: 'avg', days: 30, drop: 30, level: { amount: 60000, currency: 'JPY' } });
    for (const d of res.body.data) expect(dealRecordSchema.safeParse(d).success).toBe(true);
    expect(res.body.meta).toMatchObject({ current_page: 1, per_page: 5, total: 6, from: 1, to: 5 });
    expect(res.body.links.next).toMatch(/\/api\/world\/deals\?country=JP&limit=5&page=2$/);
  });

  it('pages on: the last page says no more', async () => {
    const res = await t.http.get('/api/world/deals?country=JP&limit=20&page=2').set(auth);
    expect(res.body.data).toHaveLength(10);
    expect(res.body.meta).toMatchObject({ total: 30, last_page: 2 });
    expect(res.body.links.next).toBeNull();
  });

  it('filters by basis and window, least drop, price, rank and browse node', async () => {
    const low = await t.http.get('/api/world/deals?country=JP&basis=low&days=7&min_drop=10').set(auth);
    expect(asins(low.body)).toEqual(['B0DEAL0030', 'B0DEAL0028', 'B0DEAL0026', 'B0DEAL0024', 'B0DEAL0022', 'B0DEAL0020']);
    const price = await t.http.get('/api/world/deals?country=JP&min_price=5000&max_price=7000').set(auth);
    expect(asins(price.body)).toEqual(['B0DEAL0007', 'B0DEAL0006', 'B0DEAL0005']);
    const rank = await t.http.get('/api/world/deals?country=JP&min_rank=200&max_rank=300').set(auth);
    expect(asins(rank.body)).toEqual(['B0DEAL0003', 'B0DEAL0002']);
    const node = await t.http.get('/api/world/deals?country=JP&node=333&limit=3').set(auth);
    expect(asins(node.body)).toEqual(['B0DEAL0030', 'B0DEAL0027', 'B0DEAL0024']);
    const us = await t.http.get('/api/world/deals?country=us').set(auth);
    expect(asins(us.body)).toEqual(['B0DEALUS01']);
    const none = await t.http.get('/api/world/deals?country=JP&basis=high&days=90').set(auth);
    expect(none.body.data).toEqual([]);
    expect(none.body.meta).toMatchObject({ total: 0, from: null });
  });

  it('refuses bad input with 422 naming the field', async () => {
    const cases: [string, string][] = [
      ['', 'country'],
      ['country=FR', 'country'],
      ['country=JP&basis=median', 'basis'],
      ['country=JP&days=14', 'days'],
      ['country=JP&min_drop=0', 'min_drop'],
      ['country=JP&min_drop=abc', 'min_drop'],
      ['country=JP&min_price=-1', 'min_price'],
      ['country=JP&min_price=9&max_price=3', 'max_price'],
      ['country=JP&min_rank=0', 'min_rank'],
      ['country=JP&node=abc', 'node'],
      ['country=JP&limit=101', 'limit'],
      ['country=JP&limit=100&page=11', 'page'],
    ];
    for (const [query, field] of cases) {
      const res = await t.http.get(`/api/world/deals?${query}`).set(auth);
      expect(res.status, query).toBe(422);
      expect(Object.keys(res.body.errors), query).toEqual([field]);
      expect(res.body.message).toMatch(/^The /);
    }
  });

  it('needs the API token, as the world list does', async () => {
    const res = await t.http.get('/api/world/deals?country=JP');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: 'Unauthenticated.' });
  });
});

describe('a refresh keeps the figures', () => {
  const item = (amount: number): UpstreamItem => ({
    asin: 'B0REFRESH1',
    title: 'Refreshed',
    brand: null,
    image: null,
    url: null,
    eans: [],
    price: { amount, currency: 'JPY' },
    availability: 'in_stock',
    buyBox: true,
    salesRank: 5,
    browseNodes: [],
    offers: 1,
    raw: null,
  });

  it('a price below its earlier days is a deal on the next page read', async () => {
    const day = 86_400_000;
    await writeFoundItems(t.ctx.mongo, t.ctx.config, 'JP', [item(2000)], { now: new Date(now.getTime() - 3 * day) });
    await writeFoundItems(t.ctx.mongo, t.ctx.config, 'JP', [item(1500)], { now });
    const stored = await productModel(t.ctx.mongo).findOne({ asin: 'B0REFRESH1' }).select('+price_days').lean();
    expect(stored?.price_days).toHaveLength(2);
    expect(stored?.drop).toMatchObject({ low_7: 25, high_7: 25 });
    const res = await t.http.get('/api/world/deals?country=JP&basis=low&days=7&min_drop=14').set(auth);
    expect(asins(res.body)).toEqual(['B0REFRESH1', 'B0DEAL0030', 'B0DEAL0028']);
    expect(res.body.data[0].deal).toEqual({ basis: 'low', days: 7, drop: 25, level: { amount: 2000, currency: 'JPY' } });
  });

  it('a product the upstream no longer knows leaves the lists', async () => {
    await writeOutcomes(t.ctx.mongo, t.ctx.config, 'JP', [], { B0REFRESH1: 'not_found' }, { now });
    const res = await t.http.get('/api/world/deals?country=JP&basis=low&days=7&min_drop=14').set(auth);
    expect(asins(res.body)).toEqual(['B0DEAL0030', 'B0DEAL0028']);
  });
});
