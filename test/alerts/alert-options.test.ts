import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { changeOf } from '../helpers/deliveries.js';
import { alertModel } from '../../src/models/alert.js';
import { appendHistory, type ProductChange } from '../../src/catalog/history.js';

/**
 * The alert options of issue #27 on the real app: pausing, re-arming, price_rise and amounts —
 * their validation at POST /api/alerts, PATCH /api/alerts/{id}, and what the real DeliveryQueue
 * queues for them (no delivery worker: what is queued is what is counted).
 */
let t: TestContext;
let a: Record<string, string>;
let b: Record<string, string>;
const HOOK = 'https://93.184.216.34/hooks/options';

beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP,US', RATE_LIMIT_API: '0' });
  const user = async (email: string) => {
    const { token } = await t.ctx.users.create({ name: email, email });
    return { Authorization: `Bearer ${token}` };
  };
  a = await user('options-a@example.com');
  b = await user('options-b@example.com');
});

afterAll(() => t?.close());

const create = (headers: Record<string, string>, body: Record<string, unknown>) =>
  t.http
    .post('/api/alerts')
    .set(headers)
    .send({ country: 'JP', webhook_url: HOOK, ...body });

const HOUR = 3_600_000;
const base = Date.UTC(2026, 10, 24, 0, 0, 0);
/** A change between two prices of the product, the later one `hour` hours after the base. */
const step = (asin: string, before: number | null, after: number, hour: number) =>
  changeOf(asin, before === null ? null : { price: before, at: new Date(base + (hour - 1) * HOUR) }, {
    price: after,
    at: new Date(base + hour * HOUR),
  });

