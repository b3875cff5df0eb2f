import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { until } from '../helpers/until.js';
import {
  changeOf,
  createAlert,
  deliveriesOf,
  startTestDeliveryWorker,
  testAccount,
  verified,
  type TestDeliveryWorker,
} from '../helpers/deliveries.js';
import { sealV1 } from '../helpers/sealed-v1.js';
import { endpointModel } from '../../src/models/endpoint.js';
import { alertModel } from '../../src/models/alert.js';
import { userModel } from '../../src/models/user.js';
import { generateWebhookSecret } from '../../src/alerts/endpoints/endpoint.js';
import { UNSEALABLE_REASON } from '../../src/alerts/endpoints/endpoint.js';
import { resealStoredSecrets } from '../../src/secrets/reseal.js';
import { SEALED_FIELDS } from '../../src/secrets/fields.js';
import { seed } from '../../src/seed/seeder.js';

/**
 * Sealed secrets are bound to their record and field: a value a database writer moves elsewhere
 * makes that endpoint unusable (disabled with a reason; nothing sent, no 5xx), and the start-up
 * upgrade seals values of before anew without anything that used them noticing.
 */
let t: TestContext;
let rx: WebhookReceiver;
let worker: TestDeliveryWorker;

beforeAll(async () => {
  rx = await new WebhookReceiver().start();
  t = await createTestContext({ COUNTRIES: 'JP', ENDPOINT_ALLOW_PRIVATE: 'true', DELIVERY_RETRY_SCHEDULE: '200ms', RATE_LIMIT_API: '0' });
  worker = await startTestDeliveryWorker(t, 'sealed-secrets');
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await rx?.close();
});

const endpoints = () => endpointModel(t.ctx.mongo).collection;
const sealedOf = async (id: string) => endpoints().findOne({ _id: new Types.ObjectId(id) });
const requestsTo = (path: string) => rx.received.filter((r) => r.path === path).length;

/** Fires the product's alerts and waits until the alert's delivery is settled (sent or not). */
async function fireAndSettle(
  headers: Record<string, string>,
  alertId: string,
  asin: string,
): Promise<{ status: string; last_error: string | null }> {
  const before = (await deliveriesOf(t, headers, alertId)).length;
  await t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 1 }, { rank: 2 })]);
  let last: { status: string; last_error: string | null } | undefined;
  await until('the delivery settled', async () => {
    const list = await deliveriesOf(t, headers, alertId);
    last = list[0];
    return list.length > before && last !== undefined && last.status !== 'pending';
  });
  return last!;
}

