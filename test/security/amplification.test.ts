import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { postModel } from '../../src/models/post.js';

/**
 * A request cannot make the server answer much more than it asked for, nor ask for much work:
 * - page links carry only the parameters the route reads (never junk, never the token), so a 15 kB
 *   query string gives a small answer;
 * - a search has at most 10 words (`q`, `search`): past it, 422 naming the field;
 * - a page past the end of its list is an empty page (Laravel's paginator), read without a query
 *   for data; a page inside a list deeper than 10,000 is a 422 on `page`.
 */
let t: TestContext;
let auth: { Authorization: string };
let token: string;
beforeAll(async () => {
  t = await createTestContext({ DIRECTORY_RATE_LIMIT: '0', RATE_LIMIT_API: '0' });
  ({ token } = await t.ctx.users.create({ name: 'Amplifier', email: 'amp@example.com', title: 'Engineer' }));
  auth = { Authorization: `Bearer ${token}` };
  await t.http.post('/api/watch/asin').set(auth).send({ asin: 'B0AMPLIFY1' }).expect(201);
});
afterAll(async () => {
  await t?.close();
});

/** About 15 kB of parameters no route reads. */
const junk = Array.from({ length: 150 }, (_, i) => `junk${i}=${'x'.repeat(90)}`).join('&');

/** Every URL an envelope's links hold. */
function linkUrls(body: { links: Record<string, string | null>; meta: { links: { url: string | null }[] } }): string[] {
  return [...Object.values(body.links), ...body.meta.links.map((l) => l.url)].filter((u): u is string => u !== null);
}

describe('page links keep only the parameters the route knows', () => {
  it.each([
    ['/api/user', 'q=engineer&limit=1', ['q', 'limit', 'page'], false],
    ['/api/post', 'q=engineer&limit=1', ['q', 'limit', 'page'], false],
    ['/api/world', 'country=JP&search=phone&limit=1', ['country', 'search', 'limit', 'page'], true],
    ['/api/world/new', 'country=JP&since=2020-01-01&limit=1', ['country', 'since', 'limit', 'page'], true],
    ['/api/watch', 'type=asin&limit=1', ['type', 'limit', 'page'], true],
  ])('%s with a 15 kB query answers small, with only its own parameters in links', async (path, own, known, withToken) => {
    const url = `${path}?${own}&${junk}${withToken ? `&api_token=${token}` : ''}`;
    expect(url.length).toBeGreaterThan(14_000);
    const res = await t.http.get(url);
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    expect(res.text.length).toBeLessThan(4_000);
    const urls = linkUrls(res.body);
    expect(urls.length).toBeGreaterThan(2);
    for (const link of urls) {
      const params = [...new URL(link).searchParams.keys()];
      expect(
        params.every((p) => known.includes(p)),
        link,
      ).toBe(true);
      expect(params.at(-1)).toBe('page');
      expect(link).not.toContain(token);
    }
  });
});

describe('search words', () => {
  const ten = 'one two three four five six seven eight nine ten';
  it.each([
    ['/api/user', 'q'],
    ['/api/post', 'q'],
    ['/api/world', 'search'],
  ])('%s: %s takes 10 words, 11 answer 422 naming the field', async (path, field) => {
    const ok = await t.http.get(`${path}?${field}=${encodeURIComponent(ten)}`).set(auth);
    expect(ok.status).toBe(200);
    const over = await t.http.get(`${path}?${field}=${encodeURIComponent(`${ten} eleven`)}`).set(auth);
    expect(over.status).toBe(422);
    expect(Object.keys(over.body.errors)).toEqual([field]);
    expect(over.body.errors[field][0]).toBe(`The ${field} field must not have more than 10 words.`);
    // Punctuation separates words as the search does: 11 words without a single space.
    const packed = await t.http.get(`${path}?${field}=${encodeURIComponent('a.b.c.d.e.f.g.h.i.j.k')}`).set(auth);
    expect(packed.status).toBe(422);
  });
});

describe('pages past the end and deep pages', () => {
  it.each(['/api/user', '/api/post', '/api/world', '/api/world/new', '/api/watch', '/api/alerts', '/api/deliveries'])(
    '%s answers a page past the end with the empty envelope, at any depth',
    async (path) => {
      for (const page of [10_000, 10_001, 999_999_999, 2_147_483_647]) {
        const res = await t.http.get(`${path}?page=${page}`).set(auth);
        expect(res.status, res.text.slice(0, 200)).toBe(200);
        expect(res.body.data).toEqual([]);
        expect(res.body.meta).toMatchObject({ current_page: page, from: null, to: null });
        expect(res.body.links.next).toBeNull();
        expect(res.body.links.prev).toMatch(new RegExp(`page=${page - 1}$`));
      }
      const over = await t.http.get(`${path}?page=2147483648`).set(auth);
      expect(over.status).toBe(422);
      expect(over.body.errors).toEqual({ page: ['The page field must not be greater than 2147483647.'] });
    },
  );

  it('serves page 10,000 inside a list and answers 422 on a page deeper inside it (the skip it would walk)', async () => {
    const owner = new Types.ObjectId();
    const at = new Date('2020-01-01T00:00:00Z');
    await postModel(t.ctx.mongo).insertMany(
      Array.from({ length: 10_002 }, (_, i) => ({ user_id: owner, title: `Deep ${i}`, message_md: 'm', created_at: at, updated_at: at })),
      { lean: true },
    );
    const deepest = await t.http.get('/api/post?limit=1&page=10000').expect(200);
    expect(deepest.body.data).toHaveLength(1);
    const deeper = await t.http.get('/api/post?limit=1&page=10001');
    expect(deeper.status).toBe(422);
    expect(deeper.body.errors).toEqual({ page: ['The page field must not be greater than 10000.'] });
    const past = await t.http.get('/api/post?limit=1&page=20000').expect(200);
    expect(past.body.data).toEqual([]);
    expect(past.body.meta.total).toBeGreaterThanOrEqual(10_002);
  });
});
