import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { until } from '../helpers/until.js';
import {
  changeOf,
  pendingJobs,
  startTestDeliveryWorker,
  verified,
  type TestDeliveryWorker,
  createAlert,
  testAccount,
} from '../helpers/deliveries.js';
import { alertModel } from '../../src/models/alert.js';
import { deliveryModel } from '../../src/models/delivery.js';
import { endpointModel } from '../../src/models/endpoint.js';
import { sealV1 } from '../helpers/sealed-v1.js';
import { generateWebhookSecret } from '../../src/alerts/endpoints/endpoint.js';
import { deliveryJob } from '../../jobs/deliver.js';

/**
 * Deliveries per endpoint and change, replays, disabling after a failure span (on a clock the test
 * moves), records bounded per endpoint, and alerts stored before endpoints existed: the real
 * DeliveryQueue and a real delivery worker against a real receiver on loopback.
 */
let t: TestContext;
let rx: WebhookReceiver;
let worker: TestDeliveryWorker;
const clock = { now: Date.UTC(2026, 10, 24, 3, 0, 0) };
const DAY = 86_400_000;

beforeAll(async () => {
  rx = await new WebhookReceiver().start();
  t = await createTestContext(
    {
      COUNTRIES: 'JP',
      ENDPOINT_ALLOW_PRIVATE: 'true',
      DELIVERY_RETRY_SCHEDULE: '200ms,200ms,200ms,200ms',
      DELIVERY_TIMEOUT: '5s',
      ENDPOINT_DISABLE_AFTER: '5d',
      DELIVERY_RECORDS_PER_ENDPOINT: '10',
      RATE_LIMIT_API: '0',
    },
    { commandEvents: true },
  );
  worker = await startTestDeliveryWorker(t, 'deliveries-test', () => new Date(clock.now));
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await rx?.close();
});

const deliveryOf = async (headers: Record<string, string>, id: string) =>
  (await t.http.get(`/api/deliveries/${id}`).set(headers)).body.data;

describe('one delivery per endpoint and change', () => {
  it('lists every alert of the account on that URL that the change fired; other URLs and accounts get their own', async () => {
    const a = await testAccount(t, 'dedupe-a@example.com');
    const b = await testAccount(t, 'dedupe-b@example.com');
    const asin = 'B0DLVDEDUP';
    const anyChange = await createAlert(t, a.headers, { asin, kind: 'any_change', webhook_url: `${rx.url}/dedupe` });
    const backInStock = await createAlert(t, a.headers, { asin, kind: 'back_in_stock', webhook_url: `${rx.url}/dedupe` });
    const below = await createAlert(t, a.headers, { asin, kind: 'price_below', price: 5_000, webhook_url: `${rx.url}/dedupe-other` });
    const theirs = await createAlert(t, b.headers, { asin, kind: 'any_change', webhook_url: `${rx.url}/dedupe` });
    // One endpoint per account and URL, and its secret in every answer on that URL.
    expect(backInStock.endpoint_id).toBe(anyChange.endpoint_id);
    expect(backInStock.secret).toBe(anyChange.secret);
    expect(below.endpoint_id).not.toBe(anyChange.endpoint_id);
    expect(theirs.endpoint_id).not.toBe(anyChange.endpoint_id);

    const queued = await t.ctx.deliveries.enqueueFor([
      changeOf(asin, { availability: 'out_of_stock', price: 6_000 }, { availability: 'in_stock', price: 4_000 }),
    ]);
    expect(queued).toBe(3);
    const got = await rx.waitFor('/dedupe', 2);
    await rx.waitFor('/dedupe-other', 1);
    const mine = got.find((r) => {
      try {
        verified(anyChange.secret, r);
        return true;
      } catch {
        return false;
      }
    })!;
    expect(verified(anyChange.secret, mine)).toMatchObject({
      alert_id: anyChange.id,
      kind: 'any_change',
      alerts: [
        { id: anyChange.id, kind: 'any_change' },
        { id: backInStock.id, kind: 'back_in_stock' },
      ],
      asin,
      country: 'JP',
    });
    const other = got.find((r) => r !== mine)!;
    expect(verified(theirs.secret, other)).toMatchObject({ alerts: [{ id: theirs.id, kind: 'any_change' }] });
    expect(() => verified(anyChange.secret, other)).toThrow();

    // The delivery is one record, seen from each alert it listed.
    const id = mine.headers['webhook-id'] as string;
    expect(id.startsWith(`${anyChange.endpoint_id}.`)).toBe(true);
    const rec = await until('delivered', async () => {
      const d = await deliveryOf(a.headers, id);
      return d?.status === 'delivered' ? d : undefined;
    });
    expect(rec).toMatchObject({ endpoint_id: anyChange.endpoint_id, alert_ids: [anyChange.id, backInStock.id], attempts: 1 });
    for (const alert of [anyChange, backInStock]) {
      const list = await t.http.get(`/api/alerts/${alert.id}/deliveries`).set(a.headers);
      expect(list.body.data.map((d: { id: string }) => d.id)).toEqual([id]);
    }
    const delivered = await t.http.get('/api/deliveries?status=delivered').set(a.headers);
    expect(delivered.body.meta.total).toBe(2);
    expect((await t.http.get(`/api/alerts/${anyChange.id}`).set(a.headers)).body.data.last_delivery_at).not.toBeNull();
  });
});