describe('a sealed value moved to another record', () => {
  it('a chat URL moved to another account’s endpoint opens nowhere: that endpoint is disabled, nothing is sent', async () => {
    const a = await testAccount(t, 'moved-from@example.com');
    const b = await testAccount(t, 'moved-to@example.com');
    const ua = `${rx.url}/moved/a/XyZ-token-a`;
    const ub = `${rx.url}/moved/b/XyZ-token-b`;
    await createAlert(t, a.headers, { asin: 'B0SEALMVA1', kind: 'any_change', channel: 'slack', webhook_url: ua });
    const victim = await createAlert(t, b.headers, { asin: 'B0SEALMVB1', kind: 'any_change', channel: 'slack', webhook_url: ub });
    const [from] = await endpoints().find({ user_id: a.id }).toArray();
    await endpoints().updateOne({ _id: new Types.ObjectId(victim.endpoint_id) }, { $set: { target_sealed: from!.target_sealed } });

    const record = await fireAndSettle(b.headers, victim.id, 'B0SEALMVB1');
    expect(record.status).toBe('failed');
    expect(record.last_error).toContain('does not open');
    expect(requestsTo('/moved/a/XyZ-token-a')).toBe(0);
    expect(requestsTo('/moved/b/XyZ-token-b')).toBe(0);
    const shown = await t.http.get(`/api/webhooks/${victim.endpoint_id}`).set(b.headers);
    expect(shown.status).toBe(200);
    expect(shown.body.data).toMatchObject({ state: 'disabled', disabled_reason: UNSEALABLE_REASON });
    const events = await t.http.get('/api/events').set(b.headers);
    expect(events.status).toBe(200);
    expect(JSON.stringify(events.body)).toContain('endpoint.disabled');

    // The test button answers that the endpoint is disabled and why, not a 5xx, and sends nothing either.
    const tested = await t.http.post(`/api/alerts/${victim.id}/test`).set(b.headers);
    expect(tested.status).toBe(409);
    expect(tested.body.message).toContain(UNSEALABLE_REASON);
    expect(requestsTo('/moved/a/XyZ-token-a') + requestsTo('/moved/b/XyZ-token-b')).toBe(0);

    // Posting the alert again seals its URL anew, and the endpoint takes deliveries again.
    await createAlert(t, b.headers, { asin: 'B0SEALMVB1', kind: 'any_change', channel: 'slack', webhook_url: ub });
    const repaired = await t.http.get(`/api/webhooks/${victim.endpoint_id}`).set(b.headers);
    expect(repaired.body.data).toMatchObject({ state: 'active', disabled_reason: null });
    expect((await fireAndSettle(b.headers, victim.id, 'B0SEALMVB1')).status).toBe('delivered');
    expect(requestsTo('/moved/b/XyZ-token-b')).toBe(1);
    expect(requestsTo('/moved/a/XyZ-token-a')).toBe(0);
  });

  it('a signing secret moved to another endpoint, or to another field, does not sign there', async () => {
    const a = await testAccount(t, 'secret-from@example.com');
    const b = await testAccount(t, 'secret-to@example.com');
    const made = await createAlert(t, a.headers, { asin: 'B0SEALSCA1', kind: 'any_change', webhook_url: `${rx.url}/secret/a` });
    const victim = await createAlert(t, b.headers, { asin: 'B0SEALSCB1', kind: 'any_change', webhook_url: `${rx.url}/secret/b` });
    const from = await sealedOf(made.endpoint_id);
    await endpoints().updateOne({ _id: new Types.ObjectId(victim.endpoint_id) }, { $set: { secret_sealed: from!.secret_sealed } });
    const record = await fireAndSettle(b.headers, victim.id, 'B0SEALSCB1');
    expect(record.status).toBe('failed');
    expect(requestsTo('/secret/b')).toBe(0);
    expect((await t.http.get(`/api/webhooks/${victim.endpoint_id}`).set(b.headers)).body.data.state).toBe('disabled');

    // Within one record: the endpoint's own secret copied into its legacy secrets does not open there either.
    const own = await sealedOf(made.endpoint_id);
    await endpoints().updateOne({ _id: own!._id }, { $set: { legacy_secrets_sealed: [own!.secret_sealed] } });
    expect((await fireAndSettle(a.headers, made.id, 'B0SEALSCA1')).status).toBe('failed');
    expect(requestsTo('/secret/a')).toBe(0);

    // Posting again gives the broken endpoint a new secret (answered once), and it signs with it.
    const again = await createAlert(t, b.headers, { asin: 'B0SEALSCB1', kind: 'any_change', webhook_url: `${rx.url}/secret/b` });
    expect(again.secret).toMatch(/^whsec_/);
    expect(again.secret).not.toBe(victim.secret);
    expect((await fireAndSettle(b.headers, victim.id, 'B0SEALSCB1')).status).toBe('delivered');
    const [got] = await rx.waitFor('/secret/b', 1);
    expect(verified(again.secret, got!)).toMatchObject({ alerts: [{ id: victim.id }] });
  });

  it('an API token copy moved to another account is not shown there; the token itself still authenticates', async () => {
    const a = await testAccount(t, 'token-from@example.com');
    const b = await testAccount(t, 'token-to@example.com');
    const users = userModel(t.ctx.mongo).collection;
    const from = await users.findOne({ _id: a.id });
    await users.updateOne({ _id: b.id }, { $set: { token_cipher: from!.token_cipher } });
    const me = await t.http.get('/api/me').set(b.headers);
    expect(me.status).toBe(200);
    // Shown from the token the request authenticated with, never a's, and sealed anew to b.
    expect(`Bearer ${me.body.data.api_token}`).toBe(b.headers.Authorization);
    expect(await t.ctx.users.revealToken(b.id)).toBe(me.body.data.api_token);
  });
});

describe('token copies sealed at creation', () => {
  it('seeded accounts’ copies open on their own records (the id is chosen before the upsert inserts)', async () => {
    await seed(t.ctx.mongo, t.ctx.appKey, { users: 2, posts: 0 });
    const seeded = await userModel(t.ctx.mongo)
      .find({ email: /^seed-user-/ })
      .select('+token_cipher')
      .lean();
    expect(seeded).toHaveLength(2);
    for (const u of seeded) {
      expect(u.token_cipher).toMatch(/^v2\./);
      expect(await t.ctx.users.revealToken(u._id)).toMatch(/^[A-Za-z0-9]{60}$/);
    }
  });
});

