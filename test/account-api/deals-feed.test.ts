import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { productModel } from '../../src/models/product.js';
import { watchModel } from '../../src/models/watch.js';

let t: TestContext;
let auth: Record<string, string>;
let apiToken: string;
const now = new Date('2026-11-27T03:00:00Z');

beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP,US', APP_TIMEZONE: 'Asia/Tokyo', APP_URL: 'https://shelf.example.com' });
  const { user, token } = await t.ctx.users.create({ name: 'Feed <Reader>', email: 'feed@example.com' });
  const other = await t.ctx.users.create({ name: 'Other', email: 'other@example.com' });
  apiToken = token;
  auth = { Authorization: `Bearer ${token}` };
  const product = (asin: string, country: 'JP' | 'US', drop: Record<string, number>) => ({
    country,
    asin,
    title: `Kettle & "Mug" <b>]]> ${asin}`,
    url: `https://www.amazon.co.jp/dp/${asin}`,
    price: { amount: 800, currency: country === 'JP' ? 'JPY' : 'USD' },
    availability: 'in_stock',
    status: 'ok',
    priority: 0,
    price_days: [],
    price_levels: { avg_30: 1000 },
    drop,
    created_at: now,
    updated_at: now,
  });
  await productModel(t.ctx.mongo).insertMany([
    product('B0FEED0001', 'JP', { avg_30: 20 }),
    product('B0FEED0001', 'US', { avg_30: 5 }),
    product('B0FEED0002', 'JP', {}),
    // A deal, but watched by someone else only.
    product('B0FEED0003', 'JP', { avg_30: 40 }),
  ]);
  const watch = (userId: typeof user._id, key: string) => ({ user_id: userId, kind: 'asin', key, priority: 0, source: 'api' });
  await watchModel(t.ctx.mongo).insertMany([
    watch(user._id, 'B0FEED0001'),
    watch(user._id, 'B0FEED0002'),
    watch(other.user._id, 'B0FEED0003'),
  ]);
});
afterAll(async () => {
  await t?.close();
});

async function feedUrl(): Promise<string> {
  const me = await t.http.get('/api/me').set(auth);
  expect(me.status).toBe(200);
  return me.body.data.deals_feed_url as string;
}

const pathOf = (url: string) => url.replace('https://shelf.example.com', '');

describe('the deals feed', () => {
  it('GET /api/me names a secret feed URL under APP_URL that is not the API token', async () => {
    const url = await feedUrl();
    expect(url).toMatch(/^https:\/\/shelf\.example\.com\/api\/feeds\/deals\.atom\?feed_token=[\w-]{43}$/);
    expect(url).not.toContain(apiToken);
    expect(await feedUrl()).toBe(url);
  });

  it('is valid Atom with the account’s own deals, largest drop first', async () => {
    const res = await t.http.get(pathOf(await feedUrl()));
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/atom+xml; charset=utf-8');
    const xml = res.text;
    expect(XMLValidator.validate(xml)).toBe(true);
    const doc = new XMLParser({ ignoreAttributes: false }).parse(xml);
    const feed = doc.feed;
    expect(feed['@_xmlns']).toBe('http://www.w3.org/2005/Atom');
    for (const required of ['id', 'title', 'updated']) expect(feed[required]).toBeTruthy();
    expect(feed.author.name).toBe('shelfwatch');
    const entries = [feed.entry].flat();
    expect(entries).toHaveLength(2);
    for (const e of entries) for (const required of ['id', 'title', 'updated', 'link']) expect(e[required]).toBeTruthy();
    expect(entries.map((e) => String(e.title['#text'] ?? e.title))).toEqual([
      expect.stringContaining('(JP): 800 JPY, 20% under its 30-day average'),
      expect.stringContaining('(US): 800 USD, 5% under its 30-day average'),
    ]);
    expect(xml).not.toContain('B0FEED0003');
    // Titles are text: escaped for the entries' type="html", so no markup of the upstream's reaches a reader.
    expect(String(entries[0].title['#text'] ?? entries[0].title)).toContain('Kettle &#38; &#34;Mug&#34; &#60;b&#62;]]&#62; B0FEED0001');
    expect(xml).toContain('Feed &lt;Reader&gt;');
  });

  it('a wrong or missing token is a 404 in the error shape; a rotated one stops at once', async () => {
    const old = pathOf(await feedUrl());
    const wrong = await t.http.get('/api/feeds/deals.atom?feed_token=' + 'x'.repeat(43));
    expect(wrong.status).toBe(404);
    expect(wrong.body).toEqual({ message: 'No such feed.' });
    expect((await t.http.get('/api/feeds/deals.atom')).status).toBe(404);
    expect((await t.http.get(`/api/feeds/deals.atom?feed_token=${apiToken}`)).status).toBe(404);

    const rotated = await t.http.post('/api/me/feed-token').set(auth);
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.api_token).toBe(apiToken);
    const fresh = pathOf(rotated.body.data.deals_feed_url);
    expect(fresh).not.toBe(old);
    expect((await t.http.get(old)).status).toBe(404);
    expect((await t.http.get(fresh)).status).toBe(200);
    expect(pathOf(await feedUrl())).toBe(fresh);
  });

  it('never logs the feed token', async () => {
    const url = pathOf(await feedUrl());
    const token = new URL(url, 'https://x').searchParams.get('feed_token')!;
    await t.http.get(url);
    await t.http.get(`${url}&basis=nope`);
    expect(t.logs.text).toContain('feed_token=[REDACTED]');
    expect(t.logs.text).not.toContain(token);
  });
});
