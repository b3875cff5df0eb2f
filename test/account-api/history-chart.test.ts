import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { textBody } from '../helpers/text-body.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { productModel } from '../../src/models/product.js';
import { historyPointModel } from '../../src/models/history-point.js';
import type { Availability } from '../../src/core/product.js';
import { formatPrice } from '../../src/catalog/price-chart.js';

let t: TestContext;
/** Charts this app rendered (not answered from its cache), from its metrics. */
const renders = async (): Promise<number> =>
  (await t.ctx.metrics.priceCharts.get()).values.filter((v) => v.labels.outcome === 'rendered').reduce((n, v) => n + v.value, 0);
let auth: Record<string, string>;
const DAY = 86_400_000;
const NOW = Date.now();
const EVIL_TITLE = '<script>alert("x")</script> Mouse & "Keys" <img src=x onerror=alert(1)>';

async function seedPoints(
  country: 'JP' | 'US',
  asin: string,
  points: [daysAgo: number, price: number | null, availability: Availability][],
) {
  const currency = country === 'JP' ? 'JPY' : 'USD';
  await historyPointModel(t.ctx.mongo).insertMany(
    points.map(([daysAgo, price, availability]) => {
      const at = new Date(Math.floor((NOW - daysAgo * DAY) / 1000) * 1000);
      return {
        _id: `${country}.${asin}.${at.getTime()}`,
        country,
        asin,
        at,
        price,
        currency: price === null ? null : currency,
        availability,
        buybox: price !== null,
        rank: 100,
        expires_at: new Date(at.getTime() + 365 * DAY),
      };
    }),
  );
}

beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP,US', APP_TIMEZONE: 'Asia/Tokyo' });
  const { token } = await t.ctx.users.create({ name: 'Charts', email: 'charts@example.com' });
  auth = { Authorization: `Bearer ${token}` };
  const product = (country: 'JP' | 'US', asin: string, priority: 0 | null, title: string | null) => ({
    country,
    asin,
    title,
    status: 'ok',
    priority,
    created_at: new Date(NOW - 60 * DAY),
    updated_at: new Date(NOW - DAY),
    next_refresh_at: new Date(NOW + DAY),
  });
  await productModel(t.ctx.mongo).insertMany([
    product('JP', 'B0CHARTJP1', 0, EVIL_TITLE),
    product('US', 'B0CHARTUS1', 0, 'Desk lamp'),
    product('JP', 'B0CHARTEM1', 0, 'Nothing yet'),
    product('JP', 'B0UNWATCH1', null, 'Nobody watches me'),
  ]);
  // JP: 2000 carried into the window, 1800, out of stock, 2480, 1980.
  await seedPoints('JP', 'B0CHARTJP1', [
    [40, 2000, 'in_stock'],
    [20, 1800, 'in_stock'],
    [15, null, 'out_of_stock'],
    [10, 2480, 'in_stock'],
    [5, 1980, 'in_stock'],
  ]);
  // US: always in stock, prices in cents.
  await seedPoints('US', 'B0CHARTUS1', [
    [25, 1999, 'in_stock'],
    [12, 2499, 'in_stock'],
    [3, 1499, 'in_stock'],
  ]);
  await seedPoints('JP', 'B0UNWATCH1', [[3, 1000, 'in_stock']]);
});
afterAll(async () => {
  await t?.close();
});

const getChart = (asin: string, query: string, headers = auth) =>
  t.http.get(`/api/world/asin/${asin}/history.svg${query}`).set(headers).buffer(true).parse(textBody);

type Node = Record<string, unknown>;
const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  parseTagValue: false,
  isArray: (name) => ['g', 'path', 'text', 'line'].includes(name),
});

/** Every element (as parsed) under `node` whose attribute `attr` matches. */
function find(node: unknown, attr: string, test: (v: string) => boolean, out: Node[] = []): Node[] {
  if (Array.isArray(node)) node.forEach((n) => find(n, attr, test, out));
  else if (node && typeof node === 'object') {
    const v = (node as Node)[`@_${attr}`];
    if (typeof v === 'string' && test(v)) out.push(node as Node);
    for (const [k, child] of Object.entries(node)) if (!k.startsWith('@_')) find(child, attr, test, out);
  }
  return out;
}
const byClass = (node: unknown, cls: string) => find(node, 'class', (v) => v.split(' ').includes(cls));
function texts(node: unknown): string[] {
  const out: string[] = [];
  const walk = (n: unknown): void => {
    if (Array.isArray(n)) n.forEach(walk);
    else if (n && typeof n === 'object') {
      for (const [k, child] of Object.entries(n)) {
        if (k === 'text') for (const el of child as Node[]) out.push(String(el['#text'] ?? ''));
        else if (!k.startsWith('@_')) walk(child);
      }
    }
  };
  walk(node);
  return out;
}
const paths = (nodes: Node[]) => nodes.flatMap((g) => (g.path as Node[] | undefined) ?? []).map((p) => String(p['@_d']));

