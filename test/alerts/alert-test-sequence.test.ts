import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { until } from '../helpers/until.js';
import { changeOf, startTestDeliveryWorker, verified, type TestDeliveryWorker, createAlert, testAccount } from '../helpers/deliveries.js';
import { deliveryModel } from '../../src/models/delivery.js';
import { alertSequenceModel } from '../../src/alerts/rules/sequences.js';

/**
 * The test button (POST /api/alerts/{id}/test) against a real receiver on loopback, and the
 * deliveries' sequence numbers per alert and product through the real DeliveryQueue and worker.
 */
let t: TestContext;
let rx: WebhookReceiver;
let worker: TestDeliveryWorker;
const TIMEOUT_MS = 1_000;

beforeAll(async () => {
  rx = await new WebhookReceiver().start();
  t = await createTestContext({
    COUNTRIES: 'JP',
    ENDPOINT_ALLOW_PRIVATE: 'true',
    DELIVERY_RETRY_SCHEDULE: '200ms,200ms',
    DELIVERY_TIMEOUT: `${TIMEOUT_MS}ms`,
    RATE_LIMIT_API: '0',
  });
  worker = await startTestDeliveryWorker(t, 'alert-test-sequence');
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await rx?.close();
});

const testAlert = (headers: Record<string, string>, id: string) => t.http.post(`/api/alerts/${id}/test`).set(headers);

describe('POST /api/alerts/{id}/test', () => {
  it('sends a signed sample marked as a test, now, and answers what the receiver said', async () => {
    const a = await testAccount(t, 'test-ok@example.com');
    rx.script('/test-ok', [204]);
    const alert = await createAlert(t, a.headers, {
      asin: 'B0TESTOK01',
      kind: 'price_below',
      price: 5_000,
      webhook_url: `${rx.url}/test-ok`,
    });
    const res = await testAlert(a.headers, alert.id);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ outcome: 'delivered', status: 204, ok: true, error: null });
    expect(res.body.data.duration_ms).toBeGreaterThanOrEqual(0);
    const [got] = rx.at('/test-ok');
    expect(got!.headers['webhook-id']).toBe(res.body.data.webhook_id);
    const body = verified(alert.secret, got!);
    expect(body).toMatchObject({
      alert_id: alert.id,
      kind: 'price_below',
      alerts: [{ id: alert.id, kind: 'price_below', sequence: 0 }],
      sequence: 0,
      test: true,
      asin: 'B0TESTOK01',
      country: 'JP',
    });
    // A product never observed gets points made up for the kind: below the threshold after, not before.
    const { before, after } = body as { before: { price: number }; after: { price: number } };
    expect(before.price).toBeGreaterThanOrEqual(5_000);
    expect(after.price).toBeLessThan(5_000);
    // Not queued, not recorded.
    expect((await t.http.get(`/api/alerts/${alert.id}/deliveries`).set(a.headers)).body.data).toEqual([]);
    expect(await deliveryModel(t.ctx.mongo).countDocuments({ user_id: a.id })).toBe(0);
  });

  it('a receiver answering 500 is refused with its status and none of its text, and the endpoint stays healthy', async () => {
    const a = await testAccount(t, 'test-500@example.com');
    rx.script('/test-500', [500]);
    rx.answerBody('/test-500', 'db01.internal.example: connection pool exhausted');
    const alert = await createAlert(t, a.headers, { asin: 'B0TEST5001', kind: 'any_change', webhook_url: `${rx.url}/test-500` });
    const res = await testAlert(a.headers, alert.id);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ outcome: 'refused', status: 500, ok: false, error: 'the receiver answered 500' });
    expect(JSON.stringify(res.body)).not.toMatch(/db01|pool exhausted/);
    const endpoint = await t.http.get(`/api/webhooks/${alert.endpoint_id}`).set(a.headers);
    expect(endpoint.body.data).toMatchObject({ state: 'active', failing_since: null });
  });

  it('a receiver that hangs past DELIVERY_TIMEOUT is ok:false with the error, not a 5xx', async () => {
    const a = await testAccount(t, 'test-hang@example.com');
    rx.delay('/test-hang', TIMEOUT_MS * 3);
    const alert = await createAlert(t, a.headers, { asin: 'B0TESTHANG', kind: 'back_in_stock', webhook_url: `${rx.url}/test-hang` });
    const started = Date.now();
    const res = await testAlert(a.headers, alert.id);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ outcome: 'timed_out', status: null, ok: false, error: 'no complete answer within 1000 ms' });
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS * 3);
    expect(rx.at('/test-hang')).toHaveLength(1);
  });

  it("answers 404 for another account's alert and an unknown id, 401 without a token", async () => {
    const a = await testAccount(t, 'test-owner@example.com');
    const b = await testAccount(t, 'test-other@example.com');
    const alert = await createAlert(t, a.headers, { asin: 'B0TESTOWNR', kind: 'any_change', webhook_url: `${rx.url}/test-owner` });
    for (const res of [
      await testAlert(b.headers, alert.id),
      await testAlert(a.headers, '0123456789abcdef01234567'),
      await testAlert(a.headers, 'not-an-id'),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'No such alert.' });
    }
    const anonymous = await t.http.post(`/api/alerts/${alert.id}/test`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.message).toEqual(expect.any(String));
    expect(rx.at('/test-owner')).toHaveLength(0);
  });
});

