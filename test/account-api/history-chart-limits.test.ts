import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textBody } from '../helpers/text-body.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { productModel } from '../../src/models/product.js';
import { historyPointModel } from '../../src/models/history-point.js';
import { snapPreset, presetQuery } from '../../src/catalog/chart-presets.js';
import { renderBudgetKey } from '../../src/accounts/render-budget.js';

const DAY = 86_400_000;
const NOW = Date.now();
const ASINS = ['B0LIMITS01', 'B0LIMITS02'] as const;

/** Two watched JP products with a year of prices (1,000 changes each, some out of stock) and an account. */
async function seed(t: TestContext): Promise<Account> {
  const product = (asin: string) => ({
    country: 'JP',
    asin,
    title: `Chart ${asin}`,
    status: 'ok',
    priority: 0,
    created_at: new Date(NOW - 400 * DAY),
    updated_at: new Date(NOW - DAY),
    next_refresh_at: new Date(NOW + DAY),
  });
  await productModel(t.ctx.mongo).insertMany(ASINS.map(product));
  const points = ASINS.flatMap((asin, k) =>
    Array.from({ length: 1_000 }, (_, i) => {
      const at = new Date(Math.floor((NOW - ((1_000 - i) * 365 * DAY) / 1_000) / 1000) * 1000);
      const out = (i + k) % 50 === 7;
      return {
        _id: `JP.${asin}.${at.getTime()}`,
        country: 'JP',
        asin,
        at,
        price: out ? null : 1_000 + ((i * 37 + k * 11) % 900),
        currency: out ? null : 'JPY',
        availability: out ? 'out_of_stock' : 'in_stock',
        buybox: !out,
        rank: 100,
        expires_at: new Date(at.getTime() + 400 * DAY),
      };
    }),
  );
  await historyPointModel(t.ctx.mongo).insertMany(points);
  return account(t, 'limits@example.com');
}

interface Account {
  readonly id: string;
  readonly auth: Record<string, string>;
}

async function account(t: TestContext, email: string): Promise<Account> {
  const { user, token } = await t.ctx.users.create({ name: email, email });
  return { id: user._id.toHexString(), auth: { Authorization: `Bearer ${token}` } };
}

const chart = (t: TestContext, who: Account, asin: string, query: string) =>
  t.http.get(`/api/world/asin/${asin}/history.svg?country=JP&${query}`).set(who.auth).buffer(true).parse(textBody);

/** Runs `fn` over `items`, `limit` at once. */
async function inBatches<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += limit) out.push(...(await Promise.all(items.slice(i, i + limit).map(fn))));
  return out;
}

describe('history.svg under many distinct charts at once', () => {
  let t: TestContext;
  let auth: Account;
  beforeAll(async () => {
    // Time enough for 12 renders one after another on a starved machine: here every chart must be drawn.
    t = await createTestContext({ COUNTRIES: 'JP', CHART_RENDERS_PER_MINUTE: '1000', CHART_RENDER_QUEUE: '16', CHART_RENDER_WAIT: '120s' });
    auth = await seed(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers the two parameter sets found to fail, and 120 distinct ones 12 at a time, all with a chart', async () => {
    let seed = 35;
    const rand = (lo: number, hi: number) => lo + ((seed = (seed * 48271) % 2147483647) % (hi - lo + 1));
    const asked = [
      { asin: ASINS[0], days: 1, width: 300, height: 150 },
      { asin: ASINS[0], days: 4, width: 1169, height: 703 },
      ...Array.from({ length: 120 }, (_, i) => ({
        asin: ASINS[i % 2]!,
        days: rand(1, 365),
        width: rand(300, 1600),
        height: rand(150, 800),
      })),
    ];
    expect(new Set(asked.map((a) => JSON.stringify(a))).size).toBe(asked.length);
    const answers = await inBatches(asked, 12, async (a) => ({
      a,
      res: await chart(t, auth, a.asin, `days=${a.days}&width=${a.width}&height=${a.height}`),
    }));
    expect(answers.map(({ res }) => res.status).filter((s) => s !== 200)).toEqual([]);
    for (const { a, res } of answers) {
      const p = snapPreset(a);
      expect(res.headers['x-chart-preset']).toBe(presetQuery(p));
      expect(res.body as string).toMatch(new RegExp(`^<svg [^>]*width="${p.width}" height="${p.height}"`));
    }
  });

  it('draws a value between presets at the nearest one, from the same render as the preset itself', async () => {
    const rendered = async () =>
      (await t.ctx.metrics.priceCharts.get()).values.filter((v) => v.labels.outcome === 'rendered').reduce((n, v) => n + v.value, 0);
    const before = await rendered();
    const snapped = await chart(t, auth, ASINS[1], 'days=75&width=1000&height=420');
    expect(snapped.status).toBe(200);
    expect(snapped.headers['x-chart-preset']).toBe('days=90&width=900&height=450');
    const exact = await chart(t, auth, ASINS[1], 'days=90&width=900&height=450');
    expect(exact.headers.etag).toBe(snapped.headers.etag);
    expect(await rendered()).toBeLessThanOrEqual(before + 1);
  });
});

describe('history.svg with a render queue of one', () => {
  let t: TestContext;
  let auth: Account;
  beforeAll(async () => {
    t = await createTestContext({ COUNTRIES: 'JP', CHART_RENDER_THREADS: '1', CHART_RENDER_QUEUE: '1', CHART_RENDER_WAIT: '120s' });
    auth = await seed(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 503 with Retry-After past one render and one waiting, and gives the refused renders back to the budget', async () => {
    const queries = [1, 7, 30, 90, 365].flatMap((days) => [300, 600].map((width) => `days=${days}&width=${width}`));
    const answers = await Promise.all(queries.map((q) => chart(t, auth, ASINS[0], q)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
    const refused = answers.filter((r) => r.status === 503);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const r of refused) {
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(r.body as string)).toEqual({ message: expect.stringMatching(/charts/) });
    }
    const spent = await t.ctx.redis.get(renderBudgetKey(t.ctx.redisPrefix, auth.id));
    expect(Number(spent)).toBe(statuses.filter((s) => s === 200).length);
    // The queue drains: asked again one at a time, each is drawn.
    for (const [i, r] of answers.entries()) if (r.status === 503) expect((await chart(t, auth, ASINS[0], queries[i]!)).status).toBe(200);
  });
});

describe('history.svg past the account’s render budget', () => {
  let t: TestContext;
  let auth: Account;
  beforeAll(async () => {
    t = await createTestContext({ COUNTRIES: 'JP', CHART_RENDERS_PER_MINUTE: '3' });
    auth = await seed(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 429 with Retry-After for a fourth render in a minute, while charts drawn before are still answered', async () => {
    for (const days of [1, 7, 30]) expect((await chart(t, auth, ASINS[0], `days=${days}`)).status).toBe(200);
    const over = await chart(t, auth, ASINS[0], 'days=90');
    expect(over.status).toBe(429);
    const wait = Number(over.headers['retry-after']);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(JSON.parse(over.body as string)).toEqual({ message: expect.stringMatching(/3 charts/) });
    // Cached: no render, no budget.
    expect((await chart(t, auth, ASINS[0], 'days=7')).status).toBe(200);
    // The budget is the account's own.
    const other = await account(t, 'other@example.com');
    expect((await chart(t, other, ASINS[0], 'days=90')).status).toBe(200);
    // and now that one is drawn, the first account gets it from the cache.
    expect((await chart(t, auth, ASINS[0], 'days=90')).status).toBe(200);
    expect((await chart(t, auth, ASINS[0], 'days=365')).status).toBe(429);
  });
});
