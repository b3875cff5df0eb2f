import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textBody } from '../helpers/text-body.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { productModel } from '../../src/models/product.js';
import { historyPointModel } from '../../src/models/history-point.js';
import type { HistoryPointRecord } from '../../src/catalog/history.js';

let t: TestContext;
let auth: Record<string, string>;
const DAY = 86_400_000;
const NOW = Math.floor(Date.now() / 1000) * 1000;
const ASIN = 'B0CSVJP001';
/** More than one page at the largest limit (100). */
const POINTS = 130;
/** Currencies written straight to the store, to see how odd text comes out. */
const ODD: Record<number, string> = {
  3: 'a,"b"\nc',
  4: '=HYPERLINK("http://x","y")',
  5: '+1',
  6: '-2',
  7: '@SUM(A1)',
  8: '\tTAB',
  9: '\rCR',
};

beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP,US', APP_TIMEZONE: 'Asia/Tokyo' });
  const { token } = await t.ctx.users.create({ name: 'Csv', email: 'csv@example.com' });
  auth = { Authorization: `Bearer ${token}` };
  const product = (country: 'JP' | 'US', asin: string, priority: 0 | null) => ({
    country,
    asin,
    title: 'Mouse, "wireless"\nblack',
    status: 'ok',
    priority,
    created_at: new Date(NOW - 60 * DAY),
    updated_at: new Date(NOW - DAY),
    next_refresh_at: new Date(NOW + DAY),
  });
  await productModel(t.ctx.mongo).insertMany([product('JP', ASIN, 0), product('JP', 'B0CSVEMPTY', 0), product('JP', 'B0UNWATCH2', null)]);
  // Inserted newest first, so only the sort on `at` puts them in order.
  const points = Array.from({ length: POINTS }, (_, i) => {
    const at = new Date(NOW - (POINTS - i) * 3_600_000);
    return {
      _id: `JP.${ASIN}.${at.getTime()}`,
      country: 'JP',
      asin: ASIN,
      at,
      price: i % 10 === 0 ? null : 1000 + i,
      currency: ODD[i] ?? (i % 10 === 0 ? null : 'JPY'),
      availability: i % 10 === 0 ? 'out_of_stock' : 'in_stock',
      buybox: i % 2 === 0,
      rank: i % 7 === 0 ? null : i,
      expires_at: new Date(at.getTime() + 365 * DAY),
    };
  }).reverse();
  await historyPointModel(t.ctx.mongo).insertMany(points);
});
afterAll(async () => {
  await t?.close();
});

const csvOf = (path: string, headers: Record<string, string> = auth) => t.http.get(path).set(headers).buffer(true).parse(textBody);

/** RFC 4180 read back: records of fields. */
function parseCsv(body: string): string[][] {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let i = 0;
  while (i < body.length) {
    if (body[i] === '"') {
      let j = i + 1;
      for (;;) {
        if (body[j] === '"' && body[j + 1] === '"') {
          field += '"';
          j += 2;
        } else if (body[j] === '"') break;
        else field += body[j++];
      }
      i = j + 1;
    } else if (body[i] === ',') {
      record.push(field);
      field = '';
      i++;
    } else if (body.startsWith('\r\n', i)) {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i += 2;
    } else field += body[i++];
  }
  expect(field + record.join(''), 'the file ends with CRLF').toBe('');
  return records;
}

/** A JSON point's fields as the CSV writes them. */
function asCsv(p: HistoryPointRecord): string[] {
  return [p.at, p.price, p.currency, p.availability, p.buybox, p.rank].map((v) =>
    v === null ? '' : typeof v === 'string' && /^[=+\-@\t\r]/.test(v) ? `'${v}` : String(v),
  );
}

async function allJsonPoints(): Promise<HistoryPointRecord[]> {
  const out: HistoryPointRecord[] = [];
  for (let page = 1; ; page++) {
    const res = await t.http.get(`/api/world/asin/${ASIN}/history?country=JP&limit=100&page=${page}`).set(auth);
    expect(res.status).toBe(200);
    out.push(...(res.body.data as HistoryPointRecord[]));
    if (page >= res.body.meta.last_page) return out;
  }
}