describe('a batch whose history points are still being written', () => {
  it('reads its alerts meanwhile but records and queues nothing until the points are written, and nothing if they fail', async () => {
    const a = await testAccount(t, 'after-points@example.com');
    const asin = 'B0DLVAFTER';
    await createAlert(t, a.headers, { asin, kind: 'any_change', webhook_url: `${rx.url}/after-points` });
    const records = () => deliveryModel(t.ctx.mongo).countDocuments({ user_id: a.id });
    // What the connection sends, by collection: the reads must go before the points are written.
    const sent: string[] = [];
    const client = t.ctx.mongo.getClient();
    const onStarted = (e: { commandName: string; command: Record<string, unknown> }) =>
      sent.push(`${e.commandName}:${String(e.command[e.commandName])}`);
    client.on('commandStarted', onStarted);
    try {
      let written!: () => void;
      const points = new Promise<void>((resolve) => (written = resolve));
      const queued = t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 1 }, { rank: 2 })], points);
      await until('the endpoints are read', async () => sent.includes('find:webhook_endpoints') || undefined);
      // A round trip later, nothing is written to the deliveries' records.
      expect(await records()).toBe(0);
      expect(sent.filter((c) => /^(insert|update|delete):alert_deliveries$/.test(c))).toEqual([]);
      written();
      expect(await queued).toBe(1);
      expect(await records()).toBe(1);
      await rx.waitFor('/after-points', 1);

      const failed = Promise.reject(new Error('history write failed'));
      // Awaited by the batch's write beside it, as in writeOutcomes; here only enqueueFor awaits it.
      failed.catch(() => undefined);
      await expect(t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 2 }, { rank: 3 })], failed)).rejects.toThrow('history write failed');
      expect(await records()).toBe(1);
    } finally {
      client.off('commandStarted', onStarted);
    }
  });
});

