import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { WebhookReceiver, type Received } from '../helpers/webhook-receiver.js';
import { changeOf, verified } from '../helpers/deliveries.js';
import { until } from '../helpers/until.js';
import { alertModel } from '../../src/models/alert.js';

/**
 * Several alerts of one account on one product and kind: thresholds fired through the real refresh
 * path (a forced update against the simulator, whose clock the test moves to the instants its
 * ground truth names), each alert to its own target, and the alerts one change fires at one
 * endpoint in one delivery; identical posts one alert; the cap per product.
 */
const DRIFT_MS = 60_000;
const MAX_PER_PRODUCT = 3;
let p: Pipeline;
let high: WebhookReceiver;
let low: WebhookReceiver;
let headers: Record<string, string>;
const clock = { now: Date.UTC(2026, 10, 24, 3, 0, 0) };

beforeAll(async () => {
  high = await new WebhookReceiver().start();
  low = await new WebhookReceiver().start();
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
      ACCOUNT_MAX_ALERTS_PER_PRODUCT: String(MAX_PER_PRODUCT),
    },
    { now: () => clock.now },
  );
  ({ headers } = await p.user('several@example.com'));
}, 60_000);

afterAll(async () => {
  await p?.close();
  await high?.close();
  await low?.close();
});

const post = (body: Record<string, unknown>, as = headers) =>
  p.http
    .post('/api/alerts')
    .set(as)
    .send({ country: 'JP', ...body });

async function created(body: Record<string, unknown>): Promise<{ id: string; secret: string; endpoint_id: string }> {
  const res = await post(body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

/** The forced update of the product at the simulator's clock: the refresh path a planned refresh takes too. */
async function refreshAt(asin: string, at: number): Promise<void> {
  clock.now = at;
  const res = await p.http.get(`/api/world/update?asin=${asin}&country=JP`).set(headers);
  expect(res.status).toBe(200);
}

/**
 * A product whose next prices, by the simulator's ground truth, go p0 → p1 (lower) → p2 (at least
 * p0) → p3 (under p1), with the instants a refresh sees each; searched over a few ASINs.
 */
function fourPrices(): { asin: string; prices: number[]; at: number[] } {
  for (let i = 0; i < 400; i++) {
    const asin = `B0SEV${String(i).padStart(5, '0')}`;
    const truth = p.sim.catalog.truth('JP', asin, clock.now, clock.now + 400 * DRIFT_MS, 200);
    if (truth.kind !== 'found') continue;
    const c = truth.changes;
    for (let j = 0; j + 3 < c.length; j++) {
      const prices = c.slice(j, j + 4).map((x) => x.price?.amount ?? null);
      if (prices.some((x) => x === null)) continue;
      const [p0, p1, p2, p3] = prices as number[];
      if (p1! < p0! && p2! >= p0! && p3! < p1!) return { asin, prices: prices as number[], at: c.slice(j, j + 4).map((x) => x.at + 1) };
    }
  }
  throw new Error('no product of the simulator moves p0 → lower → back up → under both');
}

async function deliveriesOf(alertId: string): Promise<{ id: string; status: string; alert_ids: string[] }[]> {
  return (await p.http.get(`/api/alerts/${alertId}/deliveries`).set(headers)).body.data;
}

const bodyOf = (secret: string, got: Received) => verified(secret, got) as { alerts: { id: string; kind: string }[]; alert_id: string };

describe('two price_below alerts on one product, with different thresholds and targets', () => {
  it('a price between the thresholds fires one, a price under both fires both, each to its own target; one endpoint gets one delivery', async () => {
    const { asin, prices, at } = fourPrices();
    const [p0, p1] = prices as [number, number];
    const upper = await created({ asin, kind: 'price_below', price: p0, webhook_url: `${high.url}/hook` });
    const lower = await created({ asin, kind: 'price_below', price: p1, webhook_url: `${low.url}/hook` });
    // The lower threshold to the upper one's URL too: a third alert, on the first one's endpoint.
    const lowerToHigh = await created({ asin, kind: 'price_below', price: p1, webhook_url: `${high.url}/hook` });
    expect(lowerToHigh.endpoint_id).toBe(upper.endpoint_id);
    expect(new Set([upper.id, lower.id, lowerToHigh.id]).size).toBe(3);

    // p0: the first observation, at or above both thresholds: nothing.
    await refreshAt(asin, at[0]!);
    // p1: under the upper threshold, not under the lower: the upper alert alone, to its own target.
    await refreshAt(asin, at[1]!);
    const [first] = await high.waitFor('/hook', 1);
    expect(bodyOf(upper.secret, first!)).toMatchObject({ alert_id: upper.id, alerts: [{ id: upper.id, kind: 'price_below' }] });
    expect(bodyOf(upper.secret, first!).alerts).toHaveLength(1);
    expect(await deliveriesOf(lower.id)).toEqual([]);
    expect(await deliveriesOf(lowerToHigh.id)).toEqual([]);
    // p2: back at or above both, re-arming them; p3: under both.
    await refreshAt(asin, at[2]!);
    await refreshAt(asin, at[3]!);
    const [toLow] = await low.waitFor('/hook', 1);
    expect(bodyOf(lower.secret, toLow!)).toMatchObject({ alert_id: lower.id, alerts: [{ id: lower.id, kind: 'price_below' }] });
    expect(() => bodyOf(upper.secret, toLow!)).toThrow();
    // The two alerts on the upper URL travel in one delivery, in creation order.
    const got = await high.waitFor('/hook', 2);
    const both = bodyOf(upper.secret, got[1]!);
    expect(both.alerts.map((a) => a.id)).toEqual([upper.id, lowerToHigh.id]);
    expect(both.alerts.every((a) => a.kind === 'price_below')).toBe(true);
    const history = (await p.http.get(`/api/world/asin/${asin}/history?country=JP&limit=100`).set(headers)).body.data as {
      price: number;
    }[];
    expect(history.map((h) => h.price)).toEqual(prices);
    const records = await until('all delivered', async () => {
      const list = await deliveriesOf(upper.id);
      return list.length === 2 && list.every((d) => d.status === 'delivered') ? list : undefined;
    });
    expect(records[0]!.alert_ids).toEqual([upper.id, lowerToHigh.id]);
    expect(high.at('/hook')).toHaveLength(2);
    expect(low.at('/hook')).toHaveLength(1);
  });
});

describe('a chat message of several alerts of one kind', () => {
  it('names each threshold', async () => {
    const asin = 'B0SEVCHAT1';
    const url = `${high.url}/slack/T1/B1/several`;
    await created({ asin, kind: 'price_below', price: 5_000, channel: 'slack', webhook_url: url });
    await created({ asin, kind: 'price_below', price: 4_000, channel: 'slack', webhook_url: url });
    expect(await p.ctx.deliveries.enqueueFor([changeOf(asin, { price: 5_200 }, { price: 3_900 })])).toBe(1);
    const [got] = await high.waitFor('/slack/T1/B1/several', 1);
    const body = JSON.parse(got!.body) as { text: string };
    expect(body.text).toMatch(/^Price below ￥5,000, Price below ￥4,000: B0SEVCHAT1 \(JP\) ￥5,200 → ￥3,900/);
  });
});

describe('identical posts', () => {
  it('six at once make one alert: one 201, five 200, all the same alert', async () => {
    const body = { asin: 'B0SEVSAME1', kind: 'price_below', price: 2_500, rearm_above: 100, webhook_url: `${high.url}/same` };
    const answers = await Promise.all(Array.from({ length: 6 }, () => post(body)));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((r) => r.body.data.id)).size).toBe(1);
    expect(await alertModel(p.ctx.mongo).countDocuments({ asin: 'B0SEVSAME1' })).toBe(1);
    // The same alert with another `paused` is still that alert: paused is its state.
    const paused = await post({ ...body, paused: true });
    expect(paused.status).toBe(200);
    expect(paused.body.data).toMatchObject({ id: answers[0]!.body.data.id, paused: true });
    // Another re-arming margin is another alert.
    expect((await post({ ...body, rearm_above: 200 })).status).toBe(201);
  });
});