describe('sequence numbers per alert and product', () => {
  const sequenceOf = (secret: string, got: Parameters<typeof verified>[1]) => verified(secret, got).sequence;

  it('count 1, 2, 3 for one alert and product, separately for another product, and once per change', async () => {
    const a = await testAccount(t, 'seq@example.com');
    const one = await createAlert(t, a.headers, { asin: 'B0SEQONE01', kind: 'any_change', webhook_url: `${rx.url}/seq` });
    const two = await createAlert(t, a.headers, { asin: 'B0SEQTWO01', kind: 'any_change', webhook_url: `${rx.url}/seq` });
    const first = changeOf('B0SEQONE01', { rank: 1 }, { rank: 2 });
    await t.ctx.deliveries.enqueueFor([first]);
    await t.ctx.deliveries.enqueueFor([changeOf('B0SEQTWO01', { rank: 1 }, { rank: 2 })]);
    await t.ctx.deliveries.enqueueFor([changeOf('B0SEQONE01', { rank: 2 }, { rank: 3 })]);
    // The first change seen again (a retried batch) keeps its number: no new delivery, no new number.
    await t.ctx.deliveries.enqueueFor([first]);
    await t.ctx.deliveries.enqueueFor([changeOf('B0SEQONE01', { rank: 3 }, { rank: 4 }), changeOf('B0SEQTWO01', { rank: 2 }, { rank: 3 })]);
    const got = await rx.waitFor('/seq', 5);
    const bodies = got.map((r) => verified(one.secret, r) as { alert_id: string; sequence: number; alerts: { sequence: number }[] });
    const numbers = (id: string) =>
      bodies
        .filter((b) => b.alert_id === id)
        .map((b) => b.sequence)
        .sort((x, y) => x - y);
    expect(numbers(one.id)).toEqual([1, 2, 3]);
    expect(numbers(two.id)).toEqual([1, 2]);
    for (const b of bodies) expect(b.alerts[0]!.sequence).toBe(b.sequence);
    expect(got.every((r) => sequenceOf(one.secret, r) !== undefined)).toBe(true);
    const counter = await alertSequenceModel(t.ctx.mongo).findById(`${one.id}.JP.B0SEQONE01`).lean();
    expect(counter?.seq).toBe(3);

    // Deleting the alert deletes its counters.
    expect((await t.http.delete(`/api/alerts/${one.id}`).set(a.headers)).status).toBe(200);
    expect(await alertSequenceModel(t.ctx.mongo).countDocuments({ alert_id: one.id })).toBe(0);
    expect(await alertSequenceModel(t.ctx.mongo).countDocuments({ alert_id: two.id })).toBe(1);
  });

  it('each alert fired at one endpoint by one change carries its own number', async () => {
    const a = await testAccount(t, 'seq-multi@example.com');
    const asin = 'B0SEQMULTI';
    const any = await createAlert(t, a.headers, { asin, kind: 'any_change', webhook_url: `${rx.url}/seq-multi` });
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 1 }, { rank: 2 })]);
    const back = await createAlert(t, a.headers, { asin, kind: 'back_in_stock', webhook_url: `${rx.url}/seq-multi` });
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { availability: 'out_of_stock' }, { availability: 'in_stock' })]);
    const got = await rx.waitFor('/seq-multi', 2);
    const both = got.find((r) => (verified(any.secret, r).alerts as unknown[]).length === 2)!;
    expect(verified(any.secret, both)).toMatchObject({
      alert_id: any.id,
      sequence: 2,
      alerts: [
        { id: any.id, kind: 'any_change', sequence: 2 },
        { id: back.id, kind: 'back_in_stock', sequence: 1 },
      ],
    });
  });

  it('a retried delivery carries the same number on every attempt, and a replay too', async () => {
    const a = await testAccount(t, 'seq-retry@example.com');
    const asin = 'B0SEQRETRY';
    rx.script('/seq-retry', [500]);
    const alert = await createAlert(t, a.headers, { asin, kind: 'any_change', webhook_url: `${rx.url}/seq-retry` });
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 1 }, { rank: 2 })]);
    await rx.waitFor('/seq-retry', 2);
    rx.script('/seq-retry', [500, 500, 500]);
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 2 }, { rank: 3 })]);
    const attempts = await rx.waitFor('/seq-retry', 5);
    const byId = new Map<string, { status: number; sequence: unknown }[]>();
    for (const r of attempts) {
      const id = r.headers['webhook-id'] as string;
      byId.set(id, [...(byId.get(id) ?? []), { status: r.status, sequence: verified(alert.secret, r).sequence }]);
    }
    const [firstEvent, secondEvent] = [...byId.values()];
    expect(firstEvent).toEqual([
      { status: 500, sequence: 1 },
      { status: 200, sequence: 1 },
    ]);
    expect(secondEvent).toEqual([
      { status: 500, sequence: 2 },
      { status: 500, sequence: 2 },
      { status: 500, sequence: 2 },
    ]);
    // The second failed for good; its replay sends the same number again.
    const failedId = [...byId.keys()][1]!;
    await until('failed', async () => {
      const d = (await t.http.get(`/api/deliveries/${failedId}`).set(a.headers)).body.data;
      return d?.status === 'failed' || undefined;
    });
    expect((await t.http.post(`/api/deliveries/${failedId}/replay`).set(a.headers)).status).toBe(202);
    const [, , , , , replayed] = await rx.waitFor('/seq-retry', 6);
    expect(replayed!.headers['webhook-id']).toBe(failedId);
    expect(verified(alert.secret, replayed!).sequence).toBe(2);
  });
});
