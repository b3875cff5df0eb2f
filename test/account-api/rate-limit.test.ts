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

describe('token rotation limit per account', () => {
  let r: TestContext;
  beforeAll(async () => {
    r = await createTestContext({ RATE_LIMIT_TOKEN_ROTATION: '2' });
  });
  afterAll(async () => {
    await r?.close();
  });

  it('counts rotations per account across its tokens, answers 429 with Retry-After past it, and leaves the token as it was', async () => {
    const a = await r.ctx.users.create({ name: 'Rot A', email: 'rot-a@example.com' });
    const b = await r.ctx.users.create({ name: 'Rot B', email: 'rot-b@example.com' });
    let token = a.token;
    for (let i = 0; i < 2; i++) {
      const res = await r.http.post('/api/me/token').set('Authorization', `Bearer ${token}`).expect(200);
      token = res.body.data.api_token as string;
    }
    const over = await r.http.post('/api/me/token').set('Authorization', `Bearer ${token}`);
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ message: 'Too Many Attempts.' });
    // The window is an hour: the wait is counted in minutes, not seconds.
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(60);
    // Refused, the rotation changed nothing: the token still works, and the other routes are open.
    expect((await r.http.get('/api/me').set('Authorization', `Bearer ${token}`)).body.data.api_token).toBe(token);
    // Another account has its own count; the operator's rotation (the CLI's service call) has none.
    await r.http.post('/api/me/token').set('Authorization', `Bearer ${b.token}`).expect(200);
    const fresh = await r.ctx.users.rotateToken(a.user._id);
    expect((await r.http.get('/api/me').set('Authorization', `Bearer ${fresh}`)).status).toBe(200);
  });
});
