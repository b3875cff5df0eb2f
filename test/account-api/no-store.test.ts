import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';

/**
 * Account API answers are one account's data (or say something about a token): no cache, shared or
 * private, may keep them. Every answer under /api/me, /api/watch and /api/world carries
 * `Cache-Control: no-store`, errors included (401, 404, 422, 429).
 */
let t: TestContext;
let token: string;
beforeAll(async () => {
  t = await createTestContext({ RATE_LIMIT_API: '2', UPDATE_WAIT: '100ms' });
  ({ token } = await t.ctx.users.create({ name: 'Private', email: 'private@example.com' }));
});
afterAll(async () => {
  await t?.close();
});

const expectNoStore = (res: { status: number; headers: Record<string, string> }, what: string): void => {
  expect(res.headers['cache-control'], `${what} → ${res.status}`).toBe('no-store');
};

describe('Cache-Control: no-store on the account API', () => {
  it('on answers that authenticated, and on every refusal', async () => {
    const cases: [string, () => PromiseLike<{ status: number; headers: Record<string, string> }>, number][] = [
      ['GET /api/me without a token', () => t.http.get('/api/me'), 401],
      ['GET /api/watch with an unknown token', () => t.http.get('/api/watch').set('Authorization', `Bearer ${'z'.repeat(60)}`), 401],
      ['GET /api/world without a token', () => t.http.get('/api/world'), 401],
      ['POST /api/watch/asin without a token', () => t.http.post('/api/watch/asin').send({ asin: 'B0NOSTORE1' }), 401],
      ['GET /api/world/update without a token', () => t.http.get('/api/world/update?asin=B0NOSTORE1'), 401],
      ['GET /api/watch', () => t.http.get(`/api/watch?api_token=${token}`), 200],
      ['GET /api/world?page=0', () => t.http.get(`/api/world?page=0&api_token=${token}`), 422],
      ['GET /api/world (over the limit)', () => t.http.get(`/api/world?api_token=${token}`), 429],
    ];
    for (const [what, send, status] of cases) {
      const res = await send();
      expect(res.status, what).toBe(status);
      expectNoStore(res, what);
    }
  });

  it('on every route once authenticated', async () => {
    const { token: other } = await t.ctx.users.create({ name: 'Private Two', email: 'private2@example.com' });
    const auth = { Authorization: `Bearer ${other}` };
    const sends: [string, () => PromiseLike<{ status: number; headers: Record<string, string> }>][] = [
      ['POST /api/watch/asin', () => t.http.post('/api/watch/asin').set(auth).send({ asin: 'B0NOSTORE2' })],
      ['GET /api/world/asin/{asin}', () => t.http.get('/api/world/asin/B0NOSTORE9').set(auth)],
    ];
    for (const [what, send] of sends) {
      const res = await send();
      expect(res.status, what).toBeLessThan(500);
      expectNoStore(res, what);
    }
  });

  it('but not elsewhere', async () => {
    const res = await t.http.get('/version');
    expect(res.headers['cache-control']).not.toBe('no-store');
  });
});