describe('the upgrade of sealed values of before', () => {
  it('re-seals every v1 value, in batches, safely from several processes at once; everything keeps working; a rerun is a no-op', async () => {
    const key = t.ctx.appKey;
    // Records as a release of before stored them: every sealed value v1, bound to nothing.
    const a = await testAccount(t, 'upgrade@example.com');
    const users = userModel(t.ctx.mongo).collection;
    const token = a.headers.Authorization!.replace('Bearer ', '');
    await users.updateOne({ _id: a.id }, { $set: { token_cipher: sealV1(token, key) } });
    const chatUrl = `${rx.url}/upgrade/teams/XyZ-upgrade`;
    const chat = await createAlert(t, a.headers, { asin: 'B0SEALUPG1', kind: 'any_change', channel: 'teams', webhook_url: chatUrl });
    await endpoints().updateOne({ _id: new Types.ObjectId(chat.endpoint_id) }, { $set: { target_sealed: sealV1(chatUrl, key) } });
    const hook = await createAlert(t, a.headers, { asin: 'B0SEALUPG2', kind: 'any_change', webhook_url: `${rx.url}/upgrade/hook` });
    const oldSecret = generateWebhookSecret();
    await endpoints().updateOne(
      { _id: new Types.ObjectId(hook.endpoint_id) },
      { $set: { secret_sealed: sealV1(hook.secret, key), legacy_secrets_sealed: [sealV1(oldSecret, key)] } },
    );
    const legacySecret = generateWebhookSecret();
    const { insertedId: legacyAlert } = await alertModel(t.ctx.mongo).collection.insertOne({
      user_id: a.id,
      asin: 'B0SEALUPG3',
      country: 'JP',
      kind: 'any_change',
      webhook_url: `${rx.url}/upgrade/legacy`,
      secret_sealed: sealV1(legacySecret, key),
      disabled_at: null,
      disabled_reason: null,
      last_delivery_at: null,
      created_at: new Date(),
      updated_at: new Date(),
    });
    // More accounts than one batch holds, so the walk takes several.
    const more = await Promise.all(
      Array.from({ length: 7 }, (_, i) => t.ctx.users.create({ name: `u${i}`, email: `upgrade-${i}@example.com` })),
    );
    for (const m of more) await users.updateOne({ _id: m.user._id }, { $set: { token_cipher: sealV1(m.token, key) } });

    // Before the upgrade, v1 values work where they are.
    expect((await fireAndSettle(a.headers, chat.id, 'B0SEALUPG1')).status).toBe('delivered');
    expect((await fireAndSettle(a.headers, hook.id, 'B0SEALUPG2')).status).toBe('delivered');
    expect((await t.http.get('/api/me').set(a.headers)).body.data.api_token).toBe(token);

    const oldOnes = async () => {
      let n = 0;
      for (const f of Object.values(SEALED_FIELDS)) {
        n += await t.ctx.mongo.db!.collection(f.collection).countDocuments({ [f.field]: { $regex: '^v1\\.' } });
      }
      return n;
    };
    const records = await oldOnes();
    // 8 users, the chat endpoint, the webhook endpoint's two fields, the alert: a record once per field.
    expect(records).toBe(12);
    // Three processes starting at once, batches of 3: each record is written by exactly one of them.
    const runs = await Promise.all([1, 2, 3].map(() => resealStoredSecrets(t.ctx.mongo, key, t.ctx.logger, 3)));
    expect(runs.reduce((n, r) => n + r.resealed, 0)).toBe(records);
    expect(runs.every((r) => r.unopenable === 0)).toBe(true);
    expect(await oldOnes()).toBe(0);
    // Nothing in the old format remains anywhere: every sealed field of every record is v2.
    for (const f of Object.values(SEALED_FIELDS)) {
      const docs = await t.ctx.mongo
        .db!.collection(f.collection)
        .find({ [f.field]: { $exists: true } })
        .toArray();
      for (const d of docs) for (const v of [d[f.field]].flat() as string[]) expect(v).toMatch(/^v2\./);
    }
    expect(await resealStoredSecrets(t.ctx.mongo, key, t.ctx.logger)).toEqual({ resealed: 0, unopenable: 0 });

    // After it, everything works as before: the chat URL delivers, both secrets sign, the token shows and authenticates.
    const chatBefore = requestsTo('/upgrade/teams/XyZ-upgrade');
    expect((await fireAndSettle(a.headers, chat.id, 'B0SEALUPG1')).status).toBe('delivered');
    expect(requestsTo('/upgrade/teams/XyZ-upgrade')).toBe(chatBefore + 1);
    expect((await fireAndSettle(a.headers, hook.id, 'B0SEALUPG2')).status).toBe('delivered');
    const signed = rx.received.filter((r) => r.path === '/upgrade/hook').at(-1)!;
    expect(verified(hook.secret, signed)).toBeTruthy();
    expect(verified(oldSecret, signed)).toBeTruthy();
    expect((await t.http.get('/api/me').set(a.headers)).body.data.api_token).toBe(token);
    for (const m of more) expect(await t.ctx.users.revealToken(m.user._id)).toBe(m.token);
    // The old alert's secret, sealed anew on the alert, moves to its endpoint and still signs.
    const legacyId = legacyAlert.toHexString();
    expect((await fireAndSettle(a.headers, legacyId, 'B0SEALUPG3')).status).toBe('delivered');
    const [legacyGot] = await rx.waitFor('/upgrade/legacy', 1);
    expect(verified(legacySecret, legacyGot!)).toMatchObject({ alerts: [{ id: legacyId }] });
  });

  it('leaves a value that does not open under this APP_KEY as it is, counted, and the start goes on', async () => {
    const b = await testAccount(t, 'other-key@example.com');
    const otherKey = Buffer.alloc(32, 7);
    await userModel(t.ctx.mongo).collection.updateOne({ _id: b.id }, { $set: { token_cipher: sealV1('x'.repeat(60), otherKey) } });
    const run = await resealStoredSecrets(t.ctx.mongo, t.ctx.appKey, t.ctx.logger);
    expect(run).toEqual({ resealed: 0, unopenable: 1 });
    expect(t.logs.text).toContain('do not open under this APP_KEY');
    await userModel(t.ctx.mongo).collection.deleteOne({ _id: b.id });
  });
});