describe('ACCOUNT_MAX_ALERTS_PER_PRODUCT', () => {
  it('holds under concurrent creations, every kind counted; identical posts at the cap still answer 200', async () => {
    const { headers: mine } = await p.user('per-product@example.com');
    const asin = 'B0SEVCAP01';
    const bodies = [
      { kind: 'price_below', price: 1_000 },
      { kind: 'price_below', price: 900 },
      { kind: 'price_drop', percent: 10 },
      { kind: 'any_change' },
      { kind: 'back_in_stock' },
      { kind: 'rank_below', rank: 50 },
      { kind: 'price_below', price: 800 },
      { kind: 'price_rise', amount: 100 },
    ].map((b) => ({ asin, webhook_url: `${high.url}/cap`, ...b }));
    const answers = await Promise.all(bodies.map((b) => post(b, mine)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(MAX_PER_PRODUCT);
    expect(statuses.filter((s) => s === 422)).toHaveLength(bodies.length - MAX_PER_PRODUCT);
    for (const r of answers.filter((x) => x.status === 422)) {
      expect(r.body.errors.asin).toEqual([
        `You may hold at most ${MAX_PER_PRODUCT} alerts on one product in one country (ACCOUNT_MAX_ALERTS_PER_PRODUCT).`,
      ]);
    }
    expect((await p.http.get('/api/alerts').set(mine)).body.meta.total).toBe(MAX_PER_PRODUCT);
    const first = answers.find((r) => r.status === 201)!;
    const firstBody = bodies[answers.indexOf(first)]!;
    // At the cap: an identical post is that alert; another product has places of its own.
    expect((await post(firstBody, mine)).status).toBe(200);
    expect((await post({ ...firstBody, asin: 'B0SEVCAP02' }, mine)).status).toBe(201);
    // A deletion frees a place.
    expect((await p.http.delete(`/api/alerts/${first.body.data.id}`).set(mine)).status).toBe(200);
    const refused = bodies[statuses.indexOf(422)]!;
    expect((await post(refused, mine)).status).toBe(201);
    expect((await post({ asin, kind: 'out_of_stock', webhook_url: `${high.url}/cap` }, mine)).status).toBe(422);
  });
});
