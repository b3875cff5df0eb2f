import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';

/**
 * A request cannot make the server answer much more than it asked for, nor ask for much work:
 * - page links carry only the parameters the route reads (never junk, never the token), so a 15 kB
 *   query string gives a small answer;
 * - a search has at most 10 words (`q`, `search`), and `page` at most 10,000: past either, 422
 *   naming the field.
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

describe('page ceiling', () => {
  it.each(['/api/user', '/api/post', '/api/world', '/api/world/new', '/api/watch'])(
    '%s serves page 10000 and answers 422 on page 10001',
    async (path) => {
      const deepest = await t.http.get(`${path}?page=10000`).set(auth);
      expect(deepest.status).toBe(200);
      expect(deepest.body.data).toEqual([]);
      expect(deepest.body.meta.current_page).toBe(10_000);
      for (const page of ['10001', '999999999']) {
        const res = await t.http.get(`${path}?page=${page}`).set(auth);
        expect(res.status).toBe(422);
        expect(res.body.errors).toEqual({ page: ['The page field must not be greater than 10000.'] });
      }
    },
  );
});