describe('POST /api/alerts options', () => {
  it('stores and answers them, with defaults that reproduce the alerts of before', async () => {
    const plain = await create(a, { asin: 'B0OPTPLAIN', kind: 'price_below', price: 1000 });
    expect(plain.status).toBe(201);
    expect(plain.body.data).toMatchObject({
      price: 1000,
      percent: null,
      amount: null,
      rearm_above: null,
      rearm_after: null,
      paused: false,
    });

    const rearm = await create(a, { asin: 'B0OPTREARM', kind: 'price_below', price: 1000, rearm_above: 50, rearm_after: '6h' });
    expect(rearm.status).toBe(201);
    expect(rearm.body.data).toMatchObject({ rearm_above: 50, rearm_after: '6h', paused: false });
    const stored = await alertModel(t.ctx.mongo).findById(rearm.body.data.id).lean();
    expect(stored).toMatchObject({ rearm_after_ms: 6 * HOUR, armed: true });

    const rise = await create(a, { asin: 'B0OPTRISE1', kind: 'price_rise', amount: 500, paused: 'true' });
    expect(rise.status).toBe(201);
    expect(rise.body.data).toMatchObject({ kind: 'price_rise', percent: null, amount: 500, paused: true });
    expect((await create(a, { asin: 'B0OPTRISE2', kind: 'price_rise', percent: 150 })).status).toBe(201);
    expect((await create(a, { asin: 'B0OPTDROP1', kind: 'price_drop', amount: 1 })).body.data).toMatchObject({ amount: 1, percent: null });
  });

  it.each([
    [{ kind: 'price_rise' }, 'percent', /required for price_rise/],
    [{ kind: 'price_drop' }, 'percent', /required for price_drop/],
    [{ kind: 'price_drop', percent: 10, amount: 100 }, 'amount', /exactly one/],
    [{ kind: 'price_rise', percent: 10, amount: 100 }, 'amount', /exactly one/],
    [{ kind: 'price_drop', percent: 100 }, 'percent', /1 to 99/],
    [{ kind: 'price_rise', percent: 1001 }, 'percent', /1 to 1000/],
    [{ kind: 'price_drop', amount: 0 }, 'amount', /whole number/],
    [{ kind: 'price_below', price: 1000, amount: 10 }, 'amount', /only for price_drop and price_rise/],
    [{ kind: 'price_below', price: 10, percent: 10 }, 'percent', /only for price_drop and price_rise/],
    [{ kind: 'price_drop', percent: 10, rearm_above: 10 }, 'rearm_above', /only for price_below/],
    [{ kind: 'any_change', rearm_after: '6h' }, 'rearm_after', /only for price_below/],
    [{ kind: 'price_below', price: 1000, rearm_above: -1 }, 'rearm_above', /whole number/],
    [{ kind: 'price_below', price: 1000, rearm_after: 'soon' }, 'rearm_after', /duration/],
    [{ kind: 'price_below', price: 1000, rearm_after: '31d' }, 'rearm_after', /30d/],
    [{ kind: 'price_below', price: 1000, rearm_after: '0' }, 'rearm_after', /duration/],
    [{ kind: 'price_below', price: 1000, rearm_after: 3600 }, 'rearm_after', /duration/],
    [{ kind: 'any_change', paused: 'maybe' }, 'paused', /true or false/],
    [{ kind: 'any_change', fire_on_create: true }, 'fire_on_create', /not for any_change/],
    [{ kind: 'price_rise', amount: 5, reference: 'at_creation', fire_on_create: true }, 'fire_on_create', /at_creation/],
    [{ kind: 'price_drop', percent: 10, reference: 'highest' }, 'days', /required for reference highest/],
    [{ kind: 'price_drop', percent: 10, reference: 'previous', days: 7 }, 'days', /only for reference lowest and highest/],
    [{ kind: 'price_drop', percent: 10, days: 7 }, 'days', /only for reference lowest and highest/],
    [{ kind: 'price_rise', percent: 10, reference: 'lowest', days: 0 }, 'days', /1 to 365/],
    [{ kind: 'price_rise', percent: 10, reference: 'median' }, 'reference', /previous, lowest, highest, at_creation/],
    [{ kind: 'price_below', price: 10, reference: 'lowest', days: 3 }, 'reference', /only for price_drop and price_rise/],
  ])('refuses %j with 422 on %s and stores nothing', async (patch, field, message) => {
    const before = await t.http.get('/api/alerts').set(b);
    const res = await create(b, { asin: 'B0OPTBAD01', ...patch });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.errors[field].join(' ')).toMatch(message);
    expect((await t.http.get('/api/alerts').set(b)).body.meta.total).toBe(before.body.meta.total);
  });

  it('a refused update leaves the alert as it was', async () => {
    const made = await create(b, { asin: 'B0OPTKEEP1', kind: 'price_drop', percent: 10 });
    expect(made.status).toBe(201);
    expect((await create(b, { asin: 'B0OPTKEEP1', kind: 'price_drop', percent: 10, amount: 5 })).status).toBe(422);
    const read = await t.http.get(`/api/alerts/${made.body.data.id}`).set(b);
    expect(read.body.data).toMatchObject({ percent: 10, amount: null });
  });
});

