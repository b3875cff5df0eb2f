import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { historyPointModel } from '../../src/models/history-point.js';

/**
 * History through the real pipeline: forced updates against the simulator, whose clock the test
 * moves past the products' drift to make them change.
 */
const DRIFT_MS = 60_000;
let p: Pipeline;
let headers: Record<string, string>;
const clock = { now: Date.UTC(2026, 10, 24, 3, 0, 0) };
const ASIN = 'B0HISTORY1';

beforeAll(async () => {
  p = await startPipeline(
    {
      COUNTRIES: 'JP,US',
      APP_TIMEZONE: 'Asia/Tokyo',
      SIMULATOR_DRIFT_MS: String(DRIFT_MS),
      SIMULATOR_NOT_FOUND_RATE: '0',
      SIMULATOR_NOT_ACCESSIBLE_RATE: '0',
      RATE_LIMIT_UPDATE: '0',
      ACCOUNT_MAX_UPDATES_PER_DAY: '0',
    },
    { now: () => clock.now },
  );
  ({ headers } = await p.user('history@example.com'));
  expect((await p.http.post('/api/watch/asin').set(headers).send({ asin: ASIN })).status).toBe(201);
}, 60_000);

afterAll(() => p?.close());

interface Rec {
  price: { amount: number; currency: string } | null;
  availability: string;
  sales_rank: number | null;
}

async function refresh(): Promise<Rec> {
  const res = await p.http.get(`/api/world/update?asin=${ASIN}&country=JP`).set(headers);
  expect(res.status).toBe(200);
  return res.body.data[0];
}

const historyOf = (query = '') => p.http.get(`/api/world/asin/${ASIN}/history?country=JP${query}`).set(headers);

describe('GET /api/world/asin/{asin}/history', () => {
  it('has one point per change, the first observation included, and none for an unchanged refresh', async () => {
    const first = await refresh();
    let res = await historyOf();
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      {
        at: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
        price: first.price?.amount ?? null,
        currency: first.price?.currency ?? null,
        availability: first.availability,
        buybox: expect.any(Boolean),
        rank: first.sales_rank,
      },
    ]);
    // Nothing moved in the simulator: the same values, no point.
    await refresh();
    expect((await historyOf()).body.data).toHaveLength(1);

    let expected = 1;
    let last = first;
    for (let i = 0; i < 5; i++) {
      clock.now += 100 * DRIFT_MS;
      const now = await refresh();
      const moved =
        JSON.stringify([now.price, now.availability, now.sales_rank]) !== JSON.stringify([last.price, last.availability, last.sales_rank]);
      // Buy Box changes alone also make a point; the rank moves at nearly every change of the simulator.
      res = await historyOf();
      expected = moved ? expected + 1 : res.body.data.length;
      expect(res.body.data).toHaveLength(expected);
      expect(res.body.data.at(-1)).toMatchObject({
        price: now.price?.amount ?? null,
        availability: now.availability,
        rank: now.sales_rank,
      });
      last = now;
    }
    expect(expected).toBeGreaterThanOrEqual(4);
    // Oldest first.
    const ats = res.body.data.map((d: { at: string }) => d.at);
    expect([...ats].sort()).toEqual(ats);
  });

  it('pages with the paged envelope and keeps the filters in its links', async () => {
    const all = (await historyOf('&limit=100')).body.data;
    const res = await historyOf('&limit=2&page=2');
    expect(res.body.data).toEqual(all.slice(2, 4));
    expect(res.body.meta).toMatchObject({ current_page: 2, per_page: 2, total: all.length });
    expect(res.body.links.first).toMatch(/country=JP&limit=2&page=1$/);
  });

  it('filters by since and until, read in APP_TIMEZONE, each including its whole second', async () => {
    const all = ((await historyOf('&limit=100')).body.data as { at: string }[]).map((d) => d.at);
    const mid = all[2]!;
    const since = await historyOf(`&since=${encodeURIComponent(mid)}`);
    // Read as UTC, a Tokyo time would lie nine hours after every point, and nothing would match.
    expect(since.body.data.map((d: { at: string }) => d.at)).toEqual(all.filter((at) => at >= mid));
    const until = await historyOf(`&until=${encodeURIComponent(mid)}`);
    expect(until.body.data.map((d: { at: string }) => d.at)).toEqual(all.filter((at) => at <= mid));
    const both = await historyOf(`&since=${encodeURIComponent(mid)}&until=${encodeURIComponent(mid)}`);
    expect(both.body.data.map((d: { at: string }) => d.at)).toEqual(all.filter((at) => at === mid));
  });

  it('keeps each point HISTORY_DAYS (an expiry the TTL index removes it at)', async () => {
    const [point] = await historyPointModel(p.ctx.mongo).find({ asin: ASIN }).limit(1).lean();
    expect(point!.expires_at.getTime() - point!.at.getTime()).toBe(365 * 86_400_000);
    const indexes = await historyPointModel(p.ctx.mongo).collection.indexes();
    expect(indexes.find((i) => i.key.expires_at === 1)?.expireAfterSeconds).toBe(0);
  });

  it.each([
    ['', 'country', /required/],
    ['?country=JP,US', 'country', /exactly one/],
    ['?country=DE', 'country', /exactly one/],
    ['?country=JP&since=2026-11-24', 'since', /YYYY-MM-DD HH:MM:SS/],
    ['?country=JP&until=2026-02-30%2010:00:00', 'until', /YYYY-MM-DD HH:MM:SS/],
    ['?country=JP&limit=101', 'limit', /100/],
  ])('refuses %s with 422 on %s', async (query, field, message) => {
    const res = await p.http.get(`/api/world/asin/${ASIN}/history${query}`).set(headers);
    expect(res.status).toBe(422);
    expect(res.body.errors[field].join(' ')).toMatch(message);
  });

  it('answers 404 for an ASIN nobody watches, and 401 without a token', async () => {
    const res = await p.http.get('/api/world/asin/B0NOBODY01/history?country=JP').set(headers);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ message: expect.any(String) });
    expect((await p.http.get(`/api/world/asin/${ASIN}/history?country=JP`)).status).toBe(401);
  });
});
