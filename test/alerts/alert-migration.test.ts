import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mongoose, { type Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { changeOf, createAlert, startTestDeliveryWorker, testAccount, verified, type TestDeliveryWorker } from '../helpers/deliveries.js';
import { alertModel, ALERT_IDENTITY_INDEX, ALERT_SLOT_INDEX } from '../../src/models/alert.js';
import { LEGACY_PER_KIND_INDEX, migrateAlertIdentities } from '../../src/alerts/rules/migrate.js';
import { sealV1 } from '../helpers/sealed-v1.js';
import { generateWebhookSecret } from '../../src/alerts/endpoints/endpoint.js';

/**
 * Upgrading from one alert per account, country, ASIN and kind: alerts stored under the old unique
 * index (and under none, before it) all stay, get their identity and place, and still fire; the
 * migration run by several processes at once and run again does the same. The real DeliveryQueue,
 * a delivery worker and a receiver on loopback.
 */
let t: TestContext;
let rx: WebhookReceiver;
let worker: TestDeliveryWorker;

beforeAll(async () => {
  rx = await new WebhookReceiver().start();
  t = await createTestContext({
    COUNTRIES: 'JP',
    ENDPOINT_ALLOW_PRIVATE: 'true',
    DELIVERY_RETRY_SCHEDULE: '100ms,100ms',
    RATE_LIMIT_API: '0',
  });
  worker = await startTestDeliveryWorker(t, 'migration-test');
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await rx?.close();
});

const alerts = () => alertModel(t.ctx.mongo);
const indexNames = async () => (await alerts().collection.indexes()).map((i) => i.name);

/** The alerts' indexes as a version of before had them: the new ones gone, the old unique one there (or none). */
async function oldIndexes(withPerKind: boolean): Promise<void> {
  for (const name of [ALERT_IDENTITY_INDEX, ALERT_SLOT_INDEX]) await alerts().collection.dropIndex(name);
  if (withPerKind) {
    await alerts().collection.createIndex({ user_id: 1, country: 1, asin: 1, kind: 1 }, { unique: true, name: LEGACY_PER_KIND_INDEX });
  }
}

/** An alert document as versions of before stored it: no identity, no place. */
function oldAlert(userId: Types.ObjectId, asin: string, kind: string, fields: Record<string, unknown>, at: number) {
  return {
    user_id: userId,
    asin,
    country: 'JP',
    kind,
    price: null,
    percent: null,
    disabled_at: null,
    disabled_reason: null,
    last_delivery_at: null,
    created_at: new Date(at),
    updated_at: new Date(at),
    ...fields,
  };
}

describe('alerts stored while they were one per product and kind', () => {
  it('all stay, get an identity and a place, and fire; identical posts find them; run at once and again it changes nothing more', async () => {
    const a = await testAccount(t, 'upgrade-a@example.com');
    const b = await testAccount(t, 'upgrade-b@example.com');
    const asin = 'B0MIGRATE1';
    const url = `${rx.url}/upgrade`;
    const { endpoint, secret } = await t.ctx.endpoints.upsert(a.id, { channel: 'webhook', url });
    const theirs = await t.ctx.endpoints.upsert(b.id, { channel: 'webhook', url: `${rx.url}/upgrade-b` });
    const legacySecret = generateWebhookSecret();
    await oldIndexes(true);
    const onEndpoint = { channel: 'webhook', webhook_url: url, endpoint_id: endpoint._id };
    const inserted = await alerts().collection.insertMany([
      oldAlert(a.id, asin, 'price_below', { ...onEndpoint, price: 5_000, rearm_above: null }, 1_000),
      oldAlert(a.id, asin, 'any_change', onEndpoint, 2_000),
      // Of before endpoints: its own URL and secret.
      oldAlert(
        a.id,
        asin,
        'back_in_stock',
        { webhook_url: `${rx.url}/upgrade-legacy`, secret_sealed: sealV1(legacySecret, t.ctx.appKey) },
        3_000,
      ),
      oldAlert(a.id, 'B0MIGRATE2', 'price_drop', { ...onEndpoint, percent: 10, reference: 'previous' }, 4_000),
      oldAlert(
        b.id,
        asin,
        'price_below',
        { channel: 'webhook', webhook_url: `${rx.url}/upgrade-b`, endpoint_id: theirs.endpoint._id, price: 4_500 },
        5_000,
      ),
    ]);
    const ids = Object.values(inserted.insertedIds).map((id) => id.toHexString());

    // Two processes starting at once, then a third start.
    const [one, two] = await Promise.all([
      migrateAlertIdentities(t.ctx.mongo, t.ctx.logger),
      migrateAlertIdentities(t.ctx.mongo, t.ctx.logger),
    ]);
    expect(one + two).toBeGreaterThanOrEqual(ids.length);
    expect(await migrateAlertIdentities(t.ctx.mongo, t.ctx.logger)).toBe(0);
    const names = await indexNames();
    expect(names).toEqual(expect.arrayContaining([ALERT_IDENTITY_INDEX, ALERT_SLOT_INDEX]));
    expect(names).not.toContain(LEGACY_PER_KIND_INDEX);

    const stored = await alerts()
      .find({ user_id: mongoose.trusted({ $in: [a.id, b.id] }) })
      .sort({ created_at: 1 })
      .lean();
    expect(stored.map((s) => s._id.toHexString())).toEqual(ids);
    for (const s of stored) expect(s).toMatchObject({ identity: expect.stringMatching(/^[\w-]{32}$/), slot: expect.any(Number) });
    expect(stored.filter((s) => s.asin === asin && s.user_id.equals(a.id)).map((s) => s.slot)).toEqual([0, 1, 2]);

    // They fire: one delivery per endpoint, as before.
    expect(await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 6_000, availability: 'out_of_stock' }, { price: 4_000 })])).toBe(3);
    const [onUrl] = await rx.waitFor('/upgrade', 1);
    expect(verified(secret!, onUrl!)).toMatchObject({
      alerts: [
        { id: ids[0], kind: 'price_below' },
        { id: ids[1], kind: 'any_change' },
      ],
    });
    const [legacy] = await rx.waitFor('/upgrade-legacy', 1);
    expect(verified(legacySecret, legacy!)).toMatchObject({ alerts: [{ id: ids[2], kind: 'back_in_stock' }] });
    const [other] = await rx.waitFor('/upgrade-b', 1);
    expect(verified(theirs.secret!, other!)).toMatchObject({ alerts: [{ id: ids[4] }] });

    // Posting one of them again finds it (the one of before endpoints too, now on its endpoint); another threshold is another alert.
    const again = await t.http
      .post('/api/alerts')
      .set(a.headers)
      .send({ asin, country: 'JP', kind: 'price_below', price: 5_000, webhook_url: url });
    expect(again.status).toBe(200);
    expect(again.body.data.id).toBe(ids[0]);
    const legacyAgain = await t.http
      .post('/api/alerts')
      .set(a.headers)
      .send({ asin, country: 'JP', kind: 'back_in_stock', webhook_url: `${rx.url}/upgrade-legacy` });
    expect(legacyAgain.status).toBe(200);
    expect(legacyAgain.body.data.id).toBe(ids[2]);
    const lower = await createAlert(t, a.headers, { asin, kind: 'price_below', price: 4_000, webhook_url: url });
    expect(lower.id).not.toBe(ids[0]);
    expect((await alerts().findById(lower.id).lean())!.slot).toBe(3);
  });

  it('of before the per-kind index: a product and kind stored twice both stay, under identities of their own', async () => {
    const a = await testAccount(t, 'older@example.com');
    const url = `${rx.url}/older`;
    await oldIndexes(false);
    const same = { channel: 'webhook', webhook_url: url, price: 3_000 };
    const inserted = await alerts().collection.insertMany([
      oldAlert(a.id, 'B0MIGRATE3', 'price_below', same, 1_000),
      oldAlert(a.id, 'B0MIGRATE3', 'price_below', same, 2_000),
    ]);
    expect(await migrateAlertIdentities(t.ctx.mongo, t.ctx.logger)).toBe(2);
    expect(await indexNames()).toEqual(expect.arrayContaining([ALERT_IDENTITY_INDEX, ALERT_SLOT_INDEX]));
    const stored = await alerts().find({ user_id: a.id }).sort({ created_at: 1 }).lean();
    expect(stored.map((s) => s._id.toHexString())).toEqual(Object.values(inserted.insertedIds).map((id) => id.toHexString()));
    expect(stored[1]!.identity).toBe(`${stored[0]!.identity}.${stored[1]!._id.toHexString()}`);
    expect(stored.map((s) => s.slot)).toEqual([0, 1]);
    // Posted again, it is the older one.
    const again = await createAlert(t, a.headers, { asin: 'B0MIGRATE3', kind: 'price_below', price: 3_000, webhook_url: url });
    expect(again.id).toBe(stored[0]!._id.toHexString());
  });
});