describe('PATCH /api/alerts/{id}: pause without deleting', () => {
  it('pauses and resumes; 422 on a bad body and 404 on another account’s alert, changing nothing', async () => {
    const made = await create(a, { asin: 'B0OPTPAUS1', kind: 'any_change' });
    const id = made.body.data.id as string;
    const paused = await t.http.patch(`/api/alerts/${id}`).set(a).send({ paused: true });
    expect(paused.status).toBe(200);
    expect(paused.body.data).toMatchObject({ id, paused: true, kind: 'any_change' });
    expect((await t.http.get(`/api/alerts/${id}`).set(a)).body.data.paused).toBe(true);

    const bad = await t.http.patch(`/api/alerts/${id}`).set(a).send({ paused: 'later' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.paused.join(' ')).toMatch(/true or false/);
    const missing = await t.http.patch(`/api/alerts/${id}`).set(a).send({});
    expect(missing.status).toBe(422);
    expect(missing.body.errors.paused.join(' ')).toMatch(/required|true or false/);
    expect((await t.http.patch(`/api/alerts/${id}`).set(b).send({ paused: false })).status).toBe(404);
    expect((await t.http.patch('/api/alerts/not-an-id').set(a).send({ paused: false })).status).toBe(404);
    expect((await t.http.get(`/api/alerts/${id}`).set(a)).body.data.paused).toBe(true);

    const resumed = await t.http.patch(`/api/alerts/${id}`).type('form').set(a).send('paused=false');
    expect(resumed.status).toBe(200);
    expect(resumed.body.data.paused).toBe(false);
  });

  it('a paused alert fires nothing; resuming does not fire for what changed while paused', async () => {
    const asin = 'B0OPTPAUS2';
    const made = await create(a, { asin, kind: 'price_below', price: 1000 });
    const drop = await create(a, { asin, kind: 'price_drop', percent: 10, webhook_url: `${HOOK}/drop` });
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1200, 1100, 1)])).toBe(0);
    for (const x of [made, drop])
      expect((await t.http.patch(`/api/alerts/${x.body.data.id}`).set(a).send({ paused: true })).status).toBe(200);
    // Crosses below 1000 and drops 20 % while paused: nothing.
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1100, 880, 2)])).toBe(0);
    for (const x of [made, drop])
      expect((await t.http.patch(`/api/alerts/${x.body.data.id}`).set(a).send({ paused: false })).status).toBe(200);
    // Still below and a small move after resuming: no crossing, no drop of 10 %.
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 880, 850, 3)])).toBe(0);
    // A new crossing fires again.
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 850, 1050, 4)])).toBe(0);
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1050, 900, 5)])).toBe(2);
  });

  it('posting an alert with paused: true pauses it too', async () => {
    const asin = 'B0OPTPAUS3';
    await create(a, { asin, kind: 'any_change', paused: true });
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1000, 999, 1)])).toBe(0);
    await create(a, { asin, kind: 'any_change' });
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 999, 998, 2)])).toBe(1);
  });
});

describe('re-arming through the delivery queue', () => {
  it('a price wobbling around the threshold fires once; the state survives batches', async () => {
    const asin = 'B0OPTWOBL1';
    const made = await create(a, { asin, kind: 'price_below', price: 1000, rearm_above: 50 });
    const prices = [1200, 990, 1010, 995, 1005, 990, 1049, 999, 1050, 990];
    let queued = 0;
    const fired: number[] = [];
    for (let i = 1; i < prices.length; i++) {
      const n = await t.ctx.deliveries.enqueueFor([step(asin, prices[i - 1]!, prices[i]!, i)]);
      if (n > 0) fired.push(i);
      queued += n;
    }
    expect(fired).toEqual([1, 9]);
    expect(queued).toBe(2);
    const stored = await alertModel(t.ctx.mongo).findById(made.body.data.id).lean();
    expect(stored).toMatchObject({ armed: false, last_fired_at: new Date(base + 9 * HOUR) });
  });

  it('rearm_after: a second crossing within the interval is dropped; one after it fires', async () => {
    const asin = 'B0OPTWAIT1';
    await create(a, { asin, kind: 'price_below', price: 1000, rearm_after: '6h' });
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1200, 990, 1)])).toBe(1);
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 990, 1010, 2)])).toBe(0);
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1010, 990, 3)])).toBe(0);
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 990, 1010, 6)])).toBe(0);
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1010, 990, 7)])).toBe(1);
  });

  it('price_rise by amount fires through the queue', async () => {
    const asin = 'B0OPTRISE3';
    await create(a, { asin, kind: 'price_rise', amount: 100 });
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1000, 1099, 1)])).toBe(0);
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1099, 1199, 2)])).toBe(1);
  });
});

