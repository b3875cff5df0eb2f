import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { alertModel } from '../../src/models/alert.js';
import { endpointModel } from '../../src/models/endpoint.js';
import { accountEventModel } from '../../src/models/account-event.js';

/**
 * Identical alerts one, different ones several; endpoints one per account and URL; the cap under
 * concurrent requests; and what another account or bad input gets. The real app, no workers.
 */
let t: TestContext;
const HOOK = 'https://93.184.216.34/hooks/a';
const OTHER_HOOK = 'https://93.184.216.34/hooks/b';

beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP,US', ACCOUNT_MAX_ALERTS: '5', RATE_LIMIT_API: '0' });
});

afterAll(() => t?.close());

async function account(email: string) {
  const { user, token } = await t.ctx.users.create({ name: email, email });
  return { id: user._id, headers: { Authorization: `Bearer ${token}` } };
}

const post = (headers: Record<string, string>, body: Record<string, unknown>) =>
  t.http
    .post('/api/alerts')
    .set(headers)
    .send({ country: 'JP', ...body });

describe('ACCOUNT_MAX_ALERTS under concurrent creations', () => {
  it('20 creations at once against a cap of 5 make exactly 5 alerts', async () => {
    const a = await account('cap@example.com');
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        post(a.headers, { asin: `B0CAPRACE${String.fromCharCode(65 + i)}`, kind: 'any_change', webhook_url: HOOK }),
      ),
    );
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.filter((s) => s === 422)).toHaveLength(15);
    for (const r of answers.filter((x) => x.status === 422)) expect(r.body.errors.kind[0]).toMatch(/at most 5 alerts/);
    expect((await t.http.get('/api/alerts').set(a.headers)).body.meta.total).toBe(5);
    expect(await t.ctx.alerts.counters.value(a.id, 'alerts')).toBe(5);
    // All five share the account's one endpoint for the URL, and its secret.
    const made = answers.filter((r) => r.status === 201).map((r) => r.body.data);
    expect(new Set(made.map((d) => d.endpoint_id)).size).toBe(1);
    expect(new Set(made.map((d) => d.secret)).size).toBe(1);

    // A deletion gives its place back.
    expect((await t.http.delete(`/api/alerts/${made[0].id}`).set(a.headers)).status).toBe(200);
    expect(await t.ctx.alerts.counters.value(a.id, 'alerts')).toBe(4);
    expect((await post(a.headers, { asin: 'B0CAPAFTER', kind: 'any_change', webhook_url: HOOK })).status).toBe(201);
    expect((await post(a.headers, { asin: 'B0CAPOVER1', kind: 'any_change', webhook_url: HOOK })).status).toBe(422);
  });

  it('seeds a missing counter from the real count once', async () => {
    const a = await account('seed@example.com');
    await alertModel(t.ctx.mongo).collection.insertMany(
      ['B0SEEDOLD1', 'B0SEEDOLD2', 'B0SEEDOLD3', 'B0SEEDOLD4'].map((asin) => ({
        user_id: a.id,
        asin,
        country: 'JP',
        kind: 'any_change',
        price: null,
        percent: null,
        webhook_url: HOOK,
        endpoint_id: null,
        disabled_at: null,
        disabled_reason: null,
        last_delivery_at: null,
        created_at: new Date(),
        updated_at: new Date(),
      })),
    );
    expect(await t.ctx.alerts.counters.value(a.id, 'alerts')).toBeUndefined();
    const answers = await Promise.all(
      ['B0SEEDNEW1', 'B0SEEDNEW2', 'B0SEEDNEW3'].map((asin) => post(a.headers, { asin, kind: 'any_change', webhook_url: HOOK })),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([201, 422, 422]);
    expect(await t.ctx.alerts.counters.value(a.id, 'alerts')).toBe(5);
  });
});