describe('replay', () => {
  it('sends an undelivered delivery again with the same webhook-id, after its job is gone', async () => {
    const a = await testAccount(t, 'replay@example.com');
    rx.script('/replay', [500, 500, 500, 500, 500]);
    const alert = await createAlert(t, a.headers, { asin: 'B0DLVREPLY', kind: 'any_change', webhook_url: `${rx.url}/replay` });
    await t.ctx.deliveries.enqueueFor([changeOf('B0DLVREPLY', {}, { rank: 5 })]);
    const tries = await rx.waitFor('/replay', 5);
    const id = tries[0]!.headers['webhook-id'] as string;
    const failed = await until('failed', async () => {
      const d = await deliveryOf(a.headers, id);
      return d?.status === 'failed' ? d : undefined;
    });
    expect(failed).toMatchObject({ attempts: 5, response_code: 500, replays: 0 });
    const undelivered = await t.http.get('/api/deliveries').set(a.headers);
    expect(undelivered.body.data.map((d: { id: string }) => d.id)).toEqual([id]);
    expect((await t.http.post(`/api/deliveries/${id}/replay`).send()).status).toBe(401);

    await t.ctx.deliveryJobs.queue.remove(id);
    expect(await t.ctx.deliveryJobs.queue.getJob(id)).toBeUndefined();
    const replay = await t.http.post(`/api/deliveries/${id}/replay`).set(a.headers).send();
    expect(replay.status).toBe(202);
    expect(replay.body.data).toMatchObject({ id, status: 'pending', attempts: 0, replays: 1 });
    const [, , , , , again] = await rx.waitFor('/replay', 6);
    expect(again!.status).toBe(200);
    expect(again!.headers['webhook-id']).toBe(id);
    expect(again!.body).toBe(tries[0]!.body);
    verified(alert.secret, again!);
    await until('delivered on replay', async () => (await deliveryOf(a.headers, id))?.status === 'delivered');

    // Delivered: nothing to replay; a bulk replay finds nothing either.
    const twice = await t.http.post(`/api/deliveries/${id}/replay`).set(a.headers).send();
    expect(twice.status).toBe(409);
    expect(twice.body).toEqual({ message: expect.stringMatching(/delivered/) });
    const bulk = await t.http.post('/api/deliveries/replay').set(a.headers).send({});
    expect(bulk.status).toBe(202);
    expect(bulk.body.data).toEqual({ replayed: 0, more: false, skipped_disabled: 0 });
  });

  it('replays every undelivered delivery of the account at once, and refuses a pending one', async () => {
    const a = await testAccount(t, 'bulk@example.com');
    rx.script('/bulk', Array(10).fill(500));
    const alert = await createAlert(t, a.headers, { asin: 'B0DLVBULK1', kind: 'any_change', webhook_url: `${rx.url}/bulk` });
    await t.ctx.deliveries.enqueueFor([changeOf('B0DLVBULK1', {}, { rank: 1 }), changeOf('B0DLVBULK1', {}, { rank: 2 })]);
    await until('both failed', async () => {
      const res = await t.http.get('/api/deliveries?status=failed').set(a.headers);
      return res.body.meta.total === 2;
    });
    const bulk = await t.http.post('/api/deliveries/replay').set(a.headers).send({ endpoint_id: alert.endpoint_id });
    expect(bulk.status).toBe(202);
    expect(bulk.body.data).toEqual({ replayed: 2, more: false, skipped_disabled: 0 });
    await until('both delivered', async () => {
      const res = await t.http.get('/api/deliveries?status=delivered').set(a.headers);
      return res.body.meta.total === 2;
    });
    expect(rx.at('/bulk').filter((r) => r.status === 200)).toHaveLength(2);
  });

  it('refuses a delivery still pending, and another account’s', async () => {
    const a = await testAccount(t, 'pending@example.com');
    const b = await testAccount(t, 'pending-other@example.com');
    rx.delay('/slow', 1_500);
    await createAlert(t, a.headers, { asin: 'B0DLVSLOW1', kind: 'any_change', webhook_url: `${rx.url}/slow` });
    await t.ctx.deliveries.enqueueFor([changeOf('B0DLVSLOW1', {}, { rank: 9 })]);
    const [got] = await rx.waitFor('/slow', 1);
    const id = got!.headers['webhook-id'] as string;
    const refused = await t.http.post(`/api/deliveries/${id}/replay`).set(a.headers).send();
    expect(refused.status).toBe(409);
    expect(refused.body.message).toMatch(/still pending/);
    for (const res of [
      await t.http.get(`/api/deliveries/${id}`).set(b.headers),
      await t.http.post(`/api/deliveries/${id}/replay`).set(b.headers).send(),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'No such delivery.' });
    }
    expect((await t.http.get('/api/deliveries').set(b.headers)).body.meta.total).toBe(0);
    await until('delivered', async () => (await deliveryOf(a.headers, id))?.status === 'delivered');
  });
});

