import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import supertest from 'supertest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { buildApp } from '../../src/app/http/app.js';
import { apiRoutes } from '../../src/app/http/api-routes.js';
import type { AppContext } from '../../src/app/context.js';

const LIMIT = 3;
let t: TestContext;
beforeAll(async () => {
  t = await createTestContext({ DIRECTORY_RATE_LIMIT: String(LIMIT) });
});
afterAll(async () => {
  await t?.close();
});

/** A fresh app on this file's Redis, counting under its own prefix (inside the one close() cleans). */
function appOn(prefix: string, ctx: AppContext = t.ctx): ReturnType<typeof supertest> {
  return supertest(buildApp({ ...ctx, redisPrefix: `${t.ctx.redisPrefix}-${prefix}` }, apiRoutes));
}

describe('directory rate limit', () => {
  it('counts every request, sends Laravel headers, and answers limit+1 with 429 and Retry-After', async () => {
    const http = appOn('basic');
    for (let i = 1; i <= LIMIT; i++) {
      const res = await http.get(i % 2 ? '/api/user' : '/api/post');
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe(String(LIMIT));
      expect(res.headers['x-ratelimit-remaining']).toBe(String(LIMIT - i));
      // Laravel sends the reset time only with the 429.
      expect(res.headers['x-ratelimit-reset']).toBeUndefined();
      expect(res.headers.ratelimit).toMatch(new RegExp(`^"directory"; r=${LIMIT - i}; t=\\d+$`));
      expect(res.headers['ratelimit-policy']).toMatch(new RegExp(`^"directory"; q=${LIMIT}; w=60; pk=:`));
    }
    const over = await http.get('/api/user');
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ message: 'Too Many Attempts.' });
    const retryAfter = Number(over.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(over.headers['x-ratelimit-remaining']).toBe('0');
    expect(Number(over.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
    expect(over.headers['access-control-allow-origin']).toBe('*');
  });

  it('does not count preflights, and leaves other routes alone', async () => {
    const http = appOn('preflight');
    for (let i = 0; i < LIMIT + 2; i++) expect((await http.options('/api/user')).status).toBe(204);
    for (let i = 0; i < LIMIT + 2; i++) expect((await http.get('/version')).status).toBe(200);
    expect((await http.get('/api/user')).headers['x-ratelimit-remaining']).toBe(String(LIMIT - 1));
  });

  it('is shared by two app instances on one Redis prefix', async () => {
    const a = appOn('shared');
    const b = appOn('shared');
    expect((await a.get('/api/user')).headers['x-ratelimit-remaining']).toBe('2');
    expect((await b.get('/api/post')).headers['x-ratelimit-remaining']).toBe('1');
    expect((await a.get('/api/user')).headers['x-ratelimit-remaining']).toBe('0');
    expect((await b.get('/api/user')).status).toBe(429);
    expect((await a.get('/api/post')).status).toBe(429);
    // Another prefix (another deployment) has its own count.
    expect((await appOn('other').get('/api/user')).status).toBe(200);
  });

  it('counts by socket address unless TRUST_PROXY says to believe X-Forwarded-For', async () => {
    const direct = appOn('direct');
    for (let i = 0; i < LIMIT; i++) await direct.get('/api/user').set('X-Forwarded-For', `203.0.113.${i}`);
    expect((await direct.get('/api/user').set('X-Forwarded-For', '203.0.113.99')).status).toBe(429);

    const proxied = { ...t.ctx, config: { ...t.ctx.config, http: { ...t.ctx.config.http, trustProxy: 1 } } };
    const behind = appOn('proxied', proxied);
    for (let i = 0; i < LIMIT; i++) expect((await behind.get('/api/user').set('X-Forwarded-For', '203.0.113.1')).status).toBe(200);
    expect((await behind.get('/api/user').set('X-Forwarded-For', '203.0.113.1')).status).toBe(429);
    expect((await behind.get('/api/user').set('X-Forwarded-For', '203.0.113.2')).status).toBe(200);
  });
});

/** Closes the context's Redis connection and waits until it is really closed. */
async function cutRedis(ctx: AppContext): Promise<void> {
  const closed = new Promise<void>((resolve) => ctx.redis.once('end', () => resolve()));
  ctx.redis.disconnect();
  if (ctx.redis.status !== 'end') await closed;
}

describe('directory rate limit without Redis', () => {
  it('fails closed with 503 and Retry-After, never 500', async () => {
    const down = await createTestContext({ DIRECTORY_RATE_LIMIT: String(LIMIT) });
    try {
      await cutRedis(down.ctx);
      const res = await down.http.get('/api/user');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ message: 'Service Unavailable.' });
      expect(res.headers['retry-after']).toBeDefined();
      expect(down.logs.text).toContain('rate limit store unavailable');
    } finally {
      await down.close();
    }
  });

  it('heals when Redis comes back, even if it was away when the app was built', async () => {
    const late = await createTestContext({ DIRECTORY_RATE_LIMIT: String(LIMIT) });
    try {
      await cutRedis(late.ctx);
      const app = supertest(buildApp(late.ctx, apiRoutes));
      expect((await app.get('/api/user')).status).toBe(503);
      await late.ctx.redis.connect();
      const res = await app.get('/api/user');
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-remaining']).toBe(String(LIMIT - 1));
    } finally {
      await late.close();
    }
  });
});
