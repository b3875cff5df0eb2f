import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { testAccount } from '../helpers/deliveries.js';
import { endpointModel } from '../../src/models/endpoint.js';
import { alertModel } from '../../src/models/alert.js';
import { deliveryModel } from '../../src/models/delivery.js';

/**
 * Endpoints with an owner's life: a cap per account that concurrent creations cannot pass, DELETE
 * /api/webhooks/{id} refusing while an alert uses it, and endpoints removed when their last alert
 * is deleted or moves, without ever leaving an alert on a removed endpoint. The real app, no workers.
 */
let t: TestContext;
const MAX = 3;
const hook = (name: string) => `https://93.184.216.34/hooks/${name}`;

beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP', ACCOUNT_MAX_ENDPOINTS: String(MAX), RATE_LIMIT_API: '0' });
});

afterAll(() => t?.close());

const post = (headers: Record<string, string>, body: Record<string, unknown>) =>
  t.http
    .post('/api/alerts')
    .set(headers)
    .send({ country: 'JP', kind: 'any_change', ...body });

const endpoints = () => endpointModel(t.ctx.mongo);
const endpointOf = (id: string) => endpoints().findById(new Types.ObjectId(id)).lean();

describe('ACCOUNT_MAX_ENDPOINTS', () => {
  it('refuses an alert needing a new endpoint past the cap with 422 naming it; existing targets still take alerts', async () => {
    const a = await testAccount(t, 'ep-cap@example.com');
    for (const n of [1, 2, 3]) expect((await post(a.headers, { asin: `B0EPCAP00${n}`, webhook_url: hook(`cap-${n}`) })).status).toBe(201);
    const over = await post(a.headers, { asin: 'B0EPCAP004', webhook_url: hook('cap-4') });
    expect(over.status).toBe(422);
    expect(over.body.errors.webhook_url).toEqual([
      `You may hold at most ${MAX} endpoints (ACCOUNT_MAX_ENDPOINTS): use a target you already have, or delete one no alert uses (DELETE /api/webhooks/{id}).`,
    ]);
    expect(await alertModel(t.ctx.mongo).countDocuments({ user_id: a.id, asin: 'B0EPCAP004' })).toBe(0);
    expect((await post(a.headers, { asin: 'B0EPCAP004', webhook_url: hook('cap-1') })).status).toBe(201);
    expect(await endpoints().countDocuments({ user_id: a.id })).toBe(MAX);
  });

  it('20 creations on distinct targets at once make exactly the cap of endpoints', async () => {
    const a = await testAccount(t, 'ep-race@example.com');
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        post(a.headers, { asin: `B0EPRACE${String(i).padStart(2, '0')}`, webhook_url: hook(`race-${i}`) }),
      ),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(MAX);
    expect(statuses.filter((s) => s === 422)).toHaveLength(20 - MAX);
    expect(await endpoints().countDocuments({ user_id: a.id })).toBe(MAX);
    expect(await t.ctx.endpoints.counters.value(a.id, 'endpoints')).toBe(MAX);
    // Another account has its own.
    const b = await testAccount(t, 'ep-race-other@example.com');
    expect((await post(b.headers, { asin: 'B0EPRACEOT', webhook_url: hook('race-0') })).status).toBe(201);
  });
});

describe('DELETE /api/webhooks/{id}', () => {
  it('refuses with 409 while an alert uses it, naming it; deletes an unused one with 204, its records and its place', async () => {
    const a = await testAccount(t, 'ep-delete@example.com');
    const made = await post(a.headers, { asin: 'B0EPDEL001', webhook_url: hook('del-used') });
    const { id: alertId, endpoint_id: usedId } = made.body.data as { id: string; endpoint_id: string };
    const used = await t.http.delete(`/api/webhooks/${usedId}`).set(a.headers);
    expect(used.status).toBe(409);
    expect(used.body.message).toBe(`The endpoint is used by 1 alert (${alertId}): delete them or post them with another target first.`);
    expect(await endpointOf(usedId)).not.toBeNull();
    expect((await endpointOf(usedId))!.retiring ?? null).toBeNull();

    // One no alert uses (left by an older version, say), with a delivery record.
    const unused = await endpoints().create({ user_id: a.id, channel: 'webhook', url: hook('del-unused') });
    await deliveryModel(t.ctx.mongo).create({
      _id: `rec-${unused._id.toHexString()}`,
      alert_id: new Types.ObjectId(),
      endpoint_id: unused._id,
      user_id: a.id,
    });
    const before = await t.ctx.endpoints.counters.value(a.id, 'endpoints');
    const b = await testAccount(t, 'ep-delete-other@example.com');
    expect((await t.http.delete(`/api/webhooks/${unused._id.toHexString()}`).set(b.headers)).status).toBe(404);
    const gone = await t.http.delete(`/api/webhooks/${unused._id.toHexString()}`).set(a.headers);
    expect(gone.status).toBe(204);
    expect(gone.text).toBe('');
    expect(await endpointOf(unused._id.toHexString())).toBeNull();
    expect(await deliveryModel(t.ctx.mongo).countDocuments({ endpoint_id: unused._id })).toBe(0);
    expect(await t.ctx.endpoints.counters.value(a.id, 'endpoints')).toBe(before! - 1);
    expect((await t.http.get(`/api/webhooks/${unused._id.toHexString()}`).set(a.headers)).status).toBe(404);
    expect((await t.http.delete('/api/webhooks/not-an-id').set(a.headers)).status).toBe(404);
  });
});

