import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';

/** The alerts routes on the real app, with the default ENDPOINT_ALLOW_PRIVATE=false. */
let t: TestContext;
let a: Record<string, string>;
let b: Record<string, string>;
const PUBLIC_HOOK = 'https://93.184.216.34/hooks/shelfwatch';

beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP,US', ACCOUNT_MAX_ALERTS: '5' });
  const user = async (email: string) => {
    const { token } = await t.ctx.users.create({ name: email, email });
    return { Authorization: `Bearer ${token}` };
  };
  a = await user('a@example.com');
  b = await user('b@example.com');
});

afterAll(() => t?.close());

const create = (headers: Record<string, string>, body: Record<string, unknown>) => t.http.post('/api/alerts').set(headers).send(body);

describe('POST /api/alerts', () => {
  it('creates an alert with its secret shown once, and watches the ASIN', async () => {
    const res = await create(a, { asin: 'b0alrtapi1', country: 'us', kind: 'price_below', price: 1999, webhook_url: PUBLIC_HOOK });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      asin: 'B0ALRTAPI1',
      country: 'US',
      kind: 'price_below',
      price: 1999,
      percent: null,
      webhook_url: PUBLIC_HOOK,
      active: true,
      last_delivery_at: null,
    });
    expect(res.body.data.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const read = await t.http.get(`/api/alerts/${res.body.data.id}`).set(a);
    expect(read.status).toBe(200);
    expect(read.body.data).not.toHaveProperty('secret');
    expect(JSON.stringify(read.body)).not.toContain(res.body.data.secret.slice(6));
    const watch = await t.http.get('/api/watch?type=asin').set(a);
    expect(watch.body.data.map((w: { asin: string }) => w.asin)).toContain('B0ALRTAPI1');
  });

  it('keeps a priority-1 watch as it is', async () => {
    await t.http.post('/api/watch/asin').set(a).send({ asin: 'B0ALRTAPI2', priority: 1 });
    expect((await create(a, { asin: 'B0ALRTAPI2', country: 'JP', kind: 'back_in_stock', webhook_url: PUBLIC_HOOK })).status).toBe(201);
    const watch = await t.http.get('/api/watch?type=asin').set(a);
    expect(watch.body.data.find((w: { asin: string }) => w.asin === 'B0ALRTAPI2').priority).toBe(1);
  });

  it.each([
    [{ kind: 'price_below' }, 'price', /required for price_below/],
    [{ kind: 'price_drop' }, 'percent', /required for price_drop/],
    [{ kind: 'price_drop', percent: 100 }, 'percent', /1 to 99/],
    [{ kind: 'price_drop', percent: '0' }, 'percent', /1 to 99/],
    [{ kind: 'any_change', price: 10 }, 'price', /only for price_below/],
    [{ kind: 'sometimes' }, 'kind', /price_below, price_drop/],
    [{ kind: 'any_change', country: 'JP,US' }, 'country', /exactly one/],
    [{ kind: 'any_change', country: 'DE' }, 'country', /exactly one/],
    [{ kind: 'any_change', asin: 'nope' }, 'asin', /./],
    [{ kind: 'any_change', webhook_url: 'http://93.184.216.34/x' }, 'webhook_url', /https/],
    [{ kind: 'any_change', webhook_url: 'https://user:pw@93.184.216.34/x' }, 'webhook_url', /./],
    [{ kind: 'any_change', webhook_url: ['https://93.184.216.34/'] }, 'webhook_url', /string/],
    [
      { kind: 'any_change', webhook_url: 'https://example.com:8443/' },
      'webhook_url',
      /^The webhook url field must use port 443 \(this server's ENDPOINT_ALLOWED_PORTS\)\.$/,
    ],
    [{ kind: 'any_change', channel: 'slack', webhook_url: 'https://93.184.216.34:25/x' }, 'webhook_url', /must use port 443/],
  ])('refuses %j with 422 on %s and stores nothing', async (patch, field, message) => {
    const before = await t.http.get('/api/alerts').set(b);
    const res = await create(b, { asin: 'B0ALRTBAD1', country: 'JP', webhook_url: PUBLIC_HOOK, ...patch });
    expect(res.status).toBe(422);
    expect(res.body.errors[field].join(' ')).toMatch(message);
    expect((await t.http.get('/api/alerts').set(b)).body.meta.total).toBe(before.body.meta.total);
  });

  it.each([
    'https://127.0.0.1/hook',
    'https://localhost/hook',
    'https://10.1.2.3/hook',
    'https://[::1]/hook',
    'https://169.254.169.254/latest',
  ])('refuses the private target %s after resolving it', async (url) => {
    const res = await create(b, { asin: 'B0ALRTPRIV', country: 'JP', kind: 'any_change', webhook_url: url });
    expect(res.status).toBe(422);
    expect(res.body.errors.webhook_url.join(' ')).toMatch(/address|https/);
    const watch = await t.http.get('/api/watch').set(b);
    expect(watch.body.data.map((w: { asin?: string }) => w.asin)).not.toContain('B0ALRTPRIV');
  });

  it('holds an account to ACCOUNT_MAX_ALERTS', async () => {
    const { token } = await t.ctx.users.create({ name: 'capped', email: 'capped@example.com' });
    const c = { Authorization: `Bearer ${token}` };
    for (let i = 0; i < 5; i++)
      expect((await create(c, { asin: `B0ALRTCAP${i}`, country: 'JP', kind: 'any_change', webhook_url: PUBLIC_HOOK })).status).toBe(201);
    const res = await create(c, { asin: 'B0ALRTCAP9', country: 'JP', kind: 'any_change', webhook_url: PUBLIC_HOOK });
    expect(res.status).toBe(422);
    expect(res.body.errors.kind[0]).toMatch(/at most 5 alerts/);
  });

  it('answers 401 without a token', async () => {
    expect((await t.http.post('/api/alerts').send({ asin: 'B0ALRTAPI1' })).status).toBe(401);
    expect((await t.http.get('/api/alerts')).status).toBe(401);
  });
});