describe('several alerts per product, identical ones one', () => {
  it('posting an identical alert answers 200 with it; another threshold or URL is another alert, on the endpoint of its URL', async () => {
    const a = await account('update@example.com');
    const first = await post(a.headers, { asin: 'B0UPDATE01', kind: 'price_below', price: 1999, webhook_url: HOOK });
    expect(first.status).toBe(201);
    const again = await post(a.headers, { asin: 'b0update01', kind: 'price_below', price: 1999, webhook_url: HOOK, paused: true });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id: first.body.data.id, price: 1999, paused: true, secret: first.body.data.secret });
    const lower = await post(a.headers, { asin: 'B0UPDATE01', kind: 'price_below', price: 1500, webhook_url: OTHER_HOOK });
    expect(lower.status).toBe(201);
    expect(lower.body.data).toMatchObject({ price: 1500, webhook_url: OTHER_HOOK, secret: expect.stringMatching(/^whsec_/) });
    expect(lower.body.data.id).not.toBe(first.body.data.id);
    expect(lower.body.data.endpoint_id).not.toBe(first.body.data.endpoint_id);
    expect(lower.body.data.secret).not.toBe(first.body.data.secret);
    // The first threshold to the second URL, and the second threshold to the first, are two more.
    expect((await post(a.headers, { asin: 'B0UPDATE01', kind: 'price_below', price: 1999, webhook_url: OTHER_HOOK })).status).toBe(201);
    expect((await post(a.headers, { asin: 'B0UPDATE01', kind: 'price_below', price: 1500, webhook_url: HOOK })).status).toBe(201);
    // paused is state, not identity: spelt out at its default it is the same alert.
    expect((await post(a.headers, { asin: 'B0UPDATE01', kind: 'price_below', price: 1500, webhook_url: HOOK, paused: false })).status).toBe(
      200,
    );
    const list = await t.http.get('/api/alerts').set(a.headers);
    expect(list.body.meta.total).toBe(4);
    expect(await t.ctx.alerts.counters.value(a.id, 'alerts')).toBe(4);
    // The first alert kept its threshold and target through all of it.
    const read = await t.http.get(`/api/alerts/${first.body.data.id}`).set(a.headers);
    expect(read.body.data).toMatchObject({ price: 1999, webhook_url: HOOK, paused: true });
    const endpoints = await t.http.get('/api/webhooks').set(a.headers);
    expect(endpoints.body.data.map((e: { url: string }) => e.url).sort()).toEqual([HOOK, OTHER_HOOK]);
    expect(endpoints.body.data[0]).toEqual({
      id: expect.any(String),
      channel: 'webhook',
      url: expect.any(String),
      state: 'active',
      failing_since: null,
      disabled_at: null,
      disabled_reason: null,
      last_success_at: null,
      delivery: 'instant',
      digest_at: null,
      quiet_hours: null,
      created_at: expect.any(String),
    });
  });

  it('concurrent identical creations make one alert: one 201, the others 200, one secret', async () => {
    const a = await account('race@example.com');
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => post(a.headers, { asin: 'B0RACESAME', kind: 'back_in_stock', webhook_url: HOOK })),
    );
    const refused = answers.filter((r) => r.status >= 300).map((r) => [r.status, r.body]);
    expect(answers.map((r) => r.status).sort(), JSON.stringify(refused)).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((r) => r.body.data.id)).size).toBe(1);
    expect(new Set(answers.map((r) => r.body.data.secret)).size).toBe(1);
    expect(await alertModel(t.ctx.mongo).countDocuments({ user_id: a.id })).toBe(1);
    expect(await endpointModel(t.ctx.mongo).countDocuments({ user_id: a.id })).toBe(1);
    expect(await t.ctx.alerts.counters.value(a.id, 'alerts')).toBe(1);
  });
});