describe('endpoints no alert uses', () => {
  it('go when their last alert is deleted, and stay while one uses them', async () => {
    const a = await testAccount(t, 'ep-auto@example.com');
    const one = (await post(a.headers, { asin: 'B0EPAUTO01', webhook_url: hook('auto-shared') })).body.data;
    const two = (await post(a.headers, { asin: 'B0EPAUTO02', webhook_url: hook('auto-shared') })).body.data;
    expect(two.endpoint_id).toBe(one.endpoint_id);
    expect((await t.http.delete(`/api/alerts/${one.id}`).set(a.headers)).status).toBe(200);
    expect(await endpointOf(one.endpoint_id)).not.toBeNull();
    expect((await t.http.delete(`/api/alerts/${two.id}`).set(a.headers)).status).toBe(200);
    expect(await endpointOf(one.endpoint_id)).toBeNull();

    // The same alert to another target is a second alert; deleting the first leaves its target unused, and it goes.
    const first = (await post(a.headers, { asin: 'B0EPAUTO03', webhook_url: hook('auto-before') })).body.data;
    const second = await post(a.headers, { asin: 'B0EPAUTO03', webhook_url: hook('auto-after') });
    expect(second.status).toBe(201);
    expect(second.body.data.endpoint_id).not.toBe(first.endpoint_id);
    expect((await t.http.delete(`/api/alerts/${first.id}`).set(a.headers)).status).toBe(200);
    expect(await endpointOf(first.endpoint_id)).toBeNull();
    expect(await endpointOf(second.body.data.endpoint_id)).not.toBeNull();
    expect(await endpoints().countDocuments({ user_id: a.id })).toBe(1);
    expect(await t.ctx.endpoints.counters.value(a.id, 'endpoints')).toBe(1);
  });

  it('an alert attached while a removal has marked the endpoint keeps it: the removal deletes nothing', async () => {
    const a = await testAccount(t, 'ep-mark@example.com');
    const unused = await endpoints().create({ user_id: a.id, channel: 'webhook', url: hook('mark') });
    // A removal marked it and counted no alert; before it deletes, an alert is attached.
    const token = new Types.ObjectId();
    await endpoints().updateOne({ _id: unused._id }, { $set: { retiring: token } });
    const made = await post(a.headers, { asin: 'B0EPMARK01', webhook_url: hook('mark') });
    expect(made.body.data.endpoint_id).toBe(unused._id.toHexString());
    // The removal's delete is conditional on its mark, which the attach cleared.
    expect((await endpoints().deleteOne({ _id: unused._id, retiring: token })).deletedCount).toBe(0);
    expect(await endpointOf(unused._id.toHexString())).not.toBeNull();
  });

  it('an alert written onto an endpoint removed meanwhile moves to a new one for its target', async () => {
    const a = await testAccount(t, 'ep-settle@example.com');
    const made = (await post(a.headers, { asin: 'B0EPSETTLE', webhook_url: hook('settle') })).body.data;
    const stale = (await t.ctx.endpoints.find(a.id, made.endpoint_id))!;
    // The removal won: it counted before the alert was written, and deleted.
    await endpoints().deleteOne({ _id: stale._id });
    const settled = await t.ctx.endpoints.settle(
      new Types.ObjectId(made.id),
      a.id,
      { channel: 'webhook', url: hook('settle') },
      {
        endpoint: stale,
        secret: made.secret,
      },
    );
    expect(settled.endpoint._id.equals(stale._id)).toBe(false);
    const alert = await alertModel(t.ctx.mongo).findById(new Types.ObjectId(made.id)).lean();
    expect(alert!.endpoint_id!.equals(settled.endpoint._id)).toBe(true);
    expect(await endpoints().exists({ _id: settled.endpoint._id })).not.toBeNull();
  });

  it('deleting and creating alerts on one target at once never leaves an alert on a removed endpoint', async () => {
    const a = await testAccount(t, 'ep-churn@example.com');
    for (let round = 0; round < 8; round++) {
      const url = hook(`churn-${round % 2}`);
      const old = (await post(a.headers, { asin: `B0EPCHURN${round}`, webhook_url: url })).body.data;
      const [, created] = await Promise.all([
        t.http.delete(`/api/alerts/${old.id}`).set(a.headers),
        post(a.headers, { asin: `B0EPCHURM${round}`, webhook_url: url }),
      ]);
      expect(created.status).toBe(201);
    }
    const alerts = await alertModel(t.ctx.mongo).find({ user_id: a.id }).lean();
    expect(alerts).toHaveLength(8);
    for (const alert of alerts) expect(await endpoints().exists({ _id: alert.endpoint_id })).not.toBeNull();
    expect(await t.ctx.endpoints.counters.value(a.id, 'endpoints')).toBe(await endpoints().countDocuments({ user_id: a.id }));
  });
});