describe('availability, Buy Box and sales-rank kinds', () => {
  it('rank needs rank_below / rank_above and is refused for other kinds; the answer carries it', async () => {
    const missing = await create(a, { asin: 'B0OPTRANK0', kind: 'rank_below' });
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toHaveProperty('rank');
    const wrong = await create(a, { asin: 'B0OPTRANK0', kind: 'price_below', price: 100, rank: 10 });
    expect(wrong.status).toBe(422);
    expect(wrong.body.errors.rank).toEqual(['The rank field is only for rank_below and rank_above.']);
    expect(await alertModel(t.ctx.mongo).countDocuments({ asin: 'B0OPTRANK0' })).toBe(0);
    const made = await create(a, { asin: 'B0OPTRANK0', kind: 'rank_above', rank: 5000 });
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ kind: 'rank_above', rank: 5000, price: null });
  });

  it('a sales rank crossing its band, a Buy Box change and a stock-out fire through the queue', async () => {
    const asin = 'B0OPTRANK1';
    await create(a, { asin, kind: 'rank_below', rank: 1000 });
    await create(a, { asin, kind: 'rank_above', rank: 1000 });
    await create(a, { asin, kind: 'buybox_change' });
    await create(a, { asin, kind: 'out_of_stock' });
    const at = (hour: number) => new Date(base + hour * HOUR);
    // Each change is one delivery to the endpoint, listing the alerts it fired.
    const kindsFired = async (change: ProductChange): Promise<string[]> => {
      const before = await t.ctx.deliveryJobs.queue.getJobs(['wait', 'prioritized', 'delayed']);
      await t.ctx.deliveries.enqueueFor([change]);
      const after = await t.ctx.deliveryJobs.queue.getJobs(['wait', 'prioritized', 'delayed']);
      const seen = new Set(before.map((j) => j.id));
      return after
        .filter((j) => !seen.has(j.id))
        .flatMap((j) => (j.data as { alerts: { kind: string }[] }).alerts.map((x) => x.kind))
        .sort();
    };
    expect(await kindsFired(changeOf(asin, { rank: 1500, at: at(0) }, { rank: 900, at: at(1) }))).toEqual(['rank_below']);
    expect(await kindsFired(changeOf(asin, { rank: 900, at: at(1) }, { rank: 800, at: at(2) }))).toEqual([]);
    expect(await kindsFired(changeOf(asin, { rank: 800, at: at(2) }, { rank: 1200, at: at(3) }))).toEqual(['rank_above']);
    expect(await kindsFired(changeOf(asin, { rank: 1200, at: at(3) }, { rank: 1200, buybox: false, price: 1100, at: at(4) }))).toEqual([
      'buybox_change',
    ]);
    expect(
      await kindsFired(changeOf(asin, { rank: 1200, at: at(4) }, { rank: 1200, price: null, availability: 'out_of_stock', at: at(5) })),
    ).toEqual(['out_of_stock']);
  });
});

describe('drops and rises against a reference, through the delivery queue and the history', () => {
  const DAY = 24 * HOUR;
  /** Day i's change of the product, its point written to the history first (as a refresh writes it). */
  async function day(asin: string, prices: readonly number[], i: number): Promise<ProductChange> {
    const c = changeOf(asin, i === 0 ? null : { price: prices[i - 1]!, at: new Date(base + (i - 1) * DAY) }, {
      price: prices[i]!,
      at: new Date(base + i * DAY),
    });
    return { ...c, key: `JP.${asin}.${i}` };
  }

  it('a slide of 2 % a day fires a 10 % drop against the highest of the last 7 days, once', async () => {
    const asin = 'B0OPTSLIDE';
    const made = await create(a, { asin, kind: 'price_drop', percent: 10, reference: 'highest', days: 7 });
    expect(made.body.data).toMatchObject({ reference: 'highest', days: 7, reference_price: null });
    const previous = await create(a, { asin, kind: 'price_rise', percent: 10, webhook_url: `${HOOK}/rise` });
    expect(previous.body.data.reference).toBe('previous');
    const slide = Array.from({ length: 10 }, (_, i) => Math.round(1000 * 0.98 ** i));
    const fired: number[] = [];
    for (let i = 0; i < slide.length; i++) {
      const change = await day(asin, slide, i);
      if ((await t.ctx.deliveries.enqueueFor([change], appendHistory(t.ctx.mongo, 365, [change]))) > 0) fired.push(i);
    }
    expect(fired).toEqual([6]);
  });

  it('the window holds the price in effect when it opened (a point older than the window)', async () => {
    const asin = 'B0OPTOPEN1';
    await create(a, { asin, kind: 'price_drop', amount: 100, reference: 'highest', days: 3 });
    // 2000 from day 0; 1950 on day 2 (in a 3-day window from day 4: the opening price is 2000); 1899 on day 4.
    const prices = [2000, 2000, 1950, 1950, 1899];
    const changes = [0, 2, 4].map((i) => ({
      ...changeOf(asin, i === 0 ? null : { price: prices[i - 2]!, at: new Date(base + (i - 2) * DAY) }, {
        price: prices[i]!,
        at: new Date(base + i * DAY),
      }),
      key: `JP.${asin}.${i}`,
    }));
    await appendHistory(t.ctx.mongo, 365, changes.slice(0, 2));
    const last = { ...changes[2]!, before: { ...changes[2]!.before!, at: new Date(base + 2 * DAY) } };
    expect(await t.ctx.deliveries.enqueueFor([last])).toBe(1);
  });

  it('at_creation: a product not yet priced takes the first price seen as its reference', async () => {
    const asin = 'B0OPTCREAT';
    const made = await create(a, { asin, kind: 'price_rise', amount: 200, reference: 'at_creation' });
    expect(made.body.data).toMatchObject({ reference: 'at_creation', reference_price: null });
    expect(await t.ctx.deliveries.enqueueFor([step(asin, null, 1000, 1)])).toBe(0);
    expect((await t.http.get(`/api/alerts/${made.body.data.id}`).set(a)).body.data.reference_price).toBe(1000);
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1000, 1100, 2)])).toBe(0);
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1100, 1200, 3)])).toBe(1);
    expect(await t.ctx.deliveries.enqueueFor([step(asin, 1200, 1300, 4)])).toBe(0);
  });
});

