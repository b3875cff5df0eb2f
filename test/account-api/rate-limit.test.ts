import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';

let t: TestContext;
beforeAll(async () => {
  t = await createTestContext({ RATE_LIMIT_API: '3', RATE_LIMIT_UPDATE: '1' });
});
afterAll(async () => {
  await t?.close();
});

describe('account API rate limit per account', () => {
  it('counts each account on its own and answers 429 with Retry-After past the limit', async () => {
    const a = await t.ctx.users.create({ name: 'A', email: 'rl-a@example.com' });
    const b = await t.ctx.users.create({ name: 'B', email: 'rl-b@example.com' });
    const first = await t.http.get('/api/watch').set('Authorization', `Bearer ${a.token}`);
    expect(first.status).toBe(200);
    expect(first.headers['x-ratelimit-limit']).toBe('3');
    expect(first.headers['x-ratelimit-remaining']).toBe('2');
    await t.http.get('/api/world').set('Authorization', `Bearer ${a.token}`).expect(200);
    await t.http.get('/api/me').query({ api_token: a.token }).expect(200);
    const over = await t.http.get('/api/watch').set('Authorization', `Bearer ${a.token}`);
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ message: 'Too Many Attempts.' });
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    // Another account still has its whole allowance; unauthenticated requests are not counted.
    expect((await t.http.get('/api/watch').set('Authorization', `Bearer ${b.token}`)).status).toBe(200);
    expect((await t.http.get('/api/watch')).status).toBe(401);
  });
});