describe('GET /api/world/asin/{asin}/history.csv', () => {
  it('answers every point, oldest first, as the JSON route shows them, under a header of its fields', async () => {
    const res = await csvOf(`/api/world/asin/${ASIN}/history.csv?country=JP`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="${ASIN}-JP-history.csv"`);
    expect(res.headers['cache-control']).toBe('no-store');
    const json = await allJsonPoints();
    expect(json).toHaveLength(POINTS);
    const [header, ...rows] = parseCsv(res.body as string);
    expect(header).toEqual(['at', 'price', 'currency', 'availability', 'buybox', 'rank']);
    expect(rows).toEqual(json.map(asCsv));
    expect(rows.map((r) => r[0])).toEqual([...rows.map((r) => r[0])].sort());
  });

  it('quotes a field with a comma, a quote or a line break, and keeps formulas from running', async () => {
    const lines = ((await csvOf(`/api/world/asin/${ASIN}/history.csv?country=JP`)).body as string).split('\r\n');
    // Line 0 is the header: point i is on line i + 1.
    expect(lines[0]).toBe('at,price,currency,availability,buybox,rank');
    expect(lines[4]).toMatch(/^[\d-]+ [\d:]+,1003,"a,""b""\nc",in_stock,false,3$/);
    expect(lines[5]).toMatch(/,1004,"'=HYPERLINK\(""http:\/\/x"",""y""\)",in_stock,true,4$/);
    expect(lines[6]).toMatch(/,1005,'\+1,in_stock,false,5$/);
    expect(lines[7]).toMatch(/,1006,'-2,in_stock,true,6$/);
    expect(lines[8]).toMatch(/,1007,'@SUM\(A1\),in_stock,false,$/);
    expect(lines[9]).toMatch(/,1008,'\tTAB,in_stock,true,8$/);
    // A CR is both a formula start and a reason to quote; split on CRLF leaves the lone CR in place.
    expect(lines[10]).toMatch(/,1009,"'\rCR",in_stock,false,9$/);
    // Nulls are empty fields.
    expect(lines[1]).toMatch(/^[\d-]+ [\d:]+,,,out_of_stock,true,$/);
  });

  it('is what the JSON route answers to Accept: text/csv, byte for byte', async () => {
    const file = await csvOf(`/api/world/asin/${ASIN}/history.csv?country=JP`);
    const negotiated = await csvOf(`/api/world/asin/${ASIN}/history?country=JP&limit=5&page=2`, { ...auth, Accept: 'text/csv' });
    expect(negotiated.status).toBe(200);
    expect(negotiated.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(negotiated.headers.vary).toMatch(/Accept/);
    expect(negotiated.body).toBe(file.body);
    const preferred = await csvOf(`/api/world/asin/${ASIN}/history?country=JP`, { ...auth, Accept: 'text/csv, application/json;q=0.5' });
    expect(preferred.body).toBe(file.body);
  });

  it.each([['application/json'], ['*/*'], ['text/*;q=0.1, */*'], [undefined]])('stays JSON for Accept: %s', async (accept) => {
    const res = await t.http.get(`/api/world/asin/${ASIN}/history?country=JP&limit=3`).set(accept ? { ...auth, Accept: accept } : auth);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.data).toHaveLength(3);
  });

  it('takes page and limit without applying them, and since/until as the JSON route does', async () => {
    const whole = (await csvOf(`/api/world/asin/${ASIN}/history.csv?country=JP`)).body as string;
    const paged = await csvOf(`/api/world/asin/${ASIN}/history.csv?country=JP&page=7&limit=1000`);
    expect(paged.status).toBe(200);
    expect(paged.body).toBe(whole);
    const json = await allJsonPoints();
    const since = json[100]!.at;
    const until = json[119]!.at;
    const res = await csvOf(
      `/api/world/asin/${ASIN}/history.csv?country=JP&since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`,
    );
    const [, ...rows] = parseCsv(res.body as string);
    expect(rows).toEqual(json.slice(100, 120).map(asCsv));
  });

  it('answers a product without points with the header alone', async () => {
    const res = await csvOf('/api/world/asin/B0CSVEMPTY/history.csv?country=JP');
    expect(res.status).toBe(200);
    expect(res.body).toBe('at,price,currency,availability,buybox,rank\r\n');
  });

  it.each([
    [`/api/world/asin/B0UNWATCH2/history.csv?country=JP`, 404],
    [`/api/world/asin/B0NOBODY01/history?country=JP`, 404],
    [`/api/world/asin/${ASIN}/history.csv`, 422],
    [`/api/world/asin/${ASIN}/history.csv?country=JP,US`, 422],
    [`/api/world/asin/${ASIN}/history?country=DE`, 422],
    [`/api/world/asin/${ASIN}/history.csv?country=JP&since=yesterday`, 422],
    [`/api/world/asin/bad!/history.csv?country=JP`, 422],
  ])('answers %s with %i in JSON, the error shape', async (path, status) => {
    const res = await t.http.get(path).set({ ...auth, Accept: 'text/csv' });
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['content-disposition']).toBeUndefined();
    expect(res.body.message).toEqual(expect.any(String));
    if (status === 422) expect(Object.keys(res.body.errors).length).toBeGreaterThan(0);
  });

  it('needs the token', async () => {
    const res = await t.http.get(`/api/world/asin/${ASIN}/history.csv?country=JP`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: expect.any(String) });
  });

  it('reads the points by walking the (country, asin, at) index in order', async () => {
    const plan = (await t.ctx.world.historyQuery('JP', ASIN, {}).explain('executionStats')) as unknown as {
      queryPlanner: { winningPlan: unknown };
      executionStats: { nReturned: number; totalKeysExamined: number; totalDocsExamined: number };
    };
    const stages = JSON.stringify(plan.queryPlanner.winningPlan);
    expect(stages).toContain('"IXSCAN"');
    expect(stages).toContain('"indexName":"country_1_asin_1_at_1"');
    expect(stages).not.toContain('"SORT"');
    expect(stages).not.toContain('COLLSCAN');
    expect(plan.executionStats).toMatchObject({ nReturned: POINTS, totalKeysExamined: POINTS, totalDocsExamined: POINTS });
  });
});