describe('an endpoint failing for longer than ENDPOINT_DISABLE_AFTER', () => {
  it('is disabled at its next failure, with an event the account reads, and gets no more deliveries until enabled', async () => {
    const a = await testAccount(t, 'span@example.com');
    rx.script('/down', Array(50).fill(500));
    const alert = await createAlert(t, a.headers, { asin: 'B0DLVSPAN1', kind: 'any_change', webhook_url: `${rx.url}/down` });
    await t.ctx.deliveries.enqueueFor([changeOf('B0DLVSPAN1', {}, { rank: 7 })]);
    const [first] = await rx.waitFor('/down', 1);
    const id = first!.headers['webhook-id'] as string;
    const failing = await until('failing', async () => {
      const e = (await t.http.get(`/api/webhooks/${alert.endpoint_id}`).set(a.headers)).body.data;
      return e.state === 'failing' ? e : undefined;
    });
    expect(failing.failing_since).toBe('2026-11-24 03:00:00');
    expect(failing.disabled_at).toBeNull();

    // Five days and a second later, by the worker's clock: the next failure disables it.
    clock.now += 5 * DAY + 1_000;
    const disabled = await until('disabled', async () => {
      const e = (await t.http.get(`/api/webhooks/${alert.endpoint_id}`).set(a.headers)).body.data;
      return e.state === 'disabled' ? e : undefined;
    });
    expect(disabled.disabled_reason).toMatch(/longer than 5d \(ENDPOINT_DISABLE_AFTER\)/);
    expect(disabled.disabled_at).toBe('2026-11-29 03:00:01');
    const events = await t.http.get('/api/events').set(a.headers);
    expect(events.status).toBe(200);
    expect(events.body.data).toEqual([
      {
        id: expect.any(String),
        type: 'endpoint.disabled',
        endpoint_id: alert.endpoint_id,
        url: `${rx.url}/down`,
        reason: disabled.disabled_reason,
        at: '2026-11-29 03:00:01',
      },
    ]);
    const record = await until('failed for good', async () => {
      const d = await deliveryOf(a.headers, id);
      return d?.status === 'failed' ? d : undefined;
    });
    expect(record.last_error).toMatch(/now disabled/);
    expect((await t.http.get(`/api/alerts/${alert.id}`).set(a.headers)).body.data).toMatchObject({ active: false });

    // No more jobs, no more requests.
    const seen = rx.at('/down').length;
    expect(await t.ctx.deliveries.enqueueFor([changeOf('B0DLVSPAN1', {}, { rank: 8 })])).toBe(0);
    expect((await pendingJobs(t)).filter((j) => j.id?.startsWith(alert.endpoint_id))).toEqual([]);
    await new Promise((r) => setTimeout(r, 600));
    expect(rx.at('/down')).toHaveLength(seen);

    // A replay is refused with the way out, and changes nothing.
    const refused = await t.http.post(`/api/deliveries/${id}/replay`).set(a.headers).send();
    expect(refused.status).toBe(422);
    expect(refused.body.errors.endpoint_id[0]).toContain(`POST /api/webhooks/${alert.endpoint_id}/enable`);
    const bulkRefused = await t.http.post('/api/deliveries/replay').set(a.headers).send({ endpoint_id: alert.endpoint_id });
    expect(bulkRefused.status).toBe(422);
    const bulkSkips = await t.http.post('/api/deliveries/replay').set(a.headers).send();
    expect(bulkSkips.body.data).toEqual({ replayed: 0, more: false, skipped_disabled: 1 });
    expect((await deliveryOf(a.headers, id)).status).toBe('failed');

    // Enabled again: the replay goes through, same webhook-id.
    rx.script('/down', []);
    const enabled = await t.http.post(`/api/webhooks/${alert.endpoint_id}/enable`).set(a.headers).send();
    expect(enabled.status).toBe(200);
    expect(enabled.body.data).toMatchObject({ state: 'active', failing_since: null, disabled_at: null, disabled_reason: null });
    expect((await t.http.post(`/api/deliveries/${id}/replay`).set(a.headers).send()).status).toBe(202);
    await until('delivered', async () => (await deliveryOf(a.headers, id))?.status === 'delivered');
    expect(rx.at('/down').at(-1)!.headers['webhook-id']).toBe(id);
    const healthy = (await t.http.get(`/api/webhooks/${alert.endpoint_id}`).set(a.headers)).body.data;
    expect(healthy).toMatchObject({ state: 'active', last_success_at: '2026-11-29 03:00:01' });
  });

  it('a 410 disables the endpoint at once, with its event', async () => {
    const a = await testAccount(t, 'gone@example.com');
    rx.script('/gone', [410]);
    const alert = await createAlert(t, a.headers, { asin: 'B0DLVGONE1', kind: 'any_change', webhook_url: `${rx.url}/gone` });
    await t.ctx.deliveries.enqueueFor([changeOf('B0DLVGONE1', {}, { rank: 3 })]);
    const event = await until('event', async () => (await t.http.get('/api/events').set(a.headers)).body.data[0]);
    expect(event).toMatchObject({ type: 'endpoint.disabled', endpoint_id: alert.endpoint_id, reason: 'the receiver answered 410 Gone' });
    expect((await t.http.get(`/api/events/${event.id}`).set(a.headers)).body.data).toEqual(event);
    const list = await t.http.get('/api/webhooks').set(a.headers);
    expect(list.body.data).toEqual([expect.objectContaining({ id: alert.endpoint_id, state: 'disabled', url: `${rx.url}/gone` })]);
  });
});