describe('fire_on_create', () => {
  const deliveries = async (id: string, headers = a) =>
    (await t.http.get(`/api/alerts/${id}/deliveries`).set(headers)).body.data as { alert_ids: string[] }[];

  it('queues one delivery of the current point when the condition already holds; none when it does not', async () => {
    const asin = 'B0OPTFIRE1';
    const c1 = changeOf(asin, null, { price: 1200, at: new Date(base), availability: 'out_of_stock' });
    const c2 = changeOf(asin, { price: 1200, at: new Date(base), availability: 'out_of_stock' }, { price: 900, at: new Date(base + HOUR) });
    await appendHistory(t.ctx.mongo, 365, [c1, c2]);

    const below = await create(a, { asin, kind: 'price_below', price: 1000, rearm_above: 100, fire_on_create: true });
    expect(below.status).toBe(201);
    expect((await deliveries(below.body.data.id)).map((d) => d.alert_ids)).toEqual([[below.body.data.id]]);
    // Re-arming state: it fired, so the next crossing waits for 1100.
    expect(await alertModel(t.ctx.mongo).findById(below.body.data.id).lean()).toMatchObject({ armed: false });

    const back = await create(a, { asin, kind: 'back_in_stock', fire_on_create: 'true', webhook_url: `${HOOK}/back` });
    expect(await deliveries(back.body.data.id)).toHaveLength(1);
    const drop = await create(a, { asin, kind: 'price_drop', percent: 20, fire_on_create: true, webhook_url: `${HOOK}/drop` });
    expect(await deliveries(drop.body.data.id)).toHaveLength(1);

    const notBelow = await create(b, { asin, kind: 'price_below', price: 900, fire_on_create: true });
    expect(await deliveries(notBelow.body.data.id, b)).toHaveLength(0);
    const rise = await create(a, { asin, kind: 'price_rise', percent: 5, fire_on_create: true, webhook_url: `${HOOK}/rise` });
    expect(await deliveries(rise.body.data.id)).toHaveLength(0);
    const paused = await create(a, { asin, kind: 'price_drop', percent: 5, fire_on_create: true, paused: true, webhook_url: `${HOOK}/x` });
    expect(paused.status).toBe(201); // another threshold: another alert, and a paused one fires nothing
    expect(await deliveries(paused.body.data.id)).toHaveLength(0);
    const again = await create(a, { asin, kind: 'price_drop', percent: 20, fire_on_create: true, webhook_url: `${HOOK}/drop` });
    expect(again.status).toBe(200); // the identical alert, posted again: only a creation fires
    expect(await deliveries(drop.body.data.id)).toHaveLength(1);
  });

  it('without it, or for a product with no point yet, nothing is queued', async () => {
    const asin = 'B0OPTFIRE2';
    const made = await create(a, { asin, kind: 'price_below', price: 1000, fire_on_create: true });
    expect(made.status).toBe(201);
    expect(await deliveries(made.body.data.id)).toHaveLength(0);
  });
});