/** The vertices of a path `M x,y L x,y …`. */
function vertices(d: string): [number, number][] {
  return [...d.matchAll(/[ML](-?[\d.]+),(-?[\d.]+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
}
/** Price changes along a step line: vertical moves. */
function verticalMoves(d: string): number {
  const v = vertices(d);
  let n = 0;
  for (let i = 1; i < v.length; i++) if (v[i]![0] === v[i - 1]![0] && v[i]![1] !== v[i - 1]![1]) n++;
  return n;
}

function read(svg: string) {
  expect(XMLValidator.validate(svg)).toBe(true);
  const doc = parser.parse(svg) as Node;
  const axes = find(doc, 'aria-roledescription', (v) => v === 'axis');
  const xAxis = axes.find((a) => a['@_aria-label'] === 'Time (Asia/Tokyo)');
  const yAxis = axes.find((a) => a !== xAxis);
  return {
    doc,
    axes,
    xLabels: xAxis ? texts(byClass(xAxis, 'role-axis-label')) : [],
    yLabels: yAxis ? texts(byClass(yAxis, 'role-axis-label')) : [],
    lines: paths(byClass(doc, 'price_marks')),
    shades: paths(byClass(doc, 'stockout_marks')),
    low: texts(byClass(doc, 'low_label_marks')),
    high: texts(byClass(doc, 'high_label_marks')),
  };
}

describe('GET /api/world/asin/{asin}/history.svg', () => {
  it('draws the JP history: yen axis, step line, stock-out shading, lowest and highest price', async () => {
    const res = await getChart('B0CHARTJP1', '?country=JP');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('image/svg+xml; charset=utf-8');
    expect(res.headers['cache-control']).toBe('private, max-age=60');
    expect(res.headers.etag).toMatch(/^"[\w-]+"$/);
    // Behind the account API's rate limiter.
    expect(res.headers['x-ratelimit-limit']).toBeDefined();
    const svg = res.body as string;
    expect(svg).toMatch(/^<svg [^>]*width="600" height="300"/);
    const c = read(svg);
    expect(c.axes).toHaveLength(2);
    expect(c.xLabels.length).toBeGreaterThanOrEqual(3);
    // Japanese dates on the zone's wall clock (4月1日, …).
    for (const l of c.xLabels) expect(l).toMatch(/^\d{1,2}月\d{1,2}日$/);
    expect(c.yLabels.length).toBeGreaterThanOrEqual(3);
    for (const l of c.yLabels) expect(l).toMatch(/^￥[\d,]+$/);
    // Two stretches with a price, split by the stock-out: 2000 → 1800, then 2480 → 1980.
    expect(c.lines).toHaveLength(2);
    expect(c.lines.map(verticalMoves)).toEqual([1, 1]);
    expect(c.shades).toHaveLength(1);
    expect(c.low).toEqual([formatPrice(1800, 'JPY', 'ja-JP')]);
    expect(c.low).toEqual(['￥1,800']);
    expect(c.high).toEqual(['￥2,480']);
  });

  it('draws the US history in dollars and cents, without shading when always in stock', async () => {
    const res = await getChart('B0CHARTUS1', '?country=US&days=60&width=900&height=400');
    expect(res.status).toBe(200);
    const svg = res.body as string;
    expect(svg).toMatch(/^<svg [^>]*width="900" height="450"/);
    const c = read(svg);
    for (const l of c.yLabels) expect(l).toMatch(/^\$\d[\d,]*\.\d\d$/);
    for (const l of c.xLabels) expect(l).toMatch(/^[A-Z][a-z]{2} \d{1,2}$/);
    // One stretch, three prices: two changes.
    expect(c.lines).toHaveLength(1);
    expect(verticalMoves(c.lines[0]!)).toBe(2);
    expect(c.shades).toHaveLength(0);
    expect(c.low).toEqual(['$14.99']);
    expect(c.high).toEqual(['$24.99']);
  });

  it('draws only the days asked for', async () => {
    // The last 7 days: 2480 until 5 days ago, then 1980.
    const c = read((await getChart('B0CHARTJP1', '?country=JP&days=7')).body as string);
    expect(c.shades).toHaveLength(0);
    expect(c.lines).toHaveLength(1);
    expect(c.low).toEqual(['￥1,980']);
    expect(c.high).toEqual(['￥2,480']);
  });

  it('escapes the product title and refers to nothing outside the image', async () => {
    const svg = (await getChart('B0CHARTJP1', '?country=JP')).body as string;
    expect(svg).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    // Every element and attribute of the document: none that runs, loads or links anything.
    const elements = new Set<string>();
    const attributes = new Set<string>();
    const walk = (n: unknown): void => {
      if (Array.isArray(n)) n.forEach(walk);
      else if (n && typeof n === 'object') {
        for (const [k, child] of Object.entries(n)) {
          if (k.startsWith('@_')) attributes.add(k.slice(2));
          else {
            elements.add(k);
            walk(child);
          }
        }
      }
    };
    walk(parser.parse(svg));
    expect([...elements].filter((e) => e !== '#text').sort()).toEqual(['g', 'line', 'path', 'rect', 'svg', 'text']);
    expect([...attributes].filter((a) => /^on|href|src|style/i.test(a))).toEqual([]);
    expect(svg).not.toMatch(/url\(|@import/i);
  });

  it('draws a chart saying so for a product without points yet', async () => {
    const res = await getChart('B0CHARTEM1', '?country=JP');
    expect(res.status).toBe(200);
    const c = read(res.body as string);
    expect(texts(byClass(c.doc, 'empty_marks'))).toEqual(['No price history yet']);
    expect(c.lines).toHaveLength(0);
    expect(c.yLabels).toHaveLength(0);
  });

  it.each([
    ['', 'country', /required/],
    ['?country=DE', 'country', /exactly one/],
    ['?country=JP,US', 'country', /exactly one/],
    ['?country=JP&days=0', 'days', /at least 1/],
    ['?country=JP&days=366', 'days', /365/],
    ['?country=JP&days=ten', 'days', /integer/],
    ['?country=JP&width=100', 'width', /300/],
    ['?country=JP&height=9000', 'height', /800/],
  ])('refuses %s with 422 on %s', async (query, field, message) => {
    const res = await t.http.get(`/api/world/asin/B0CHARTJP1/history.svg${query}`).set(auth);
    expect(res.status).toBe(422);
    expect(res.body.message).toEqual(expect.any(String));
    expect(res.body.errors[field].join(' ')).toMatch(message);
  });

  it('answers 404 for an ASIN nobody watches, 422 for a malformed one, 401 without a token', async () => {
    for (const asin of ['B0NOBODY01', 'B0UNWATCH1']) {
      const res = await t.http.get(`/api/world/asin/${asin}/history.svg?country=JP`).set(auth);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: expect.any(String) });
    }
    // Watched in JP only.
    expect((await t.http.get('/api/world/asin/B0CHARTJP1/history.svg?country=US').set(auth)).status).toBe(404);
    expect((await t.http.get('/api/world/asin/bad/history.svg?country=JP').set(auth)).status).toBe(422);
    const anonymous = await t.http.get('/api/world/asin/B0CHARTJP1/history.svg?country=JP');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ message: 'Unauthenticated.' });
    const wrong = await t.http.get('/api/world/asin/B0CHARTJP1/history.svg?country=JP').set({ Authorization: 'Bearer nope' });
    expect(wrong.status).toBe(401);
  });

  it('renders a chart once, answers 304 to its ETag, and draws a new one for a new point', async () => {
    // Snapped to days=90, width=1200: a preset no test above drew.
    const query = '?country=JP&days=80&width=1100';
    const before = await renders();
    const first = await getChart('B0CHARTJP1', query);
    expect(await renders()).toBe(before + 1);
    const second = await getChart('B0CHARTJP1', query);
    expect(await renders()).toBe(before + 1);
    expect(second.body).toBe(first.body);
    expect(second.headers.etag).toBe(first.headers.etag);
    const notModified = await t.http
      .get(`/api/world/asin/B0CHARTJP1/history.svg${query}`)
      .set({ ...auth, 'If-None-Match': first.headers.etag! });
    expect(notModified.status).toBe(304);
    expect(await renders()).toBe(before + 1);

    await seedPoints('JP', 'B0CHARTJP1', [[0.01, 1500, 'in_stock']]);
    const third = await getChart('B0CHARTJP1', query);
    expect(await renders()).toBe(before + 2);
    expect(third.headers.etag).not.toBe(first.headers.etag);
    expect(read(third.body as string).low).toEqual(['￥1,500']);
  });
});