describe('records', () => {
  it('keep at most DELIVERY_RECORDS_PER_ENDPOINT per endpoint, the newest', async () => {
    const a = await testAccount(t, 'records@example.com');
    const alert = await createAlert(t, a.headers, { asin: 'B0DLVRECS1', kind: 'any_change', webhook_url: `${rx.url}/records` });
    for (let i = 0; i < 14; i++) {
      await t.ctx.deliveries.enqueueFor([changeOf('B0DLVRECS1', {}, { rank: 1_000 + i })]);
      await new Promise((r) => setTimeout(r, 5));
    }
    const endpointId = new Types.ObjectId(alert.endpoint_id);
    const withPayload = await deliveryModel(t.ctx.mongo)
      .find({ endpoint_id: endpointId })
      .select('+payload')
      .sort({ created_at: 1 })
      .lean();
    expect(withPayload.map((r) => (r.payload as { after: { rank: number } }).after.rank)).toEqual(
      Array.from({ length: 10 }, (_, i) => 1_004 + i),
    );
    const endpoint = await endpointModel(t.ctx.mongo).findById(endpointId).lean();
    expect(endpoint!.record_count).toBeLessThanOrEqual(11);
    await rx.waitFor('/records', 14);
  });
});

describe('alerts stored before endpoints existed', () => {
  it('move to one endpoint per URL when first needed; deliveries are signed with each of their secrets', async () => {
    const a = await testAccount(t, 'legacy@example.com');
    const [s1, s2] = [generateWebhookSecret(), generateWebhookSecret()];
    const alerts = alertModel(t.ctx.mongo);
    const url = `${rx.url}/legacy`;
    const old = (kind: 'any_change' | 'back_in_stock', secret: string) => ({
      user_id: a.id,
      asin: 'B0DLVLEGC1',
      country: 'JP',
      kind,
      price: null,
      percent: null,
      webhook_url: url,
      secret_sealed: sealV1(secret, t.ctx.appKey),
      disabled_at: null,
      disabled_reason: null,
      last_delivery_at: null,
    });
    // As stored then: no endpoint_id at all.
    const inserted = await alerts.collection.insertMany([
      { ...old('any_change', s1), created_at: new Date(), updated_at: new Date() },
      { ...old('back_in_stock', s2), created_at: new Date(), updated_at: new Date() },
    ]);
    const [firstId, secondId] = [inserted.insertedIds[0]!.toHexString(), inserted.insertedIds[1]!.toHexString()];
    const before = await t.http.get(`/api/alerts/${firstId}`).set(a.headers);
    expect(before.body.data).toMatchObject({ endpoint_id: null, active: true });

    await t.ctx.deliveries.enqueueFor([changeOf('B0DLVLEGC1', { availability: 'out_of_stock' }, { availability: 'in_stock' })]);
    const [got] = await rx.waitFor('/legacy', 1);
    // Both receivers' secrets verify the one delivery that lists both alerts.
    expect(verified(s1, got!)).toMatchObject({ alerts: [{ id: firstId }, { id: secondId }] });
    expect(verified(s2, got!)).toMatchObject({ alert_id: firstId });
    const endpoints = await t.http.get('/api/webhooks').set(a.headers);
    expect(endpoints.body.data).toHaveLength(1);
    const endpointId = endpoints.body.data[0].id;
    for (const id of [firstId, secondId])
      expect((await t.http.get(`/api/alerts/${id}`).set(a.headers)).body.data.endpoint_id).toBe(endpointId);
    expect(await alerts.collection.countDocuments({ user_id: a.id, secret_sealed: { $exists: true } })).toBe(0);
    // A new alert on that URL answers the endpoint's secret: the first old alert's.
    const made = await createAlert(t, a.headers, { asin: 'B0DLVLEGC2', kind: 'any_change', webhook_url: url });
    expect(made.secret).toBe(s1);
  });

  it('a job queued before endpoints existed is still delivered, to its alert’s endpoint', async () => {
    const a = await testAccount(t, 'legacy-job@example.com');
    const secret = generateWebhookSecret();
    const url = `${rx.url}/legacy-job`;
    const { insertedId } = await alertModel(t.ctx.mongo).collection.insertOne({
      user_id: a.id,
      asin: 'B0DLVLEGJB',
      country: 'JP',
      kind: 'any_change',
      price: null,
      percent: null,
      webhook_url: url,
      secret_sealed: sealV1(secret, t.ctx.appKey),
      disabled_at: null,
      disabled_reason: null,
      last_delivery_at: null,
      created_at: new Date(),
      updated_at: new Date(),
    });
    const jobId = `${insertedId.toHexString()}.JP.B0DLVLEGJB.1`;
    await deliveryModel(t.ctx.mongo).create({ _id: jobId, alert_id: insertedId, user_id: a.id, status: 'pending', attempts: 0 });
    const at = Date.now();
    const p = { at, price: 1000, currency: 'JPY', availability: 'in_stock', buybox: true, rank: 1 };
    await t.ctx.deliveryJobs.queue.add(
      deliveryJob.name,
      { alert_id: insertedId.toHexString(), kind: 'any_change', asin: 'B0DLVLEGJB', country: 'JP', before: p, after: { ...p, rank: 2 } },
      { jobId, attempts: 3, backoff: { type: 'exponential', delay: 50 } },
    );
    const [got] = await rx.waitFor('/legacy-job', 1);
    expect(got!.headers['webhook-id']).toBe(jobId);
    expect(verified(secret, got!)).toMatchObject({
      alert_id: insertedId.toHexString(),
      kind: 'any_change',
      alerts: [{ id: insertedId.toHexString() }],
    });
    await until('recorded', async () => (await deliveryOf(a.headers, jobId))?.status === 'delivered');
  });
});