describe('one account cannot see another one’s alerts', () => {
  it('404 on read, deliveries and delete; the alert stays', async () => {
    const mine = await create(a, { asin: 'B0ALRTOWN1', country: 'JP', kind: 'any_change', webhook_url: PUBLIC_HOOK });
    const id = mine.body.data.id as string;
    expect((await t.http.get(`/api/alerts/${id}`).set(b)).status).toBe(404);
    expect((await t.http.get(`/api/alerts/${id}/deliveries`).set(b)).status).toBe(404);
    expect((await t.http.delete(`/api/alerts/${id}`).set(b)).status).toBe(404);
    expect((await t.http.get('/api/alerts').set(b)).body.data.map((x: { id: string }) => x.id)).not.toContain(id);
    expect((await t.http.get(`/api/alerts/${id}`).set(a)).status).toBe(200);
    expect((await t.http.get('/api/alerts/not-an-id').set(a)).status).toBe(404);
  });

  it('the owner lists, reads deliveries of and deletes it', async () => {
    const mine = await create(a, { asin: 'B0ALRTOWN2', country: 'US', kind: 'price_drop', percent: 10, webhook_url: PUBLIC_HOOK });
    const id = mine.body.data.id as string;
    const list = await t.http.get('/api/alerts?limit=2').set(a);
    expect(list.body.data[0].id).toBe(id);
    expect(list.body.meta).toMatchObject({ per_page: 2, current_page: 1 });
    expect(list.body.meta.total).toBeGreaterThanOrEqual(3);
    const deliveries = await t.http.get(`/api/alerts/${id}/deliveries`).set(a);
    expect(deliveries.status).toBe(200);
    expect(deliveries.body).toMatchObject({ data: [], meta: { total: 0 } });
    const del = await t.http.delete(`/api/alerts/${id}`).set(a);
    expect(del.status).toBe(200);
    expect(del.body.data.id).toBe(id);
    expect((await t.http.get(`/api/alerts/${id}`).set(a)).status).toBe(404);
    expect((await t.http.delete(`/api/alerts/${id}`).set(a)).status).toBe(404);
  });
});
