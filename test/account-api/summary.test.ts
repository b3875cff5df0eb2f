import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { testAccount } from '../helpers/deliveries.js';
import { productModel } from '../../src/models/product.js';
import { historyPointModel } from '../../src/models/history-point.js';
import { deliveryModel } from '../../src/models/delivery.js';
import { watchModel } from '../../src/models/watch.js';
import { SUMMARY_PAGE } from '../../src/summary/account-summary.js';

const DAY = 86_400_000;
let t: TestContext;

beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP,US', ENDPOINT_ALLOW_PRIVATE: 'true' });
});
afterAll(async () => {
  await t?.close();
});

const mongoCommands = async (): Promise<number> => (await t.ctx.metrics.mongoCommands.get()).values.reduce((sum, v) => sum + v.value, 0);

async function point(asin: string, daysAgo: number, price: number) {
  const at = new Date(Math.floor((Date.now() - daysAgo * DAY) / 1000) * 1000);
  await historyPointModel(t.ctx.mongo).create({
    _id: `JP.${asin}.${at.getTime()}`,
    country: 'JP',
    asin,
    at,
    price,
    currency: 'JPY',
    availability: 'in_stock',
    buybox: true,
    rank: 7,
    expires_at: new Date(at.getTime() + 365 * DAY),
  });
}

describe('GET /api/me/summary', () => {
  it('refuses without a token', async () => {
    expect((await t.http.get('/api/me/summary')).status).toBe(401);
  });

  it("answers the account, its products' latest state, their recent changes, its browse nodes, alerts and endpoints", async () => {
    const me = await testAccount(t, 'summary@example.com');
    const other = await testAccount(t, 'summary-other@example.com');
    for (const asin of ['B0SUMMARY1', 'B0SUMMARY2']) await t.http.post('/api/watch/asin').set(me.headers).send({ asin }).expect(201);
    await t.http.post('/api/watch/browse').set(me.headers).send({ browse: '2277721051' }).expect(201);
    await t.http.post('/api/watch/browse').set(other.headers).send({ browse: '2277724051' }).expect(201);
    await t.http.post('/api/watch/asin').set(other.headers).send({ asin: 'B0SUMMARY9' }).expect(201);
    await productModel(t.ctx.mongo).updateOne(
      { country: 'JP', asin: 'B0SUMMARY1' },
      { $set: { title: 'Kettle', status: 'ok', price: { amount: 1980, currency: 'JPY' }, availability: 'in_stock' } },
    );
    await point('B0SUMMARY1', 40, 2600); // older than the summary's window
    await point('B0SUMMARY1', 3, 2200);
    await point('B0SUMMARY2', 2, 990);
    await point('B0SUMMARY1', 1, 1980);
    await point('B0SUMMARY9', 1, 5); // another account's product
    const alert = async (headers: Record<string, string>, asin: string, price: number) =>
      (
        await t.http
          .post('/api/alerts')
          .set(headers)
          .send({ asin, country: 'JP', kind: 'price_below', price, webhook_url: 'http://127.0.0.1:9/h' })
      ).body.data.id as string;
    const delivered = await alert(me.headers, 'B0SUMMARY1', 1500);
    const quiet = await alert(me.headers, 'B0SUMMARY2', 500);
    const record = (id: string, alertId: string, minutesAgo: number, status: 'delivered' | 'failed') => ({
      _id: id,
      alert_id: new Types.ObjectId(alertId),
      alert_ids: [new Types.ObjectId(alertId)],
      user_id: me.id,
      status,
      attempts: 1,
      response_code: status === 'delivered' ? 200 : 500,
      created_at: new Date(Date.now() - minutesAgo * 60_000),
    });
    await deliveryModel(t.ctx.mongo).create([record('msg_old', delivered, 30, 'failed'), record('msg_new', delivered, 5, 'delivered')]);

    const res = await t.http.get('/api/me/summary').set(me.headers).expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const { data } = res.body;
    expect(data.account).toMatchObject({ id: me.id.toHexString(), name: 'summary@example.com' });
    expect(data.products.total).toBe(2);
    expect(data.products.more).toBeNull();
    const first = data.products.items.find((p: { watch: { asin: string } }) => p.watch.asin === 'B0SUMMARY1');
    expect(first.records.map((r: { country: string }) => r.country).sort()).toEqual(['JP', 'US']);
    expect(first.records.find((r: { country: string }) => r.country === 'JP')).toMatchObject({ title: 'Kettle', availability: 'in_stock' });
    expect(data.recent_changes.map((c: { asin: string; price: number }) => [c.asin, c.price])).toEqual([
      ['B0SUMMARY1', 1980],
      ['B0SUMMARY2', 990],
      ['B0SUMMARY1', 2200],
    ]);
    expect(data.alerts.total).toBe(2);
    const byId = new Map(data.alerts.items.map((a: { id: string }) => [a.id, a]));
    expect(byId.get(delivered)).toMatchObject({ latest_delivery: { id: 'msg_new', status: 'delivered', response_code: 200 } });
    expect(byId.get(quiet)).toMatchObject({ latest_delivery: null });
    expect(data.countries).toEqual(['JP', 'US']);
    expect(data.browse_nodes).toMatchObject({ total: 1, more: null, items: [{ type: 'browse', browse: '2277721051' }] });
    // Both alerts post to one URL: one endpoint, with its state.
    expect(data.endpoints).toMatchObject({
      total: 1,
      more: null,
      items: [{ channel: 'webhook', url: 'http://127.0.0.1:9/h', state: 'active' }],
    });
  });

  it('costs the same handful of queries for a large account, and links the next pages', async () => {
    const small = await testAccount(t, 'summary-small@example.com');
    await t.http.post('/api/watch/asin').set(small.headers).send({ asin: 'B0SMALL001' }).expect(201);
    const large = await testAccount(t, 'summary-large@example.com');
    const now = Date.now();
    await watchModel(t.ctx.mongo).insertMany(
      Array.from({ length: SUMMARY_PAGE + 5 }, (_, i) => ({
        user_id: large.id,
        kind: 'asin',
        key: `B0LARGE${String(i).padStart(3, '0')}`,
        priority: 0,
        created_at: new Date(now - i * 1000),
      })),
    );
    const cost = async (headers: Record<string, string>) => {
      const before = await mongoCommands();
      const res = await t.http.get('/api/me/summary').set(headers).expect(200);
      return { commands: (await mongoCommands()) - before, body: res.body };
    };
    await cost(small.headers); // the account's token is read once, then kept
    await cost(large.headers);
    const a = await cost(small.headers);
    const b = await cost(large.headers);
    // Five pages with their counts (ASINs, browse nodes, alerts, endpoints and the legacy alerts
    // endpoints adopt), the products, their points and the deliveries.
    expect(b.commands).toBeLessThanOrEqual(13);
    expect(b.commands).toBeLessThanOrEqual(a.commands + 1);
    expect(b.body.data.products.items).toHaveLength(SUMMARY_PAGE);
    expect(b.body.data.products.total).toBe(SUMMARY_PAGE + 5);
    expect(b.body.data.products.more).toMatch(/\/api\/watch\?type=asin&limit=100&page=2$/);
    const next = new URL(b.body.data.products.more as string);
    const page2 = await t.http.get(`${next.pathname}${next.search}`).set(large.headers).expect(200);
    expect(page2.body.data).toHaveLength(5);
  });
});
