import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { until } from '../helpers/until.js';
import { changeOf, createAlert, startTestDeliveryWorker, testAccount, verified, type TestDeliveryWorker } from '../helpers/deliveries.js';
import { heldDeliveryModel } from '../../src/models/held-delivery.js';
import { deliveryModel } from '../../src/models/delivery.js';
import { startDigestTick } from '../../src/app/roles/digest-tick.js';
import { OpenApiChecker } from '../helpers/openapi-check.js';
import { buildOpenApiDocument } from '../../src/app/http/openapi/document.js';

/**
 * Digests and quiet hours over a simulated day: the real context on a clock the test moves minute
 * by minute, alerts fired through the real delivery path (ctx.deliveries.enqueueFor), the digest
 * flush the scheduler's tick runs each minute (ctx.digests.flush), and a real delivery worker
 * sending to a real receiver on loopback.
 */
const ZONE = 'Asia/Tokyo';
const MINUTE = 60_000;
let t: TestContext;
let rx: WebhookReceiver;
let worker: TestDeliveryWorker;
const clock = { now: DateTime.fromISO('2026-11-24T00:00', { zone: ZONE }).toMillis() };
const local = (ms: number) => DateTime.fromMillis(ms, { zone: ZONE });

beforeAll(async () => {
  rx = await new WebhookReceiver().start();
  t = await createTestContext(
    {
      COUNTRIES: 'JP',
      ENDPOINT_ALLOW_PRIVATE: 'true',
      DELIVERY_RETRY_SCHEDULE: '100ms,100ms',
      DELIVERY_TIMEOUT: '5s',
      RATE_LIMIT_API: '0',
    },
    { clock: () => new Date(clock.now) },
  );
  worker = await startTestDeliveryWorker(t, 'digests-test');
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await rx?.close();
});

/** The 30 local times of the simulated day's alerts: some at night (quiet), most by day, several hours without any. */
const FIRES = [
  '00:10',
  '00:40',
  '03:05',
  '06:59', // quiet: held to 07:00
  '07:00',
  '07:15',
  '07:45', // 07 → 08:00
  '09:01',
  '09:30',
  '09:31',
  '09:59', // 09 → 10:00
  '10:20', // 10 → 11:00
  '12:00',
  '12:10',
  '12:20',
  '12:30',
  '12:40', // 12 → 13:00
  '15:05',
  '15:55', // 15 → 16:00
  '18:18', // 18 → 19:00
  '20:00',
  '20:30',
  '20:59', // 20 → 21:00
  '21:10',
  '21:50', // 21 → 22:00 is quiet: held to 07:00 next day
  '22:00',
  '22:30',
  '23:00',
  '23:30',
  '23:59', // quiet: held to 07:00 next day
];