describe('another account and bad input', () => {
  it('another account’s endpoint, event and delivery answer 404, and change nothing', async () => {
    const a = await account('owner@example.com');
    const b = await account('stranger@example.com');
    const made = await post(a.headers, { asin: 'B0OWNEDEP1', kind: 'any_change', webhook_url: HOOK });
    const endpointId = made.body.data.endpoint_id as string;
    await endpointModel(t.ctx.mongo).updateOne(
      { _id: new Types.ObjectId(endpointId) },
      { $set: { disabled_at: new Date(), disabled_reason: 'test' } },
    );
    const event = await accountEventModel(t.ctx.mongo).create({
      user_id: a.id,
      type: 'endpoint.disabled',
      endpoint_id: new Types.ObjectId(endpointId),
      url: HOOK,
      reason: 'test',
      at: new Date(),
    });
    for (const res of [
      await t.http.get(`/api/webhooks/${endpointId}`).set(b.headers),
      await t.http.post(`/api/webhooks/${endpointId}/enable`).set(b.headers).send(),
      await t.http.get(`/api/events/${event._id.toHexString()}`).set(b.headers),
      await t.http.get('/api/deliveries/nope').set(b.headers),
      await t.http.post('/api/deliveries/nope/replay').set(b.headers).send(),
      await t.http.post('/api/deliveries/replay').set(b.headers).send({ endpoint_id: endpointId }),
      await t.http.get('/api/webhooks/not-an-id').set(a.headers),
      await t.http.get('/api/events/not-an-id').set(a.headers),
    ]) {
      expect(res.status, JSON.stringify(res.body)).toBe(404);
      expect(res.body).toEqual({ message: expect.any(String) });
    }
    expect((await t.http.get('/api/webhooks').set(b.headers)).body.meta.total).toBe(0);
    expect((await t.http.get('/api/events').set(b.headers)).body.meta.total).toBe(0);
    const still = await t.http.get(`/api/webhooks/${endpointId}`).set(a.headers);
    expect(still.body.data).toMatchObject({ state: 'disabled', disabled_reason: 'test' });
    expect((await t.http.get(`/api/alerts/${made.body.data.id}`).set(a.headers)).body.data).toMatchObject({
      active: false,
      disabled_reason: 'test',
    });
  });

  it.each([
    ['GET', '/api/deliveries?status=bogus', undefined, 'status', /pending, delivered, failed, gone/],
    ['GET', '/api/deliveries?status=failed&status=gone', undefined, 'status', /single value/],
    ['GET', '/api/deliveries?limit=101', undefined, 'limit', /100/],
    ['GET', '/api/webhooks?page=0', undefined, 'page', /at least 1/],
    ['GET', '/api/events?limit=x', undefined, 'limit', /integer/],
    ['POST', '/api/deliveries/replay', { endpoint_id: ['x'] }, 'endpoint_id', /string/],
    ['POST', '/api/deliveries/replay', { endpoint_id: 'x'.repeat(101) }, 'endpoint_id', /100/],
  ])('%s %s answers 422 on %s', async (method, url, body, field, message) => {
    const a = await account(`bad-${Math.random().toString(36).slice(2)}@example.com`);
    const res = method === 'GET' ? await t.http.get(url).set(a.headers) : await t.http.post(url).set(a.headers).send(body);
    expect(res.status).toBe(422);
    expect(res.body.errors[field].join(' ')).toMatch(message);
  });

  it('a refused webhook_url leaves the counter, the endpoints and the alerts as they were', async () => {
    const a = await account('refused@example.com');
    const res = await post(a.headers, { asin: 'B0REFUSED1', kind: 'any_change', webhook_url: 'https://10.0.0.1/hook' });
    expect(res.status).toBe(422);
    expect(res.body.errors.webhook_url).toEqual(['webhook_url resolves to a private address: refused.']);
    expect(await t.ctx.alerts.counters.value(a.id, 'alerts')).toBeUndefined();
    expect(await endpointModel(t.ctx.mongo).countDocuments({ user_id: a.id })).toBe(0);
    expect(await alertModel(t.ctx.mongo).countDocuments({ user_id: a.id })).toBe(0);
  });
});
