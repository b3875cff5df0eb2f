import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';

/**
 * Credentials cannot be tried at will: failed authentications (account API tokens, Bull Board's Basic
 * password) are counted per client address in Redis, and past RATE_LIMIT_AUTH_FAILURES a minute
 * that address gets 429 with Retry-After on every authenticated route, before any credential is
 * looked at, even a good one (else a 200 among the 429s would tell a guess was right). Requests
 * that authenticate are not counted. /readyz has a per-address limit of its own (RATE_LIMIT_READYZ).
 * TRUST_PROXY=1 lets the test speak from several addresses through X-Forwarded-For.
 */
let t: TestContext;
let token: string;
const basic = (u: string, p: string): string => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
const from = (ip: string) => ({ 'X-Forwarded-For': ip });
beforeAll(async () => {
  t = await createTestContext({
    TRUST_PROXY: '1',
    RATE_LIMIT_AUTH_FAILURES: '3',
    RATE_LIMIT_READYZ: '5',
    RATE_LIMIT_API: '0',
    BULL_BOARD_USER: 'ops',
    BULL_BOARD_PASSWORD: 'correct horse battery',
  });
  ({ token } = await t.ctx.users.create({ name: 'Guarded', email: 'guarded@example.com' }));
});
afterAll(async () => {
  await t?.close();
});

describe('the account API token guesses', () => {
  it('answer 429 with Retry-After past the limit, for every token from that address, and only there', async () => {
    const bad = { Authorization: `Bearer ${'x'.repeat(60)}` };
    for (let i = 0; i < 3; i++) {
      const res = await t.http.get('/api/me').set({ ...bad, ...from('203.0.113.7') });
      expect(res.status).toBe(401);
    }
    for (const headers of [bad, { Authorization: `Bearer ${token}` }, {}]) {
      const res = await t.http.get('/api/watch').set({ ...headers, ...from('203.0.113.7') });
      expect(res.status).toBe(429);
      expect(res.body).toEqual({ message: 'Too Many Attempts.' });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
    }
    // The token in the query is not even read: a good one is refused the same way.
    expect((await t.http.get(`/api/me?api_token=${token}`).set(from('203.0.113.7'))).status).toBe(429);
    // Another address is not affected.
    expect((await t.http.get('/api/me').set({ Authorization: `Bearer ${token}`, ...from('198.51.100.9') })).status).toBe(200);
  });

  it('does not count requests that authenticate, however many', async () => {
    for (let i = 0; i < 12; i++) {
      const res = await t.http.get('/api/watch').set({ Authorization: `Bearer ${token}`, ...from('198.51.100.20') });
      expect(res.status).toBe(200);
    }
    // Refusals after authentication (422, 404) are not failed authentications either.
    for (let i = 0; i < 6; i++) {
      expect((await t.http.get('/api/watch?limit=0').set({ Authorization: `Bearer ${token}`, ...from('198.51.100.20') })).status).toBe(422);
    }
    for (let i = 0; i < 2; i++) expect((await t.http.get('/api/me').set(from('198.51.100.20'))).status).toBe(401);
    expect((await t.http.get('/api/me').set({ Authorization: `Bearer ${token}`, ...from('198.51.100.20') })).status).toBe(200);
  });

  it('lets many good requests of one address run at once (only failures count, not attempts in flight)', async () => {
    const all = await Promise.all(
      Array.from({ length: 20 }, () => t.http.get('/api/watch').set({ Authorization: `Bearer ${token}`, ...from('198.51.100.30') })),
    );
    expect(all.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 200));
  });
});

describe('Bull Board passwords', () => {
  it('answer 429 past the limit, then even the right password', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await t.http.get('/admin/queues').set({ Authorization: basic('ops', `guess ${i} guess guess`), ...from('192.0.2.50') });
      expect(res.status).toBe(401);
    }
    const over = await t.http.get('/admin/queues').set({ Authorization: basic('ops', 'guess 4 guess guess'), ...from('192.0.2.50') });
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ message: 'Too Many Attempts.' });
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    const right = await t.http
      .get('/admin/queues/api/queues')
      .set({ Authorization: basic('ops', 'correct horse battery'), ...from('192.0.2.50') });
    expect(right.status).toBe(429);
    // From elsewhere the right password works, and its own page loads do not count as failures.
    for (let i = 0; i < 5; i++) {
      const ok = await t.http
        .get('/admin/queues/api/queues')
        .set({ Authorization: basic('ops', 'correct horse battery'), ...from('192.0.2.51') });
      expect(ok.status).toBe(200);
    }
  });
});

describe('/readyz', () => {
  it('answers 429 with Retry-After when one address hammers it', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await t.http.get('/readyz').set(from('192.0.2.80'))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    const over = await t.http.get('/readyz').set(from('192.0.2.80'));
    expect(over.body).toEqual({ message: 'Too Many Attempts.' });
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    // A probe from another address is still answered.
    expect((await t.http.get('/readyz').set(from('192.0.2.81'))).status).toBe(200);
  });
});
