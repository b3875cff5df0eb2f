import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { WebhookReceiver, type Received } from '../helpers/webhook-receiver.js';
import { until } from '../helpers/until.js';
import { OpenApiChecker } from '../helpers/openapi-check.js';
import { buildOpenApiDocument } from '../../src/app/http/openapi/document.js';

/**
 * Alerts end to end: the real app, workers and simulator, and a real HTTP receiver on loopback
 * (ENDPOINT_ALLOW_PRIVATE=true lets the webhook reach it). The simulator's clock is the test's: each
 * step moves it past every product's drift, so a forced update sees the product change.
 */
const DRIFT_MS = 60_000;
let p: Pipeline;
let rx: WebhookReceiver;
let headers: Record<string, string>;
const clock = { now: Date.UTC(2026, 10, 24, 3, 0, 0) };

beforeAll(async () => {
  rx = await new WebhookReceiver().start();
  p = await startPipeline(
    {
      ENDPOINT_ALLOW_PRIVATE: 'true',
      DELIVERY_RETRY_SCHEDULE: '50ms,50ms',
      DELIVERY_TIMEOUT: '5s',
      SIMULATOR_DRIFT_MS: String(DRIFT_MS),
      SIMULATOR_NOT_FOUND_RATE: '0',
      SIMULATOR_NOT_ACCESSIBLE_RATE: '0',
      RATE_LIMIT_UPDATE: '0',
      RATE_LIMIT_API: '0',
      ACCOUNT_MAX_UPDATES_PER_DAY: '0',
    },
    { now: () => clock.now },
  );
  ({ headers } = await p.user('alerts@example.com'));
}, 60_000);

afterAll(async () => {
  await p?.close();
  await rx?.close();
});

/** Moves the simulator past every product's next change, then refreshes the ASIN now. */
async function changeAndRefresh(asin: string, move = true): Promise<void> {
  if (move) clock.now += 100 * DRIFT_MS;
  const res = await p.http.get(`/api/world/update?asin=${asin}&country=JP`).set(headers);
  expect(res.status).toBe(200);
}

async function createAlert(body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const res = await p.http
    .post('/api/alerts')
    .set(headers)
    .send({ country: 'JP', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.data.id, secret: res.body.data.secret };
}

async function history(asin: string): Promise<{ price: number | null; availability: string; rank: number | null }[]> {
  const res = await p.http.get(`/api/world/asin/${asin}/history?country=JP&limit=100`).set(headers);
  expect(res.status).toBe(200);
  return res.body.data;
}

function verified(secret: string, got: Received): unknown {
  const h = got.headers as Record<string, string>;
  return new Webhook(secret).verify(got.body, {
    'webhook-id': h['webhook-id']!,
    'webhook-timestamp': h['webhook-timestamp']!,
    'webhook-signature': h['webhook-signature']!,
  });
}

describe('alert webhooks', () => {
  it('a price drop delivers one signed webhook that verifies with the secret', async () => {
    const asin = 'B0ALRTDROP';
    const alert = await createAlert({ asin, kind: 'price_drop', percent: 1, webhook_url: `${rx.url}/drop` });
    // Creating the alert watched the ASIN.
    const watch = await p.http.get('/api/watch').set(headers);
    expect(watch.body.data.map((w: { asin?: string; key?: string }) => w.asin ?? w.key)).toContain(asin);

    await changeAndRefresh(asin, false);
    let drops = 0;
    for (let i = 0; i < 30 && drops === 0; i++) {
      await changeAndRefresh(asin);
      const points = await history(asin);
      const [before, after] = points.slice(-2);
      if (before?.price != null && after?.price != null && after.price * 100 <= before.price * 99) drops++;
    }
    expect(drops, 'the simulator never dropped the price by 1% in 30 changes').toBe(1);
    const [got] = await rx.waitFor('/drop', 1);
    const payload = verified(alert.secret, got!) as Record<string, unknown>;
    expect(() => verified('whsec_' + Buffer.alloc(24, 7).toString('base64'), got!)).toThrow();
    const points = await history(asin);
    expect(payload).toEqual({
      alert_id: alert.id,
      kind: 'price_drop',
      alerts: [{ id: alert.id, kind: 'price_drop', sequence: 1 }],
      sequence: 1,
      asin,
      country: 'JP',
      before: points.at(-2),
      after: points.at(-1),
    });
    expect(got!.headers['content-type']).toMatch(/^application\/json/);
    // The delivery is the one the OpenAPI document's `webhooks` describes.
    const doc = new OpenApiChecker(buildOpenApiDocument(p.ctx.config));
    expect(doc.checkWebhook('alertDelivery', got!)).toBeUndefined();
    expect(doc.checkWebhook('alertDelivery', { ...got!, body: JSON.stringify({ ...payload, after: null }) })).toMatch(/after/);

    // The same state seen again is no change: no point, no delivery.
    const count = points.length;
    await changeAndRefresh(asin, false);
    expect(await history(asin)).toHaveLength(count);
    const deliveries = await p.http.get(`/api/alerts/${alert.id}/deliveries`).set(headers);
    expect(deliveries.body.data).toHaveLength(1);
    expect(deliveries.body.data[0]).toMatchObject({ status: 'delivered', attempts: 1, response_code: 200 });
    expect(rx.at('/drop')).toHaveLength(1);
  });

  it('a receiver answering 500 and then 200 gets the same delivery twice', async () => {
    const asin = 'B0ALRTRTRY';
    rx.script('/retry', [500]);
    const alert = await createAlert({ asin, kind: 'any_change', webhook_url: `${rx.url}/retry` });
    await changeAndRefresh(asin, false);
    await changeAndRefresh(asin);
    const [first, second] = await rx.waitFor('/retry', 2);
    expect(first!.status).toBe(500);
    expect(second!.status).toBe(200);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(second!.body).toBe(first!.body);
    verified(alert.secret, second!);
    const rec = await until('the delivery recorded as delivered', async () => {
      const res = await p.http.get(`/api/alerts/${alert.id}/deliveries`).set(headers);
      return res.body.data[0]?.status === 'delivered' ? res.body.data[0] : undefined;
    });
    expect(rec).toMatchObject({ attempts: 2, response_code: 200, id: first!.headers['webhook-id'] });
  });

  it('410 Gone disables the alert: later changes deliver nothing', async () => {
    const asin = 'B0ALRTGONE';
    rx.script('/gone', [410]);
    const alert = await createAlert({ asin, kind: 'any_change', webhook_url: `${rx.url}/gone` });
    await changeAndRefresh(asin, false);
    await changeAndRefresh(asin);
    await rx.waitFor('/gone', 1);
    const off = await until('the alert disabled', async () => {
      const res = await p.http.get(`/api/alerts/${alert.id}`).set(headers);
      return res.body.data.active === false ? res.body.data : undefined;
    });
    expect(off.disabled_reason).toMatch(/410/);
    const deliveries = await p.http.get(`/api/alerts/${alert.id}/deliveries`).set(headers);
    expect(deliveries.body.data[0]).toMatchObject({ status: 'gone', attempts: 1, response_code: 410 });

    const before = (await history(asin)).length;
    await changeAndRefresh(asin);
    expect((await history(asin)).length).toBe(before + 1);
    expect(await p.ctx.deliveryJobs.queue.getJobCountByTypes('wait', 'delayed', 'active', 'prioritized')).toBe(0);
    expect(rx.at('/gone')).toHaveLength(1);
  });
});