describe('digests and quiet hours', () => {
  it('an hourly endpoint with quiet hours: one digest per hour that had alerts, newest first, none in quiet hours, one at their end', async () => {
    expect(FIRES).toHaveLength(30);
    const { headers } = await testAccount(t, 'digest@example.com');
    const asin = 'B0DIGEST01';
    const alert = await createAlert(t, headers, { asin, kind: 'any_change', webhook_url: `${rx.url}/digest` });
    const me = await t.http.patch('/api/me').set(headers).send({ time_zone: ZONE });
    expect(me.status, JSON.stringify(me.body)).toBe(200);
    expect(me.body.data.time_zone).toBe(ZONE);
    const patched = await t.http
      .patch(`/api/webhooks/${alert.endpoint_id}`)
      .set(headers)
      .send({ delivery: 'hourly', quiet_hours: { start: '22:00', end: '07:00' } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.data).toMatchObject({ delivery: 'hourly', digest_at: null, quiet_hours: { start: '22:00', end: '07:00' } });

    const fireAt = new Map(FIRES.map((hhmm, i) => [hhmm, i]));
    const firedAt: number[] = [];
    const sentAt: number[] = [];
    const end = DateTime.fromISO('2026-11-25T07:05', { zone: ZONE }).toMillis();
    for (; clock.now <= end; clock.now += MINUTE) {
      const hhmm = local(clock.now).toFormat('HH:mm');
      if (local(clock.now).day === 24 && fireAt.has(hhmm)) {
        expect(
          await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 1000 + firedAt.length }, { price: 1001 + firedAt.length })]),
        ).toBe(1);
        firedAt.push(clock.now);
      }
      const queued = await t.ctx.digests.flush();
      for (let i = 0; i < queued; i++) sentAt.push(clock.now);
    }
    expect(firedAt).toHaveLength(30);
    // Hours with alerts, out of quiet hours; what fell in them (or whose hour closed at their start) at their end.
    expect(sentAt.map((ms) => local(ms).toFormat('dd HH:mm'))).toEqual([
      '24 07:00',
      '24 08:00',
      '24 10:00',
      '24 11:00',
      '24 13:00',
      '24 16:00',
      '24 19:00',
      '24 21:00',
      '25 07:00',
    ]);
    const sizes = [4, 3, 4, 1, 5, 2, 1, 3, 7];
    const got = await rx.waitFor('/digest', sizes.length);
    const bodies = got.map(
      (r) => verified(alert.secret, r) as { type: string; count: number; alerts: { sequence: number; fired_at: string }[] },
    );
    // Ordered by window (a digest's webhook-id names its endpoint and window, then the digest).
    const order = got.map((r) => Number(String(r.headers['webhook-id']).split('.').at(-2)));
    const byWindow = bodies.map((b, i) => ({ b, w: order[i]! })).sort((x, y) => x.w - y.w);
    expect(byWindow.map((x) => x.w)).toEqual(sentAt);
    expect(byWindow.map((x) => x.b.count)).toEqual(sizes);
    let next = 1;
    for (const { b } of byWindow) {
      expect(b.type).toBe('digest');
      const seqs = b.alerts.map((a) => a.sequence);
      // Newest first inside each digest; every alert once, in firing order across them.
      expect(seqs).toEqual([...seqs].sort((x, y) => y - x));
      expect([...seqs].reverse()).toEqual(Array.from({ length: seqs.length }, (_, i) => next + i));
      next += seqs.length;
    }
    expect(next).toBe(31);
    // The body is the one the OpenAPI document's `webhooks` describes.
    const doc = new OpenApiChecker(buildOpenApiDocument(t.config));
    for (const r of got) expect(doc.checkWebhook('digestDelivery', r)).toBeUndefined();
    expect(await heldDeliveryModel(t.ctx.mongo).countDocuments({})).toBe(0);
    const records = await t.http.get(`/api/deliveries?status=delivered`).set(headers);
    expect(records.body.data.filter((d: { endpoint_id: string }) => d.endpoint_id === alert.endpoint_id)).toHaveLength(sizes.length);
  });

  it('a daily digest goes at its local time, and nothing is sent for a day without alerts', async () => {
    const { headers } = await testAccount(t, 'daily@example.com');
    await t.http.patch('/api/me').set(headers).send({ time_zone: 'Europe/Berlin' });
    const asin = 'B0DIGEST02';
    const alert = await createAlert(t, headers, { asin, kind: 'any_change', webhook_url: `${rx.url}/daily` });
    const res = await t.http.patch(`/api/webhooks/${alert.endpoint_id}`).set(headers).send({ delivery: 'daily', digest_at: '09:30' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const berlin = (iso: string) => DateTime.fromISO(iso, { zone: 'Europe/Berlin' }).toMillis();
    clock.now = berlin('2026-11-26T10:00');
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 500 }, { price: 400 })]);
    clock.now = berlin('2026-11-26T18:00');
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 400 }, { price: 300 })]);
    clock.now = berlin('2026-11-27T09:29');
    expect(await t.ctx.digests.flush()).toBe(0);
    clock.now = berlin('2026-11-27T09:30');
    expect(await t.ctx.digests.flush()).toBe(1);
    clock.now = berlin('2026-11-28T09:30');
    expect(await t.ctx.digests.flush()).toBe(0);
    const [got] = await rx.waitFor('/daily', 1);
    const body = verified(alert.secret, got!) as { count: number; window_end: string; alerts: { after: { price: number } }[] };
    expect(body.count).toBe(2);
    expect(body.alerts.map((a) => a.after.price)).toEqual([300, 400]);
  });

  it('an instant endpoint delivers each change at once, and holds it in quiet hours until they end', async () => {
    const { headers } = await testAccount(t, 'instant@example.com');
    const asin = 'B0DIGEST03';
    const alert = await createAlert(t, headers, { asin, kind: 'any_change', webhook_url: `${rx.url}/instant` });
    clock.now = Date.UTC(2026, 10, 29, 12, 0); // the server's zone (UTC): the account set none
    expect(await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 10 }, { price: 20 })])).toBe(1);
    const [first] = await rx.waitFor('/instant', 1);
    expect(verified(alert.secret, first!)).toMatchObject({ alert_id: alert.id, kind: 'any_change', asin });
    const res = await t.http
      .patch(`/api/webhooks/${alert.endpoint_id}`)
      .set(headers)
      .send({ quiet_hours: { start: '11:00', end: '13:00' } });
    expect(res.body.data).toMatchObject({ delivery: 'instant', quiet_hours: { start: '11:00', end: '13:00' } });
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 20 }, { price: 30 })]);
    clock.now = Date.UTC(2026, 10, 29, 12, 59);
    expect(await t.ctx.digests.flush()).toBe(0);
    clock.now = Date.UTC(2026, 10, 29, 13, 0);
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 30 }, { price: 40 })]);
    expect(await t.ctx.digests.flush()).toBe(1);
    const all = await rx.waitFor('/instant', 3);
    const bodies = all.map((r) => verified(alert.secret, r) as { type?: string; alerts: { after: { price: number } }[] });
    expect(bodies.filter((b) => b.type === 'digest').map((b) => b.alerts.map((a) => a.after.price))).toEqual([[30]]);
    expect(bodies.filter((b) => b.type === undefined)).toHaveLength(2);
  });

  it('a digest that failed is replayed with the same webhook-id and body, as any delivery', async () => {
    const { headers } = await testAccount(t, 'replay@example.com');
    const asin = 'B0DIGEST05';
    const alert = await createAlert(t, headers, { asin, kind: 'any_change', webhook_url: `${rx.url}/replay` });
    expect((await t.http.patch(`/api/webhooks/${alert.endpoint_id}`).set(headers).send({ delivery: 'hourly' })).status).toBe(200);
    rx.script('/replay', [500, 500, 500]);
    clock.now = Date.UTC(2026, 11, 1, 10, 15);
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 1 }, { price: 2 })]);
    clock.now = Date.UTC(2026, 11, 1, 11, 0);
    expect(await t.ctx.digests.flush()).toBe(1);
    const failed = await until('the digest failed', async () => {
      const res = await t.http.get('/api/deliveries?status=failed').set(headers);
      return res.body.data.length === 1 ? (res.body.data[0] as { id: string; alert_ids: string[] }) : undefined;
    });
    expect(failed.id.startsWith(`${alert.endpoint_id}.digest.${clock.now}.`)).toBe(true);
    expect(failed.alert_ids).toEqual([alert.id]);
    expect((await t.http.post(`/api/deliveries/${failed.id}/replay`).set(headers)).status).toBe(202);
    const got = await rx.waitFor('/replay', 4);
    expect(got.map((r) => r.headers['webhook-id'])).toEqual(Array(4).fill(failed.id));
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    expect(verified(alert.secret, got[3]!)).toMatchObject({ type: 'digest', count: 1, endpoint_id: alert.endpoint_id });
  });

  it('two schedulers ticking at once queue a due digest once', async () => {
    const { headers } = await testAccount(t, 'ticks@example.com');
    const asin = 'B0DIGEST06';
    const alert = await createAlert(t, headers, { asin, kind: 'any_change', webhook_url: `${rx.url}/ticks` });
    await t.http.patch(`/api/webhooks/${alert.endpoint_id}`).set(headers).send({ delivery: 'hourly' });
    clock.now = Date.UTC(2026, 11, 2, 10, 15);
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 1 }, { price: 2 }), changeOf(asin, { price: 2 }, { price: 3 })]);
    clock.now = Date.UTC(2026, 11, 2, 11, 0);
    const [a, b] = [startDigestTick(t.ctx), startDigestTick(t.ctx)];
    try {
      await Promise.all([a.flushNow(), b.flushNow(), a.flushNow(), b.flushNow()]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    const [got] = await rx.waitFor('/ticks', 1);
    expect(verified(alert.secret, got!)).toMatchObject({ type: 'digest', count: 2 });
    expect(await deliveryModel(t.ctx.mongo).countDocuments({ endpoint_id: new Types.ObjectId(alert.endpoint_id) })).toBe(1);
    expect(await heldDeliveryModel(t.ctx.mongo).countDocuments({ endpoint_id: new Types.ObjectId(alert.endpoint_id) })).toBe(0);
  });

  it('refuses a bad time zone or time of day in the usual shape, and changes nothing', async () => {
    const { headers } = await testAccount(t, 'invalid@example.com');
    const alert = await createAlert(t, headers, { asin: 'B0DIGEST04', kind: 'any_change', webhook_url: `${rx.url}/invalid` });
    for (const time_zone of ['Mars/Olympus', '+09:00', 'Tokyo', '', 42]) {
      const res = await t.http.patch('/api/me').set(headers).send({ time_zone });
      expect(res.status, String(time_zone)).toBe(422);
      expect(res.body.errors.time_zone).toHaveLength(1);
    }
    expect((await t.http.get('/api/me').set(headers)).body.data.time_zone).toBe('UTC');
    const url = `/api/webhooks/${alert.endpoint_id}`;
    const bad: [Record<string, unknown>, string][] = [
      [{ delivery: 'weekly' }, 'delivery'],
      [{ delivery: 'daily' }, 'digest_at'],
      [{ delivery: 'daily', digest_at: '24:00' }, 'digest_at'],
      [{ delivery: 'daily', digest_at: '9:30' }, 'digest_at'],
      [{ delivery: 'hourly', digest_at: '09:30' }, 'digest_at'],
      [{ quiet_hours: { start: '22:00' } }, 'quiet_hours.end'],
      [{ quiet_hours: { start: '22:00', end: '22:00' } }, 'quiet_hours.end'],
      [{ quiet_hours: { start: '22:60', end: '07:00' } }, 'quiet_hours.start'],
    ];
    for (const [body, field] of bad) {
      const res = await t.http.patch(url).set(headers).send(body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(res.body.errors), JSON.stringify(res.body)).toContain(field);
      expect(res.body.message).toEqual(expect.any(String));
    }
    expect((await t.http.get(url).set(headers)).body.data).toMatchObject({ delivery: 'instant', digest_at: null, quiet_hours: null });
    const other = await testAccount(t, 'other@example.com');
    expect((await t.http.patch(url).set(other.headers).send({ delivery: 'hourly' })).status).toBe(404);
  });
});
